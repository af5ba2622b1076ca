//! mm/: the memory-management model.

pub(crate) mod debug;
pub mod filemap;
pub mod gup;
pub(crate) mod huge_memory;
pub(crate) mod khugepaged;
pub(crate) mod lru_gen;
pub mod madvise;
pub(crate) mod memcontrol;
pub mod memory;
pub(crate) mod migrate;
pub mod mmap;
pub(crate) mod mmu_gather;
pub mod mremap;
pub(crate) mod page_alloc;
pub(crate) mod page_vma_mapped;
pub mod pgtable_generic;
pub mod readahead;
pub(crate) mod rmap;
pub mod shmem;
pub(crate) mod shrinker;
pub mod swap;
pub(crate) mod swap_state;
pub(crate) mod swapfile;
pub mod vmscan;
pub mod vmstat;
pub(crate) mod workingset;

//! mm/: the memory-management model.

pub mod debug;
pub mod filemap;
pub mod gup;
pub mod huge_memory;
pub mod madvise;
pub mod memcontrol;
pub mod memory;
pub mod migrate;
pub mod mmap;
pub mod mmu_gather;
pub mod page_alloc;
pub mod page_vma_mapped;
pub mod pgtable_generic;
pub mod readahead;
pub mod rmap;
pub mod shmem;
pub mod shrinker;
pub mod swap;
pub mod swap_state;
pub mod swapfile;
pub mod vmscan;
pub mod vmstat;
pub mod workingset;

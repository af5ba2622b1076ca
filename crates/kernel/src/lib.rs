//! The kernel model: Linux 6.18 folio-based memory management at the level
//! of single page-table-entry operations.
//!
//! The source tree mirrors linux.git: behaviour lives in kernel-named files
//! (`mm/memory.rs`, `mm/filemap.rs`, ...) as `impl` blocks on the one kernel
//! state, [`Kernel`], and functions carry the names of the kernel functions
//! they model. The simulated architecture is a type parameter ([`Arch`]),
//! chosen at run time by the engine.
//!
//! What is modelled, approximated and unsupported is listed in
//! `docs/fidelity.md`; each file's header says the same for its functions.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod arch;
pub mod include {
    pub mod linux {
        pub(crate) mod mm_inline;
        pub(crate) mod mm_types;
        pub mod pgtable;
    }
}
pub(crate) mod drivers {
    pub(crate) mod zram;
}
pub mod fs {
    pub(crate) mod read_write;
    pub mod proc {
        pub mod page;
        pub mod task_mmu;
    }
}
pub mod kernel {
    pub mod fork;
    pub mod sched;
}
pub mod mm;

use std::marker::PhantomData;

pub use arch::arm64::Arm64;
pub use arch::x86::X86_64;
pub use arch::Arch;
use include::linux::mm_types::MemMap;
use include::linux::pgtable::{Pfn, HPAGE_PMD_ORDER, PAGE_SIZE};
use mm::filemap::AddressSpace;
use mm::mmap::Mm;
use mm::page_alloc::FreeArea;
use mm::pgtable_generic::{PageTables, Table, TableId};
use mm::swapfile::MAX_SWAP_SLOTS;
pub use mm::vmstat::Prices;
use mm::vmstat::VmStat;

use foliosim_uapi::knobs::{self, FieldMut, Knob};
pub use foliosim_uapi::pagedata::PageContent;
use foliosim_uapi::pagemap::MAX_SWAPFILES_SHIFT;
pub use foliosim_uapi::{MthpMode, Series, ThpMode};

/// Boot-time and sysfs configuration of the simulated kernel.
#[derive(Clone, Debug)]
pub struct Config {
    /// Simulated RAM in bytes (multiple of 4 MiB).
    pub memory: u64,
    /// `transparent_hugepage/enabled`
    pub thp_enabled: ThpMode,
    /// `transparent_hugepage/use_zero_page`
    pub use_zero_page: bool,
    /// `transparent_hugepage/shrink_underused`: PMD THPs are queued for
    /// the deferred-split shrinker at fault, to be split when underused.
    pub thp_shrink_underused: bool,
    /// `transparent_hugepage/khugepaged/max_ptes_none`: khugepaged's limit
    /// of none PTEs in a range; a queued THP with more zero-filled pages
    /// than this is underused.
    pub khugepaged_max_ptes_none: u32,
    /// `khugepaged/max_ptes_swap`
    pub khugepaged_max_ptes_swap: u32,
    /// `khugepaged/max_ptes_shared`
    pub khugepaged_max_ptes_shared: u32,
    /// `khugepaged/pages_to_scan`: the progress one khugepaged pass makes.
    pub khugepaged_pages_to_scan: u32,
    /// `hugepages-<size>kB/enabled` for orders 2..=9 (index = order).
    pub anon_orders: [MthpMode; HPAGE_PMD_ORDER as usize + 1],
    /// `fault_around_bytes` as written to debugfs.
    pub fault_around_bytes: u64,
    /// `read_ahead_kb` of the backing device.
    pub read_ahead_kb: u64,
    /// `max_sectors_kb` of the backing device (its bdi's `io_pages`).
    pub max_sectors_kb: u64,
    /// `vm.page-cluster`: swap readahead windows of up to 2^page_cluster
    /// pages.
    pub page_cluster: u32,
    /// `/sys/kernel/mm/swap/vma_ra_enabled`
    pub vma_ra_enabled: bool,
    /// `/sys/kernel/mm/lru_gen/enabled`: the multi-gen LRU (mm/lru_gen.rs).
    pub lru_gen: bool,
    /// `/sys/kernel/mm/lru_gen/min_ttl_ms` (mm/lru_gen.rs).
    pub lru_gen_min_ttl_ms: u32,
    /// Bytes of `memory` the page allocator never manages.
    pub machine_unmanaged: u64,
    /// Managed bytes the kernel holds before the workload starts.
    pub machine_boot_used: u64,
    /// Of those, the bytes on the workload CPU's per-CPU list.
    pub machine_pcp_list: u64,
    /// Of those, the bytes on the list of the CPU kswapd runs on.
    pub machine_kswapd_pcp_list: u64,
    /// `pcp->high` of those two lists, in pages (0: unknown).
    pub machine_pcp_high: u64,
    pub machine_kswapd_pcp_high: u64,
    /// Free bytes of lower zones the workload's allocations may not take.
    pub machine_lowmem_reserve: u64,
    /// `vm.min_free_kbytes`; 0: `calculate_min_free_kbytes()`.
    pub min_free_kbytes: u64,
    /// Pageblocks of migratetype Unmovable and Reclaimable at boot, at
    /// the start of the kernel's own memory (mm/page_alloc.rs).
    pub machine_unmovable_blocks: u64,
    pub machine_reclaimable_blocks: u64,
    /// Pageblocks of migratetype CMA, at the top of memory, free at boot.
    pub machine_cma_blocks: u64,
    /// Their free blocks per order at boot.
    pub machine_free_unmovable: knobs::FreeCounts,
    pub machine_free_reclaimable: knobs::FreeCounts,
    /// `vm.watermark_boost_factor` (`boost_watermark()`).
    pub watermark_boost_factor: u64,
    /// `vm_swappiness` (`mem_cgroup_swappiness()`): reclaim's weight of
    /// anonymous against file pages, 0 to 200.
    pub swappiness: u64,
    /// Bytes per second of modelled time an asynchronous swap device
    /// writes; 0: no limit (with the latency at 0 too, writes complete
    /// at once; mm/page_io.rs).
    pub machine_swap_write_rate: u64,
    /// Each asynchronous swap write's latency beyond its transfer, in ns
    /// (mm/page_io.rs).
    pub machine_swap_write_latency_ns: u64,
    /// `machine.uptime_ms`: the machine's uptime when the run starts.
    pub machine_uptime_ms: u64,
    /// `machine.random_seed`: the seed of the kernel's own random draws
    /// (`get_random_u32_below()`, mm/memcg_lru.rs).
    pub machine_random_seed: u64,
    /// `machine.memcg_flush_ms`: the modelled time of the periodic memcg
    /// statistics flush's first run (mm/memcg_rstat.rs).
    pub machine_memcg_flush_ms: u64,
    /// Run the full invariant checker after every operation the engine
    /// performs (tests turn this on).
    pub check_invariants: bool,
    /// Swap areas, highest priority first: (kind, size in bytes).
    pub swap: Vec<(mm::swapfile::SwapKind, u64)>,
    /// Patch-series switches.
    pub series: Series,
    /// zswap's module parameters (mm/zswap.rs).
    pub zswap: knobs::Zswap,
    /// Keep the root cgroup's LRU lists ordered, so that global direct
    /// reclaim can scan them (8 bytes per page frame). An engine that
    /// proves a scenario cannot run the machine out of memory turns this
    /// off; a global reclaim then is a loud "unsupported", never a silent
    /// approximation.
    pub lru_order_root: bool,
    /// The prices of the tasks' modelled CPU time, which pace kswapd
    /// against the workload (a cost profile's; empty: kswapd's work costs
    /// nothing and it always keeps up).
    pub prices: std::sync::Arc<mm::vmstat::Prices>,
}

impl Default for Config {
    /// The defaults of the `[system]` knob table ([`knobs::KNOBS`]).
    fn default() -> Self {
        let mut anon_orders = [MthpMode::Never; HPAGE_PMD_ORDER as usize + 1];
        for (order, mode) in anon_orders.iter_mut().enumerate() {
            *mode = knobs::mthp_default((PAGE_SIZE << order) >> 10);
        }
        Config {
            memory: knobs::MEMORY.default.int(),
            thp_enabled: knobs::THP_ENABLED.default.thp(),
            use_zero_page: knobs::THP_USE_ZERO_PAGE.default.flag(),
            thp_shrink_underused: knobs::THP_SHRINK_UNDERUSED.default.flag(),
            khugepaged_max_ptes_none: knobs::KHUGEPAGED_MAX_PTES_NONE.default.int() as u32,
            khugepaged_max_ptes_swap: knobs::KHUGEPAGED_MAX_PTES_SWAP.default.int() as u32,
            khugepaged_max_ptes_shared: knobs::KHUGEPAGED_MAX_PTES_SHARED.default.int() as u32,
            khugepaged_pages_to_scan: knobs::KHUGEPAGED_PAGES_TO_SCAN.default.int() as u32,
            anon_orders,
            fault_around_bytes: knobs::FAULT_AROUND_BYTES.default.int(),
            read_ahead_kb: knobs::READ_AHEAD_KB.default.int(),
            max_sectors_kb: knobs::MAX_SECTORS_KB.default.int(),
            page_cluster: knobs::PAGE_CLUSTER.default.int() as u32,
            vma_ra_enabled: knobs::VMA_RA_ENABLED.default.flag(),
            lru_gen: knobs::LRU_GEN_ENABLED.default.flag(),
            lru_gen_min_ttl_ms: knobs::LRU_GEN_MIN_TTL_MS.default.int() as u32,
            machine_unmanaged: knobs::MACHINE_UNMANAGED.default.int(),
            machine_boot_used: knobs::MACHINE_BOOT_USED.default.int(),
            machine_pcp_list: knobs::MACHINE_PCP_LIST.default.int(),
            machine_kswapd_pcp_list: knobs::MACHINE_KSWAPD_PCP_LIST.default.int(),
            machine_pcp_high: knobs::MACHINE_PCP_HIGH.default.int(),
            machine_kswapd_pcp_high: knobs::MACHINE_KSWAPD_PCP_HIGH.default.int(),
            machine_lowmem_reserve: knobs::MACHINE_LOWMEM_RESERVE.default.int(),
            min_free_kbytes: knobs::MACHINE_MIN_FREE_KBYTES.default.int(),
            machine_unmovable_blocks: knobs::MACHINE_UNMOVABLE_BLOCKS.default.int(),
            machine_reclaimable_blocks: knobs::MACHINE_RECLAIMABLE_BLOCKS.default.int(),
            machine_cma_blocks: knobs::MACHINE_CMA_BLOCKS.default.int(),
            machine_free_unmovable: knobs::MACHINE_FREE_UNMOVABLE.default.free_counts(),
            machine_free_reclaimable: knobs::MACHINE_FREE_RECLAIMABLE.default.free_counts(),
            watermark_boost_factor: knobs::WATERMARK_BOOST_FACTOR.default.int(),
            swappiness: knobs::SWAPPINESS.default.int(),
            machine_swap_write_rate: knobs::MACHINE_SWAP_WRITE_RATE.default.int(),
            machine_swap_write_latency_ns: knobs::MACHINE_SWAP_WRITE_LATENCY_NS.default.int(),
            machine_uptime_ms: knobs::MACHINE_UPTIME_MS.default.int(),
            machine_random_seed: knobs::MACHINE_RANDOM_SEED.default.int(),
            machine_memcg_flush_ms: knobs::MACHINE_MEMCG_FLUSH_MS.default.int(),
            check_invariants: false,
            swap: Vec::new(),
            series: Series::default(),
            zswap: Default::default(),
            lru_order_root: true,
            prices: Default::default(),
        }
    }
}

impl Config {
    /// The field that holds `knob` (of size `kb` KiB for a per-size knob);
    /// None for a knob the model takes elsewhere (`arch` is the type
    /// parameter of [`Kernel`], `cpus` bounds the engine's threads) or
    /// not at all (`khugepaged.scan_sleep_millisecs`: the model's
    /// khugepaged runs only at `khugepaged` steps, never in the
    /// background).
    pub fn knob_mut(&mut self, knob: &Knob, kb: Option<u64>) -> Option<FieldMut<'_>> {
        Some(match *knob {
            knobs::MEMORY => FieldMut::U64(&mut self.memory),
            knobs::THP_ENABLED => FieldMut::Thp(&mut self.thp_enabled),
            knobs::THP_USE_ZERO_PAGE => FieldMut::Flag(&mut self.use_zero_page),
            knobs::THP_SHRINK_UNDERUSED => FieldMut::Flag(&mut self.thp_shrink_underused),
            knobs::KHUGEPAGED_MAX_PTES_NONE => FieldMut::U32(&mut self.khugepaged_max_ptes_none),
            knobs::KHUGEPAGED_MAX_PTES_SWAP => FieldMut::U32(&mut self.khugepaged_max_ptes_swap),
            knobs::KHUGEPAGED_MAX_PTES_SHARED => {
                FieldMut::U32(&mut self.khugepaged_max_ptes_shared)
            }
            knobs::KHUGEPAGED_PAGES_TO_SCAN => FieldMut::U32(&mut self.khugepaged_pages_to_scan),
            knobs::MTHP_ENABLED => {
                let pages = (kb? << 10) / PAGE_SIZE;
                if !pages.is_power_of_two() {
                    return None;
                }
                let order = pages.trailing_zeros() as usize;
                FieldMut::Mthp(self.anon_orders.get_mut(order)?)
            }
            knobs::FAULT_AROUND_BYTES => FieldMut::U64(&mut self.fault_around_bytes),
            knobs::READ_AHEAD_KB => FieldMut::U64(&mut self.read_ahead_kb),
            knobs::MAX_SECTORS_KB => FieldMut::U64(&mut self.max_sectors_kb),
            knobs::PAGE_CLUSTER => FieldMut::U32(&mut self.page_cluster),
            knobs::VMA_RA_ENABLED => FieldMut::Flag(&mut self.vma_ra_enabled),
            knobs::LRU_GEN_ENABLED => FieldMut::Flag(&mut self.lru_gen),
            knobs::LRU_GEN_MIN_TTL_MS => FieldMut::U32(&mut self.lru_gen_min_ttl_ms),
            knobs::MACHINE_UNMANAGED => FieldMut::U64(&mut self.machine_unmanaged),
            knobs::MACHINE_BOOT_USED => FieldMut::U64(&mut self.machine_boot_used),
            knobs::MACHINE_PCP_LIST => FieldMut::U64(&mut self.machine_pcp_list),
            knobs::MACHINE_KSWAPD_PCP_LIST => FieldMut::U64(&mut self.machine_kswapd_pcp_list),
            knobs::MACHINE_PCP_HIGH => FieldMut::U64(&mut self.machine_pcp_high),
            knobs::MACHINE_KSWAPD_PCP_HIGH => FieldMut::U64(&mut self.machine_kswapd_pcp_high),
            knobs::MACHINE_LOWMEM_RESERVE => FieldMut::U64(&mut self.machine_lowmem_reserve),
            knobs::MACHINE_MIN_FREE_KBYTES => FieldMut::U64(&mut self.min_free_kbytes),
            knobs::MACHINE_UNMOVABLE_BLOCKS => FieldMut::U64(&mut self.machine_unmovable_blocks),
            knobs::MACHINE_RECLAIMABLE_BLOCKS => {
                FieldMut::U64(&mut self.machine_reclaimable_blocks)
            }
            knobs::MACHINE_CMA_BLOCKS => FieldMut::U64(&mut self.machine_cma_blocks),
            knobs::MACHINE_FREE_UNMOVABLE => FieldMut::FreeCounts(&mut self.machine_free_unmovable),
            knobs::MACHINE_FREE_RECLAIMABLE => {
                FieldMut::FreeCounts(&mut self.machine_free_reclaimable)
            }
            knobs::WATERMARK_BOOST_FACTOR => FieldMut::U64(&mut self.watermark_boost_factor),
            knobs::SWAPPINESS => FieldMut::U64(&mut self.swappiness),
            knobs::MACHINE_SWAP_WRITE_RATE => FieldMut::U64(&mut self.machine_swap_write_rate),
            knobs::MACHINE_SWAP_WRITE_LATENCY_NS => {
                FieldMut::U64(&mut self.machine_swap_write_latency_ns)
            }
            knobs::MACHINE_UPTIME_MS => FieldMut::U64(&mut self.machine_uptime_ms),
            knobs::MACHINE_RANDOM_SEED => FieldMut::U64(&mut self.machine_random_seed),
            knobs::MACHINE_MEMCG_FLUSH_MS => FieldMut::U64(&mut self.machine_memcg_flush_ms),
            _ => return self.zswap.knob_mut(knob),
        })
    }
}

/// An mm (`struct mm_struct`) handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MmId(pub u32);

/// A file handle: an inode with its page cache (`struct address_space`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

/// Errors that are not modelled outcomes: the model cannot do what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// The scenario asks for behaviour the model does not implement.
    Unsupported(String),
    /// A system call failed the way the kernel would fail it (errno name).
    Errno(&'static str, String),
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelError::Unsupported(s) => write!(f, "unsupported by the model: {s}"),
            KernelError::Errno(e, s) => write!(f, "{e}: {s}"),
        }
    }
}

impl std::error::Error for KernelError {}

/// The result of a system call or kernel entry point the model may refuse.
pub type KResult<T> = Result<T, KernelError>;

/// A limit of the model met deep inside an operation, where no `Result`
/// reaches the caller (a page table that cannot be allocated because the
/// OOM killer is not modelled, a mapcount beyond its packed field, ...).
/// Raised only by [`model_limit`], as a panic whose payload is this type,
/// so an engine catches it by type around a step and reports the step as
/// unsupported; any other panic is a foliosim bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelLimit {
    /// What the model does not support, as a user reads it.
    pub what: String,
}

impl std::fmt::Display for ModelLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unsupported by the model: {}", self.what)
    }
}

/// Stop the running operation at a limit of the model: unwind with a
/// [`ModelLimit`] payload (`std::panic::panic_any`). The kernel state is
/// not usable afterwards; the engine that catches it ends the run.
#[cold]
#[track_caller]
pub fn model_limit(what: impl Into<String>) -> ! {
    std::panic::panic_any(ModelLimit { what: what.into() })
}

/// The one kernel state.
#[derive(Debug)]
pub struct Kernel<A: Arch> {
    pub(crate) cfg: Config,
    /// `fault_around_pages` after fault_around_bytes_set()'s rounding.
    pub(crate) fault_around_pages: u64,
    /// `ra_pages` of the backing device.
    pub(crate) ra_pages: u64,
    pub(crate) mem: MemMap,
    pub(crate) buddy: FreeArea,
    pub(crate) pt: PageTables,
    pub(crate) mms: Vec<Option<Mm>>,
    /// The ids of the `Some` entries of `mms` (a slot is never reused, so
    /// after many forks most are `None`; walks over every mm use this).
    pub(crate) live_mms: std::collections::BTreeSet<MmId>,
    /// `anon_vma->parent` of every anon_vma (index = the id a VMA and its
    /// anon folios' `mapping` hold; 0 = none, so slot 0 is unused).
    pub(crate) anon_vma_parent: Vec<Option<mm::rmap::AnonVmaId>>,
    /// The VMAs of the last anon rmap walk's anon_vma (mm/rmap.rs).
    pub(crate) anon_rmap_cache: mm::rmap::AnonRmapCache,
    /// Freed anon_vma ids, highest first (`anon_vma_alloc()` pops).
    pub(crate) anon_vma_free: Vec<u32>,
    pub(crate) files: Vec<AddressSpace>,
    /// Slots of `files` whose inode was evicted, for the next file.
    pub(crate) free_files: Vec<FileId>,
    pub(crate) open_files: Vec<mm::filemap::File>,
    pub(crate) vmstat: VmStat,
    /// `zero_pfn`
    pub(crate) zero_pfn: Pfn,
    /// The huge zero folio, allocated on first use.
    pub(crate) huge_zero_folio: Option<Pfn>,
    /// Swap areas (`swap_info[]`).
    pub(crate) swap: Vec<mm::swapfile::SwapInfo>,
    /// `folio->swap` of swap-cache folios.
    pub(crate) swap_of: mm::swapfile::SwapOf,
    /// zswap: its pool and the entries of the swap slots.
    pub(crate) zswap: mm::zswap::Zswap,
    /// The compressed length of each kind of data, for zswap and zram.
    pub(crate) lzo_lens: mm::zswap::LzoLens,
    /// Cluster readahead's machine-wide hit history.
    pub(crate) swap_ra: mm::swap_state::SwapRa,
    /// Swap entries stored in shmem page-cache slots (xarray value
    /// entries of swapped-out shmem pages).
    pub(crate) shmem_swap: mm::shmem::ShmemSwap,
    /// Reclaim's deferred TLB flush state.
    pub(crate) tlb_ubc: mm::rmap::TlbUbc,
    /// Memory cgroups, the charge of every folio, the charge stock.
    pub(crate) memcg: mm::memcontrol::MemcgState,
    /// The links of the ordered LRU lists (`folio->lru`).
    pub(crate) lru: include::linux::mm_inline::LruLinks,
    /// Folios of a readahead batch in progress: locked until their read
    /// completes, so reclaim keeps them (`folio_trylock()` fails). A set:
    /// reclaim asks per folio, and a batch can hold 10^5 folios.
    pub(crate) locked: std::collections::HashSet<Pfn, foldhash::fast::FixedState>,
    /// A folio an in-progress fault holds a reference on across an
    /// allocation (`folio_get()` in do_wp_page()): reclaim may unmap it but
    /// cannot free it (`__remove_mapping()`'s refcount freeze fails).
    pub(crate) pinned: Option<Pfn>,
    /// Faults get_user_pages() took for the running task (MADV_POPULATE_*),
    /// drained by the engine into the task's fault counts
    /// ([`Kernel::take_gup_faults`]).
    pub(crate) gup_faults: mm::gup::GupFaults,
    /// The simulated CPUs: loaded mms, lazy TLB, mm_cpumask, TLB generations.
    pub(crate) cpus: kernel::sched::Cpus,
    /// khugepaged's list of registered mms and its scan cursor.
    pub(crate) khugepaged: mm::khugepaged::KhugepagedScan,
    /// kswapd: its `balance_pgdat()` pass in progress and its failures.
    pub(crate) kswapd: mm::vmscan::Kswapd,
    /// MGLRU's generation and reference bits of every page frame (empty
    /// with MGLRU off).
    pub(crate) gen_flags: mm::lru_gen::GenFlags,
    /// MGLRU's view of the running task (in a fault, reclaiming, walking).
    pub(crate) lru_gen_task: mm::lru_gen::LruGenTask,
    /// MGLRU: reclaim writes waiting for their rotation.
    pub(crate) rotate_pending: mm::lru_gen::RotatePending,
    /// The OOM killer was invoked (MGLRU's `min_ttl_ms`): the run ends.
    pub(crate) oom_kill: bool,
    /// Swap writes in flight and the folios under writeback.
    pub(crate) swap_io: mm::page_io::SwapIo,
    _arch: PhantomData<A>,
}

impl<A: Arch> Kernel<A> {
    /// Boot a kernel with `cfg`.
    pub fn new(cfg: Config) -> KResult<Kernel<A>> {
        if !cfg.memory.is_multiple_of(4 << 20) || cfg.memory < (64 << 20) {
            return Err(KernelError::Unsupported(format!(
                "memory = {} must be a multiple of 4 MiB and at least 64 MiB",
                cfg.memory
            )));
        }
        if cfg.memory / PAGE_SIZE >= u32::MAX as u64 {
            return Err(KernelError::Unsupported("memory above 16 TiB".into()));
        }
        // The model's `folio->swap` packs the area and the offset in 32 bits.
        if cfg.swap.len() > 1 << MAX_SWAPFILES_SHIFT {
            let what = format!("{} swap areas (at most 32)", cfg.swap.len());
            return Err(KernelError::Unsupported(what));
        }
        let too_large = |&(_, size): &_| mm::swapfile::SwapInfo::slots_of(size) > MAX_SWAP_SLOTS;
        if let Some(i) = cfg.swap.iter().position(too_large) {
            let what = format!(
                "system.swap[{}]: a swap area of {} bytes (at most 512 GiB)",
                i + 1,
                cfg.swap[i].1
            );
            return Err(KernelError::Unsupported(what));
        }
        let nr_frames = cfg.memory / PAGE_SIZE;
        let mut mem = MemMap::new(nr_frames);
        let mut buddy = FreeArea::new(&mem);
        let zero_pfn = buddy
            .rmqueue_smallest(&mut mem, 0, mm::page_alloc::MIGRATE_MOVABLE)
            .expect("memory for the zero page");
        mem.prep_new_folio(zero_pfn, 0);
        mem.set(zero_pfn, include::linux::mm_types::PG_UPTODATE);
        buddy.reserve_boot_pages(&mut mem, &cfg, zero_pfn)?;
        let fault_around_pages = mm::memory::fault_around_bytes_set(cfg.fault_around_bytes);
        let ra_pages = cfg.read_ahead_kb * 1024 / PAGE_SIZE;
        let cfg_swap = cfg.swap.clone();
        let zswap = mm::zswap::Zswap::new(
            cfg.zswap,
            &cfg_swap
                .iter()
                .map(|&(_, size)| mm::swapfile::SwapInfo::slots_of(size))
                .collect::<Vec<_>>(),
        );
        // zswap and zram store each page by its kind of data.
        let keep_content = cfg.zswap.enabled
            || cfg_swap
                .iter()
                .any(|&(k, _)| matches!(k, mm::swapfile::SwapKind::Zram));
        if keep_content {
            mem.keep_content();
        }
        let swap_io = mm::page_io::SwapIo::new(
            cfg.machine_swap_write_rate,
            cfg.machine_swap_write_latency_ns,
            cfg_swap.len(),
        );
        let memcg = mm::memcontrol::MemcgState::new(cfg.machine_random_seed);
        Ok(Kernel {
            cfg,
            fault_around_pages,
            ra_pages,
            mem,
            buddy,
            pt: PageTables::default(),
            mms: Vec::new(),
            live_mms: Default::default(),
            anon_vma_parent: vec![None],
            anon_rmap_cache: Default::default(),
            anon_vma_free: Vec::new(),
            files: Vec::new(),
            free_files: Vec::new(),
            open_files: Vec::new(),
            vmstat: VmStat::default(),
            zero_pfn,
            huge_zero_folio: None,
            swap: cfg_swap
                .iter()
                .map(|&(k, size)| mm::swapfile::SwapInfo::new(k, size))
                .collect(),
            swap_of: mm::swapfile::SwapOf::new(nr_frames),
            zswap,
            lzo_lens: mm::zswap::LzoLens::new(),
            swap_ra: Default::default(),
            shmem_swap: Default::default(),
            tlb_ubc: Default::default(),
            memcg,
            lru: Default::default(),
            locked: Default::default(),
            pinned: None,
            gup_faults: Default::default(),
            cpus: Default::default(),
            khugepaged: Default::default(),
            kswapd: Default::default(),
            gen_flags: Default::default(),
            lru_gen_task: Default::default(),
            rotate_pending: Default::default(),
            oom_kill: false,
            swap_io,
            _arch: PhantomData,
        })
        .map(|mut k| {
            if k.cfg.lru_gen {
                k.lru_gen_init();
            }
            if keep_content {
                for si in &mut k.swap {
                    si.keep_content();
                }
            }
            k
        })
    }

    /// The mm behind a handle.
    pub fn mm(&self, id: MmId) -> &Mm {
        self.mms[id.0 as usize].as_ref().expect("live mm")
    }

    /// Whether the mm behind a handle still exists (its process has not
    /// exited).
    pub fn mm_alive(&self, id: MmId) -> bool {
        self.mms.get(id.0 as usize).is_some_and(Option::is_some)
    }

    /// Every live mm, in id order.
    pub(crate) fn live_mms(&self) -> impl Iterator<Item = &Mm> {
        self.live_mms.iter().map(|&id| self.mm(id))
    }

    pub fn mm_mut(&mut self, id: MmId) -> &mut Mm {
        self.mms[id.0 as usize].as_mut().expect("live mm")
    }

    /// Take the faults get_user_pages() took for the running task since
    /// the last call (MADV_POPULATE_*), to add to its fault counts.
    pub fn take_gup_faults(&mut self) -> mm::gup::GupFaults {
        std::mem::take(&mut self.gup_faults)
    }
}

/// What the simulated machine (crates/hw) touches directly, as the
/// hardware does and not through a kernel function: the MMU's walk reads
/// the page tables and sets the accessed and dirty bits, stores mark a
/// page's data, and every access counts.
impl<A: Arch> Kernel<A> {
    /// The page-table arena's generation: bumped whenever a table is freed
    /// or moved to another address, so a cached table id is valid only
    /// while it is unchanged.
    #[inline]
    pub fn pt_generation(&self) -> u64 {
        self.pt.generation
    }

    /// The raw entry `idx` of page table `table`, as the MMU reads it.
    #[inline]
    pub fn pt_entry(&self, table: TableId, idx: usize) -> u64 {
        self.pt.get(table, idx)
    }

    /// A whole page table, as the MMU's speculative walks read it.
    #[inline]
    pub fn pt_table(&self, table: TableId) -> &Table {
        self.pt.table(table)
    }

    /// The hardware's update of an entry it walked: the accessed and dirty
    /// bits (x86: A/D; arm64: AF and DBM), never anything else.
    #[inline]
    pub fn hw_update_entry(&mut self, table: TableId, idx: usize, val: u64) {
        debug_assert_eq!(
            A::pte_pfn(val),
            A::pte_pfn(self.pt.get(table, idx)),
            "the hardware changed an entry's frame"
        );
        self.pt.set(table, idx, val);
    }

    /// A user store left `c` in page `pfn` (what decides the zeromap at
    /// swap-out and what zswap compresses).
    #[inline]
    pub fn set_page_content(&mut self, pfn: Pfn, c: PageContent) {
        self.mem.set_page_content(pfn, c);
    }

    /// The counters.
    #[inline]
    pub fn vmstat(&self) -> &VmStat {
        &self.vmstat
    }

    /// The counters, for the machine's and the engine's own events.
    #[inline]
    pub fn vmstat_mut(&mut self) -> &mut VmStat {
        &mut self.vmstat
    }

    /// Whether kswapd invoked the OOM killer since the last call
    /// (`lru_gen_age_node()` with `min_ttl_ms`): a process is killed, and
    /// the run ends.
    #[inline]
    pub fn take_oom_kill(&mut self) -> bool {
        std::mem::take(&mut self.oom_kill)
    }
}

/// The signal the engine reports for a process killed by the OOM killer
/// that MGLRU's `min_ttl_ms` invoked ([`Kernel::take_oom_kill`]).
pub const MIN_TTL_OOM_KILL: &str =
    "SIGKILL from the OOM killer (kswapd found every cgroup's oldest generation younger \
     than lru_gen.min_ttl_ms)";

//! The typed scenario: what a parsed and validated scenario file says.
//!
//! This layer knows nothing of the kernel model. Sizes are bytes, knob values
//! keep the kernel's spelling, and every step remembers where it was written
//! so that later layers can point back into the file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

pub use foliosim_uapi::{Arch, Madv, MthpMode, Series, SwapKind, ThpMode};

/// A place in a scenario file (1-based line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A whole scenario after `--set` overrides were applied and everything was
/// validated.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// `name` key, or the file stem.
    pub name: String,
    pub description: String,
    /// Top-level `seed` (default 1); `--seed` overrides it. Random touches
    /// without their own `seed` use it.
    pub seed: u64,
    pub system: System,
    /// `[[file]]` tables: files that exist before the first step.
    pub files: Vec<FileSpec>,
    /// `[[step]]` tables, in order.
    pub steps: Vec<Step>,
    /// `[[expect]]` tables.
    pub expects: Vec<Expect>,
}

/// The `[system]` table: machine and kernel knobs under the kernel's names.
#[derive(Clone, Debug)]
pub struct System {
    /// `arch`: "x86_64" (default) or "arm64" (4 KiB granule; "aarch64" too).
    pub arch: Arch,
    /// `memory`: simulated RAM in bytes (default 24 GiB).
    pub memory: u64,
    /// `cpus`: simulated CPUs (default 2, like the reference host); bounds
    /// the threads a `threads` step may start.
    pub cpus: u32,
    /// `transparent_hugepage.enabled` (default madvise, the test kernel's
    /// Kconfig default).
    pub thp_enabled: ThpMode,
    /// `transparent_hugepage.use_zero_page` (default true).
    pub thp_use_zero_page: bool,
    /// `transparent_hugepage.shrink_underused` (default true): PMD THPs are
    /// queued for the deferred-split shrinker, which splits underused ones.
    pub thp_shrink_underused: bool,
    /// `transparent_hugepage.khugepaged.max_ptes_none` (0..=511, default
    /// 511): khugepaged's limit of none PTEs in a range it collapses; a THP
    /// with more zero-filled pages is underused.
    pub khugepaged_max_ptes_none: u32,
    /// `transparent_hugepage.khugepaged.max_ptes_swap` (default 64).
    pub khugepaged_max_ptes_swap: u32,
    /// `transparent_hugepage.khugepaged.max_ptes_shared` (default 256).
    pub khugepaged_max_ptes_shared: u32,
    /// `transparent_hugepage.khugepaged.pages_to_scan` (default 4096).
    pub khugepaged_pages_to_scan: u32,
    /// `transparent_hugepage.khugepaged.scan_sleep_millisecs` (default
    /// 10000): the host's; the model's khugepaged runs only at steps.
    pub khugepaged_scan_sleep_millisecs: u32,
    /// `transparent_hugepage.hugepages-<size>kB.enabled`, keyed by the size in
    /// bytes (16 KiB .. 2 MiB, powers of two). Every size is present: the
    /// default is `inherit` for 2 MiB and `never` for the others.
    pub mthp_enabled: BTreeMap<u64, MthpMode>,
    /// `fault_around_bytes` as written (default 65536); the kernel model
    /// applies the kernel's rounding.
    pub fault_around_bytes: u64,
    /// `read_ahead_kb` of the device holding the files (default 128).
    pub read_ahead_kb: u64,
    /// `max_sectors_kb` of the device holding the files (default 4096).
    pub max_sectors_kb: u64,
    /// `vm.page_cluster` (sysctl `vm.page-cluster`, default 3): swap
    /// readahead windows of up to 2^page_cluster pages.
    pub page_cluster: u32,
    /// `machine.unmanaged`: bytes of `memory` outside the page allocator.
    pub machine_unmanaged: u64,
    /// `machine.boot_used`: managed bytes in use before the workload.
    pub machine_boot_used: u64,
    /// `machine.pcp_list`: of those, the bytes on the workload CPU's
    /// per-CPU page list.
    pub machine_pcp_list: u64,
    /// `machine.kswapd_pcp_list`: of those, the bytes on the per-CPU page
    /// list of the CPU kswapd runs on.
    pub machine_kswapd_pcp_list: u64,
    /// `machine.pcp_high`, `machine.kswapd_pcp_high`: those lists'
    /// `pcp->high` in pages (0: unknown).
    pub machine_pcp_high: u64,
    pub machine_kswapd_pcp_high: u64,
    /// `machine.lowmem_reserve`: free bytes of lower zones the workload's
    /// allocations may not take.
    pub machine_lowmem_reserve: u64,
    /// `machine.min_free_kbytes`: 0 computes it from the managed memory.
    pub machine_min_free_kbytes: u64,
    /// `machine.unmovable_blocks`, `machine.reclaimable_blocks`:
    /// pageblocks of those migratetypes before the workload.
    pub machine_unmovable_blocks: u64,
    pub machine_reclaimable_blocks: u64,
    /// `machine.cma_blocks`: CMA pageblocks, at the top of memory.
    pub machine_cma_blocks: u64,
    /// `machine.free_unmovable`, `machine.free_reclaimable`: their free
    /// blocks per order.
    pub machine_free_unmovable: foliosim_uapi::knobs::FreeCounts,
    pub machine_free_reclaimable: foliosim_uapi::knobs::FreeCounts,
    /// `vm.watermark_boost_factor`
    pub watermark_boost_factor: u64,
    /// `vm.swappiness`
    pub swappiness: u64,
    /// `machine.swap_write_rate`: bytes per second an asynchronous swap
    /// device writes; 0: no limit.
    pub machine_swap_write_rate: u64,
    /// `machine.swap_write_latency_ns`: each asynchronous swap write's
    /// latency beyond its transfer.
    pub machine_swap_write_latency_ns: u64,
    /// `machine.uptime_ms`: how long the machine has been up when the
    /// workload starts.
    pub machine_uptime_ms: u64,
    /// `machine.random_seed`: the seed of the kernel's own random draws.
    pub machine_random_seed: u64,
    /// `machine.memcg_flush_ms`: when the periodic memcg statistics flush
    /// first runs, in ms of modelled time from the run's start.
    pub machine_memcg_flush_ms: u64,
    /// `vma_ra_enabled` (`/sys/kernel/mm/swap/vma_ra_enabled`, default
    /// true): VMA-based swap readahead when no swap area is rotational.
    pub vma_ra_enabled: bool,
    /// `lru_gen.enabled` (`/sys/kernel/mm/lru_gen/enabled`, default
    /// false): the multi-gen LRU.
    pub lru_gen_enabled: bool,
    /// `lru_gen.min_ttl_ms` (`/sys/kernel/mm/lru_gen/min_ttl_ms`, default
    /// 0): MGLRU's thrashing prevention.
    pub lru_gen_min_ttl_ms: u32,
    /// `zswap.*`: zswap's module parameters (default off).
    pub zswap: foliosim_uapi::knobs::Zswap,
    /// `[[system.swap]]` tables: swap devices, highest priority first
    /// (default none).
    pub swap: Vec<SwapDevice>,
    /// `series.<switch> = true|false`: the patch series modelled as switches
    /// (default all false: vanilla 6.18).
    pub series: Series,
    /// The knob keys (as in `knobs`) that the file or `--set` gave
    /// explicitly; the others hold defaults. `compare` fills those from the
    /// probed host.
    pub explicit: BTreeSet<String>,
    /// Every knob with its effective value in the kernel's spelling, for the
    /// `system` object of the output (sorted by key).
    pub knobs: BTreeMap<String, String>,
}

/// A `[[system.swap]]` table: `kind`, `size` (required).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwapDevice {
    pub kind: SwapKind,
    pub size: u64,
}

/// How a file's page cache is populated before the first step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheFill {
    /// `fill = "cold"`: the file is on disk, nothing is cached.
    Cold,
    /// `fill = "write"`: created with buffered write(2) calls of
    /// `write_size` bytes each (default 4 KiB), left in the page cache.
    Write { write_size: u64 },
    /// `fill = "read"`: on disk and cold, then read(2) from start to end in
    /// calls of `read_size` bytes each (default 128 KiB).
    Read { read_size: u64 },
}

/// A `[[file]]` table.
#[derive(Clone, Debug)]
pub struct FileSpec {
    pub loc: Loc,
    /// `name`: the file's identity; mmap steps refer to it.
    pub name: String,
    /// `size` in bytes.
    pub size: u64,
    /// `fill` (with `write_size` / `read_size`).
    pub fill: CacheFill,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backing {
    /// `kind = "anon"`
    Anon,
    /// `kind = "file"`, `file = "<name>"`
    File { file: String },
    /// `kind = "shmem"`: MAP_SHARED|MAP_ANONYMOUS memory (must be shared).
    Shmem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Prot {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `access = "read"`: load one byte.
    Read,
    /// `access = "write"`: store one non-zero byte.
    Write,
    /// `access = "write-zero"`: store a zero byte (memset 0): the page stays
    /// zero-filled, which swap-out then finds (zeromap).
    WriteZero,
}

/// What a write leaves in each page it touches (`data`), which decides
/// whether swap-out finds the page zero-filled and how well zswap
/// compresses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageData {
    /// No `data`: the access's one byte (1, or 0 for `write-zero`).
    #[default]
    Store,
    /// `data = "zero"`: the whole page zeroed.
    Zero,
    /// `data = "repeated"`: the whole page one non-zero byte repeated.
    Repeated,
    /// `data = "random"`: the first `random_percent` percent of the page
    /// (default 100) pseudo-random bytes, the rest zeros.
    Random { percent: u8 },
}

/// Which pages of the touched range are accessed, in which order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Every page, ascending.
    Sequential,
    /// Every page once, in the order of a Fisher-Yates shuffle driven by
    /// SplitMix64 seeded with `seed` (see docs/scenarios.md for the exact
    /// algorithm, which the native engine reproduces).
    Random { seed: u64 },
    /// One access every `stride` bytes, ascending (stride is a multiple of
    /// the page size).
    Stride { stride: u64 },
    /// The first page of every 2 MiB-aligned virtual block that the range
    /// covers (one page per page table), ascending.
    OnePerPageTable,
    /// `pattern = "list"`: the pages of `pages` (indexes from the start
    /// of the range), in that order (a recording's replay).
    List(Vec<u32>),
}

/// How much of each touched page a touch accesses (`unit`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TouchUnit {
    /// `unit = "page"` (default): one byte of each touched page.
    #[default]
    Page,
    /// `unit = "word"`: every 8-byte word of each touched page is loaded
    /// (reads only; patterns sequential and random). Sequential: the words
    /// in address order. Random: 512 rounds over the pages in the random
    /// page order; round `r` loads word `((r mod 8) * 64 + r / 8 + i) mod
    /// 512` of the `i`-th page of that order, so consecutive loads land on
    /// different pages, a page's cache line is reused only 8 rounds later,
    /// and the first round faults the pages in exactly the order of the
    /// page-granular random touch (see docs/scenarios.md).
    Word,
}

/// A range inside a named region: `offset` and `len` in bytes (len None =
/// to the end of the region).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub offset: u64,
    pub len: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub loc: Loc,
    pub kind: StepKind,
}

/// The keys of an `op = "mmap"` step.
#[derive(Clone, Debug)]
pub struct MmapStep {
    /// `region`: the name later steps use.
    pub region: String,
    pub backing: Backing,
    /// `shared` (default false; must be true for shmem).
    pub shared: bool,
    /// `size` in bytes (a multiple of the page size).
    pub size: u64,
    /// `offset` into the file (file mappings only; default 0).
    pub file_offset: u64,
    /// `prot` (default "rw").
    pub prot: Prot,
    /// `madvise = [...]`: advice applied to the whole region right after
    /// the mmap (default none).
    pub advise: Vec<Madv>,
    /// `map = true`: report the region's per-page folio map at the end
    /// of every phase (default false).
    pub map: bool,
    /// `at`: the address to map at (a hint, as mmap(2) takes it; default:
    /// where the kernel would place the mapping).
    pub addr: Option<u64>,
}

/// The keys of an `op = "mremap"` step: mremap(2) of a whole region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MremapStep {
    /// `region`: from this step on it names the new range.
    pub region: String,
    /// `size`: the new size in bytes (a multiple of the page size; larger
    /// grows, smaller shrinks).
    pub size: u64,
    /// `at`: move the region to exactly this address (MREMAP_MAYMOVE |
    /// MREMAP_FIXED, which unmaps whatever was there).
    pub addr: Option<u64>,
    /// `maymove = true` (or `at`): MREMAP_MAYMOVE, the kernel may move the
    /// region when it cannot grow in place.
    pub maymove: bool,
}

/// The error names a madvise step's `errno` may expect (each its own
/// value, for [`crate::error::Ctx::choice`]).
pub const ERRNOS: &[(&str, &str)] = &[
    ("EINVAL", "EINVAL"),
    ("EAGAIN", "EAGAIN"),
    ("ENOMEM", "ENOMEM"),
    ("EBUSY", "EBUSY"),
    ("EPERM", "EPERM"),
    ("EFAULT", "EFAULT"),
    ("EIO", "EIO"),
];

#[derive(Clone, Debug)]
pub enum StepKind {
    /// `op = "mmap"`
    Mmap(MmapStep),
    /// `op = "touch"`
    Touch {
        region: String,
        access: Access,
        pattern: Pattern,
        range: Range,
        /// `unit` (default page).
        unit: TouchUnit,
        /// `data` (with `random_percent`): what a write leaves in the page.
        data: PageData,
    },
    /// `op = "madvise"`
    Madvise {
        region: String,
        advice: Madv,
        range: Range,
        /// `per_call`: bytes per madvise(2) call (a positive multiple of the
        /// page size). The range is advised in consecutive calls of this
        /// size, ascending, the last one shorter if the range is not a
        /// multiple of it. `None`: one call for the whole range.
        per_call: Option<u64>,
        /// `errno`: the step is expected to fail with this error (one of
        /// [`ERRNOS`]): the first call that fails must fail so, and ends
        /// the step; the run goes on. A step whose calls all succeed is an
        /// error.
        errno: Option<&'static str>,
    },
    /// `op = "munmap"`
    Munmap { region: String, range: Range },
    /// `op = "mremap"`: the whole region is resized, in place or moved.
    Mremap(MremapStep),
    /// `op = "fork"`: the child runs `child` steps at once (the parent waits
    /// for them), then stays alive, holding its mm, until the parent's
    /// `wait` step or the end of the scenario.
    Fork { child: Vec<Step> },
    /// `op = "wait"`: every live child of this process exits.
    Wait,
    /// `op = "phase"`, `name`: the measured phase `name` starts here (ending
    /// the current one). Steps before the first phase marker are set-up and
    /// are not reported.
    Phase { name: String },
    /// `op = "phase_end"`: the current phase ends; later steps are not
    /// measured until the next phase marker.
    PhaseEnd,
    /// `op = "memcg"`, optional `limit` (size): move this process into a new
    /// memory cgroup, with a memory limit (v1 `memory.limit_in_bytes`;
    /// unlimited without `limit`). Later charges of the process go there.
    /// `memsw_limit`: cgroup v1 `memory.memsw.limit_in_bytes`, the limit
    /// of memory and swap together (bytes; None: unlimited; at least
    /// `limit`). `zswap_max`: cgroup v2 `memory.zswap.max` (bytes of compressed
    /// data; None: unlimited). `swap_max`: cgroup v2 `memory.swap.max`
    /// (bytes of swap slots; None: `max`). `swap_high`: cgroup v2
    /// `memory.swap.high`, the swap throttling limit (bytes; None: `max`).
    /// `high`: cgroup v2 `memory.high`, the
    /// throttling limit (bytes; None: `max`). `min` and `low`: cgroup v2
    /// `memory.min` and `memory.low`, the protection from reclaim from
    /// outside the cgroup (bytes; 0: none).
    Memcg {
        limit: Option<u64>,
        memsw_limit: Option<u64>,
        zswap_max: Option<u64>,
        swap_max: Option<u64>,
        swap_high: Option<u64>,
        high: Option<u64>,
        min: u64,
        low: u64,
    },
    /// `op = "memcg_reclaim"`, `amount` (size), `swappiness` (0..200, or
    /// `"max"` as [`SWAPPINESS_ANON_ONLY`]): proactive reclaim of the
    /// process's memory cgroup (cgroup v2 `memory.reclaim`, its
    /// `swappiness=` argument).
    MemcgReclaim {
        amount: u64,
        swappiness: Option<u32>,
    },
    /// `op = "force_empty"`: reclaim everything of the process's memory
    /// cgroup (cgroup v1 `memory.force_empty`).
    ForceEmpty,
    /// `op = "memcg_limit"`, `limit` (size or `"max"`): write a new limit to
    /// the process's memory cgroup (v1 `memory.limit_in_bytes`, v2
    /// `memory.max`); `None` is unlimited.
    MemcgLimit { limit: Option<u64> },
    /// `op = "memcg_high"`, `high` (size or `"max"`): write a new
    /// memory.high to the process's memory cgroup (cgroup v2); `None` is
    /// `max`.
    MemcgHigh { high: Option<u64> },
    /// `op = "read"` / `"pread"` / `"write"` / `"pwrite"`: buffered I/O on a
    /// `[[file]]` through the process's descriptor of it.
    Io(IoStep),
    /// `op = "pagemap"`: read `/proc/self/pagemap` for a range of a region
    /// (top-level steps only).
    Pagemap(PagemapStep),
    /// `op = "threads"`: `count` threads of the process start, thread `i`
    /// pinned on CPU `i + 1` (the main thread is on CPU 0); each runs its
    /// steps (`[[step.thread]]`, already cut to the thread's slice), then
    /// `after` until the `join` step.
    Threads {
        count: u32,
        after: ThreadAfter,
        /// The steps of each thread, in thread order.
        threads: Vec<Vec<Step>>,
    },
    /// `op = "join"`: the threads exit; the main thread waits for them.
    Join,
    /// `op = "khugepaged"`, `full_scans` (1 to 100): khugepaged runs until
    /// its `full_scans` counter has advanced by this many (top-level steps
    /// only). The model's khugepaged runs only here; natively the step
    /// sets `scan_sleep_millisecs` to 0, waits, and sets it back.
    Khugepaged { full_scans: u32 },
}

/// An `op = "pagemap"` step: read the pagemap entries of `range` of
/// `region` with read(2) calls of `read_size` bytes and report their
/// summary as counters `pagemap/<name>/...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagemapStep {
    pub region: String,
    pub range: Range,
    /// `name` (default: the region's name): unique among pagemap steps.
    pub name: String,
    /// `read_size`: bytes per read(2), a non-zero multiple of 8 (default
    /// 4096, one PAGEMAP_WALK_SIZE chunk of 512 entries).
    pub read_size: u64,
    /// `raw = true`: the report keeps the raw entries (default false).
    pub raw: bool,
    /// `privileged` (default true): the reader has CAP_SYS_ADMIN and sees
    /// PFNs and swap offsets; false zeroes bits 0-54, as for an
    /// unprivileged reader.
    pub privileged: bool,
    /// `scan = true`: also run a PAGEMAP_SCAN ioctl over the range and
    /// report its regions and per-category page counts (default false).
    pub scan: bool,
    /// `kpageflags = true`: also count the `/proc/kpageflags` bits of the
    /// present pages (needs `privileged`; default false).
    pub kpageflags: bool,
}

/// The system call of an I/O step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoCall {
    /// `lseek(2)` to the offset, then read(2) calls.
    Read,
    /// pread64(2) calls at explicit offsets.
    Pread,
    /// `lseek(2)` to the offset, then write(2) calls.
    Write,
    /// pwrite64(2) calls at explicit offsets.
    Pwrite,
}

impl IoCall {
    /// Does the call write?
    pub fn writes(self) -> bool {
        matches!(self, IoCall::Write | IoCall::Pwrite)
    }
}

/// An I/O step: `count` passes over `[offset, offset + len)` of `file`, in
/// calls of `chunk` bytes each (the last one of a pass shorter), every one
/// through the descriptor the process holds for the file (opened read-write
/// before the first step, so its readahead state carries over from step to
/// step and fork children share it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoStep {
    pub call: IoCall,
    pub file: String,
    /// `offset` in bytes (default 0).
    pub offset: u64,
    /// `len` in bytes (default: to the end of the file); the range stays
    /// inside the file.
    pub len: u64,
    /// `read_size` / `write_size`: bytes per call (default 128 KiB for
    /// reads, 4 KiB for writes).
    pub chunk: u64,
    /// `count`: passes over the range (default 1).
    pub count: u32,
    /// `fsync = true` (writes only): fsync(2) after the last pass, so the
    /// written folios are clean when the step ends.
    pub fsync: bool,
}

/// What the threads of a `threads` step do after their steps, until the
/// `join` (`after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadAfter {
    /// `after = "spin"` (default): busy-wait in user space; the mm stays
    /// loaded and active on their CPUs.
    Spin,
    /// `after = "sleep"`: block; their CPUs go idle (lazy TLB).
    Sleep,
}

/// How far a measured value may be from the expected one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// `tolerance = 12` (absolute; default 0).
    Abs(f64),
    /// `tolerance = "5%"` (relative to the expected value).
    Rel(f64),
}

/// An `[[expect]]` table: `phase`, `counter`, `value`, `tolerance`.
/// `counter` is a counter name (`pgfault`,
/// `hugepages-64kB/anon_fault_alloc`, `sim/set_ptes`) or a folio-histogram
/// cell `folios/<region>/<bucket>`.
#[derive(Clone, Debug)]
pub struct Expect {
    pub loc: Loc,
    pub phase: String,
    pub counter: String,
    pub value: f64,
    pub tolerance: Tolerance,
}

/// `SWAPPINESS_ANON_ONLY` (mm/vmscan.c): memory.reclaim's `swappiness=max`,
/// anonymous pages only.
pub const SWAPPINESS_ANON_ONLY: u32 = 201;

//! A scenario compiled once into the syscall-level operations that every
//! engine executes: the simulator through the kernel model's system-call
//! entry points (`sys_mmap`, `sys_madvise`, `sys_munmap`, ...), the native
//! workload (on the host or in a guest kernel) by making the calls.
//!
//! Regions become numbers, ranges are resolved to (offset, length) inside
//! their region, random orders are computed in advance, mmap steps carry
//! their real `PROT_*` / `MAP_*` values and an address hint, advice its
//! `MADV_*` value. What a flag combination means (MAP_SHARED|MAP_ANONYMOUS
//! is shmem) is not decided here but by the kernel each engine runs.
//!
//! Everything that can be decided before a kernel is touched is decided
//! here, so that an unsupported step is refused before any host setting
//! changes, and so that the native workload allocates nothing while it is
//! measured.
//!
//! Address hints: the compiler lays the scenario's mappings out once with
//! the [`Placement`] its caller passes (the kernel model's
//! `__get_unmapped_area()`: top-down, THP alignment, from
//! `foliosim_sim::layout`), per process (a fork copies the layout). Every
//! engine passes these addresses to mmap(2) as hints, so the simulator and
//! the host map at the same addresses and see the same alignment, which
//! decides mTHP orders and fault-around windows.

#![forbid(unsafe_code)]

use std::collections::HashMap;

use std::fmt;

use foliosim_scenario::{
    Access, Backing, CacheFill, FileSpec, IoCall, IoStep, MmapStep, MremapStep, PageData,
    PagemapStep, Pattern, Range, Scenario, Step, StepKind, ThreadAfter, TouchUnit,
};
use foliosim_uapi::mman::{
    MAP_ANONYMOUS, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MREMAP_FIXED, MREMAP_MAYMOVE,
    PROT_EXEC, PROT_READ, PROT_WRITE,
};
use foliosim_uapi::Madv;

/// The base page size of every architecture foliosim runs (4 KiB granule).
pub use foliosim_uapi::PAGE_SIZE;
/// The PMD size with 4 KiB pages.
pub const PMD_SIZE: u64 = 2 << 20;

/// A step the compiler cannot turn into operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    /// `file:line:col` of the step.
    pub at: String,
    pub what: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}

impl std::error::Error for CompileError {}

/// What a named region is: one per mmap step (a later mmap step of the
/// same name is a new region that takes the name over) and one per mremap
/// step (the range the region's name stands for after it, in the process
/// that made the call).
#[derive(Clone, Debug)]
pub struct RegionDecl {
    pub name: String,
    pub size: u64,
    /// `map = true`: the engines report its folio map at every phase end.
    pub map: bool,
}

/// Which pages a touch accesses.
#[derive(Clone, Debug)]
pub enum Pat {
    Seq,
    Stride(u64),
    OnePerPt,
    /// Page indexes relative to the start of the range, in touch order.
    Random(Vec<u32>),
    /// `unit = "word"`, sequential: every 8-byte word, in address order.
    SeqWords,
    /// `unit = "word"`, random: 512 rounds over the pages in this order
    /// (the page-granular random order); round `r` loads word
    /// `((r mod 8) * 64 + r / 8 + i) mod 512` of the `i`-th page
    /// (docs/scenarios.md).
    RandomWords(Vec<u32>),
}

/// One operation of one process.
#[derive(Clone, Debug)]
pub enum Op {
    Mmap {
        step: u32,
        region: u32,
        /// `MAP_*` flags.
        flags: i32,
        /// `PROT_*` flags.
        prot: i32,
        /// The file of a file mapping: an index into `Workload::files`.
        file: Option<u32>,
        size: u64,
        file_offset: u64,
        /// Advice applied to the whole mapping right after the mmap (part
        /// of the step, not a separate madvise step).
        advise: Vec<Madv>,
        /// The address the simulator gives this mapping, passed to mmap(2)
        /// as a hint so both engines see the same alignment (see
        /// [`AddrModel`]).
        hint: u64,
    },
    Touch {
        step: u32,
        region: u32,
        offset: u64,
        len: u64,
        write: bool,
        /// `write-zero`: the stored byte is 0.
        zero: bool,
        /// `data`: what a write leaves in each page (whole-page stores
        /// unless [`PageData::Store`]).
        data: PageData,
        pat: Pat,
    },
    Madvise {
        step: u32,
        region: u32,
        offset: u64,
        len: u64,
        advice: Madv,
        /// Bytes per madvise(2) call (`per_call`; `len` when not given):
        /// the range is advised in consecutive calls of this size.
        per_call: u64,
        /// `errno`: the error the step expects (its first failing call
        /// must fail so and ends the step; no failure is an error).
        errno: Option<&'static str>,
    },
    Munmap {
        step: u32,
        region: u32,
        offset: u64,
        len: u64,
    },
    /// mremap(2) of the whole of `region` (`old_len` bytes) to `new_len`
    /// bytes with `MREMAP_*` `flags` (and `new_addr` with MREMAP_FIXED);
    /// the result is region `new_region`, which later steps of this
    /// process use.
    Mremap {
        step: u32,
        region: u32,
        new_region: u32,
        old_len: u64,
        new_len: u64,
        flags: i32,
        new_addr: u64,
        /// Where the simulator's layout puts the result (0: unknown). With
        /// MREMAP_MAYMOVE and no MREMAP_FIXED a host kernel chooses for
        /// itself (its mmap base differs from the model's).
        expect: u64,
    },
    Fork {
        step: u32,
        child: Vec<Op>,
    },
    /// Run khugepaged until its `full_scans` counter advanced by
    /// `full_scans`.
    Khugepaged {
        step: u32,
        full_scans: u32,
    },
    Wait {
        step: u32,
    },
    Phase {
        step: u32,
        idx: u32,
    },
    PhaseEnd {
        step: u32,
    },
    /// Move this process into memory cgroup `cg` (an index into
    /// `Plan::memcgs`, created by the engine before the workload starts).
    Memcg {
        step: u32,
        cg: u32,
    },
    /// Reclaim `amount` bytes of memory cgroup `cg`, at memory.reclaim's
    /// `swappiness` if given (201: `max`).
    MemcgReclaim {
        step: u32,
        cg: u32,
        amount: u64,
        swappiness: Option<u32>,
    },
    /// Reclaim all of memory cgroup `cg` (cgroup v1 memory.force_empty).
    ForceEmpty {
        step: u32,
        cg: u32,
    },
    /// Write a new limit (None: unlimited) to memory cgroup `cg`
    /// (`memory.limit_in_bytes` / `memory.max`).
    MemcgLimit {
        step: u32,
        cg: u32,
        limit: Option<u64>,
    },
    /// Write a new memory.high (None: `max`) to memory cgroup `cg`
    /// (cgroup v2).
    MemcgHigh {
        step: u32,
        cg: u32,
        high: Option<u64>,
    },
    /// Buffered I/O on file `file` (an index into `Workload::files`)
    /// through the process's descriptor of it: `count` passes over
    /// `[offset, offset + len)` in calls of at most `chunk` bytes (read and
    /// write seek to `offset` first, pread and pwrite pass the position),
    /// then fsync(2) if `fsync`.
    Io {
        step: u32,
        file: u32,
        call: IoCall,
        offset: u64,
        len: u64,
        chunk: u64,
        count: u32,
        fsync: bool,
    },
    /// Pagemap step `idx` (an index into `Plan::pagemaps`): the engine
    /// reads the workload's pagemap while the workload waits.
    Pagemap {
        step: u32,
        idx: u32,
    },
    /// `op = "threads"`: thread `i` (on the host CPU the engine maps to the
    /// simulator's CPU `i + 1`) runs
    /// `threads[i]` (touch, madvise, munmap only; split touches already cut
    /// to its slice), one thread after the other, then spins or sleeps
    /// until the `join`.
    Threads {
        step: u32,
        sleep: bool,
        threads: Vec<Vec<Op>>,
    },
    /// `op = "join"`: the threads of the last threads step stop.
    Join {
        step: u32,
    },
}

impl Op {
    /// The index of the step this operation comes from (into
    /// `Workload::locs`).
    pub fn step(&self) -> u32 {
        match self {
            Op::Mmap { step, .. }
            | Op::Touch { step, .. }
            | Op::Madvise { step, .. }
            | Op::Munmap { step, .. }
            | Op::Mremap { step, .. }
            | Op::Fork { step, .. }
            | Op::Wait { step }
            | Op::Phase { step, .. }
            | Op::PhaseEnd { step }
            | Op::Memcg { step, .. }
            | Op::MemcgReclaim { step, .. }
            | Op::ForceEmpty { step, .. }
            | Op::MemcgLimit { step, .. }
            | Op::MemcgHigh { step, .. }
            | Op::Io { step, .. }
            | Op::Pagemap { step, .. }
            | Op::Threads { step, .. }
            | Op::Khugepaged { step, .. }
            | Op::Join { step } => *step,
        }
    }

    /// The scenario-region range `(region, offset, len)` a touch, madvise
    /// or munmap operates on; None for the other operations.
    pub fn region_range(&self) -> Option<(u32, u64, u64)> {
        match *self {
            Op::Touch {
                region,
                offset,
                len,
                ..
            }
            | Op::Madvise {
                region,
                offset,
                len,
                ..
            }
            | Op::Munmap {
                region,
                offset,
                len,
                ..
            } => Some((region, offset, len)),
            _ => None,
        }
    }
}

/// A pagemap step: its keys and the range as (region, offset, length).
#[derive(Clone, Debug)]
pub struct PagemapDecl {
    pub step: foliosim_scenario::PagemapStep,
    pub region: u32,
    pub offset: u64,
    pub len: u64,
}

/// A memory cgroup one `memcg` step makes.
#[derive(Clone, Debug)]
pub struct MemcgDecl {
    /// Where the step is (for messages).
    pub at: String,
    /// Its `limit` (None: unlimited).
    pub limit: Option<u64>,
    /// Its `zswap_max` (cgroup v2 `memory.zswap.max`; None: unlimited).
    pub zswap_max: Option<u64>,
    /// Its `memsw_limit` (cgroup v1 `memory.memsw.limit_in_bytes`; None:
    /// unlimited).
    pub memsw_limit: Option<u64>,
    /// Its `swap_max` (cgroup v2 `memory.swap.max`; None: `max`).
    pub swap_max: Option<u64>,
    /// Its `swap_high` (cgroup v2 `memory.swap.high`; None: `max`).
    pub swap_high: Option<u64>,
    /// Its `high` (cgroup v2 `memory.high`; None: `max`).
    pub high: Option<u64>,
    /// Its `min` and `low` (cgroup v2 `memory.min`, `memory.low`; 0:
    /// none).
    pub min: u64,
    pub low: u64,
}

/// The whole compiled scenario.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The `[[file]]`s, created before the first operation.
    pub files: Vec<FileSpec>,
    pub regions: Vec<RegionDecl>,
    /// `file:line:col` of every step, indexed by the ops' `step`.
    pub locs: Vec<String>,
    pub phases: Vec<String>,
    pub root: Vec<Op>,
    /// The largest number of forks one process makes (its child table).
    pub max_children: usize,
    /// Bytes of anonymous or shmem memory the scenario maps (for warming
    /// host memory before a phase, docs/fidelity.md, "Host behaviours").
    pub anon_bytes: u64,
    /// Does the scenario map a file?
    pub maps_files: bool,
    /// Does it advise MADV_WILLNEED while it maps a file (a file mapping's
    /// readahead then depends on the device's `max_sectors_kb`)?
    pub willneed_files: bool,
    /// The most pages one read(2) call of an I/O step or a `fill = "read"`
    /// may span (a call larger than the file's readahead window reads
    /// ahead as far as the device's `max_sectors_kb` allows).
    pub max_read_pages: u64,
    /// The memory cgroups of the `memcg` steps, in step order.
    pub memcgs: Vec<MemcgDecl>,
    /// The first `memcg_reclaim` step, if any.
    pub reclaim_at: Option<String>,
    /// The first `memcg_reclaim` step with a `swappiness`, if any (cgroup
    /// v1 has no memory.reclaim to pass it to).
    pub reclaim_swappiness_at: Option<String>,
    /// The first `force_empty` step, if any.
    pub force_empty_at: Option<String>,
    /// The first `memcg_high` step, if any (cgroup v1 has no
    /// memory.high).
    pub high_at: Option<String>,
    /// The pagemap steps, in step order.
    pub pagemaps: Vec<PagemapDecl>,
    /// Per file: does an I/O step use it? (Every process holds a
    /// descriptor of each such file from the start, opened read-write
    /// before the first step.)
    pub io_files: Vec<bool>,
    /// The largest bytes per call of an I/O step (0: none), the size of
    /// the workload's I/O buffer.
    pub max_io_chunk: u64,
    /// The largest `count` of a threads step (0: the scenario starts no
    /// thread), and where that step is.
    pub max_threads: usize,
    pub threads_at: Option<String>,
}

/// Where mappings go: the layout pass that gives every mmap its address
/// hint. The compiler calls it for every mmap, munmap, fork and wait of
/// the scenario in step order; it answers where a mapping made without a
/// hint would be placed in the process being compiled.
pub trait Placement {
    /// The address mmap(2) without a hint gives this mapping (the
    /// `PROT_*`/`MAP_*` values, the `[[file]]` index, the size and file
    /// offset) in the current process; 0 when it cannot say.
    /// With `addr` (the step's `at`), the address mmap(2) gives a mapping
    /// asked for there.
    fn mmap(
        &mut self,
        addr: u64,
        prot: i32,
        flags: i32,
        file: Option<u32>,
        size: u64,
        offset: u64,
    ) -> u64;
    /// munmap(2) of `len` bytes at `addr` in the current process.
    fn munmap(&mut self, addr: u64, len: u64);
    /// mremap(2) of `[addr, addr + old_len)` to `new_len` bytes with
    /// `MREMAP_*` `flags` (`new_addr` with MREMAP_FIXED) in the current
    /// process: Ok(the new address, 0 when it cannot say), or Err(why the
    /// call fails there). With MREMAP_FIXED the target must be free
    /// (the scenario's `at` never replaces a mapping).
    fn mremap(
        &mut self,
        addr: u64,
        old_len: u64,
        new_len: u64,
        flags: i32,
        new_addr: u64,
    ) -> Result<u64, String>;
    /// A fork: the current process becomes a copy of itself until
    /// [`Placement::end_child`]. Err: why the copy failed.
    fn fork(&mut self) -> Result<(), String>;
    /// The child's steps are compiled: the parent is current again.
    fn end_child(&mut self);
    /// A `wait` step: the current process's children exit.
    fn wait(&mut self);
}

/// A placement that gives no hints: every mmap lets the kernel choose
/// (for tools that run a workload on one engine only).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHints;

impl Placement for NoHints {
    fn mmap(&mut self, addr: u64, _: i32, _: i32, _: Option<u32>, _: u64, _: u64) -> u64 {
        addr
    }
    fn munmap(&mut self, _: u64, _: u64) {}
    fn mremap(&mut self, _: u64, _: u64, _: u64, _: i32, _: u64) -> Result<u64, String> {
        Ok(0)
    }
    fn fork(&mut self) -> Result<(), String> {
        Ok(())
    }
    fn end_child(&mut self) {}
    fn wait(&mut self) {}
}

/// The placement of a compile and the address of every region so far.
struct AddrModel<'p> {
    place: &'p mut dyn Placement,
    regions: HashMap<String, u64>,
    /// What each mremap step replaced, in step order: the name, its region
    /// and address before. A fork's child undoes its own on return, so the
    /// parent's steps name the parent's region.
    remapped: Vec<(String, Option<u32>, Option<u64>)>,
}

struct Compiler<'a> {
    addr: AddrModel<'a>,
    regions: Vec<RegionDecl>,
    by_name: HashMap<String, u32>,
    /// The index of each `[[file]]` by name.
    file_idx: HashMap<&'a str, u32>,
    locs: Vec<String>,
    phases: Vec<String>,
    max_children: usize,
    anon_bytes: u64,
    maps_files: bool,
    willneed: bool,
    max_read_pages: u64,
    memcgs: Vec<MemcgDecl>,
    /// The memory cgroup the process being compiled is in (None: the
    /// engine's).
    cur_memcg: Option<u32>,
    reclaim_at: Option<String>,
    reclaim_swappiness_at: Option<String>,
    force_empty_at: Option<String>,
    high_at: Option<String>,
    pagemaps: Vec<PagemapDecl>,
    io_files: Vec<bool>,
    max_io_chunk: u64,
    max_threads: usize,
    threads_at: Option<String>,
}

/// The most pages a read(2) of `chunk` bytes may span in a pass of such
/// calls from `offset`: one more than its whole pages where the calls are
/// not page-aligned.
fn read_call_pages(offset: u64, chunk: u64) -> u64 {
    let aligned = offset.is_multiple_of(PAGE_SIZE) && chunk.is_multiple_of(PAGE_SIZE);
    chunk.div_ceil(PAGE_SIZE) + u64::from(!aligned)
}

/// Compile a validated scenario, placing its mappings with `place` (see
/// [`Placement`]; its files are the scenario's `[[file]]`s in order).
pub fn compile(sc: &Scenario, place: &mut dyn Placement) -> Result<Workload, CompileError> {
    let mut c = Compiler {
        addr: AddrModel {
            place,
            regions: HashMap::new(),
            remapped: Vec::new(),
        },
        regions: Vec::new(),
        by_name: HashMap::new(),
        file_idx: (sc.files.iter().enumerate())
            .map(|(i, f)| (f.name.as_str(), i as u32))
            .collect(),
        locs: Vec::new(),
        phases: Vec::new(),
        max_children: 0,
        anon_bytes: 0,
        maps_files: false,
        willneed: false,
        max_read_pages: (sc.files.iter())
            .filter_map(|f| match f.fill {
                CacheFill::Read { read_size } => Some(read_call_pages(0, read_size)),
                _ => None,
            })
            .max()
            .unwrap_or(0),
        memcgs: Vec::new(),
        cur_memcg: None,
        reclaim_at: None,
        reclaim_swappiness_at: None,
        force_empty_at: None,
        high_at: None,
        pagemaps: Vec::new(),
        io_files: vec![false; sc.files.len()],
        max_io_chunk: 0,
        max_threads: 0,
        threads_at: None,
    };
    let root = c.steps(&sc.steps)?;
    Ok(Workload {
        files: sc.files.clone(),
        regions: c.regions,
        locs: c.locs,
        phases: c.phases,
        root,
        max_children: c.max_children,
        anon_bytes: c.anon_bytes,
        maps_files: c.maps_files,
        willneed_files: c.willneed && c.maps_files,
        max_read_pages: c.max_read_pages,
        memcgs: c.memcgs,
        reclaim_at: c.reclaim_at,
        reclaim_swappiness_at: c.reclaim_swappiness_at,
        force_empty_at: c.force_empty_at,
        high_at: c.high_at,
        pagemaps: c.pagemaps,
        io_files: c.io_files,
        max_io_chunk: c.max_io_chunk,
        max_threads: c.max_threads,
        threads_at: c.threads_at,
    })
}

impl Compiler<'_> {
    /// Where the kernel model places this mapping without a hint (0 if it
    /// cannot say).
    fn layout_address(
        &mut self,
        addr: u64,
        prot: i32,
        flags: i32,
        file: Option<u32>,
        size: u64,
        offset: u64,
    ) -> u64 {
        self.addr.place.mmap(addr, prot, flags, file, size, offset)
    }

    fn steps(&mut self, steps: &[Step]) -> Result<Vec<Op>, CompileError> {
        let forks = steps
            .iter()
            .filter(|s| matches!(s.kind, StepKind::Fork { .. }))
            .count();
        self.max_children = self.max_children.max(forks);
        steps.iter().map(|s| self.step(s)).collect()
    }

    fn region(&self, name: &str, at: &str) -> Result<(u32, u64), CompileError> {
        let &id = self.by_name.get(name).ok_or_else(|| CompileError {
            at: at.to_string(),
            what: format!("region {name:?} is not mapped by an earlier step"),
        })?;
        Ok((id, self.regions[id as usize].size))
    }

    fn range(&self, size: u64, r: &Range, at: &str) -> Result<(u64, u64), CompileError> {
        let len = r.len.unwrap_or(size.saturating_sub(r.offset));
        if r.offset.checked_add(len).is_none_or(|e| e > size) {
            return Err(CompileError {
                at: at.to_string(),
                what: format!("range {:#x}+{len:#x} is outside the region", r.offset),
            });
        }
        Ok((r.offset, len))
    }

    /// One step: its location is recorded, then each kind compiles to its
    /// operation.
    fn step(&mut self, s: &Step) -> Result<Op, CompileError> {
        let step = self.locs.len() as u32;
        self.locs.push(s.loc.to_string());
        Ok(match &s.kind {
            StepKind::Mmap(m) => self.mmap(step, m)?,
            StepKind::Touch { .. } => self.touch(step, &s.kind)?,
            StepKind::Madvise {
                region,
                advice,
                range,
                per_call,
                errno,
            } => self.madvise(step, region, range, *advice, *per_call, *errno)?,
            StepKind::Munmap { region, range } => self.munmap(step, region, range)?,
            StepKind::Mremap(m) => self.mremap(step, m)?,
            StepKind::Fork { child } => self.fork(step, child)?,
            StepKind::Wait => {
                self.addr.place.wait();
                Op::Wait { step }
            }
            StepKind::Phase { name } => {
                let idx = self.phases.len() as u32;
                self.phases.push(name.clone());
                Op::Phase { step, idx }
            }
            StepKind::PhaseEnd => Op::PhaseEnd { step },
            StepKind::Memcg {
                limit,
                memsw_limit,
                zswap_max,
                swap_max,
                swap_high,
                high,
                min,
                low,
            } => {
                let decl = MemcgDecl {
                    at: self.at(step).to_string(),
                    limit: *limit,
                    memsw_limit: *memsw_limit,
                    zswap_max: *zswap_max,
                    swap_max: *swap_max,
                    swap_high: *swap_high,
                    high: *high,
                    min: *min,
                    low: *low,
                };
                self.memcg_step(step, decl)
            }
            StepKind::MemcgReclaim { amount, swappiness } => {
                self.memcg_reclaim(step, *amount, *swappiness)?
            }
            StepKind::ForceEmpty => self.force_empty(step)?,
            StepKind::MemcgLimit { limit } => Op::MemcgLimit {
                step,
                cg: self.memcg(self.at(step))?,
                limit: *limit,
            },
            StepKind::MemcgHigh { high } => {
                let at = self.at(step).to_string();
                self.high_at.get_or_insert_with(|| at.clone());
                Op::MemcgHigh {
                    step,
                    cg: self.memcg(&at)?,
                    high: *high,
                }
            }
            StepKind::Io(io) => self.io(step, io)?,
            StepKind::Pagemap(p) => self.pagemap(step, p)?,
            StepKind::Threads {
                count,
                after,
                threads,
            } => self.threads(step, *count, *after, threads)?,
            StepKind::Join => Op::Join { step },
            StepKind::Khugepaged { full_scans } => Op::Khugepaged {
                step,
                full_scans: *full_scans,
            },
        })
    }

    /// `file:line:col` of step `step`.
    fn at(&self, step: u32) -> &str {
        &self.locs[step as usize]
    }

    /// An mmap step: its `PROT_*` and `MAP_*` values, the address the
    /// layout model gives it, and a new region taking the name over.
    fn mmap(&mut self, step: u32, m: &MmapStep) -> Result<Op, CompileError> {
        let at = self.at(step).to_string();
        let mut p = 0;
        for (on, bit) in [
            (m.prot.read, PROT_READ),
            (m.prot.write, PROT_WRITE),
            (m.prot.exec, PROT_EXEC),
        ] {
            if on {
                p |= bit;
            }
        }
        let share = if m.shared { MAP_SHARED } else { MAP_PRIVATE };
        let (flags, file) = match &m.backing {
            Backing::Anon => (share | MAP_ANONYMOUS, None),
            // `kind = "shmem"` is the language's name for
            // MAP_SHARED|MAP_ANONYMOUS (the parser requires shared).
            Backing::Shmem => (MAP_SHARED | MAP_ANONYMOUS, None),
            Backing::File { file } => {
                let idx = self.file_index(file, &at)?;
                self.maps_files = true;
                (share, Some(idx))
            }
        };
        // Memory the mapping may populate beyond the page cache:
        // anonymous and shmem pages, private copies of file pages.
        if file.is_none() || (m.prot.write && !m.shared) {
            self.anon_bytes = self.anon_bytes.saturating_add(m.size);
        }
        // `at`: exactly there (MAP_FIXED_NOREPLACE), or the step fails.
        let flags = flags | m.addr.map_or(0, |_| MAP_FIXED_NOREPLACE);
        let hint = self.layout_address(m.addr.unwrap_or(0), p, flags, file, m.size, m.file_offset);
        if let Some(want) = m.addr {
            if hint != want {
                return Err(CompileError {
                    at,
                    what: format!(
                        "at = {want:#x}: [{want:#x}, {:#x}) overlaps a region an earlier step \
                         mapped (at is MAP_FIXED_NOREPLACE)",
                        want + m.size
                    ),
                });
            }
        }
        self.addr.regions.insert(m.region.to_string(), hint);
        let id = self.regions.len() as u32;
        self.regions.push(RegionDecl {
            name: m.region.to_string(),
            size: m.size,
            map: m.map,
        });
        self.by_name.insert(m.region.to_string(), id);
        self.willneed |= m.advise.contains(&Madv::Willneed);
        Ok(Op::Mmap {
            step,
            region: id,
            flags,
            prot: p,
            file,
            size: m.size,
            file_offset: m.file_offset,
            advise: m.advise.to_vec(),
            hint,
        })
    }

    /// The region a step names and its range inside it, as (region,
    /// offset, length).
    fn region_range(
        &self,
        step: u32,
        region: &str,
        range: &Range,
    ) -> Result<(u32, u64, u64), CompileError> {
        let at = self.at(step);
        let (id, size) = self.region(region, at)?;
        let (offset, len) = self.range(size, range, at)?;
        Ok((id, offset, len))
    }

    /// A touch step: its pages in touch order.
    fn touch(&mut self, step: u32, kind: &StepKind) -> Result<Op, CompileError> {
        let StepKind::Touch {
            region,
            access,
            pattern,
            range,
            unit,
            data,
        } = kind
        else {
            unreachable!("a touch step");
        };
        let (access, unit, data) = (*access, *unit, *data);
        let (id, offset, len) = self.region_range(step, region, range)?;
        let pat = match pattern {
            Pattern::Sequential => Pat::Seq,
            Pattern::Stride { stride } => Pat::Stride((*stride).max(1)),
            Pattern::List(pages) => Pat::Random(pages.clone()),
            Pattern::OnePerPageTable => Pat::OnePerPt,
            Pattern::Random { seed } => {
                let n = u32::try_from(len / PAGE_SIZE).map_err(|_| CompileError {
                    at: self.at(step).to_string(),
                    what: "random touch of more than 2^32 pages".into(),
                })?;
                Pat::Random(foliosim_scenario::random_order(n, *seed))
            }
        };
        // The parser allows words only for reads, sequential or random.
        let pat = match (unit, pat) {
            (TouchUnit::Word, Pat::Seq) => Pat::SeqWords,
            (TouchUnit::Word, Pat::Random(order)) => Pat::RandomWords(order),
            (_, pat) => pat,
        };
        Ok(Op::Touch {
            step,
            region: id,
            offset,
            len,
            write: access != Access::Read,
            zero: access == Access::WriteZero,
            data,
            pat,
        })
    }

    /// A madvise step: the range and the bytes per call.
    fn madvise(
        &mut self,
        step: u32,
        region: &str,
        range: &Range,
        advice: Madv,
        per_call: Option<u64>,
        errno: Option<&'static str>,
    ) -> Result<Op, CompileError> {
        let (id, offset, len) = self.region_range(step, region, range)?;
        self.willneed |= advice == Madv::Willneed;
        Ok(Op::Madvise {
            step,
            region: id,
            offset,
            len,
            advice,
            per_call: per_call.unwrap_or(len),
            errno,
        })
    }

    /// A munmap step; the layout model unmaps the range too, so later
    /// mappings may take its place.
    fn munmap(&mut self, step: u32, region: &str, range: &Range) -> Result<Op, CompileError> {
        let (id, offset, len) = self.region_range(step, region, range)?;
        if let Some(&base) = self.addr.regions.get(region) {
            self.addr.place.munmap(base + offset, len);
        }
        Ok(Op::Munmap {
            step,
            region: id,
            offset,
            len,
        })
    }

    /// An mremap step: its flags, the address the layout gives the result
    /// (refused here when the call fails there), and a new region taking
    /// the name over with the new size.
    fn mremap(&mut self, step: u32, m: &MremapStep) -> Result<Op, CompileError> {
        let at = self.at(step).to_string();
        let (id, old_len) = self.region(&m.region, &at)?;
        let flags = match (m.addr, m.maymove) {
            (Some(_), _) => MREMAP_MAYMOVE | MREMAP_FIXED,
            (None, true) => MREMAP_MAYMOVE,
            (None, false) => 0,
        };
        let new_addr = m.addr.unwrap_or(0);
        let base = self.addr.regions.get(&m.region).copied();
        let expect = match base {
            Some(b) => self.addr.place.mremap(b, old_len, m.size, flags, new_addr),
            None => Ok(0),
        };
        let expect = expect.map_err(|what| CompileError {
            at: at.clone(),
            what: format!("mremap of region {:?} fails: {what}", m.region),
        })?;
        let map = self.regions[id as usize].map;
        // The growth may be populated (counted as anonymous memory, which
        // only overestimates a file mapping's).
        self.anon_bytes = self
            .anon_bytes
            .saturating_add(m.size.saturating_sub(old_len));
        let new_region = self.regions.len() as u32;
        self.regions.push(RegionDecl {
            name: m.region.clone(),
            size: m.size,
            map,
        });
        let old = self.by_name.insert(m.region.clone(), new_region);
        let old_base = match expect {
            0 => self.addr.regions.remove(&m.region),
            a => self.addr.regions.insert(m.region.clone(), a),
        };
        (self.addr.remapped).push((m.region.clone(), old, old_base));
        Ok(Op::Mremap {
            step,
            region: id,
            new_region,
            old_len,
            new_len: m.size,
            flags,
            new_addr,
            expect,
        })
    }

    /// Undo the mremap steps after the first `keep` (a fork's child's):
    /// the names stand for the parent's regions again.
    fn undo_remaps(&mut self, keep: usize) {
        while self.addr.remapped.len() > keep {
            let Some((name, id, base)) = self.addr.remapped.pop() else {
                break;
            };
            match id {
                Some(id) => self.by_name.insert(name.clone(), id),
                None => self.by_name.remove(&name),
            };
            match base {
                Some(b) => self.addr.regions.insert(name, b),
                None => self.addr.regions.remove(&name),
            };
        }
    }

    /// A fork step: the child's steps compile in a copy of the parent's
    /// layout and memory cgroup, which the parent gets back afterwards.
    fn fork(&mut self, step: u32, child: &[Step]) -> Result<Op, CompileError> {
        self.addr.place.fork().map_err(|what| CompileError {
            at: self.at(step).to_string(),
            what,
        })?;
        let memcg = self.cur_memcg;
        let remapped = self.addr.remapped.len();
        let child = self.steps(child);
        self.cur_memcg = memcg;
        self.undo_remaps(remapped);
        self.addr.place.end_child();
        let mut child = child?;
        // A phase the child opened ends with its last step.
        if child.iter().any(|op| matches!(op, Op::Phase { .. })) {
            child.push(Op::PhaseEnd { step });
        }
        Ok(Op::Fork { step, child })
    }

    /// A memcg step: a new memory cgroup, which the process (and the
    /// children it forks later) is in from here.
    fn memcg_step(&mut self, step: u32, decl: MemcgDecl) -> Op {
        let cg = self.memcgs.len() as u32;
        self.memcgs.push(decl);
        self.cur_memcg = Some(cg);
        Op::Memcg { step, cg }
    }

    /// A memcg_reclaim step (the first one is remembered for engines that
    /// cannot run it).
    fn memcg_reclaim(
        &mut self,
        step: u32,
        amount: u64,
        swappiness: Option<u32>,
    ) -> Result<Op, CompileError> {
        let at = self.at(step).to_string();
        self.reclaim_at.get_or_insert_with(|| at.clone());
        if swappiness.is_some() {
            self.reclaim_swappiness_at.get_or_insert_with(|| at.clone());
        }
        Ok(Op::MemcgReclaim {
            step,
            cg: self.memcg(&at)?,
            amount,
            swappiness,
        })
    }

    /// A force_empty step (the first one is remembered for engines that
    /// cannot run it).
    fn force_empty(&mut self, step: u32) -> Result<Op, CompileError> {
        let at = self.at(step).to_string();
        self.force_empty_at.get_or_insert_with(|| at.clone());
        Ok(Op::ForceEmpty {
            step,
            cg: self.memcg(&at)?,
        })
    }

    /// An I/O step: its file is opened by every process, and its chunk
    /// sizes the I/O buffer.
    fn io(&mut self, step: u32, io: &IoStep) -> Result<Op, CompileError> {
        let idx = self.file_index(&io.file, self.at(step))?;
        self.io_files[idx as usize] = true;
        self.max_io_chunk = self.max_io_chunk.max(io.chunk);
        if !io.call.writes() {
            self.max_read_pages = (self.max_read_pages).max(read_call_pages(io.offset, io.chunk));
        }
        Ok(Op::Io {
            step,
            file: idx,
            call: io.call,
            offset: io.offset,
            len: io.len,
            chunk: io.chunk,
            count: io.count,
            fsync: io.fsync,
        })
    }

    /// A pagemap step: its range resolved inside its region.
    fn pagemap(&mut self, step: u32, p: &PagemapStep) -> Result<Op, CompileError> {
        let (region, offset, len) = self.region_range(step, &p.region, &p.range)?;
        let idx = self.pagemaps.len() as u32;
        self.pagemaps.push(PagemapDecl {
            step: p.clone(),
            region,
            offset,
            len,
        });
        Ok(Op::Pagemap { step, idx })
    }

    /// A threads step: each thread's steps, and the largest thread count
    /// of the scenario.
    fn threads(
        &mut self,
        step: u32,
        count: u32,
        after: ThreadAfter,
        threads: &[Vec<Step>],
    ) -> Result<Op, CompileError> {
        if count as usize > self.max_threads {
            self.max_threads = count as usize;
            self.threads_at = Some(self.at(step).to_string());
        }
        // The simulator runs thread 0's steps, then thread 1's, ...:
        // compiled in that order, so the address model sees a
        // thread's munmap where the simulator does.
        let threads = threads
            .iter()
            .map(|steps| steps.iter().map(|s| self.step(s)).collect())
            .collect::<Result<Vec<Vec<Op>>, CompileError>>()?;
        Ok(Op::Threads {
            step,
            sleep: after == ThreadAfter::Sleep,
            threads,
        })
    }

    /// The index of the `[[file]]` named `name`.
    fn file_index(&self, name: &str, at: &str) -> Result<u32, CompileError> {
        let idx = self.file_idx.get(name).copied();
        idx.ok_or_else(|| CompileError {
            at: at.to_string(),
            what: format!("no [[file]] named {name:?}"),
        })
    }

    /// The memory cgroup a reclaim step acts on: the process's, which a
    /// memcg step made (the scenario crate checks there is one).
    fn memcg(&self, at: &str) -> Result<u32, CompileError> {
        self.cur_memcg.ok_or_else(|| CompileError {
            at: at.to_string(),
            what: "the process is not in a memory cgroup of the scenario (no memcg step before \
                   this one); the native engine never reclaims the host's cgroups"
                .into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A placement that records the calls and places nothing.
    #[derive(Default)]
    struct Calls(Vec<String>);

    impl Placement for Calls {
        fn mmap(&mut self, _: u64, _: i32, _: i32, _: Option<u32>, size: u64, _: u64) -> u64 {
            self.0.push(format!("mmap {size:#x}"));
            0
        }
        fn munmap(&mut self, addr: u64, len: u64) {
            self.0.push(format!("munmap {addr:#x}+{len:#x}"));
        }
        fn mremap(&mut self, a: u64, old: u64, new: u64, f: i32, to: u64) -> Result<u64, String> {
            self.0
                .push(format!("mremap {a:#x}+{old:#x} {new:#x} {f} {to:#x}"));
            Ok(0)
        }
        fn fork(&mut self) -> Result<(), String> {
            self.0.push("fork".into());
            Ok(())
        }
        fn end_child(&mut self) {
            self.0.push("end_child".into());
        }
        fn wait(&mut self) {
            self.0.push("wait".into());
        }
    }

    fn plan(text: &str) -> Result<Workload, CompileError> {
        let sc = foliosim_scenario::parse_str("t.toml", text, &[]).expect("valid scenario");
        compile(&sc, &mut Calls::default())
    }

    /// The placement sees every mapping change in step order, a child's
    /// between its fork and the return to the parent.
    #[test]
    fn placement_follows_the_steps() {
        let text = "[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"64K\"\n\
                    [[step]]\nop = \"fork\"\n[[step.child]]\nop = \"munmap\"\nregion = \"a\"\n\
                    len = \"8K\"\n[[step]]\nop = \"wait\"\n";
        let sc = foliosim_scenario::parse_str("t.toml", text, &[]).expect("valid scenario");
        let mut calls = Calls::default();
        compile(&sc, &mut calls).unwrap();
        assert_eq!(
            calls.0,
            [
                "mmap 0x10000",
                "fork",
                "munmap 0x0+0x2000",
                "end_child",
                "wait"
            ]
        );
    }

    /// An mremap step makes a new region of the new size that later steps
    /// name; a child's mremap leaves the parent's steps on the parent's
    /// region. `at` is MREMAP_MAYMOVE | MREMAP_FIXED (include/uapi/linux/
    /// mman.h: 1 | 2), `maymove` MREMAP_MAYMOVE alone.
    #[test]
    fn mremap_names_a_new_region_in_its_process() {
        let p = plan(
            r#"
[[step]]
op = "mmap"
region = "a"
kind = "anon"
size = "64K"
[[step]]
op = "fork"
[[step.child]]
op = "mremap"
region = "a"
size = "128K"
at = 0x400000000000
[[step.child]]
op = "touch"
region = "a"
access = "write"
[[step]]
op = "touch"
region = "a"
access = "write"
[[step]]
op = "mremap"
region = "a"
size = "32K"
maymove = true
"#,
        )
        .unwrap();
        assert_eq!(p.regions.len(), 3);
        let Op::Fork { child, .. } = &p.root[1] else {
            panic!("{:?}", p.root[1]);
        };
        assert!(matches!(
            child[0],
            Op::Mremap {
                region: 0,
                new_region: 1,
                old_len: 0x10000,
                new_len: 0x20000,
                flags: 3,
                new_addr: 0x4000_0000_0000,
                ..
            }
        ));
        assert!(matches!(
            child[1],
            Op::Touch {
                region: 1,
                len: 0x20000,
                ..
            }
        ));
        assert!(matches!(
            p.root[2],
            Op::Touch {
                region: 0,
                len: 0x10000,
                ..
            }
        ));
        assert!(matches!(
            p.root[3],
            Op::Mremap {
                region: 0,
                new_region: 2,
                flags: 1,
                new_addr: 0,
                ..
            }
        ));
        assert_eq!(p.regions[2].size, 32 << 10);
    }

    #[test]
    fn word_touches_compile_to_word_patterns_with_the_page_order() {
        let p = plan(
            r#"
seed = 3
[[step]]
op = "mmap"
region = "a"
kind = "anon"
size = "64K"
[[step]]
op = "touch"
region = "a"
access = "read"
unit = "word"
[[step]]
op = "touch"
region = "a"
access = "read"
pattern = "random"
unit = "word"
"#,
        )
        .unwrap();
        assert!(matches!(
            &p.root[1],
            Op::Touch {
                pat: Pat::SeqWords,
                write: false,
                ..
            }
        ));
        match &p.root[2] {
            Op::Touch {
                pat: Pat::RandomWords(order),
                ..
            } => assert_eq!(order, &foliosim_scenario::random_order(16, 3)),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn compiles_regions_ranges_and_orders() {
        let p = plan(
            r#"
seed = 5
[[step]]
op = "mmap"
region = "heap"
kind = "anon"
size = "1M"
madvise = ["hugepage"]
[[step]]
op = "phase"
name = "m"
[[step]]
op = "touch"
region = "heap"
access = "write"
pattern = "random"
offset = "64K"
[[step]]
op = "fork"
[[step.child]]
op = "touch"
region = "heap"
access = "read"
len = "8K"
[[step]]
op = "wait"
"#,
        )
        .unwrap();
        assert_eq!(p.regions.len(), 1);
        assert_eq!(p.phases, ["m"]);
        assert_eq!(p.max_children, 1);
        assert_eq!(p.anon_bytes, 1 << 20);
        assert_eq!(p.locs.len(), 6);
        match &p.root[0] {
            Op::Mmap { advise, flags, .. } => {
                assert_eq!(advise, &[Madv::Hugepage]);
                // include/uapi/asm-generic/mman-common.h: MAP_PRIVATE 0x02, MAP_ANONYMOUS 0x20
                assert_eq!(*flags, 0x22);
            }
            o => panic!("{o:?}"),
        }
        match &p.root[2] {
            Op::Touch {
                offset,
                len,
                pat: Pat::Random(order),
                write: true,
                ..
            } => {
                assert_eq!((*offset, *len), (65536, (1 << 20) - 65536));
                assert_eq!(order, &foliosim_scenario::random_order(240, 5));
            }
            o => panic!("{o:?}"),
        }
        match &p.root[3] {
            Op::Fork { child, .. } => match &child[0] {
                Op::Touch { len, write, .. } => assert_eq!((*len, *write), (8192, false)),
                o => panic!("{o:?}"),
            },
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn reclaim_advice_compiles_to_its_madv_value() {
        let p = plan(
            r#"
[[step]]
op = "mmap"
region = "heap"
kind = "anon"
size = "1M"
madvise = ["willneed", "cold"]
[[step]]
op = "madvise"
region = "heap"
advice = "pageout"
[[step]]
op = "madvise"
region = "heap"
advice = "free"
"#,
        )
        .unwrap();
        match &p.root[0] {
            Op::Mmap { advise, .. } => assert_eq!(advise, &[Madv::Willneed, Madv::Cold]),
            o => panic!("{o:?}"),
        }
        let advice: Vec<i32> = p.root[1..]
            .iter()
            .map(|o| match o {
                Op::Madvise { advice, .. } => advice.raw(),
                o => panic!("{o:?}"),
            })
            .collect();
        assert_eq!(advice, [21, 8]);
    }

    #[test]
    fn threads_compile_to_per_thread_ops_in_thread_order() {
        // Three CPUs, two threads: a split touch of 1 MiB (256 pages) gives
        // thread 0 pages 0-127 and thread 1 pages 128-255.
        let p = plan(
            r#"
[system]
cpus = 3
[[step]]
op = "mmap"
region = "heap"
kind = "anon"
size = "1M"
[[step]]
op = "threads"
count = 2
after = "sleep"
[[step.thread]]
op = "touch"
region = "heap"
access = "write"
[[step.thread]]
op = "madvise"
region = "heap"
advice = "dontneed"
len = "4K"
[[step]]
op = "join"
"#,
        )
        .unwrap();
        assert_eq!(p.max_threads, 2);
        assert!(p.threads_at.as_deref().unwrap().starts_with("t.toml:9:"));
        let Op::Threads { sleep, threads, .. } = &p.root[1] else {
            panic!("{:?}", p.root[1]);
        };
        assert!(*sleep);
        assert_eq!(threads.len(), 2);
        for (i, ops) in threads.iter().enumerate() {
            match &ops[0] {
                Op::Touch { offset, len, .. } => {
                    assert_eq!((*offset, *len), (i as u64 * (512 << 10), 512 << 10))
                }
                o => panic!("{o:?}"),
            }
            assert!(matches!(
                ops[1],
                Op::Madvise {
                    advice: Madv::Dontneed,
                    len: 4096,
                    ..
                }
            ));
        }
        assert!(matches!(p.root[2], Op::Join { .. }));
    }

    #[test]
    fn memcg_steps_name_their_cgroup() {
        let p = plan(
            r#"
[[step]]
op = "memcg"
limit = "64M"
[[step]]
op = "fork"
[[step.child]]
op = "memcg_reclaim"
amount = "1M"
[[step.child]]
op = "memcg"
[[step.child]]
op = "force_empty"
[[step]]
op = "force_empty"
"#,
        )
        .unwrap();
        assert_eq!(p.memcgs.len(), 2);
        assert_eq!(p.memcgs[0].limit, Some(64 << 20));
        assert_eq!(p.memcgs[1].limit, None);
        assert!(p.reclaim_at.as_deref().unwrap().starts_with("t.toml:7:"));
        assert!(p
            .force_empty_at
            .as_deref()
            .unwrap()
            .starts_with("t.toml:12:"));
        assert!(matches!(p.root[0], Op::Memcg { cg: 0, .. }));
        let Op::Fork { child, .. } = &p.root[1] else {
            panic!("{:?}", p.root[1]);
        };
        assert!(matches!(
            child[0],
            Op::MemcgReclaim {
                cg: 0,
                amount: 1048576,
                ..
            }
        ));
        assert!(matches!(child[1], Op::Memcg { cg: 1, .. }));
        assert!(matches!(child[2], Op::ForceEmpty { cg: 1, .. }));
        // The parent is still in the first cgroup after the fork.
        assert!(matches!(p.root[2], Op::ForceEmpty { cg: 0, .. }));
    }
}

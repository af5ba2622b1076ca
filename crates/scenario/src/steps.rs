//! `[[step]]` tables, including the steps of forked children.

use std::collections::{HashMap, HashSet};

use crate::ast::{
    Access, Backing, FileSpec, IoCall, IoStep, Madv, MmapStep, MremapStep, PageData, PagemapStep,
    Pattern, Prot, Range, Step, StepKind, TouchUnit, ERRNOS,
};
use crate::check::Fields;
use crate::error::{Ctx, Result};
use crate::tree::{Data, Node};

#[path = "threads.rs"]
mod threads;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Mmap,
    Touch,
    Madvise,
    Munmap,
    Mremap,
    Fork,
    Wait,
    Phase,
    PhaseEnd,
    Memcg,
    MemcgReclaim,
    ForceEmpty,
    MemcgLimit,
    MemcgHigh,
    Pagemap,
    Threads,
    Join,
    Khugepaged,
    Io(IoCall),
}

const OPS: &[(&str, Op)] = &[
    ("mmap", Op::Mmap),
    ("touch", Op::Touch),
    ("madvise", Op::Madvise),
    ("munmap", Op::Munmap),
    ("mremap", Op::Mremap),
    ("fork", Op::Fork),
    ("wait", Op::Wait),
    ("phase", Op::Phase),
    ("phase_end", Op::PhaseEnd),
    ("memcg", Op::Memcg),
    ("memcg_reclaim", Op::MemcgReclaim),
    ("force_empty", Op::ForceEmpty),
    ("memcg_limit", Op::MemcgLimit),
    ("memcg_high", Op::MemcgHigh),
    ("read", Op::Io(IoCall::Read)),
    ("pread", Op::Io(IoCall::Pread)),
    ("write", Op::Io(IoCall::Write)),
    ("pwrite", Op::Io(IoCall::Pwrite)),
    ("pagemap", Op::Pagemap),
    ("threads", Op::Threads),
    ("join", Op::Join),
    ("khugepaged", Op::Khugepaged),
];

impl Op {
    /// The keys a step with this op may have.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Op::Mmap => &[
                "op", "region", "kind", "file", "shared", "size", "offset", "prot", "madvise",
                "map", "at",
            ],
            Op::Touch => &[
                "op",
                "region",
                "access",
                "pattern",
                "seed",
                "stride",
                "offset",
                "len",
                "split",
                "unit",
                "pages",
                "data",
                "random_percent",
            ],
            Op::Madvise => &[
                "op", "region", "advice", "offset", "len", "per_call", "errno",
            ],
            Op::Munmap => &["op", "region", "offset", "len"],
            Op::Mremap => &["op", "region", "size", "at", "maymove", "dontunmap"],
            Op::Fork => &["op", "child"],
            Op::Wait | Op::PhaseEnd | Op::ForceEmpty | Op::Join => &["op"],
            Op::Threads => &["op", "count", "after", "thread"],
            Op::Phase => &["op", "name"],
            Op::Memcg => &[
                "op",
                "limit",
                "memsw_limit",
                "zswap_max",
                "swap_max",
                "swap_high",
                "high",
                "min",
                "low",
            ],
            Op::MemcgReclaim => &["op", "amount", "swappiness"],
            Op::MemcgLimit => &["op", "limit"],
            Op::MemcgHigh => &["op", "high"],
            Op::Khugepaged => &["op", "full_scans"],
            Op::Io(call) if call.writes() => &[
                "op",
                "file",
                "offset",
                "len",
                "write_size",
                "count",
                "fsync",
            ],
            Op::Io(_) => &["op", "file", "offset", "len", "read_size", "count"],
            Op::Pagemap => &[
                "op",
                "region",
                "offset",
                "len",
                "name",
                "read_size",
                "raw",
                "privileged",
                "scan",
                "kpageflags",
            ],
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Anon,
    File,
    Shmem,
}

const KINDS: &[(&str, Kind)] = &[
    ("anon", Kind::Anon),
    ("file", Kind::File),
    ("shmem", Kind::Shmem),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum PatternName {
    Sequential,
    Random,
    Stride,
    OnePerPt,
    List,
}

const PATTERNS: &[(&str, PatternName)] = &[
    ("sequential", PatternName::Sequential),
    ("random", PatternName::Random),
    ("stride", PatternName::Stride),
    ("one-per-pt", PatternName::OnePerPt),
    ("list", PatternName::List),
];

const UNITS: &[(&str, TouchUnit)] = &[("page", TouchUnit::Page), ("word", TouchUnit::Word)];

const DATA: &[(&str, DataName)] = &[
    ("zero", DataName::Zero),
    ("repeated", DataName::Repeated),
    ("random", DataName::Random),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DataName {
    Zero,
    Repeated,
    Random,
}

const ACCESSES: &[(&str, Access)] = &[
    ("read", Access::Read),
    ("write", Access::Write),
    ("write-zero", Access::WriteZero),
];

/// The most full scans one khugepaged step may wait for.
const MAX_FULL_SCANS: u64 = 100;

pub(crate) const ADVICE: &[(&str, Madv)] = &[
    ("hugepage", Madv::Hugepage),
    ("nohugepage", Madv::Nohugepage),
    ("dontneed", Madv::Dontneed),
    ("random", Madv::Random),
    ("sequential", Madv::Sequential),
    ("normal", Madv::Normal),
    ("willneed", Madv::Willneed),
    ("cold", Madv::Cold),
    ("pageout", Madv::Pageout),
    ("free", Madv::Free),
    ("populate_read", Madv::PopulateRead),
    ("populate_write", Madv::PopulateWrite),
    ("collapse", Madv::Collapse),
];

/// What one process has at a point of its steps: the regions it can use
/// (name to size in bytes) and the memcg step that put it into its memory
/// cgroup, if any (its own, or its parent's before the fork). A fork
/// child's regions refer to its parent's ([`crate::ScopedMap`]).
#[derive(Default)]
struct Scope<'p> {
    regions: crate::ScopedMap<'p, u64>,
    memcg: Option<String>,
}

impl<'p> Scope<'p> {
    /// The scope of a child forked by a process with scope `parent`.
    fn child(parent: &'p Scope<'p>) -> Scope<'p> {
        Scope {
            regions: parent.regions.child(),
            memcg: parent.memcg.clone(),
        }
    }
}

/// Validation state shared by all steps of the scenario.
pub(crate) struct StepChecker<'a> {
    ctx: &'a Ctx,
    /// The `[[file]]`s, in file order (for messages), and their sizes in
    /// bytes by name (for lookups).
    files: &'a [FileSpec],
    file_sizes: HashMap<&'a str, u64>,
    /// Default seed of random touches.
    seed: u64,
    /// Every region some mmap step names, with the first such step (from a
    /// pass over the raw steps, for messages about regions used too early).
    declared: HashMap<String, String>,
    /// Regions mmapped so far, with their step.
    mapped: HashMap<String, String>,
    /// Phase names in declaration order, and as a set.
    phases: Vec<String>,
    phase_set: HashSet<String>,
    /// Names of the pagemap steps so far, with their step.
    pagemaps: HashMap<String, String>,
    /// The `threads` / `join` state.
    threads: threads::ThreadState,
}

/// The validated steps and the phases they declare.
pub(crate) struct Checked {
    pub steps: Vec<Step>,
    pub phases: Vec<String>,
}

/// Validate the top-level `[[step]]` array (absent: no steps).
pub(crate) fn steps(
    ctx: &Ctx,
    node: Option<&Node>,
    files: &[FileSpec],
    seed: u64,
    cpus: u32,
) -> Result<Checked> {
    let mut declared = HashMap::new();
    if let Some(node) = node {
        declare_regions(node, "step", &mut declared);
    }
    let file_sizes = files.iter().map(|f| (f.name.as_str(), f.size)).collect();
    let mut checker = StepChecker {
        ctx,
        files,
        file_sizes,
        seed,
        declared,
        mapped: HashMap::new(),
        phases: Vec::new(),
        phase_set: HashSet::new(),
        pagemaps: HashMap::new(),
        threads: threads::ThreadState::new(cpus),
    };
    let steps = checker.list(node, "step", &mut Scope::default(), true)?;
    checker.threads_joined()?;
    Ok(Checked {
        steps,
        phases: checker.phases,
    })
}

/// Record the region of every mmap step under `node`, children included.
fn declare_regions(node: &Node, path: &str, out: &mut HashMap<String, String>) {
    let Data::Array(steps) = &node.data else {
        return;
    };
    for (i, step) in steps.iter().enumerate() {
        let step_path = format!("{path}[{}]", i + 1);
        if let (Some("mmap"), Some(region)) = (step.get_str("op"), step.get_str("region")) {
            out.entry(region.to_owned())
                .or_insert_with(|| step_path.clone());
        }
        if let Some(child) = step.get("child") {
            declare_regions(child, &format!("{step_path}.child"), out);
        }
    }
}

impl StepChecker<'_> {
    /// The steps of one process; `top` is false for a child's steps.
    fn list(
        &mut self,
        node: Option<&Node>,
        path: &str,
        scope: &mut Scope,
        top: bool,
    ) -> Result<Vec<Step>> {
        let Some(node) = node else {
            return Ok(Vec::new());
        };
        let tables = self.ctx.array(node, path, "an array of step tables")?;
        let mut steps = Vec::with_capacity(tables.len());
        for (i, table) in tables.iter().enumerate() {
            let step_path = format!("{path}[{}]", i + 1);
            steps.push(self.step(table, &step_path, scope, top)?);
        }
        Ok(steps)
    }

    fn step(&mut self, table: &Node, path: &str, scope: &mut Scope, top: bool) -> Result<Step> {
        let mut f = Fields::new(self.ctx, table, path, format!("in {path}"))?;
        let op = f
            .req("op", |c, n, p| c.choice(n, p, OPS))
            .map_err(|mut e| {
                if f.get("op").is_none() {
                    let words: Vec<&str> = OPS.iter().map(|(w, _)| *w).collect();
                    e.message = format!("{}; expected one of: {}", e.message, words.join(", "));
                }
                e
            })?;
        let op_word = OPS.iter().find(|(_, o)| *o == op).map_or("", |(w, _)| *w);
        f.set_place(format!("in {path} (op = {op_word:?})"));
        f.check_allowed(op.keys())?;
        self.threads_gate(&f, op_word, matches!(op, Op::Fork | Op::Memcg))?;
        let kind = match op {
            Op::Mmap => self.mmap(&f, scope)?,
            Op::Touch => self.touch(&f, scope)?,
            Op::Madvise => {
                let (region, size) = self.region(&f, scope)?;
                let advice = f.req("advice", |c, n, p| c.choice(n, p, ADVICE))?;
                let range = range(&f, &region, size)?;
                let per_call = f.opt("per_call", Ctx::page_size)?;
                let errno = f.opt("errno", |c, n, p| c.choice(n, p, ERRNOS))?;
                StepKind::Madvise {
                    region,
                    advice,
                    range,
                    per_call,
                    errno,
                }
            }
            Op::Munmap => {
                let (region, size) = self.region(&f, scope)?;
                let range = range(&f, &region, size)?;
                StepKind::Munmap { region, range }
            }
            Op::Mremap => self.mremap(&f, scope)?,
            Op::Fork => {
                let mut child_scope = Scope::child(scope);
                let child =
                    self.list(f.get("child"), &f.field("child"), &mut child_scope, false)?;
                StepKind::Fork { child }
            }
            Op::Wait => StepKind::Wait,
            Op::Phase | Op::PhaseEnd => self.phase(&f, op, path)?,
            Op::Memcg => {
                let limit = f.opt("limit", Ctx::page_size)?;
                let memsw_limit = f.opt("memsw_limit", Ctx::page_size)?;
                let zswap_max = f.opt("zswap_max", Ctx::page_offset)?;
                let swap_max = f.opt("swap_max", high)?.flatten();
                let swap_high = f.opt("swap_high", high)?.flatten();
                if let Some(memsw) = memsw_limit {
                    // mem_cgroup_resize_max(): EINVAL for a memory+swap
                    // limit below the memory limit (unlimited without one).
                    if limit.is_none_or(|l| memsw < l) {
                        return Err(f.err_at(
                            "memsw_limit",
                            "memsw_limit must be at least the cgroup's `limit` (cgroup v1 \
                             refuses a memory+swap limit below the memory limit)",
                        ));
                    }
                    // One cgroup version: v1 charges swap with memory.
                    for key in ["swap_max", "swap_high", "zswap_max", "high", "min", "low"] {
                        f.forbid(
                            key,
                            "without memsw_limit (cgroup v1's memory+swap limit; these \
                             cgroup v2 files are not on v1)",
                        )?;
                    }
                }
                let high = f.opt("high", high)?.flatten();
                let min = f.opt("min", Ctx::page_offset)?.unwrap_or(0);
                let low = f.opt("low", Ctx::page_offset)?.unwrap_or(0);
                scope.memcg = Some(path.to_owned());
                StepKind::Memcg {
                    limit,
                    memsw_limit,
                    zswap_max,
                    swap_max,
                    swap_high,
                    high,
                    min,
                    low,
                }
            }
            Op::MemcgReclaim => {
                in_memcg(&f, scope, op_word)?;
                StepKind::MemcgReclaim {
                    amount: f.req("amount", Ctx::nonzero_size)?,
                    swappiness: f.opt("swappiness", reclaim_swappiness)?,
                }
            }
            Op::ForceEmpty => {
                in_memcg(&f, scope, op_word)?;
                StepKind::ForceEmpty
            }
            Op::MemcgLimit => {
                in_memcg(&f, scope, op_word)?;
                StepKind::MemcgLimit {
                    limit: f.req("limit", limit)?,
                }
            }
            Op::MemcgHigh => {
                in_memcg(&f, scope, op_word)?;
                StepKind::MemcgHigh {
                    high: f.req("high", high)?,
                }
            }
            Op::Io(call) => self.io(&f, call)?,
            Op::Pagemap => self.pagemap(&f, scope, top)?,
            Op::Threads => self.threads(&f, scope, top)?,
            Op::Join => self.join(&f)?,
            Op::Khugepaged => {
                if !top {
                    let msg =
                        "khugepaged steps are only allowed in top-level steps, not in a child";
                    return Err(f.err_at("op", msg));
                }
                let full_scans = f.req("full_scans", Ctx::uint)?;
                if !(1..=MAX_FULL_SCANS).contains(&full_scans) {
                    let msg = format!(
                        "full_scans = {full_scans}: expected a number of full scans from 1 to \
                         {MAX_FULL_SCANS}"
                    );
                    return Err(f.err_at("full_scans", msg));
                }
                StepKind::Khugepaged {
                    full_scans: full_scans as u32,
                }
            }
        };
        Ok(Step {
            loc: self.ctx.loc(&table.origin),
            kind,
        })
    }

    /// `op = "phase"` / `"phase_end"`: in top-level steps, or in the steps
    /// of a top-level fork's child (the child's phase measures the child;
    /// one still open ends with the child's last step).
    fn phase(&mut self, f: &Fields<'_>, op: Op, path: &str) -> Result<StepKind> {
        if path.matches(".child[").count() > 1 {
            let msg = "phase markers are only allowed in top-level steps and in the steps of a \
                       top-level fork's child, not in a grandchild";
            return Err(f.err_at("op", msg));
        }
        if op == Op::PhaseEnd {
            return Ok(StepKind::PhaseEnd);
        }
        let name = f.req("name", Ctx::name)?;
        if !self.phase_set.insert(name.clone()) {
            return Err(f.err_at("name", format!("duplicate phase name {name:?}")));
        }
        self.phases.push(name.clone());
        Ok(StepKind::Phase { name })
    }

    /// `op = "pagemap"` (top-level steps only: the report is the root
    /// process's).
    fn pagemap(&mut self, f: &Fields<'_>, scope: &Scope, top: bool) -> Result<StepKind> {
        if !top {
            let msg = "pagemap steps are only allowed in top-level steps, not in a child";
            return Err(f.err_at("op", msg));
        }
        let (region, size) = self.region(f, scope)?;
        let range = range(f, &region, size)?;
        let name = f.opt("name", Ctx::name)?.unwrap_or_else(|| region.clone());
        if let Some(other) = self.pagemaps.get(&name) {
            let msg = format!(
                "duplicate pagemap step name {name:?} (also used by {other}); give this step \
                 its own `name`"
            );
            let key = if f.get("name").is_some() {
                "name"
            } else {
                "region"
            };
            return Err(f.err_at(key, msg));
        }
        self.pagemaps.insert(name.clone(), f.path().to_owned());
        let read_size = f.opt("read_size", Ctx::nonzero_size)?.unwrap_or(4096);
        if read_size % 8 != 0 {
            let msg = format!("expected a multiple of 8 (one pagemap entry), found {read_size}");
            return Err(f.err_at("read_size", msg));
        }
        let privileged = f.opt("privileged", Ctx::boolean)?.unwrap_or(true);
        let kpageflags = f.opt("kpageflags", Ctx::boolean)?.unwrap_or(false);
        if kpageflags && !privileged {
            let msg = "kpageflags = true needs the PFNs, which privileged = false hides";
            return Err(f.err_at("kpageflags", msg));
        }
        Ok(StepKind::Pagemap(PagemapStep {
            region,
            range,
            name,
            read_size,
            raw: f.opt("raw", Ctx::boolean)?.unwrap_or(false),
            privileged,
            scan: f.opt("scan", Ctx::boolean)?.unwrap_or(false),
            kpageflags,
        }))
    }

    fn mmap(&mut self, f: &Fields<'_>, scope: &mut Scope) -> Result<StepKind> {
        let region = f.req("region", Ctx::name)?;
        if let Some(other) = self.mapped.get(&region) {
            let msg = format!("region {region:?} is already mmapped by {other}");
            return Err(f.err_at("region", msg));
        }
        let kind = f.req("kind", |c, n, p| c.choice(n, p, KINDS))?;
        let shared = f.opt("shared", Ctx::boolean)?.unwrap_or(false);
        let size = f.req("size", Ctx::page_size)?;
        let prot = f.opt("prot", prot)?.unwrap_or(Prot {
            read: true,
            write: true,
            exec: false,
        });
        let advise = f.opt("madvise", advice_list)?.unwrap_or_default();
        let map = f.opt("map", Ctx::boolean)?.unwrap_or(false);
        let addr = f.opt("at", Ctx::page_offset)?;
        if let Some(a) = addr {
            if a == 0 || a.checked_add(size).is_none_or(|end| end > USER_TOP) {
                let msg = format!(
                    "at = {a:#x}: the mapping must lie above 0 and below {USER_TOP:#x} \
                     (the user address space of 4-level page tables)"
                );
                return Err(f.err_at("at", msg));
            }
        }
        let mut file_offset = 0;
        let backing = match kind {
            Kind::File => {
                file_offset = f.opt("offset", Ctx::page_offset)?.unwrap_or(0);
                Backing::File {
                    file: self.file_ref(f)?,
                }
            }
            Kind::Anon | Kind::Shmem => {
                f.forbid("file", "with kind = \"file\"")?;
                f.forbid("offset", "with kind = \"file\" (it is the file offset)")?;
                if kind == Kind::Anon {
                    Backing::Anon
                } else {
                    Backing::Shmem
                }
            }
        };
        if kind == Kind::Shmem && !shared {
            let key = if f.get("shared").is_some() {
                "shared"
            } else {
                "kind"
            };
            return Err(f.err_at(key, "kind = \"shmem\" requires shared = true"));
        }
        self.mapped.insert(region.clone(), f.path().to_owned());
        scope.regions.insert(region.clone(), size);
        Ok(StepKind::Mmap(MmapStep {
            region,
            backing,
            shared,
            size,
            file_offset,
            prot,
            advise,
            map,
            addr,
        }))
    }

    /// `op = "mremap"`: the region's new size, and where it may go; the
    /// region names the new range from here on (in this process).
    fn mremap(&self, f: &Fields<'_>, scope: &mut Scope) -> Result<StepKind> {
        let (region, _) = self.region(f, scope)?;
        let size = f.req("size", Ctx::page_size)?;
        if f.opt("dontunmap", Ctx::boolean)? == Some(true) {
            let msg = "unsupported: MREMAP_DONTUNMAP (dontunmap = true) is not modelled; the \
                       simulator moves regions with MREMAP_MAYMOVE and MREMAP_FIXED only";
            return Err(f.err_at("dontunmap", msg));
        }
        let addr = f.opt("at", Ctx::page_offset)?;
        let maymove = f.opt("maymove", Ctx::boolean)?;
        if let Some(a) = addr {
            if a == 0 || a.checked_add(size).is_none_or(|end| end > USER_TOP) {
                let msg = format!(
                    "at = {a:#x}: the new range must lie above 0 and below {USER_TOP:#x} \
                     (the user address space of 4-level page tables)"
                );
                return Err(f.err_at("at", msg));
            }
            if maymove == Some(false) {
                let msg = "`at` moves the region (MREMAP_FIXED, which needs MREMAP_MAYMOVE): \
                           drop maymove = false";
                return Err(f.err_at("maymove", msg));
            }
        }
        scope.regions.insert(region.clone(), size);
        Ok(StepKind::Mremap(MremapStep {
            region,
            size,
            addr,
            maymove: addr.is_some() || maymove == Some(true),
        }))
    }

    /// The `file` of a file mapping or I/O step, which must name a
    /// `[[file]]`; returns it with the file's size.
    fn file_ref(&self, f: &Fields<'_>) -> Result<String> {
        self.file_sized(f).map(|(name, _)| name)
    }

    fn file_sized(&self, f: &Fields<'_>) -> Result<(String, u64)> {
        let name = f.req("file", Ctx::name)?;
        if let Some(&size) = self.file_sizes.get(name.as_str()) {
            return Ok((name, size));
        }
        let known = if self.files.is_empty() {
            "the scenario has no [[file]] tables".to_owned()
        } else {
            let names: Vec<&str> = self.files.iter().map(|f| f.name.as_str()).collect();
            format!("files: {}", names.join(", "))
        };
        Err(f.err_at("file", format!("unknown file {name:?}; {known}")))
    }

    /// `op = "read"` / `"pread"` / `"write"` / `"pwrite"`: the range must
    /// lie inside the file (files keep their size: a write beyond the end
    /// would extend it, which the model does not do).
    fn io(&self, f: &Fields<'_>, call: IoCall) -> Result<StepKind> {
        let (file, size) = self.file_sized(f)?;
        let offset = f.opt("offset", Ctx::size)?.unwrap_or(0);
        if offset >= size {
            let msg = format!("offset {offset} is not inside file {file:?} ({size} bytes)");
            return Err(f.err_at("offset", msg));
        }
        let len = f.opt("len", Ctx::nonzero_size)?.unwrap_or(size - offset);
        if offset.checked_add(len).is_none_or(|end| end > size) {
            let what = if call.writes() {
                "; a write beyond the end would extend the file, which is not supported by the \
                 model"
            } else {
                ""
            };
            let msg = format!(
                "offset {offset} + len {len} exceeds the size of file {file:?} ({size} bytes){what}"
            );
            return Err(f.err_at("len", msg));
        }
        let (key, default) = if call.writes() {
            ("write_size", 4096)
        } else {
            ("read_size", 128 << 10)
        };
        let chunk = f.opt(key, Ctx::nonzero_size)?.unwrap_or(default);
        if chunk > MAX_IO_CHUNK {
            let msg = format!(
                "expected at most {} MiB per call (the workload's I/O buffer), found {chunk}",
                MAX_IO_CHUNK >> 20
            );
            return Err(f.err_at(key, msg));
        }
        let count = f.opt("count", Ctx::uint)?.unwrap_or(1);
        if count == 0 || count > u64::from(u32::MAX) {
            let msg = format!(
                "expected a number of passes from 1 to {}, found {count}",
                u32::MAX
            );
            return Err(f.err_at("count", msg));
        }
        let fsync = f.opt("fsync", Ctx::boolean)?.unwrap_or(false);
        Ok(StepKind::Io(IoStep {
            call,
            file,
            offset,
            len,
            chunk,
            count: count as u32,
            fsync,
        }))
    }

    fn touch(&self, f: &Fields<'_>, scope: &Scope) -> Result<StepKind> {
        if !self.threads.in_thread {
            f.forbid("split", "in a touch of a threads block ([[step.thread]])")?;
        }
        let (region, size) = self.region(f, scope)?;
        let access = f.req("access", |c, n, p| c.choice(n, p, ACCESSES))?;
        let name = f.opt("pattern", |c, n, p| c.choice(n, p, PATTERNS))?;
        let name = name.unwrap_or(PatternName::Sequential);
        if name != PatternName::Random {
            f.forbid("seed", "with pattern = \"random\"")?;
        }
        if name != PatternName::Stride {
            f.forbid("stride", "with pattern = \"stride\"")?;
        }
        if name != PatternName::List {
            f.forbid("pages", "with pattern = \"list\"")?;
        }
        let pattern = match name {
            PatternName::Sequential => Pattern::Sequential,
            PatternName::Random => Pattern::Random {
                seed: f.opt("seed", Ctx::seed)?.unwrap_or(self.seed),
            },
            PatternName::Stride => Pattern::Stride {
                stride: f.req("stride", Ctx::page_size)?,
            },
            PatternName::OnePerPt => Pattern::OnePerPageTable,
            PatternName::List => Pattern::List(f.req("pages", page_list)?),
        };
        let unit = f.opt("unit", |c, n, p| c.choice(n, p, UNITS))?;
        let unit = unit.unwrap_or_default();
        if unit == TouchUnit::Word {
            if access != Access::Read {
                return Err(f.err_at(
                    "unit",
                    "unsupported: unit = \"word\" is only modelled for access = \"read\"",
                ));
            }
            if !matches!(name, PatternName::Sequential | PatternName::Random) {
                return Err(f.err_at(
                    "unit",
                    "unsupported: unit = \"word\" is only modelled with pattern = \"sequential\" \
                     or \"random\"",
                ));
            }
        }
        let data = match f.opt("data", |c, n, p| c.choice(n, p, DATA))? {
            None => {
                f.forbid("random_percent", "with data = \"random\"")?;
                PageData::Store
            }
            Some(name) => {
                if access != Access::Write {
                    return Err(f.err_at("data", "data needs access = \"write\""));
                }
                if name != DataName::Random {
                    f.forbid("random_percent", "with data = \"random\"")?;
                }
                match name {
                    DataName::Zero => PageData::Zero,
                    DataName::Repeated => PageData::Repeated,
                    DataName::Random => {
                        let percent = f.opt("random_percent", Ctx::uint)?.unwrap_or(100);
                        if !(1..=100).contains(&percent) {
                            return Err(f.err_at(
                                "random_percent",
                                format!("expected a percentage from 1 to 100, found {percent}"),
                            ));
                        }
                        PageData::Random {
                            percent: percent as u8,
                        }
                    }
                }
            }
        };
        let range = range(f, &region, size)?;
        if let Pattern::List(pages) = &pattern {
            let n = range.len.unwrap_or(size - range.offset) / foliosim_uapi::PAGE_SIZE;
            if let Some(p) = pages.iter().find(|&&p| u64::from(p) >= n) {
                let msg = format!("page {p} is beyond the range's {n} pages");
                return Err(f.err_at("pages", msg));
            }
        }
        Ok(StepKind::Touch {
            region,
            access,
            pattern,
            range,
            unit,
            data,
        })
    }

    /// The step's `region`, which an earlier step of this process mmapped.
    fn region(&self, f: &Fields<'_>, scope: &Scope) -> Result<(String, u64)> {
        let region = f.req("region", Ctx::name)?;
        if let Some(&size) = scope.regions.get(&region) {
            return Ok((region, size));
        }
        let msg = match self.declared.get(&region) {
            Some(step) => format!(
                "region {region:?} is not mapped by an earlier step of this process \
                 (it is mmapped by {step})"
            ),
            None => match scope.regions.names() {
                known if known.is_empty() => {
                    format!("unknown region {region:?}; no region is mapped at this point")
                }
                known => format!(
                    "unknown region {region:?}; mapped regions: {}",
                    known.join(", ")
                ),
            },
        };
        Err(f.err_at("region", msg))
    }
}

/// The largest `read_size` / `write_size` of an I/O step: the workload
/// holds one buffer of the largest size the scenario uses.
pub const MAX_IO_CHUNK: u64 = 64 << 20;

/// `limit` of a memcg_limit step: a size, or `"max"` (no limit).
fn limit(ctx: &Ctx, node: &Node, field: &str) -> Result<Option<u64>> {
    if let Data::Str(s) = &node.data {
        if s == "max" {
            return Ok(None);
        }
    }
    ctx.page_size(node, field).map(Some)
}

/// `high`, `swap_max` and `swap_high` of a memcg step: a page-aligned size (0 allowed:
/// every charge is over it), or `"max"` (none).
fn high(ctx: &Ctx, node: &Node, field: &str) -> Result<Option<u64>> {
    if let Data::Str(s) = &node.data {
        if s == "max" {
            return Ok(None);
        }
    }
    ctx.page_offset(node, field).map(Some)
}

/// memory.reclaim's `swappiness=`: 0 to 200, or `"max"` (anonymous pages
/// only, `SWAPPINESS_ANON_ONLY`).
fn reclaim_swappiness(ctx: &Ctx, node: &Node, field: &str) -> Result<u32> {
    if let Data::Str(s) = &node.data {
        if s == "max" {
            return Ok(crate::ast::SWAPPINESS_ANON_ONLY);
        }
    }
    match ctx.uint(node, field) {
        Ok(v) if v <= 200 => Ok(v as u32),
        _ => Err(ctx.expected(node, field, "a swappiness from 0 to 200, or \"max\"")),
    }
}

/// A memcg_reclaim or force_empty step acts on the process's memory cgroup,
/// which must be one a `memcg` step made (never the host's or the root).
fn in_memcg(f: &Fields<'_>, scope: &Scope, op: &str) -> Result<()> {
    if scope.memcg.is_some() {
        return Ok(());
    }
    let msg = format!(
        "op = {op:?} acts on the process's memory cgroup, but this process is not in one: put \
         an `op = \"memcg\"` step before it (in this process, or in its parent before the fork)"
    );
    Err(f.err_at("op", msg))
}

/// `offset` and `len` of a step, inside a region of `size` bytes.
fn range(f: &Fields<'_>, region: &str, size: u64) -> Result<Range> {
    let offset = f.opt("offset", Ctx::page_offset)?.unwrap_or(0);
    let len = f.opt("len", Ctx::page_size)?;
    match len {
        Some(len) => {
            let end = offset.checked_add(len).filter(|&end| end <= size);
            if end.is_none() {
                let msg = format!(
                    "offset {offset} + len {len} exceeds the size of region {region:?} ({size} bytes)"
                );
                return Err(f.err_at("len", msg));
            }
        }
        None if offset >= size => {
            let msg = format!("offset {offset} is not inside region {region:?} ({size} bytes)");
            return Err(f.err_at("offset", msg));
        }
        None => {}
    }
    Ok(Range { offset, len })
}

/// `prot`: letters r, w, x (each at most once) or "none".
fn prot(ctx: &Ctx, node: &Node, field: &str) -> Result<Prot> {
    let text = ctx.string(node, field)?;
    let mut prot = Prot::default();
    let mut valid = !text.is_empty();
    if text != "none" {
        for c in text.chars() {
            let flag = match c {
                'r' => &mut prot.read,
                'w' => &mut prot.write,
                'x' => &mut prot.exec,
                _ => {
                    valid = false;
                    break;
                }
            };
            valid &= !*flag;
            *flag = true;
        }
    }
    if !valid {
        let msg = format!("expected letters r, w, x (like \"rw\") or \"none\", found {text:?}");
        return Err(ctx.err(&node.origin, field, msg));
    }
    Ok(prot)
}

/// `madvise = [...]`: advice words applied right after the mmap.
fn advice_list(ctx: &Ctx, node: &Node, field: &str) -> Result<Vec<Madv>> {
    let items = ctx.array(node, field, "an array of advice strings")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| ctx.choice(item, &format!("{field}[{}]", i + 1), ADVICE))
        .collect()
}

/// The top of the user address space with 4-level page tables (x86_64
/// and arm64 with 48-bit virtual addresses): `at` must stay below it.
const USER_TOP: u64 = 1 << 47;

/// `pages`: page indexes in touch order, comma-separated; `a-b` is every
/// page from a to b by one, ascending or descending.
fn page_list(c: &Ctx, node: &crate::tree::Node, field: &str) -> Result<Vec<u32>> {
    let s = c.string(node, field)?;
    let bad = |item: &str| {
        let msg =
            format!("expected page numbers and ranges like \"0-15,40,39-32\", found {item:?}");
        c.err(&node.origin, field, msg)
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        let num = |t: &str| t.trim().parse::<u32>().map_err(|_| bad(item));
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a <= b {
                    out.extend(a..=b);
                } else {
                    out.extend((b..=a).rev());
                }
            }
            None => out.push(num(item)?),
        }
    }
    Ok(out)
}

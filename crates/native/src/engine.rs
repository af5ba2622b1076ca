//! The engine side of one attempt: fork the workload pinned to one CPU,
//! follow its messages, measure at its phase markers.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

use foliosim_report::Phase;

use crate::files::HostFile;
use crate::guard::HostGuard;
use crate::histogram::{self, KpageFlags};
use crate::memcg::Cgroups;
use crate::perf::{Counters, Events};
use crate::protocol::{Failure, Mark, Msg, Notice, MSG_BYTES};
use crate::sys;
use crate::workload;
use crate::{host, NativeError};
use foliosim_workload::Workload as Plan;

/// Everything an attempt needs from the run.
pub(crate) struct Ctx<'a> {
    pub plan: &'a Plan,
    pub files: &'a [HostFile],
    pub paths: &'a [CString],
    pub events: &'a Events,
    pub guard: &'a HostGuard,
    /// The CPU the workload runs on.
    pub cpu: usize,
    /// The host CPU of each scenario thread (empty: the plan starts none).
    pub thread_cpus: &'a [usize],
    /// Bytes of anonymous memory to touch and free before each phase.
    pub warm_bytes: u64,
    /// Host settings after they were applied (for the Changed check).
    pub settings: &'a BTreeMap<String, String>,
    /// The memory cgroups of the memcg steps, if any (created afresh for
    /// each attempt).
    pub cgroups: Option<&'a Cgroups>,
}

/// What an attempt produced.
pub(crate) struct Attempt {
    pub phases: Vec<Phase>,
    /// Why the warm page cache was not warm, if it was not.
    pub not_warm: Option<String>,
    /// Counter names the host could not provide.
    pub missing: Vec<(String, String)>,
}

/// The forked workload; killed and reaped on drop, which also gives the
/// engine thread its CPUs back.
struct Workload<'a> {
    pid: i32,
    msg_r: OwnedFd,
    go_w: OwnedFd,
    guard: &'a HostGuard,
    affinity: libc::cpu_set_t,
}

impl Drop for Workload<'_> {
    fn drop(&mut self) {
        sys::kill(self.pid, libc::SIGKILL);
        // Forget the pid before reaping it, so that the guard never signals
        // a recycled pid.
        self.guard.set_workload(0);
        let _ = sys::waitpid(self.pid, false);
        let _ = sys::set_affinity(&self.affinity);
    }
}

/// Counter values at one instant.
struct Snap {
    global: BTreeMap<String, i64>,
    /// Minor and major faults of the workload tree (None: unreadable).
    faults: Option<(u64, u64)>,
    overhead: Overhead,
    traces: Vec<(String, u64)>,
    /// Involuntary context switches of the scenario threads, summed.
    preempted: u64,
}

/// The workload's own activity around forks (see workload.rs), summed.
#[derive(Clone, Default)]
struct Overhead {
    faults: (u64, u64),
    /// Tracepoint hits by counter name.
    events: BTreeMap<String, u64>,
}

struct OpenPhase {
    name: String,
    /// The process that opened it (the workload, or a fork's child for a
    /// child's phase): its pagemap gives the phase's histograms and maps.
    pid: i32,
    start: Snap,
    repopulated: u64,
    /// Results of the phase's pagemap steps (`pagemap/<name>/...`).
    pagemap: BTreeMap<String, i64>,
    /// Raw entries of its `raw = true` pagemap steps.
    pagemap_raw: BTreeMap<String, Vec<u64>>,
}

fn io_err(at: &str, what: impl std::fmt::Display) -> NativeError {
    NativeError::Io {
        at: at.to_string(),
        what: what.to_string(),
    }
}

fn spawn<'a>(ctx: &Ctx<'a>) -> Result<Workload<'a>, NativeError> {
    let e = |w: std::io::Error| io_err("native engine", format!("starting the workload: {w}"));
    let (msg_r, msg_w) = sys::pipe().map_err(e)?;
    let (go_r, go_w) = sys::pipe().map_err(e)?;
    // Start the workload pinned (docs/fidelity.md, "Host behaviours"): this
    // thread moves to the workload's CPU, forks (the child inherits the
    // affinity before it runs anything), then leaves that CPU to the
    // workload.
    let old = sys::get_affinity().map_err(e)?;
    sys::set_affinity(&sys::cpu_set(&[ctx.cpu])).map_err(e)?;
    let engine_pid = sys::getpid();
    let marker = 0u8;
    let stack_top = (std::ptr::addr_of!(marker) as usize + 4095) & !4095;
    // SAFETY: after fork the child only runs `root_main`, which never
    // returns (it ends with _exit) and uses memory it inherited read-only
    // or wrote itself; glibc makes malloc usable in the child of a
    // multi-threaded parent.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        workload::root_main(workload::Setup {
            plan: ctx.plan,
            paths: ctx.paths,
            events: &ctx.events.events,
            cgroups: ctx.cgroups.map_or(&[], |c| &c.wl),
            thread_cpus: ctx.thread_cpus,
            msg_w: msg_w.as_raw_fd(),
            go_r: go_r.as_raw_fd(),
            engine_pid,
            stack_top,
        });
    }
    std::hint::black_box(&marker);
    let others: Vec<usize> = sys::cpus(&old)
        .into_iter()
        .filter(|&c| c != ctx.cpu)
        .collect();
    // With scenario threads the engine stays on the main thread's CPU (idle
    // whenever the engine has work: the main thread waits for it), so the
    // threads' CPUs run nothing of the engine's.
    let _ = if !ctx.thread_cpus.is_empty() {
        let r = sys::set_affinity(&sys::cpu_set(&[ctx.cpu]));
        trim_engine_cpumask();
        r
    } else if others.is_empty() {
        sys::set_affinity(&old)
    } else {
        sys::set_affinity(&sys::cpu_set(&others))
    };
    if pid < 0 {
        let _ = sys::set_affinity(&old);
        return Err(e(std::io::Error::last_os_error()));
    }
    ctx.guard.set_workload(pid);
    drop(msg_w);
    drop(go_r);
    Ok(Workload {
        pid,
        msg_r,
        go_w,
        guard: ctx.guard,
        affinity: old,
    })
}

/// Take the threads' CPUs out of the engine's `mm_cpumask()`: the engine
/// ran there before, and x86 leaves a CPU in the mask until a flush finds
/// it running another mm. An IPI the engine sends there later (a flush
/// with freed page tables, or the once-a-second trim) would be traced as
/// TLB_REMOTE_WRONG_CPU inside a spinning scenario thread, which counts
/// it. Unmapping a populated 2 MiB-aligned PTE table frees it, and such
/// a flush goes to every CPU in the mask, clearing the others now.
fn trim_engine_cpumask() {
    let Ok(m) = sys::Mapping::anon(4 << 20) else {
        return;
    };
    // No THP: a PTE table.
    m.madvise(libc::MADV_NOHUGEPAGE);
    m.touch_all();
    drop(m);
}

impl Workload<'_> {
    /// The next message; an error if the workload died without one.
    fn recv(&self) -> Result<Msg, NativeError> {
        let mut buf = [0u8; MSG_BYTES];
        loop {
            let ready = sys::poll_in(self.msg_r.as_raw_fd(), 1000)
                .map_err(|e| io_err("native engine", e))?;
            if !ready {
                if let Some(how) = sys::waitpid(self.pid, true).ok().flatten() {
                    return Err(self.died(how));
                }
                continue;
            }
            let n = sys::read(self.msg_r.as_raw_fd(), &mut buf)
                .map_err(|e| io_err("native engine", e))?;
            if n == 0 {
                let how = sys::waitpid(self.pid, false).ok().flatten();
                return Err(self.died(how.unwrap_or(sys::Exit::Code(-1))));
            }
            if n != MSG_BYTES {
                return Err(io_err(
                    "native engine",
                    format!("short message from the workload ({n} bytes)"),
                ));
            }
            return Msg::decode(&buf).map_err(|e| io_err("native engine", e));
        }
    }

    fn died(&self, how: sys::Exit) -> NativeError {
        let sig = crate::guard::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst);
        if sig != 0 {
            return NativeError::Refused(format!(
                "interrupted by {}; host settings were restored",
                sys::signal_name(sig)
            ));
        }
        let what = match how {
            sys::Exit::Signal(s) => format!("killed by {}", sys::signal_name(s)),
            sys::Exit::Code(c) => format!("exited with status {c}"),
        };
        io_err("native engine", format!("the workload process {what}"))
    }

    fn go(&self) -> Result<(), NativeError> {
        sys::write_all(self.go_w.as_raw_fd(), &[1]).map_err(|e| io_err("native engine", e))
    }
}

/// The location of step `step` (or `none` outside a step).
fn step_at(ctx: &Ctx<'_>, step: u64, none: &str) -> String {
    ctx.plan
        .locs
        .get(step as usize)
        .cloned()
        .unwrap_or_else(|| none.into())
}

fn note_message(ctx: &Ctx<'_>, step: u64, what: Notice, err: u64) -> String {
    let at = step_at(ctx, step, "workload");
    let errno = std::io::Error::from_raw_os_error(err as i32);
    match what {
        Notice::ReclaimShort => {
            format!("{at}: the kernel reclaimed less than the step asks ({errno}); the run goes on")
        }
        Notice::LimitBusy => {
            format!("{at}: writing the limit failed ({errno}): the usage stays above it; the run goes on")
        }
    }
}

fn error_message(
    ctx: &Ctx<'_>,
    step: u64,
    why: Failure,
    err: u64,
    addr: u64,
    pid: u64,
) -> NativeError {
    let at = step_at(ctx, step, "workload set-up");
    let errno = std::io::Error::from_raw_os_error(err as i32);
    let what = match why {
        Failure::Open => format!("open(2) of the scenario file failed: {errno}"),
        Failure::Mmap => format!("mmap(2) failed: {errno}"),
        Failure::Madvise => format!("madvise(2) failed: {errno}"),
        Failure::MadviseSucceeded => format!(
            "madvise(2) succeeded where the step expects {}",
            crate::workload::errno_name(err as i32)
        ),
        Failure::Munmap => format!("munmap(2) failed: {errno}"),
        Failure::Mremap => format!("mremap(2) failed: {errno}"),
        Failure::MremapTaken => format!(
            "the range `at` = {err:#x} names is mapped in the workload process on this host \
             (mremap with MREMAP_FIXED would replace it); choose another address"
        ),
        Failure::Fork => format!("fork(2) failed: {errno}"),
        Failure::Pipe => format!("pipe(2) failed: {errno}"),
        Failure::ChildDied => format!("the forked child (pid {err}) died"),
        Failure::Signal => format!(
            "the workload process {pid} received {} at address {addr:#x}",
            sys::signal_name(err as i32),
        ),
        Failure::MemcgMove => {
            format!("moving the process into its memory cgroup (cgroup.procs) failed: {errno}")
        }
        Failure::MemcgUsage => format!("reading the memory cgroup's usage failed: {errno}"),
        Failure::MemcgLimit => {
            format!("writing the memory cgroup's limit (v1 reclaim emulation) failed: {errno}")
        }
        Failure::MemcgReclaim => format!("writing memory.reclaim failed: {errno}"),
        Failure::MemcgHigh => format!("writing memory.high failed: {errno}"),
        Failure::ForceEmpty => format!("writing memory.force_empty failed: {errno}"),
        Failure::Khugepaged => format!(
            "driving khugepaged (transparent_hugepage/khugepaged/scan_sleep_millisecs, \
             full_scans) failed: {errno}"
        ),
        Failure::Io => format!("the I/O step's system call failed: {errno}"),
        Failure::Thread => format!("pthread_create of a scenario thread failed: {errno}"),
        Failure::Affinity => {
            format!("sched_setaffinity of a scenario thread to its CPU failed: {errno}")
        }
        Failure::BadOffset => format!(
            "the step's range (to offset {err:#x}) is not inside its region, or a word is not \
             8-byte aligned: the compiled workload is inconsistent"
        ),
        Failure::Rseq => format!(
            "unregistering glibc's rseq area (so the kernel never writes it copy-on-write after a fork) failed: {errno}"
        ),
    };
    // A signal or a step's own system call failing is how the kernel
    // ended the workload; the rest is the engine's set-up.
    match why {
        Failure::Signal
        | Failure::Mmap
        | Failure::Madvise
        | Failure::MadviseSucceeded
        | Failure::Munmap
        | Failure::Mremap
        | Failure::Fork
        | Failure::Io => NativeError::Killed { at, what },
        _ => NativeError::Io { at, what },
    }
}

/// Which edge of a phase a snapshot is taken at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Edge {
    Start,
    End,
}

/// Counters at one edge of a phase. The reads are ordered so that nothing
/// the engine does lands inside the phase: at the start the workload's own
/// counters first and the system-wide ones last, at the end the reverse.
fn snap_at(
    edge: Edge,
    pid: i32,
    tids: &[u64],
    overhead: &Overhead,
    perf: Option<&Counters>,
    kswapd: &[Counters],
    cgroups: Option<&Cgroups>,
) -> Snap {
    let mut s = Snap {
        global: BTreeMap::new(),
        faults: None,
        overhead: overhead.clone(),
        traces: Vec::new(),
        preempted: 0,
    };
    let mut reads: [&mut dyn FnMut(&mut Snap); 4] = [
        &mut |s| s.preempted = preemptions(pid, tids),
        &mut |s| {
            s.traces = perf.map(Counters::read).unwrap_or_default();
            s.faults = host::tree_faults(pid).ok();
        },
        &mut |s| {
            if let Some(cg) = cgroups {
                if edge == Edge::Start {
                    cg.reset_peaks();
                }
                s.global.extend(cg.stats());
            }
        },
        &mut |s| {
            s.global.extend(host::vmstat().unwrap_or_default());
            s.global.extend(host::zone_levels().unwrap_or_default());
            s.global.extend(host::mthp_stats().unwrap_or_default());
            s.global.extend(host::kswapd_cpu_ns().unwrap_or_default());
            for (name, n) in kswapd.iter().flat_map(Counters::read) {
                *s.global.entry(name).or_default() += n as i64;
            }
        },
    ];
    if edge == Edge::End {
        reads.reverse();
    }
    for read in reads {
        read(&mut s);
    }
    s
}

/// Involuntary context switches of the scenario threads so far.
fn preemptions(pid: i32, tids: &[u64]) -> u64 {
    tids.iter()
        .filter_map(|&t| crate::threads::thread_preemptions(pid, t))
        .sum()
}

/// Are all warm files fully resident? Returns a description if not.
fn warm_check(files: &[HostFile]) -> Option<String> {
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| f.warm()) {
        match f.resident() {
            Ok((n, t, _)) if n == t => {}
            Ok((n, t, _)) => bad.push(format!("{}: {n} of {t} pages resident", f.spec.name)),
            Err(e) => bad.push(format!("{}: {e}", f.spec.name)),
        }
    }
    (!bad.is_empty()).then(|| bad.join(", "))
}

/// Rebuild evicted page cache of warm files; returns how many files needed it.
pub(crate) fn repopulate(files: &[HostFile]) -> Result<u64, NativeError> {
    let mut n = 0;
    for f in files.iter().filter(|f| f.warm()) {
        if f.repopulate()
            .map_err(|e| io_err(&f.spec.loc.to_string(), format!("re-populating: {e}")))?
        {
            n += 1;
        }
    }
    Ok(n)
}

/// Touch and free anonymous memory so that the phase does not pay the
/// hypervisor's first-touch cost (docs/fidelity.md, "Host behaviours").
fn warm_host_memory(bytes: u64) {
    if bytes == 0 {
        return;
    }
    if let Ok(m) = sys::Mapping::anon(bytes as usize) {
        m.touch_all();
    }
}

fn end_phase(
    ctx: &Ctx<'_>,
    pid: i32,
    open: OpenPhase,
    end: Snap,
    (wall, cpu): (u64, u64),
    regions: &BTreeMap<String, (u64, u64)>,
    flags: &mut KpageFlags,
) -> Result<Phase, NativeError> {
    let mut counters = BTreeMap::new();
    for (k, v) in &end.global {
        if foliosim_uapi::counters::is_level(k) {
            counters.insert(k.clone(), *v);
        } else if let Some(s) = open.start.global.get(k) {
            counters.insert(k.clone(), v - s);
        }
    }
    let ovh_min = end.overhead.faults.0 - open.start.overhead.faults.0;
    let ovh_maj = end.overhead.faults.1 - open.start.overhead.faults.1;
    if let (Some(e), Some(s)) = (end.faults, open.start.faults) {
        let d = |a: u64, b: u64, o: u64| a as i64 - b as i64 - o as i64;
        counters.insert("minor-faults".into(), d(e.0, s.0, ovh_min));
        counters.insert("major-faults".into(), d(e.1, s.1, ovh_maj));
    }
    for (name, v) in &end.traces {
        if let Some((_, s)) = open.start.traces.iter().find(|(n, _)| n == name) {
            let mut d = *v as i64 - *s as i64;
            let ovh = |o: &Overhead| o.events.get(name).copied().unwrap_or(0) as i64;
            d -= ovh(&end.overhead) - ovh(&open.start.overhead);
            counters.insert(name.clone(), d);
        }
    }
    counters.insert("native/overhead_faults".into(), (ovh_min + ovh_maj) as i64);
    if !ctx.thread_cpus.is_empty() {
        let n = end.preempted.saturating_sub(open.start.preempted);
        counters.insert("native/thread_preemptions".into(), n as i64);
    }
    counters.insert("native/wall_ns".into(), wall as i64);
    counters.insert("native/thread_cpu_ns".into(), cpu as i64);
    if ctx.files.iter().any(HostFile::warm) {
        counters.insert("native/repopulated".into(), open.repopulated as i64);
    }
    counters.extend(open.pagemap);
    let mut folios = BTreeMap::new();
    for (name, &(addr, len)) in regions {
        let h = histogram::histogram(pid, addr, len, flags).map_err(|e| {
            io_err(
                "native engine",
                format!("reading the pagemap of {name}: {e}"),
            )
        })?;
        folios.insert(name.clone(), h);
    }
    Ok(Phase {
        name: open.name,
        counters,
        folios,
        time: None,
        pagemap: open.pagemap_raw,
        maps: BTreeMap::new(),
    })
}

/// The folio maps of the `map = true` regions at the end of a phase.
fn folio_maps(
    pid: i32,
    regions: &BTreeMap<String, (u64, u64)>,
    mapped: &std::collections::BTreeSet<String>,
    flags: &mut KpageFlags,
) -> Result<BTreeMap<String, foliosim_report::FolioMap>, NativeError> {
    let mut maps = BTreeMap::new();
    for name in mapped {
        if let Some(&(addr, len)) = regions.get(name) {
            let m = histogram::folio_map(pid, addr, len, flags).map_err(|e| {
                io_err(
                    "native engine",
                    format!("reading the folio map of {name}: {e}"),
                )
            })?;
            maps.insert(name.clone(), m);
        }
    }
    Ok(maps)
}

/// Read the workload's pagemap for pagemap step `idx` and record the
/// results in the open phase (outside a phase they are not reported).
fn pagemap_step(
    ctx: &Ctx<'_>,
    pid: i32,
    idx: usize,
    regions: &BTreeMap<String, (u64, u64)>,
    open: Option<&mut OpenPhase>,
) -> Result<(), NativeError> {
    let d = &ctx.plan.pagemaps[idx];
    let p = &d.step;
    let region = &ctx.plan.regions[d.region as usize].name;
    let &(addr, _) = regions.get(region).ok_or_else(|| {
        io_err(
            "native engine",
            format!("pagemap step {:?}: region {region:?} is not mapped", p.name),
        )
    })?;
    let r = crate::pagemap::read(
        pid,
        addr + d.offset,
        d.len,
        p.read_size,
        p.privileged,
        p.scan,
        p.kpageflags,
    )
    .map_err(|e| io_err("native engine", format!("pagemap step {:?}: {e}", p.name)))?;
    let Some(open) = open else {
        return Ok(());
    };
    let counters = foliosim_uapi::pagemap::pagemap_step_counters(
        p.read_size,
        &r.entries,
        r.scan.as_deref(),
        r.kpageflags.as_deref(),
    );
    for (k, v) in counters {
        open.pagemap
            .insert(format!("pagemap/{}/{k}", p.name), v as i64);
    }
    open.pagemap
        .insert(format!("native/pagemap_ns/{}", p.name), r.read_ns as i64);
    open.pagemap.insert(
        format!("native/pagemap_cpu_ns/{}", p.name),
        r.read_cpu_ns as i64,
    );
    if p.raw {
        open.pagemap_raw.insert(p.name.clone(), r.entries);
    }
    Ok(())
}

/// The cgroup of the memcg_limit op of step `step`, searched through the
/// ops of every process.
fn limit_step_cgroup(ops: &[foliosim_workload::Op], step: u64) -> Option<u32> {
    use foliosim_workload::Op;
    ops.iter().find_map(|op| match op {
        Op::MemcgLimit { step: s, cg, .. } if u64::from(*s) == step => Some(*cg),
        Op::Fork { child, .. } => limit_step_cgroup(child, step),
        _ => None,
    })
}

/// Run the workload once.
pub(crate) fn attempt(ctx: &Ctx<'_>, reruns: u64) -> Result<Attempt, NativeError> {
    let flags = KpageFlags::open()
        .map_err(|e| NativeError::Refused(format!("cannot read /proc/kpageflags: {e}")))?;
    if let Some(c) = ctx.cgroups {
        c.create(ctx.guard, ctx.plan)?;
    }
    let wl = spawn(ctx)?;
    let mut f = Follow::new(ctx, reruns, flags);
    while f.on_msg(&wl, wl.recv()?)? {}
    drop(wl);
    let errs = ctx.guard.remove_cgroups();
    if !errs.is_empty() {
        return Err(io_err("removing the memory cgroups", errs.join("; ")));
    }
    Ok(Attempt {
        phases: f.phases,
        not_warm: f.not_warm,
        missing: f.missing,
    })
}

/// What the engine keeps while it follows the messages of one attempt's
/// workload.
struct Follow<'c, 'a> {
    ctx: &'c Ctx<'a>,
    /// Attempts before this one (counted as repopulations).
    reruns: u64,
    flags: KpageFlags,
    missing: Vec<(String, String)>,
    perf: Option<Counters>,
    /// The kernel functions' counts of the machine's kswapd threads (a
    /// guest's: natively no kernel function is probed).
    kswapd_perf: Vec<Counters>,
    regions: BTreeMap<String, (u64, u64)>,
    /// Named regions whose mmap step asked for a folio map (`map = true`).
    mapped: std::collections::BTreeSet<String>,
    tids: Vec<u64>,
    overhead: Overhead,
    open: Option<OpenPhase>,
    phases: Vec<Phase>,
    not_warm: Option<String>,
    last_warm: Option<std::time::Instant>,
    all_files_warm: bool,
    /// `memcg/<n>/limit_write_ebusy`: memcg_limit writes that failed so
    /// far (every cgroup's count is 0 until then).
    limit_busy: BTreeMap<String, i64>,
}

impl<'c, 'a> Follow<'c, 'a> {
    fn new(ctx: &'c Ctx<'a>, reruns: u64, flags: KpageFlags) -> Self {
        let limit_busy = ctx
            .cgroups
            .map(|c| {
                (0..c.wl.len())
                    .map(|n| (format!("memcg/{n}/limit_write_ebusy"), 0))
                    .collect()
            })
            .unwrap_or_default();
        Follow {
            ctx,
            reruns,
            flags,
            missing: Vec::new(),
            perf: None,
            kswapd_perf: Vec::new(),
            regions: BTreeMap::new(),
            mapped: Default::default(),
            tids: Vec::new(),
            overhead: Overhead::default(),
            open: None,
            phases: Vec::new(),
            not_warm: None,
            last_warm: None,
            all_files_warm: !ctx.files.is_empty() && ctx.files.iter().all(HostFile::warm),
            limit_busy,
        }
    }

    /// Act on one message; false once the workload's steps are done.
    fn on_msg(&mut self, wl: &Workload<'_>, msg: Msg) -> Result<bool, NativeError> {
        let ctx = self.ctx;
        match msg {
            Msg::Ready { .. } => {
                self.perf = Some(Counters::open(wl.pid, ctx.events, &mut self.missing));
                self.kswapd_perf = host::kswapd_pids()
                    .iter()
                    .map(|&p| Counters::open_kswapd(p as i32, ctx.events))
                    .collect();
                wl.go()?;
            }
            Msg::Mapped { region, addr, len } => {
                let decl = &ctx.plan.regions[region as usize];
                self.regions.insert(decl.name.clone(), (addr, len));
                if decl.map {
                    self.mapped.insert(decl.name.clone());
                } else {
                    self.mapped.remove(&decl.name);
                }
            }
            Msg::Thread { tid, .. } => self.tids.push(tid),
            Msg::Overhead { minflt, majflt } => {
                self.overhead.faults.0 += minflt;
                self.overhead.faults.1 += majflt;
            }
            Msg::OverheadEvent { event, count } => {
                if let Some(e) = ctx.events.events.get(event as usize) {
                    *self.overhead.events.entry(e.name.clone()).or_insert(0) += count;
                }
            }
            Msg::Error {
                step,
                why,
                err,
                addr,
                pid,
            } => return Err(error_message(ctx, step, why, err, addr, pid)),
            Msg::Pagemap { idx } => {
                pagemap_step(ctx, wl.pid, idx as usize, &self.regions, self.open.as_mut())?;
                wl.go()?;
            }
            Msg::Note {
                step, what, err, ..
            } => self.note(step, what, err),
            Msg::Mark {
                mark,
                phase: idx,
                wall_ns,
                cpu_ns,
                pid,
            } => {
                if let Some(o) = self.open.take() {
                    self.close_phase(wl, o, (wall_ns, cpu_ns))?;
                }
                match mark {
                    Mark::Phase => {
                        self.open_phase(wl, idx, pid)?;
                        wl.go()?;
                    }
                    Mark::PhaseEnd => wl.go()?,
                    Mark::End => return Ok(false),
                }
            }
        }
        Ok(true)
    }

    /// The counters of workload `pid` at `edge` of a phase, with the
    /// memcg_limit EBUSY counts.
    fn snap(&self, pid: i32, edge: Edge) -> Snap {
        let mut s = snap_at(
            edge,
            pid,
            &self.tids,
            &self.overhead,
            self.perf.as_ref(),
            &self.kswapd_perf,
            self.ctx.cgroups,
        );
        s.global.extend(self.limit_busy.clone());
        s
    }

    /// A notice from the workload: said on stderr (and counted, for a
    /// memcg_limit write that met EBUSY).
    fn note(&mut self, step: u64, what: Notice, err: u64) {
        if what == Notice::LimitBusy {
            if let Some(cg) = limit_step_cgroup(&self.ctx.plan.root, step) {
                *self
                    .limit_busy
                    .entry(format!("memcg/{cg}/limit_write_ebusy"))
                    .or_insert(0) += 1;
            }
        }
        foliosim_uapi::note!(
            "foliosim native: note: {}",
            note_message(self.ctx, step, what, err)
        )
    }

    /// Measure the end of phase `o` and keep it; note whether the page
    /// cache stayed warm through it.
    fn close_phase(
        &mut self,
        wl: &Workload<'_>,
        o: OpenPhase,
        times: (u64, u64),
    ) -> Result<(), NativeError> {
        let ctx = self.ctx;
        let end = self.snap(wl.pid, Edge::End);
        let owner = o.pid;
        let mut phase = end_phase(ctx, owner, o, end, times, &self.regions, &mut self.flags)?;
        phase.maps = folio_maps(owner, &self.regions, &self.mapped, &mut self.flags)?;
        let changed = host::settings_diff(ctx.settings, &host::settings_snapshot());
        if !changed.is_empty() {
            return Err(NativeError::Changed(format!(
                "during phase {}: {}",
                phase.name,
                changed.join("; ")
            )));
        }
        if self.not_warm.is_none() {
            if let Some(why) = warm_check(ctx.files) {
                self.not_warm = Some(format!("after phase {}: {why}", phase.name));
            } else if let Some(&maj) = phase.counters.get("major-faults") {
                if self.all_files_warm && maj != 0 {
                    self.not_warm = Some(format!("phase {} had {maj} major faults", phase.name));
                }
            }
        }
        self.phases.push(phase);
        Ok(())
    }

    /// Open phase `idx`, marked by process `pid`: warm host memory and
    /// the page cache, then measure its start.
    fn open_phase(&mut self, wl: &Workload<'_>, idx: u32, pid: u64) -> Result<(), NativeError> {
        let ctx = self.ctx;
        let name = ctx.plan.phases[idx as usize].clone();
        // Free page reporting hands memory back after ~2 s.
        if self
            .last_warm
            .is_none_or(|t| t.elapsed().as_millis() > 1000)
        {
            warm_host_memory(ctx.warm_bytes);
            self.last_warm = Some(std::time::Instant::now());
        }
        let mut repopulated = self.reruns;
        for _ in 0..3 {
            let n = repopulate(ctx.files)?;
            if n == 0 {
                break;
            }
            repopulated += n;
        }
        let start = self.snap(wl.pid, Edge::Start);
        self.open = Some(OpenPhase {
            name,
            pid: pid as i32,
            start,
            repopulated,
            pagemap: BTreeMap::new(),
            pagemap_raw: BTreeMap::new(),
        });
        Ok(())
    }
}

//! `foliosim record`: run a real program and record its memory-management
//! behaviour as a trace (crates/recording).
//!
//! * System calls: a seccomp filter installed before exec stops the
//!   program only on mmap, munmap, mremap, mprotect, madvise and brk, and
//!   on read, write, pread64 and pwrite64 (`SECCOMP_RET_TRACE`); the
//!   recorder, its ptrace tracer (`PTRACE_SEIZE`), reads the
//!   arguments at that stop and the result at the following syscall-exit
//!   stop (`PTRACE_GET_SYSCALL_INFO`). Forks, threads, execs and exits
//!   come from ptrace's own events, so every process and thread the
//!   program starts is followed.
//! * Page faults: the `exceptions:page_fault_user` and
//!   `exceptions:page_fault_kernel` tracepoints (x86), sampled on every hit
//!   into per-CPU perf ring buffers of the program's task tree (inherited,
//!   enabled at exec), with the thread, the time (CLOCK_MONOTONIC, the
//!   clock the tracer stamps system calls with) and the raw record
//!   (address, error code: bit 1 is a write).
//! * Policy: the program runs with THP disabled (`PR_SET_THP_DISABLE`,
//!   inherited across fork and exec) and without address-space
//!   randomisation (`ADDR_NO_RANDOMIZE`), so every first touch of an
//!   anonymous 4 KiB page is a fault and addresses repeat. Fault-around is
//!   set to one page (`fault_around_bytes` = 4096, through the host guard)
//!   where debugfs allows it; elsewhere the host's value stays and is
//!   written into the recording.
//!
//! * Later writes, by epoch (default 100 ms): every process's private
//!   anonymous memory is write-protected with userfaultfd in its
//!   asynchronous mode (crate::writetrack) and scanned at each epoch
//!   with PAGEMAP_SCAN, which protects the written pages again, while
//!   every thread is held in a ptrace stop (`PTRACE_INTERRUPT`). A write
//!   fault on a page the last scans protected, and that the program's
//!   own run would not have taken, is recorded as an access, not a fault
//!   ([`classify`]).
//!
//! Records are merged by time and written to a temporary directory that is
//! renamed into place at the end; the host guard removes it on any other
//! exit, a signal included: an interrupted recording leaves nothing.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::CString;
use std::fs;
use std::io::{self, IsTerminal, Write as _};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use foliosim_recording::format::{self, Encoder, Event, IoCall, MapKind, Meta};

use crate::guard::HostGuard;
use crate::sys;
use crate::writetrack;
use crate::NativeError;

/// What to record and where.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The recording directory (must not exist).
    pub out: PathBuf,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Also run the program once without recording, after the recording,
    /// to measure the recording's overhead.
    pub overhead: bool,
    /// Print a progress line on standard error while recording.
    pub progress: bool,
    /// The epoch of later accesses in milliseconds (0: record first
    /// touches only).
    pub epoch_ms: u64,
    /// Run the recorder and the program on these CPUs only (and the run
    /// without recording too); None: wherever the scheduler puts them.
    pub cpus: Option<Vec<usize>>,
}

/// What a recording measured.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub meta: Meta,
    pub faults: u64,
    pub processes: usize,
    pub threads: usize,
    /// Size of the trace file in bytes.
    pub trace_bytes: u64,
}

const DEBUGFS_FAULT_AROUND: &str = "/sys/kernel/debug/fault_around_bytes";
/// The kernel's default fault_around_bytes (mm/memory.c).
const DEFAULT_FAULT_AROUND: u64 = 65536;
/// Per-CPU ring buffer: 2^RING_ORDER data pages (8 MiB: ~120,000 faults).
const RING_ORDER: usize = 11;

fn io_err(at: &str, e: impl std::fmt::Display) -> NativeError {
    NativeError::Io {
        at: at.to_string(),
        what: e.to_string(),
    }
}

/// Record `opts.command` into `opts.out`.
pub fn record(opts: &RecordOptions) -> Result<Recorded, NativeError> {
    if !cfg!(target_arch = "x86_64") {
        return Err(NativeError::Refused(
            "recording needs the x86 exceptions:page_fault_* tracepoints; this host is not \
             x86_64 (record on x86_64; the recording replays on any architecture)"
                .into(),
        ));
    }
    if sys::geteuid() != 0 {
        return Err(NativeError::Refused(
            "recording needs root (ptrace of the program, perf tracepoints)".into(),
        ));
    }
    if opts.command.is_empty() {
        return Err(NativeError::Refused("no command to record".into()));
    }
    if opts.out.exists() {
        return Err(NativeError::Refused(format!(
            "{} exists: give a new directory for the recording",
            opts.out.display()
        )));
    }
    let parent = match opts.out.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => Path::new("/"),
    };
    if !parent.is_dir() {
        return Err(NativeError::Refused(format!(
            "{}: the directory {} does not exist",
            opts.out.display(),
            parent.display()
        )));
    }
    record_into(opts, &tmp_dir(&opts.out))
}

fn tmp_dir(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map_or_else(|| "recording".into(), |n| n.to_string_lossy().into_owned());
    out.with_file_name(format!(".{name}.partial-{}", sys::getpid()))
}

/// The tracefs ids of the two fault tracepoints, mounting tracefs for
/// the moment if it is not mounted (undone at once, and by the guard if
/// the recording is interrupted).
fn fault_tracepoints(guard: &HostGuard) -> Result<[u64; 2], NativeError> {
    if let Some(root) = crate::perf::tracefs_root() {
        return tracepoint_ids(&root);
    }
    let at = PathBuf::from("/sys/kernel/tracing");
    guard
        .mount_tracefs(&at)
        .map_err(|e| NativeError::Refused(format!("tracefs is not mounted and cannot be: {e}")))?;
    let ids = tracepoint_ids(&at);
    let _ = guard.unmount_tracefs();
    ids
}

fn tracepoint_ids(root: &Path) -> Result<[u64; 2], NativeError> {
    let mut ids = [0; 2];
    for (i, ev) in ["page_fault_user", "page_fault_kernel"].iter().enumerate() {
        let p = root.join("events/exceptions").join(ev).join("id");
        ids[i] = fs::read_to_string(&p)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| {
                NativeError::Refused(format!(
                    "{} is missing: the host kernel has no exceptions:{ev} tracepoint",
                    p.display()
                ))
            })?;
    }
    Ok(ids)
}

/// Record into the temporary directory `dir`, which the host guard
/// creates and removes on any exit (a signal included), and rename it to
/// `opts.out` once complete.
fn record_into(opts: &RecordOptions, dir: &Path) -> Result<Recorded, NativeError> {
    // One native run or recording at a time: the guard's saved state is
    // one file, which a later run would take for a killed run's.
    let _lock = crate::guard::RunLock::acquire()
        .map_err(|e| NativeError::Refused(format!("cannot take the native-run lock: {e}")))?;
    crate::guard::recover_stale().note("foliosim record");
    let mut guard = HostGuard::install().map_err(|e| io_err("host guard", e))?;
    let out = (|| {
        // A path that does not exist yet: the guard makes it itself.
        let made = guard
            .create_workdir(dir)
            .map_err(|e| io_err(&dir.display().to_string(), e))?;
        debug_assert_eq!(made, dir);
        // Fault-around of one page where debugfs allows it.
        let fa = Path::new(DEBUGFS_FAULT_AROUND);
        let fault_around = match crate::host::read_knob(fa) {
            Ok(_) => {
                guard
                    .set_knob(fa, "4096")
                    .map_err(|e| io_err(DEBUGFS_FAULT_AROUND, e))?;
                4096
            }
            Err(_) => DEFAULT_FAULT_AROUND,
        };
        let ids = fault_tracepoints(&guard)?;
        if let Some(cpus) = &opts.cpus {
            if let Some(c) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
                return Err(NativeError::Refused(format!("--cpus: no CPU {c}")));
            }
            // Inherited by the threads started below and by the program.
            sys::set_affinity(&sys::cpu_set(cpus)).map_err(|e| {
                NativeError::Refused(format!("--cpus {cpus:?}: cannot run there: {e}"))
            })?;
        }
        let start = Instant::now();
        let mut rec = trace_program(opts, &ids, &guard)?;
        rec.meta.wall_ns = start.elapsed().as_nanos() as u64;
        rec.meta.fault_around_bytes = fault_around;
        if opts.overhead {
            rec.meta.plain_wall_ns = plain_run(&opts.command)?;
        }
        let trace = dir.join(foliosim_recording::TRACE);
        let bytes = format::encode_file(&rec.meta, &rec.records);
        fs::write(&trace, &bytes).map_err(|e| io_err(&trace.display().to_string(), e))?;
        let header = dir.join(foliosim_recording::HEADER);
        fs::write(&header, header_text(&rec.meta))
            .map_err(|e| io_err(&header.display().to_string(), e))?;
        fs::rename(dir, &opts.out).map_err(|e| io_err(&opts.out.display().to_string(), e))?;
        Ok::<_, NativeError>(Recorded {
            meta: rec.meta,
            faults: rec.faults,
            processes: rec.processes,
            threads: rec.threads,
            trace_bytes: bytes.len() as u64,
        })
    })();
    // Restores fault-around and removes the temporary directory (gone
    // already when it was renamed).
    let errs = guard.finish();
    let rec = out?;
    if let Some(e) = errs.first() {
        return Err(NativeError::Io {
            at: "restoring the host".into(),
            what: e.clone(),
        });
    }
    Ok(rec)
}

/// The program's wall time without recording, under the same policy (THP
/// disabled, no randomisation, the recording's fault-around), in ns.
fn plain_run(command: &[String]) -> Result<u64, NativeError> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(&command[0]);
    cmd.args(&command[1..]);
    // SAFETY: the closure runs in the child between fork and exec and
    // only makes two system calls on no shared data.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            Ok(())
        });
    }
    let start = Instant::now();
    let status = cmd.status().map_err(|e| io_err(&command[0], e))?;
    let ns = start.elapsed().as_nanos() as u64;
    if !status.success() {
        eprintln!("foliosim record: the run without recording ended with {status}");
    }
    Ok(ns)
}

/// The replay scenario's header: the recording policy as `[system]`.
fn header_text(m: &Meta) -> String {
    let cmd = m.command.join(" ").replace(['"', '\\'], "'");
    let name = Path::new(&m.command[0])
        .file_name()
        .map_or_else(|| "recording".into(), |n| n.to_string_lossy().into_owned());
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut s = format!(
        "# A recording made by `foliosim record`: `foliosim record --summary` on this\n\
         # directory describes it, `foliosim run` on it replays it. Edit or override\n\
         # (--set) the [system] settings like any scenario's.\n\
         name = \"{name}\"\n\
         description = \"\"\"\n\
         Replayed from a recording of `{cmd}` ({} Linux {}), recorded with THP\n\
         disabled and fault_around_bytes = {}.\"\"\"\n\n\
         [system]\n\
         transparent_hugepage.enabled = \"never\"\n",
        m.arch, m.kernel, m.fault_around_bytes
    );
    // PR_SET_THP_DISABLE turns every size off, whatever its own setting:
    // so does the replay's policy, also where a host's default is on. The
    // PMD size inherits the top-level setting, so that `--set
    // transparent_hugepage.enabled=always` turns PMD THP on.
    for kb in [16, 32, 64, 128, 256, 512, 1024] {
        s += &format!("transparent_hugepage.hugepages-{kb}kB.enabled = \"never\"\n");
    }
    s += "transparent_hugepage.hugepages-2048kB.enabled = \"inherit\"\n";
    if m.fault_around_bytes != DEFAULT_FAULT_AROUND {
        s += &format!("fault_around_bytes = {}\n", m.fault_around_bytes);
    }
    s
}

/// A recorded program: the header, the encoded records and counts.
struct Traced {
    meta: Meta,
    records: Vec<u8>,
    faults: u64,
    processes: usize,
    threads: usize,
}

/// A record of the tracer with its time.
struct Timed {
    ns: u64,
    tid: u32,
    rec: Rec,
}

/// What the tracer saw.
enum Rec {
    Event(Event),
    /// The written pages of a scan of process `tid`'s memory (written
    /// pages since the last scan, now protected again).
    Scan(Vec<writetrack::Written>),
    /// Process `tid` started process `child` with vfork(2) (or clone with
    /// CLONE_VM): the child runs in the parent's memory until it execs.
    Vfork(u32),
}

impl Timed {
    fn event(ns: u64, tid: u32, event: Event) -> Timed {
        Timed {
            ns,
            tid,
            rec: Rec::Event(event),
        }
    }
}

/// The state of one traced thread.
#[derive(Default)]
struct Task {
    pid: u32,
    /// The system call stopped at by seccomp, awaiting its result.
    pending: Option<(u64, [u64; 6])>,
}

/// Files seen so far, by (device, inode).
#[derive(Default)]
struct Files {
    ids: HashMap<(u64, u64), u32>,
}

impl Files {
    /// The id of the file `path` names (stat'ed now), recording a File
    /// event the first time.
    fn id(&mut self, path: &Path, shown: &str, out: &mut Vec<Event>) -> Option<u32> {
        self.id_and_size(path, shown, out).map(|(id, _)| id)
    }

    /// [`Files::id`] and the file's size now; None for anything but a
    /// regular file.
    fn id_and_size(
        &mut self,
        path: &Path,
        shown: &str,
        out: &mut Vec<Event>,
    ) -> Option<(u32, u64)> {
        let m = fs::metadata(path).ok()?;
        if !m.is_file() {
            return None;
        }
        let key = (m.dev(), m.ino());
        if let Some(&id) = self.ids.get(&key) {
            return Some((id, m.len()));
        }
        let id = self.ids.len() as u32;
        self.ids.insert(key, id);
        // Opening the file to ask adds nothing to its page cache.
        let cached = fs::File::open(path)
            .and_then(|f| sys::cached_bytes(&f))
            .unwrap_or(m.len());
        out.push(Event::File {
            id,
            dev: key.0,
            ino: key.1,
            size: m.len(),
            cached: cached.min(m.len()),
            path: shown.to_string(),
        });
        Some((id, m.len()))
    }
}

fn trace_program(
    opts: &RecordOptions,
    ids: &[u64; 2],
    guard: &HostGuard,
) -> Result<Traced, NativeError> {
    let filter = seccomp_filter()?;
    let argv: Vec<CString> = opts
        .command
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| NativeError::Refused("an argument contains a NUL byte".into()))?;
    let (go_r, go_w) = sys::pipe().map_err(|e| io_err("pipe", e))?;
    let child = spawn_traced(&argv, &filter, go_r.as_raw_fd()).map_err(|e| io_err("fork", e))?;
    drop(go_r);
    guard.set_workload(child);
    let options = libc::PTRACE_O_TRACESYSGOOD
        | libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEEXEC
        | libc::PTRACE_O_TRACESECCOMP
        | libc::PTRACE_O_EXITKILL;
    // The child waits on the pipe, before its filter and exec, until it
    // is traced; a failed attach closes the pipe, and it exits.
    sys::ptrace(libc::PTRACE_SEIZE, child, 0, options as u64)
        .map_err(|e| io_err("PTRACE_SEIZE", e))?;
    let rings = open_rings(child, ids)?;
    sys::write_all(go_w.as_raw_fd(), b"g").map_err(|e| io_err("starting the program", e))?;
    drop(go_w);
    let stop = Arc::new(AtomicBool::new(false));
    let shared = DrainShared::default();
    let drain = {
        let (stop, shared) = (stop.clone(), shared.clone());
        let progress = opts.progress && io::stderr().is_terminal();
        std::thread::Builder::new()
            .name("foliosim-record".into())
            .spawn(move || drain_rings(rings, shared, &stop, progress))
            .map_err(|e| io_err("drain thread", e))?
    };
    let ticker = (opts.epoch_ms > 0)
        .then(|| Ticker::start(opts.epoch_ms))
        .transpose()?;
    let mut tracer = Tracer::new(
        child,
        ticker.as_ref().map(|t| t.due.clone()),
        shared.clone(),
    );
    let traced = tracer.run();
    drop(ticker);
    stop.store(true, Ordering::SeqCst);
    let _ = drain.join();
    let (rest, lost) = shared
        .0
        .lock()
        .map(|mut d| (std::mem::take(&mut d.samples), d.lost))
        .unwrap_or_default();
    let timed = std::mem::take(&mut tracer.out);
    tracer.merger.push(timed, rest, &tracer.all_tids);
    traced?;
    let status = tracer.status;
    if !tracer.merger.saw_exec {
        let why = match status {
            s if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 127 => {
                "not found or not executable".to_string()
            }
            s if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 126 => {
                "the seccomp filter could not be installed".to_string()
            }
            s => format!("it ended before exec (wait status {s:#x})"),
        };
        return Err(NativeError::Refused(format!(
            "cannot run {}: {why}",
            opts.command[0]
        )));
    }
    Ok(tracer.merger.finish(opts, lost, status))
}

/// Fork the program: it disables THP, turns address randomisation off,
/// waits until the tracer has attached (a byte on `go`), then installs
/// the seccomp filter and execs. The child allocates nothing.
fn spawn_traced(argv: &[CString], filter: &[libc::sock_filter], go: RawFd) -> io::Result<i32> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    let pid = sys::fork()?;
    if pid == 0 {
        // SAFETY: the child only makes system calls on data prepared
        // before the fork, then execs or exits.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            let mut b = 0u8;
            if libc::read(go, &mut b as *mut u8 as *mut libc::c_void, 1) != 1 {
                libc::_exit(125);
            }
            libc::close(go);
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            ) != 0
            {
                libc::_exit(126);
            }
            libc::execvp(ptrs[0], ptrs.as_ptr());
            libc::_exit(127);
        }
    }
    Ok(pid)
}

/// The epoch clock: a thread that marks an epoch due and interrupts the
/// tracer's waitpid(2) with SIGALRM.
struct Ticker {
    due: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(epoch_ms: u64) -> Result<Ticker, NativeError> {
        sys::interrupt_on(libc::SIGALRM).map_err(|e| io_err("SIGALRM handler", e))?;
        let (due, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let tracer = sys::gettid();
        let thread = {
            let (due, stop) = (due.clone(), stop.clone());
            std::thread::Builder::new()
                .name("foliosim-epoch".into())
                .spawn(move || {
                    let period = std::time::Duration::from_millis(epoch_ms);
                    let mut next = Instant::now() + period;
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                        next += period;
                        due.store(true, Ordering::SeqCst);
                        sys::tgkill_self(tracer, libc::SIGALRM);
                    }
                })
                .map_err(|e| io_err("epoch thread", e))?
        };
        Ok(Ticker {
            due,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The seccomp filter: trace the six memory-management calls and the four
/// plain file I/O calls, allow the rest (and everything of another architecture's ABI).
fn seccomp_filter() -> Result<Vec<libc::sock_filter>, NativeError> {
    use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
    let calls = [
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_mprotect,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_close,
        libc::SYS_close_range,
        SYS_DUP2,
        libc::SYS_dup3,
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_pread64,
        libc::SYS_pwrite64,
    ];
    let rules = calls.iter().map(|&nr| (nr, vec![])).collect();
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| NativeError::Refused(format!("seccomp: {e:?}")))?;
    let f = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Trace(0), arch)
        .map_err(|e| NativeError::Refused(format!("seccomp filter: {e}")))?;
    let prog: seccompiler::BpfProgram = f
        .try_into()
        .map_err(|e: seccompiler::BackendError| NativeError::Refused(format!("seccomp: {e}")))?;
    Ok(prog
        .into_iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect())
}

/// struct ptrace_syscall_info (include/uapi/linux/ptrace.h), as bytes.
#[repr(C, align(8))]
pub(crate) struct SyscallInfo(pub(crate) [u8; 88]);

const PTRACE_GET_SYSCALL_INFO: sys::PtraceReq = 0x420e;
const OP_EXIT: u8 = 2;
const OP_SECCOMP: u8 = 3;

impl SyscallInfo {
    fn u64_at(&self, at: usize) -> u64 {
        u64::from_ne_bytes(self.0[at..at + 8].try_into().unwrap_or_default())
    }
}

pub(crate) fn syscall_info(tid: i32) -> io::Result<SyscallInfo> {
    let mut info = SyscallInfo([0; 88]);
    // SAFETY: the kernel writes at most the size passed into `info`.
    let r = unsafe {
        libc::ptrace(
            PTRACE_GET_SYSCALL_INFO,
            tid,
            std::mem::size_of::<SyscallInfo>(),
            info.0.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

/// `PTRACE_EVENT_STOP`: a seized tracee's stop for PTRACE_INTERRUPT, a
/// group stop, or a new task's first stop.
const EVENT_STOP: i32 = 128;
const OP_ENTRY: u8 = 1;

/// The tracer: every task of the program, what it learnt of them, and
/// the write tracking of each process's memory.
struct Tracer {
    root: i32,
    tasks: HashMap<i32, Task>,
    all_tids: HashMap<u32, u32>,
    /// New tasks whose first stop came before their parent's event.
    early: HashSet<i32>,
    expected: HashSet<i32>,
    out: Vec<Timed>,
    files: Files,
    brk: HashMap<u32, u64>,
    status: i32,
    /// Is an epoch due (set by the ticker); None: no epochs.
    due: Option<Arc<AtomicBool>>,
    /// Processes whose memory is tracked, and those to track from their
    /// next seccomp stop on.
    trackers: HashMap<u32, writetrack::Tracker>,
    untracked: HashSet<u32>,
    warned: bool,
    fds: FdCache,
    /// The trace so far, and the fault samples to merge into it.
    merger: Merger,
    drain: DrainShared,
}

impl Tracer {
    fn new(root: i32, due: Option<Arc<AtomicBool>>, drain: DrainShared) -> Tracer {
        let mut t = Tracer {
            root,
            tasks: HashMap::new(),
            all_tids: HashMap::new(),
            early: HashSet::new(),
            expected: HashSet::new(),
            out: Vec::new(),
            files: Files::default(),
            brk: HashMap::new(),
            status: 0,
            due,
            trackers: HashMap::new(),
            untracked: HashSet::new(),
            warned: false,
            merger: Merger::default(),
            fds: FdCache::new(),
            drain,
        };
        t.tasks.insert(
            root,
            Task {
                pid: root as u32,
                pending: None,
            },
        );
        t.all_tids.insert(root as u32, root as u32);
        t
    }

    fn run(&mut self) -> Result<(), NativeError> {
        while !self.tasks.is_empty() || !self.early.is_empty() {
            if self
                .due
                .as_ref()
                .is_some_and(|d| d.swap(false, Ordering::SeqCst))
            {
                self.epoch()?;
                continue;
            }
            let (tid, st) = match sys::wait_any_interruptible(-1) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::ECHILD) => break,
                Err(e) => return Err(io_err("waitpid", e)),
            };
            self.handle(tid, st);
        }
        Ok(())
    }

    /// Resume `tid` to its next stop: to the exit of the call it is in
    /// when that call's result is awaited.
    fn resume(&self, tid: i32, sig: i32) {
        let req = match self.tasks.get(&tid) {
            Some(t) if t.pending.is_some() => libc::PTRACE_SYSCALL,
            _ => libc::PTRACE_CONT,
        };
        let _ = sys::ptrace(req, tid, 0, sig as u64);
    }

    /// An epoch: stop every thread (PTRACE_INTERRUPT), scan every tracked
    /// process's memory, resume them, then handle the other stops met on
    /// the way as if they came now.
    fn epoch(&mut self) -> Result<(), NativeError> {
        let mut waiting: HashSet<i32> = self.tasks.keys().copied().collect();
        for &t in &waiting {
            let _ = sys::ptrace(libc::PTRACE_INTERRUPT, t, 0, 0);
        }
        let (mut ours, mut other) = (Vec::new(), Vec::new());
        while !waiting.is_empty() {
            let (tid, st) = match sys::wait_any(-1) {
                Ok(x) => x,
                Err(e) if e.raw_os_error() == Some(libc::ECHILD) => break,
                Err(e) => return Err(io_err("waitpid", e)),
            };
            let interrupt = libc::WIFSTOPPED(st)
                && libc::WSTOPSIG(st) == libc::SIGTRAP
                && (st >> 16) & 0xff == EVENT_STOP;
            if waiting.remove(&tid) && interrupt {
                ours.push(tid);
            } else {
                other.push((tid, st));
            }
        }
        let now = sys::clock(libc::CLOCK_MONOTONIC);
        for (&pid, t) in &self.trackers {
            if let Ok(w) = t.scan() {
                self.out.push(Timed {
                    ns: now,
                    tid: pid,
                    rec: Rec::Scan(w),
                });
            }
        }
        self.out.push(Timed::event(now, 0, Event::Epoch));
        // Everything up to now, faults included, is in: take it, let the
        // program go on, then merge it.
        let samples = flush_drain(&self.drain);
        let timed = std::mem::take(&mut self.out);
        for tid in ours {
            self.resume(tid, 0);
        }
        for (tid, st) in other {
            self.handle(tid, st);
        }
        self.merger.push(timed, samples, &self.all_tids);
        Ok(())
    }

    fn handle(&mut self, tid: i32, st: i32) {
        let now = sys::clock(libc::CLOCK_MONOTONIC);
        if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
            if let Some(t) = self.tasks.remove(&tid) {
                if t.pid == tid as u32 {
                    self.out
                        .push(Timed::event(now, tid as u32, Event::Exit { status: st }));
                    self.trackers.remove(&t.pid);
                    self.untracked.remove(&t.pid);
                    self.fds.retain(|(p, _), _| *p != t.pid);
                    if tid == self.root {
                        self.status = st;
                    }
                }
            }
            return;
        }
        if !libc::WIFSTOPPED(st) {
            return;
        }
        if let std::collections::hash_map::Entry::Vacant(v) = self.tasks.entry(tid) {
            if self.expected.remove(&tid) {
                let pid = tgid(tid).unwrap_or(tid as u32);
                v.insert(Task { pid, pending: None });
                self.resume(tid, 0);
            } else {
                // Its parent's fork event comes next; resume it then.
                self.early.insert(tid);
            }
            return;
        }
        let sig = libc::WSTOPSIG(st);
        let event = (st >> 16) & 0xff;
        let pid = self.tasks[&tid].pid;
        match (sig, event) {
            (s, _) if s == libc::SIGTRAP | 0x80 => self.syscall_stop(tid, pid, now),
            (libc::SIGTRAP, e) if e == libc::PTRACE_EVENT_SECCOMP => self.seccomp_stop(tid, pid),
            (libc::SIGTRAP, e)
                if e == libc::PTRACE_EVENT_FORK
                    || e == libc::PTRACE_EVENT_VFORK
                    || e == libc::PTRACE_EVENT_CLONE =>
            {
                self.new_task(tid, pid, e == libc::PTRACE_EVENT_VFORK, now);
                self.resume(tid, 0);
            }
            (libc::SIGTRAP, e) if e == libc::PTRACE_EVENT_EXEC => {
                // The thread-group leader reports the exec.
                let mut evs = vec![Event::Exec];
                self.brk.remove(&pid);
                initial_maps(pid, &mut self.files, &mut evs);
                self.out
                    .extend(evs.into_iter().map(|e| Timed::event(now, tid as u32, e)));
                // A new memory: tracked from its first traced call on.
                self.trackers.remove(&pid);
                self.fds.retain(|(p, _), _| *p != pid);
                if self.due.is_some() {
                    self.untracked.insert(pid);
                }
                self.resume(tid, 0);
            }
            // A group stop or a PTRACE_INTERRUPT that came late: go on
            // (the recorder does not stop the program for job control).
            (_, EVENT_STOP) => self.resume(tid, 0),
            (libc::SIGTRAP, e) if e != 0 => self.resume(tid, 0),
            // A signal for the program: deliver it.
            (s, _) => self.resume(tid, s),
        }
    }

    /// A syscall-exit stop of a call seccomp stopped (or an entry stop
    /// ptrace reports on the way).
    fn syscall_stop(&mut self, tid: i32, pid: u32, now: u64) {
        let Ok(info) = syscall_info(tid) else {
            self.resume(tid, 0);
            return;
        };
        if info.0[0] == OP_ENTRY {
            self.resume(tid, 0);
            return;
        }
        let pending = self.tasks.get_mut(&tid).and_then(|t| t.pending.take());
        if let (Some((nr, args)), OP_EXIT) = (pending, info.0[0]) {
            let rval = info.u64_at(24) as i64;
            let is_error = info.0[32] != 0;
            let mut evs = Vec::new();
            if !is_error {
                syscall_events(
                    nr,
                    args,
                    rval as u64,
                    pid,
                    &mut self.files,
                    &mut self.brk,
                    &mut evs,
                );
                if let Some(t) = self.trackers.get(&pid) {
                    register_new(t, pid, &evs);
                }
            }
            self.out
                .extend(evs.into_iter().map(|e| Timed::event(now, tid as u32, e)));
        }
        self.resume(tid, 0);
    }

    fn seccomp_stop(&mut self, tid: i32, pid: u32) {
        if self.untracked.remove(&pid) {
            match writetrack::Tracker::inject(pid, tid) {
                Ok(t) => {
                    self.trackers.insert(pid, t);
                    // It makes its call again: the next stop is that
                    // call's seccomp stop.
                    self.resume(tid, 0);
                    return;
                }
                Err(writetrack::Injected::Untouched(e)) => self.untrackable(pid, &e),
                Err(writetrack::Injected::Failed(e)) => {
                    self.untrackable(pid, &e);
                    self.resume(tid, 0);
                    return;
                }
                Err(writetrack::Injected::Died(t, st)) => {
                    self.handle(t, st);
                    return;
                }
            }
        }
        if let Ok(info) = syscall_info(tid) {
            if info.0[0] == OP_SECCOMP {
                let nr = info.u64_at(24);
                let mut args = [0u64; 6];
                for (i, a) in args.iter_mut().enumerate() {
                    *a = info.u64_at(32 + 8 * i);
                }
                let fd_gone = |fds: &mut FdCache, first: u64, last: u64| {
                    fds.retain(|(p, fd), _| *p != pid || !(first..=last).contains(&(*fd as u64)))
                };
                if nr as i64 == libc::SYS_close {
                    fd_gone(&mut self.fds, args[0], args[0]);
                } else if nr as i64 == libc::SYS_close_range {
                    fd_gone(&mut self.fds, args[0], args[1]);
                } else if nr as i64 == SYS_DUP2 || nr as i64 == libc::SYS_dup3 {
                    fd_gone(&mut self.fds, args[1], args[1]);
                } else if let Some(&(_, call)) = IO_CALLS.iter().find(|(n, _)| *n as u64 == nr) {
                    let mut evs = Vec::new();
                    io_event(
                        call,
                        args,
                        (pid, tid as u32),
                        &mut self.files,
                        &mut self.fds,
                        &mut evs,
                    );
                    let now = sys::clock(libc::CLOCK_MONOTONIC);
                    self.out
                        .extend(evs.into_iter().map(|e| Timed::event(now, tid as u32, e)));
                } else if let Some(t) = self.tasks.get_mut(&tid) {
                    t.pending = Some((nr, args));
                }
            }
        }
        // To the call's exit stop when its result is awaited (pending).
        self.resume(tid, 0);
    }

    /// Say once that a process's later writes go unrecorded, and why.
    fn untrackable(&mut self, pid: u32, e: &io::Error) {
        if !self.warned {
            self.warned = true;
            eprintln!(
                "foliosim record: warning: later writes of process {pid} (and maybe others) are \
                 not recorded: userfaultfd write-protection: {e}"
            );
        }
    }

    /// A fork, vfork or clone event of `tid`: the new task.
    fn new_task(&mut self, tid: i32, pid: u32, vfork: bool, now: u64) {
        let new = sys::ptrace_geteventmsg(tid).unwrap_or(0) as i32;
        if new <= 0 {
            return;
        }
        let new_pid = tgid(new).unwrap_or(new as u32);
        self.all_tids.insert(new as u32, new_pid);
        let event = if new_pid == pid {
            Event::Thread { tid: new as u32 }
        } else {
            if vfork {
                self.out.push(Timed {
                    ns: now,
                    tid: tid as u32,
                    rec: Rec::Vfork(new_pid),
                });
            } else if self.due.is_some() {
                self.untracked.insert(new_pid);
            }
            Event::Fork { child: new_pid }
        };
        self.out.push(Timed::event(now, tid as u32, event));
        if self.early.remove(&new) {
            self.tasks.insert(
                new,
                Task {
                    pid: new_pid,
                    pending: None,
                },
            );
            self.resume(new, 0);
        } else {
            self.expected.insert(new);
        }
    }
}

/// Register the private anonymous memory a call just mapped for write
/// tracking (file mappings never: see crate::writetrack).
fn register_new(t: &writetrack::Tracker, pid: u32, evs: &[Event]) {
    for e in evs {
        match e {
            Event::Map {
                start,
                len,
                shared: false,
                kind: MapKind::Anon | MapKind::Heap,
                ..
            } => {
                let _ = t.register(*start, *len);
            }
            Event::Remap { new, new_len, .. } => {
                t.register_anon_maps_in(pid, Some((*new, new + new_len)));
            }
            _ => {}
        }
    }
}

/// The process (thread group) of thread `tid`, from /proc.
fn tgid(tid: i32) -> Option<u32> {
    let s = fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

fn page_up(v: u64) -> u64 {
    v.div_ceil(4096) * 4096
}

/// The records of a memory-management call of process `pid` that
/// returned `rval`.
fn syscall_events(
    nr: u64,
    a: [u64; 6],
    rval: u64,
    pid: u32,
    files: &mut Files,
    brk: &mut HashMap<u32, u64>,
    out: &mut Vec<Event>,
) {
    let nr = nr as i64;
    if nr == libc::SYS_mmap {
        let (len, prot, flags, fd, off) =
            (page_up(a[1]), a[2] as u32, a[3] as i32, a[4] as i32, a[5]);
        let shared = flags & libc::MAP_TYPE == libc::MAP_SHARED
            || flags & libc::MAP_TYPE == libc::MAP_SHARED_VALIDATE;
        let kind = if flags & libc::MAP_ANONYMOUS != 0 {
            MapKind::Anon
        } else {
            let link = PathBuf::from(format!("/proc/{pid}/fd/{fd}"));
            let shown = fs::read_link(&link)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            match files.id(&link, &shown, out) {
                Some(file) => MapKind::File { file, offset: off },
                None => MapKind::Anon,
            }
        };
        out.push(Event::Map {
            start: rval,
            len,
            prot,
            shared,
            kind,
        });
    } else if nr == libc::SYS_munmap {
        out.push(Event::Unmap {
            start: a[0],
            len: page_up(a[1]),
        });
    } else if nr == libc::SYS_mremap {
        out.push(Event::Remap {
            old: a[0],
            old_len: page_up(a[1]),
            new: rval,
            new_len: page_up(a[2]),
        });
    } else if nr == libc::SYS_mprotect {
        out.push(Event::Protect {
            start: a[0],
            len: page_up(a[1]),
            prot: a[2] as u32,
        });
    } else if nr == libc::SYS_madvise {
        out.push(Event::Advise {
            start: a[0],
            len: page_up(a[1]),
            advice: a[2] as u32,
        });
    } else if nr == libc::SYS_brk {
        let new = rval;
        let old = *brk.get(&pid).unwrap_or(&new);
        brk.insert(pid, new);
        let (o, n) = (page_up(old), page_up(new));
        if n > o {
            out.push(Event::Map {
                start: o,
                len: n - o,
                prot: (libc::PROT_READ | libc::PROT_WRITE) as u32,
                shared: false,
                kind: MapKind::Heap,
            });
        } else if n < o {
            out.push(Event::Unmap {
                start: n,
                len: o - n,
            });
        }
    }
}

/// What the recorder knows of each process's descriptors: the file a
/// descriptor refers to and its size last seen (None: not a file whose
/// I/O is recorded). An entry goes when its descriptor is closed or
/// replaced (close, close_range, dup2, dup3, exec, exit).
type FdCache = HashMap<(u32, i32), Option<(u32, u64)>>;

/// dup2(2), which arm64 has not (its C library makes it with dup3): there,
/// dup3's number again.
#[cfg(target_arch = "x86_64")]
const SYS_DUP2: i64 = libc::SYS_dup2;
#[cfg(not(target_arch = "x86_64"))]
const SYS_DUP2: i64 = libc::SYS_dup3;

/// The I/O calls the recorder records, by number.
const IO_CALLS: [(i64, IoCall); 4] = [
    (libc::SYS_read, IoCall::Read),
    (libc::SYS_write, IoCall::Write),
    (libc::SYS_pread64, IoCall::Pread),
    (libc::SYS_pwrite64, IoCall::Pwrite),
];

/// The record of an I/O call at its seccomp stop, before it runs, if it
/// goes to a regular file (not a pipe, socket, terminal or /proc, /sys,
/// /dev file). Taken there, the call costs one stop instead of two: the
/// bytes it will move are those asked for, a read's cut at the file's
/// end (a call that moves fewer, cut short by a signal or a full disk,
/// is recorded as asked); read(2) and write(2) start at the
/// descriptor's position, an O_APPEND write at the file's end.
fn io_event(
    call: IoCall,
    a: [u64; 6],
    (pid, tid): (u32, u32),
    files: &mut Files,
    fds: &mut FdCache,
    out: &mut Vec<Event>,
) {
    let (fd, count) = (a[0] as i32, a[2]);
    if count == 0 {
        return;
    }
    let link = PathBuf::from(format!("/proc/{tid}/fd/{fd}"));
    let known = match fds.get(&(pid, fd)) {
        Some(k) => *k,
        None => {
            let k = fs::read_link(&link).ok().and_then(|target| {
                let shown = target.display().to_string();
                let recordable = shown.starts_with('/')
                    && !["/proc/", "/sys/", "/dev/"]
                        .iter()
                        .any(|p| shown.starts_with(p));
                recordable
                    .then(|| files.id_and_size(&link, &shown, out))
                    .flatten()
            });
            fds.insert((pid, fd), k);
            k
        }
    };
    let Some((file, mut size)) = known else {
        return;
    };
    let offset = match call {
        IoCall::Pread | IoCall::Pwrite => a[3],
        IoCall::Read | IoCall::Write => {
            let Ok(info) = fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}")) else {
                return;
            };
            let field = |name: &str, radix: u32| {
                info.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| u64::from_str_radix(v.trim(), radix).ok())
            };
            let append = field("flags:", 8).is_some_and(|f| f & libc::O_APPEND as u64 != 0);
            match field("pos:", 10) {
                _ if append && call == IoCall::Write => size,
                Some(pos) => pos,
                None => return,
            }
        }
    };
    // A read past the size last seen: the file may have grown since.
    if !call.is_write() && offset.saturating_add(count) > size {
        if let Ok(m) = fs::metadata(&link) {
            size = m.len();
        }
    }
    let len = if call.is_write() {
        count
    } else {
        count.min(size.saturating_sub(offset))
    };
    if len == 0 {
        return;
    }
    fds.insert((pid, fd), Some((file, size.max(offset + len))));
    out.push(Event::Io {
        file,
        call,
        offset,
        len,
    });
}

/// The mappings of a new image, from /proc/PID/maps at the exec stop.
fn initial_maps(pid: u32, files: &mut Files, out: &mut Vec<Event>) {
    let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return;
    };
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(off), Some(_dev), Some(ino)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let path: Vec<&str> = f.collect();
        let path = path.join(" ");
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16)) else {
            continue;
        };
        let p = perms.as_bytes();
        let mut prot = 0;
        for (i, bit) in [libc::PROT_READ, libc::PROT_WRITE, libc::PROT_EXEC]
            .iter()
            .enumerate()
        {
            if p.get(i).is_some_and(|c| *c != b'-') {
                prot |= bit;
            }
        }
        let shared = p.get(3) == Some(&b's');
        let kind = if path == "[stack]" {
            MapKind::Stack
        } else if path == "[heap]" {
            MapKind::Heap
        } else if path.starts_with('[') {
            MapKind::Special(path.clone())
        } else if ino != "0" && !path.is_empty() {
            let offset = u64::from_str_radix(off, 16).unwrap_or(0);
            let link = PathBuf::from(format!("/proc/{pid}/map_files/{range}"));
            match files.id(&link, &path, out) {
                Some(file) => MapKind::File { file, offset },
                None => MapKind::Anon,
            }
        } else {
            MapKind::Anon
        };
        out.push(Event::Map {
            start,
            len: end - start,
            prot: prot as u32,
            shared,
            kind,
        });
    }
}

/// A fault sample: time, thread, page, write.
type Sample = (u64, u32, u64, bool);

/// The trace, merged and encoded a chunk at a time: at every epoch (all
/// threads held, every fault before it in the ring buffers) and at the
/// end, so that memory holds one epoch of records, not the whole run.
#[derive(Default)]
struct Merger {
    enc: Encoder,
    cur: (u32, u32),
    procs: HashSet<u32>,
    threads: HashSet<u32>,
    unknown: u64,
    faults: u64,
    writes: Classify,
    saw_exec: bool,
}

impl Merger {
    /// Merge the tracer's records and the fault samples of one chunk by
    /// time (every record of a later chunk is later) and encode them.
    fn push(&mut self, timed: Vec<Timed>, samples: Vec<Sample>, tids: &HashMap<u32, u32>) {
        enum Item {
            Rec(Rec),
            Fault(u64, bool),
        }
        let mut all: Vec<(u64, u32, Item)> = timed
            .into_iter()
            .map(|t| (t.ns, t.tid, Item::Rec(t.rec)))
            .collect();
        all.extend(
            samples
                .into_iter()
                .map(|(ns, tid, page, w)| (ns, tid, Item::Fault(page, w))),
        );
        // Stable: the tracer's records keep their order at equal times.
        all.sort_by_key(|r| r.0);
        for (_, tid, item) in all {
            // File and epoch records are not a task's: no switch for them.
            if let Item::Rec(Rec::Event(e @ (Event::File { .. } | Event::Epoch))) = &item {
                self.enc.push(e);
                continue;
            }
            let Some(&pid) = tids.get(&tid) else {
                self.unknown += 1;
                continue;
            };
            let event = match item {
                Item::Rec(Rec::Scan(w)) => {
                    self.writes.scan(pid, &w);
                    continue;
                }
                Item::Rec(Rec::Vfork(child)) => {
                    self.writes.vfork(child);
                    continue;
                }
                Item::Rec(Rec::Event(e)) => {
                    self.saw_exec |= e == Event::Exec;
                    self.writes.event(pid, &e);
                    e
                }
                Item::Fault(page, write) => match self.writes.fault(pid, page, write) {
                    Seen::Fault => {
                        self.faults += 1;
                        Event::Fault { page, write }
                    }
                    Seen::Access => Event::Access { page, write },
                    Seen::Nothing => continue,
                },
            };
            if self.cur != (pid, tid) {
                self.cur = (pid, tid);
                self.procs.insert(pid);
                self.threads.insert(tid);
                self.enc.push(&Event::Task { pid, tid });
            }
            self.enc.push(&event);
        }
    }

    fn finish(self, opts: &RecordOptions, lost: u64, status: i32) -> Traced {
        let meta = Meta {
            command: opts.command.clone(),
            arch: std::env::consts::ARCH.to_string(),
            kernel: crate::guest::kernel_release(),
            fault_around_bytes: 0,
            wall_ns: 0,
            plain_wall_ns: 0,
            lost_faults: lost + self.unknown,
            status,
            epoch_ms: opts.epoch_ms,
        };
        Traced {
            meta,
            records: self.enc.finish(),
            faults: self.faults,
            processes: self.procs.len(),
            threads: self.threads.len(),
        }
    }
}

/// Which write faults the recorder's own write-protection caused, from
/// the faults, the scans and the calls in time order.
///
/// A scan protects every written page (crate::writetrack); a write to a
/// protected page then faults, and the kernel resolves it by clearing the
/// protection, and copying the page where the program's own run would
/// have faulted too. So a write fault on a protected page is the
/// protection's alone when the page's PTE was writable at the scan: the
/// page was write-faulted since its memory was last copied for a fork
/// (after a fork every private page is copy-on-write), it is not the zero
/// page, and no munmap, madvise(DONTNEED, FREE, REMOVE) or mprotect has
/// touched it since. Those faults are recorded as accesses.
#[derive(Default)]
struct Classify {
    /// The memory each process runs in (a vfork child runs in its
    /// parent's until it execs), as an index into `mms`.
    mm_of: HashMap<u32, usize>,
    mms: Vec<MmWrites>,
    /// vfork children before their Fork record, and while they run in
    /// their parent's memory.
    vforked: HashSet<u32>,
    borrowing: HashSet<u32>,
}

/// What a fault sample is in the trace.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// The program's own fault.
    Fault,
    /// A later write the protection made visible.
    Access,
    /// A later write of a vfork child to its parent's memory: a replay
    /// runs the child as a fork, where the write would be a copy-on-write
    /// fault the program never took, so it is left out.
    Nothing,
}

#[derive(Default)]
struct MmWrites {
    /// Pages a scan protected while writable: their next write fault is
    /// the protection's.
    protected: BTreeSet<u64>,
    /// Pages write-faulted since the memory was last copied for a fork.
    writable: BTreeSet<u64>,
}

/// The madvise(2) advice that zap the pages of a range.
const ZAPPING_ADVICE: [u32; 4] = [
    libc::MADV_DONTNEED as u32,
    libc::MADV_FREE as u32,
    libc::MADV_REMOVE as u32,
    24, // MADV_DONTNEED_LOCKED
];

impl Classify {
    fn mm(&mut self, pid: u32) -> &mut MmWrites {
        let i = match self.mm_of.get(&pid) {
            Some(&i) => i,
            None => self.new_mm(pid),
        };
        &mut self.mms[i]
    }

    fn new_mm(&mut self, pid: u32) -> usize {
        self.mms.push(MmWrites::default());
        self.mm_of.insert(pid, self.mms.len() - 1);
        self.mms.len() - 1
    }

    /// A fault of `pid`: the program's, or the protection's?
    fn fault(&mut self, pid: u32, page: u64, write: bool) -> Seen {
        let borrowed = self.borrowing.contains(&pid);
        let m = self.mm(pid);
        let theirs = m.protected.remove(&page) && write;
        if write {
            m.writable.insert(page);
        } else {
            m.writable.remove(&page);
        }
        match (theirs, borrowed) {
            (false, _) => Seen::Fault,
            (true, false) => Seen::Access,
            (true, true) => Seen::Nothing,
        }
    }

    fn scan(&mut self, pid: u32, written: &[writetrack::Written]) {
        let m = self.mm(pid);
        for &(a, b, zero) in written {
            if !zero {
                let now: Vec<u64> = m.writable.range(a..b).copied().collect();
                m.protected.extend(now);
            }
        }
    }

    fn vfork(&mut self, child: u32) {
        self.vforked.insert(child);
    }

    fn zap(&mut self, pid: u32, start: u64, len: u64) {
        let (a, b) = (start >> 12, (start.saturating_add(len)) >> 12);
        let m = self.mm(pid);
        for set in [&mut m.protected, &mut m.writable] {
            let gone: Vec<u64> = set.range(a..b).copied().collect();
            for p in gone {
                set.remove(&p);
            }
        }
    }

    fn event(&mut self, pid: u32, e: &Event) {
        match *e {
            Event::Fork { child } => {
                if self.vforked.remove(&child) {
                    let i = self
                        .mm_of
                        .get(&pid)
                        .copied()
                        .unwrap_or_else(|| self.new_mm(pid));
                    self.mm_of.insert(child, i);
                    self.borrowing.insert(child);
                } else {
                    let m = self.mm(pid);
                    m.protected.clear();
                    m.writable.clear();
                    self.new_mm(child);
                }
            }
            Event::Exec => {
                self.borrowing.remove(&pid);
                self.new_mm(pid);
            }
            Event::Unmap { start, len } | Event::Protect { start, len, .. } => {
                self.zap(pid, start, len)
            }
            Event::Advise { start, len, advice } if ZAPPING_ADVICE.contains(&advice) => {
                self.zap(pid, start, len)
            }
            Event::Remap {
                old,
                old_len,
                new,
                new_len,
            } => {
                // Moved pages keep their PTEs, without the protection.
                let (a, n) = (old >> 12, old_len.min(new_len) >> 12);
                let m = self.mm(pid);
                let moved: Vec<u64> = m.writable.range(a..a + n).copied().collect();
                self.zap(pid, old, old_len);
                let m = self.mm(pid);
                m.writable
                    .extend(moved.into_iter().map(|p| p - a + (new >> 12)));
            }
            _ => {}
        }
    }
}

/// One CPU's ring buffer of one tracepoint.
struct Ring {
    fd: i32,
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping belongs to the ring alone; only the drain thread
// touches it after it is created.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are the mapping made in open_rings, and
        // `fd` its descriptor; both are used by nothing else now.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
            libc::close(self.fd);
        }
    }
}

use crate::perf::{
    ATTR_SIZE, FLAG_INHERIT, PERF_EVENT_IOC_SET_FILTER, PERF_FLAG_FD_CLOEXEC, PERF_TYPE_TRACEPOINT,
};

/// perf_event_attr flags and sample fields beyond the counting events'
/// (include/uapi/linux/perf_event.h).
const F_DISABLED: u64 = 1 << 0;
const F_ENABLE_ON_EXEC: u64 = 1 << 12;
const F_WATERMARK: u64 = 1 << 14;
const F_USE_CLOCKID: u64 = 1 << 25;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_RAW: u64 = 1 << 10;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;

/// Open both tracepoints on every CPU for the task tree of `pid`, each
/// with its ring buffer.
fn open_rings(pid: i32, ids: &[u64; 2]) -> Result<Vec<Ring>, NativeError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus = online_cpus().unwrap_or(cpus);
    let page = 4096usize;
    let len = page * (1 + (1 << RING_ORDER));
    let filter = CString::new("address < 0x800000000000").unwrap_or_default();
    let mut rings = Vec::new();
    for cpu in 0..cpus {
        for &id in ids {
            let mut a = [0u64; 17];
            a[0] = PERF_TYPE_TRACEPOINT | (ATTR_SIZE << 32); // type, size
            a[1] = id;
            a[2] = 1; // sample_period
            a[3] = SAMPLE_TID | SAMPLE_TIME | SAMPLE_RAW;
            a[5] = F_DISABLED | FLAG_INHERIT | F_ENABLE_ON_EXEC | F_USE_CLOCKID | F_WATERMARK;
            // wakeup_watermark: the drain thread polls on a timer, so no
            // wake-up is needed before the buffer is half full (a wake-up
            // per sample would cost more than the sample).
            a[6] = (page << RING_ORDER) as u64 / 2;
            a[11] = (libc::CLOCK_MONOTONIC as u64) << 32; // clockid
                                                          // SAFETY: `a` is a perf_event_attr of the size given in it.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    a.as_ptr(),
                    pid,
                    cpu as i32,
                    -1,
                    PERF_FLAG_FD_CLOEXEC,
                )
            } as i32;
            if fd < 0 {
                return Err(NativeError::Refused(format!(
                    "perf_event_open of the fault tracepoint on CPU {cpu}: {}",
                    io::Error::last_os_error()
                )));
            }
            // SAFETY: `fd` is the event just opened; the filter is a
            // NUL-terminated string the ioctl only reads.
            unsafe { libc::ioctl(fd, PERF_EVENT_IOC_SET_FILTER as _, filter.as_ptr()) };
            // SAFETY: a shared read-write mapping of the event's ring
            // buffer, of the size perf requires (1 + 2^n pages).
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                let e = io::Error::last_os_error();
                // SAFETY: `fd` is ours and unused.
                unsafe { libc::close(fd) };
                return Err(NativeError::Refused(format!("perf ring buffer: {e}")));
            }
            rings.push(Ring {
                fd,
                base: base as *mut u8,
                len,
            });
        }
    }
    Ok(rings)
}

fn online_cpus() -> Option<usize> {
    let s = fs::read_to_string("/sys/devices/system/cpu/possible").ok()?;
    let last = s.trim().rsplit(['-', ',']).next()?.parse::<usize>().ok()?;
    Some(last + 1)
}

/// Read the rings until `stop`, then once more: the samples and the
/// number of lost ones.
/// The fault samples the drain thread has read, shared with the tracer,
/// which asks for every sample up to now at each epoch.
#[derive(Default)]
struct Drained {
    samples: Vec<Sample>,
    lost: u64,
    /// Flush requests made, and those a read of every ring that began
    /// after the request has answered.
    asked: u64,
    answered: u64,
    done: bool,
}

type DrainShared = Arc<(std::sync::Mutex<Drained>, std::sync::Condvar)>;

/// Every sample read so far, once a read of every ring that began after
/// this call has finished (with the program's threads held, that is
/// every fault they took).
fn flush_drain(shared: &DrainShared) -> Vec<Sample> {
    let (lock, cv) = &**shared;
    let Ok(mut d) = lock.lock() else {
        return Vec::new();
    };
    d.asked += 1;
    let want = d.asked;
    cv.notify_all();
    while d.answered < want && !d.done {
        d = match cv.wait(d) {
            Ok(d) => d,
            Err(_) => return Vec::new(),
        };
    }
    std::mem::take(&mut d.samples)
}

fn drain_rings(rings: Vec<Ring>, shared: DrainShared, stop: &AtomicBool, progress: bool) {
    let (lock, cv) = &*shared;
    let (mut local, mut lost, mut seen) = (Vec::new(), 0u64, 0u64);
    let start = Instant::now();
    let mut shown = 0;
    loop {
        let last = stop.load(Ordering::SeqCst);
        let asked = lock.lock().map_or(0, |d| d.asked);
        for r in &rings {
            read_ring(r, &mut local, &mut lost);
        }
        seen += local.len() as u64;
        if let Ok(mut d) = lock.lock() {
            d.samples.append(&mut local);
            d.lost = lost;
            d.answered = d.answered.max(asked);
            d.done = last;
            cv.notify_all();
            // Sleep until the next poll or the next request.
            if !last && d.asked == asked {
                let _ = cv.wait_timeout(d, std::time::Duration::from_millis(2));
            }
        }
        if progress && start.elapsed().as_secs() > shown {
            shown = start.elapsed().as_secs();
            eprint!("\rfoliosim record: {shown} s, {seen} page faults recorded");
            let _ = io::stderr().flush();
        }
        if last {
            break;
        }
    }
    if progress && shown > 0 {
        eprintln!();
    }
}

fn read_ring(r: &Ring, out: &mut Vec<Sample>, lost: &mut u64) {
    let page = 4096usize;
    let data_len = r.len - page;
    // SAFETY: the first page is the perf_event_mmap_page; data_head is at
    // byte 1024 and data_tail at 1032, both naturally aligned u64s. The
    // kernel writes data_head; a volatile read and an acquire fence
    // order the data reads after it.
    let head = unsafe { std::ptr::read_volatile(r.base.add(1024) as *const u64) };
    std::sync::atomic::fence(Ordering::Acquire);
    // SAFETY: as above; only this thread writes data_tail.
    let mut tail = unsafe { std::ptr::read_volatile(r.base.add(1032) as *const u64) };
    // SAFETY: the data area follows the first page and is `data_len` long.
    let data = unsafe { std::slice::from_raw_parts(r.base.add(page), data_len) };
    let byte = |off: u64| data[(off % data_len as u64) as usize];
    let read = |off: u64, n: usize| -> Vec<u8> { (0..n as u64).map(|i| byte(off + i)).collect() };
    while tail < head {
        let h = read(tail, 8);
        let kind = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
        let size = u16::from_ne_bytes([h[6], h[7]]) as u64;
        if size == 0 {
            break;
        }
        match kind {
            PERF_RECORD_SAMPLE => {
                // pid, tid (u32 each), time (u64), raw size (u32), raw.
                let b = read(tail + 8, 16 + 4 + 32);
                let tid = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
                let ns = u64::from_ne_bytes(b[8..16].try_into().unwrap_or_default());
                let raw = &b[20..];
                let addr = u64::from_ne_bytes(raw[8..16].try_into().unwrap_or_default());
                let code = u64::from_ne_bytes(raw[24..32].try_into().unwrap_or_default());
                if addr < 1 << 47 {
                    out.push((ns, tid, addr >> 12, code & 2 != 0));
                }
            }
            PERF_RECORD_LOST => {
                let b = read(tail + 8, 16);
                *lost += u64::from_ne_bytes(b[8..16].try_into().unwrap_or_default());
            }
            _ => {}
        }
        tail += size;
    }
    std::sync::atomic::fence(Ordering::Release);
    // SAFETY: data_tail is ours to write (see above).
    unsafe { std::ptr::write_volatile(r.base.add(1032) as *mut u64, tail) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// brk growth and shrink become heap mappings and unmaps of whole
    /// pages; the first brk call only learns where the heap starts.
    #[test]
    fn brk_becomes_heap_maps() {
        let mut files = Files::default();
        let mut brk = HashMap::new();
        let mut out = Vec::new();
        let call = |rv: u64, brk: &mut HashMap<u32, u64>, out: &mut Vec<Event>, f: &mut Files| {
            syscall_events(libc::SYS_brk as u64, [0; 6], rv, 1, f, brk, out)
        };
        call(0x5555_5556_0010, &mut brk, &mut out, &mut files);
        assert!(out.is_empty());
        call(0x5555_5558_1010, &mut brk, &mut out, &mut files);
        call(0x5555_5557_0000, &mut brk, &mut out, &mut files);
        assert_eq!(
            out,
            vec![
                Event::Map {
                    start: 0x5555_5556_1000,
                    len: 0x21000,
                    prot: 3,
                    shared: false,
                    kind: MapKind::Heap,
                },
                Event::Unmap {
                    start: 0x5555_5557_0000,
                    len: 0x12000,
                },
            ]
        );
    }

    /// The protection's own faults become accesses; the program's stay
    /// faults: copy-on-write after a fork, the zero page, pages no write
    /// fault made writable, refaults after munmap. A vfork child's writes
    /// to its parent's memory are left out.
    #[test]
    fn write_faults_are_classified_by_the_kernel_rules() {
        let mut c = Classify::default();
        let (p, q) = (10u32, 11u32);
        // Pages 1-3 written (first touches), page 4 read (the zero page),
        // page 5 present without a fault (the kernel wrote it at exec).
        for page in 1..=3 {
            assert_eq!(c.fault(p, page, true), Seen::Fault);
        }
        assert_eq!(c.fault(p, 4, false), Seen::Fault);
        // The scan reports and protects 1-5; page 4 maps the zero page.
        c.scan(p, &[(1, 4, false), (4, 5, true), (5, 6, false)]);
        // Writable pages: the protection's fault, once per scan.
        assert_eq!(c.fault(p, 1, true), Seen::Access);
        assert_eq!(c.fault(p, 1, true), Seen::Fault);
        // The zero page's write is its copy-on-write; page 5 was never
        // seen writable, so its fault counts as the program's.
        assert_eq!(c.fault(p, 4, true), Seen::Fault);
        assert_eq!(c.fault(p, 5, true), Seen::Fault);
        // munmap drops page 2: its next fault is a first touch.
        c.event(
            p,
            &Event::Unmap {
                start: 2 << 12,
                len: 4096,
            },
        );
        assert_eq!(c.fault(p, 2, true), Seen::Fault);
        // A fork makes every private page copy-on-write in the parent.
        c.scan(p, &[(1, 4, false)]);
        c.event(p, &Event::Fork { child: q });
        assert_eq!(c.fault(p, 3, true), Seen::Fault);
        // The child's memory is its own: nothing of it is protected.
        assert_eq!(c.fault(q, 1, true), Seen::Fault);
        // A vfork child runs in its parent's memory: the parent's
        // protection shows its writes, which a replay cannot replay.
        assert_eq!(c.fault(p, 1, true), Seen::Fault);
        c.scan(p, &[(1, 6, false)]);
        c.vfork(20);
        c.event(p, &Event::Fork { child: 20 });
        assert_eq!(c.fault(20, 1, true), Seen::Nothing);
        assert_eq!(c.fault(p, 3, true), Seen::Access);
        // After its exec the child has memory of its own.
        c.event(20, &Event::Exec);
        assert_eq!(c.fault(20, 3, true), Seen::Fault);
    }
}

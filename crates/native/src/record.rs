//! `foliosim record`: run a real program and record its memory-management
//! behaviour as a trace (crates/recording).
//!
//! * System calls: a seccomp filter installed before exec stops the
//!   program only on mmap, munmap, mremap, mprotect, madvise and brk
//!   (`SECCOMP_RET_TRACE`); the recorder, its ptrace tracer, reads the
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
//! Records are merged by time and written to a temporary directory that is
//! renamed into place at the end; the host guard removes it on any other
//! exit, a signal included: an interrupted recording leaves nothing.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::fs;
use std::io::{self, IsTerminal, Write as _};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use foliosim_recording::format::{self, Encoder, Event, IoCall, MapKind, Meta};

use crate::guard::HostGuard;
use crate::sys;
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
    event: Event,
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
    let child = spawn_traced(&argv, &filter).map_err(|e| io_err("fork", e))?;
    guard.set_workload(child);
    // The child stops itself before installing the filter and exec.
    match sys::wait_any(child) {
        Ok((_, st)) if libc::WIFSTOPPED(st) => {}
        other => {
            return Err(io_err(
                "starting the program",
                format!("the child did not stop: {other:?}"),
            ))
        }
    }
    let options = libc::PTRACE_O_TRACESYSGOOD
        | libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEEXEC
        | libc::PTRACE_O_TRACESECCOMP
        | libc::PTRACE_O_EXITKILL;
    sys::ptrace(libc::PTRACE_SETOPTIONS, child, 0, options as u64)
        .map_err(|e| io_err("PTRACE_SETOPTIONS", e))?;
    let rings = open_rings(child, ids)?;
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicU64::new(0));
    let drain = {
        let (stop, seen) = (stop.clone(), seen.clone());
        let progress = opts.progress && io::stderr().is_terminal();
        std::thread::Builder::new()
            .name("foliosim-record".into())
            .spawn(move || drain_rings(rings, &stop, &seen, progress))
            .map_err(|e| io_err("drain thread", e))?
    };
    let traced = tracer_loop(child);
    stop.store(true, Ordering::SeqCst);
    let (samples, lost) = drain.join().unwrap_or_default();
    let (timed, tids, status) = traced?;
    if !timed.iter().any(|t| t.event == Event::Exec) {
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
    Ok(merge(opts, timed, tids, samples, lost, status))
}

/// Fork the program: it asks to be traced, disables THP, turns address
/// randomisation off, stops until the tracer has set its options, then
/// installs the seccomp filter and execs. The child allocates nothing.
fn spawn_traced(argv: &[CString], filter: &[libc::sock_filter]) -> io::Result<i32> {
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
            libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            libc::raise(libc::SIGSTOP);
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
struct SyscallInfo([u8; 88]);

const PTRACE_GET_SYSCALL_INFO: sys::PtraceReq = 0x420e;
const OP_EXIT: u8 = 2;
const OP_SECCOMP: u8 = 3;

impl SyscallInfo {
    fn u64_at(&self, at: usize) -> u64 {
        u64::from_ne_bytes(self.0[at..at + 8].try_into().unwrap_or_default())
    }
}

fn syscall_info(tid: i32) -> io::Result<SyscallInfo> {
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

/// Follow every task until the last exits: the tracer's records, the
/// thread-to-process table and the program's wait status.
type TracerOut = (Vec<Timed>, HashMap<u32, u32>, i32);

fn tracer_loop(root: i32) -> Result<TracerOut, NativeError> {
    let mut tasks: HashMap<i32, Task> = HashMap::new();
    let mut all_tids: HashMap<u32, u32> = HashMap::new();
    // New tasks whose first stop came before their parent's event.
    let mut early: HashSet<i32> = HashSet::new();
    let mut expected: HashSet<i32> = HashSet::new();
    let mut out: Vec<Timed> = Vec::new();
    let mut files = Files::default();
    let mut brk: HashMap<u32, u64> = HashMap::new();
    let mut status = 0;
    tasks.insert(
        root,
        Task {
            pid: root as u32,
            pending: None,
        },
    );
    all_tids.insert(root as u32, root as u32);
    let cont = |tid: i32, req: sys::PtraceReq, sig: i32| {
        let _ = sys::ptrace(req, tid, 0, sig as u64);
    };
    cont(root, libc::PTRACE_CONT, 0);
    while !tasks.is_empty() || !early.is_empty() {
        let (tid, st) = match sys::wait_any(-1) {
            Ok(x) => x,
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => break,
            Err(e) => return Err(io_err("waitpid", e)),
        };
        let now = sys::clock(libc::CLOCK_MONOTONIC);
        if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
            if let Some(t) = tasks.remove(&tid) {
                if t.pid == tid as u32 {
                    out.push(Timed {
                        ns: now,
                        tid: tid as u32,
                        event: Event::Exit { status: st },
                    });
                    if tid == root {
                        status = st;
                    }
                }
            }
            continue;
        }
        if !libc::WIFSTOPPED(st) {
            continue;
        }
        if let std::collections::hash_map::Entry::Vacant(v) = tasks.entry(tid) {
            if expected.remove(&tid) {
                let pid = tgid(tid).unwrap_or(tid as u32);
                v.insert(Task { pid, pending: None });
                cont(tid, libc::PTRACE_CONT, 0);
            } else {
                // Its parent's fork event comes next; resume it then.
                early.insert(tid);
            }
            continue;
        }
        let sig = libc::WSTOPSIG(st);
        let event = (st >> 16) & 0xff;
        let pid = tasks[&tid].pid;
        match (sig, event) {
            (s, _) if s == libc::SIGTRAP | 0x80 => {
                // Syscall-exit stop of a call seccomp stopped.
                let pending = tasks.get_mut(&tid).and_then(|t| t.pending.take());
                if let (Some((nr, args)), Ok(info)) = (pending, syscall_info(tid)) {
                    if info.0[0] == OP_EXIT {
                        let rval = info.u64_at(24) as i64;
                        let is_error = info.0[32] != 0;
                        let mut evs = Vec::new();
                        if !is_error {
                            syscall_events(
                                nr,
                                args,
                                rval as u64,
                                (pid, tid as u32),
                                &mut files,
                                &mut brk,
                                &mut evs,
                            );
                        }
                        out.extend(evs.into_iter().map(|event| Timed {
                            ns: now,
                            tid: tid as u32,
                            event,
                        }));
                    }
                }
                cont(tid, libc::PTRACE_CONT, 0);
            }
            (libc::SIGTRAP, e) if e == libc::PTRACE_EVENT_SECCOMP => {
                if let Ok(info) = syscall_info(tid) {
                    if info.0[0] == OP_SECCOMP {
                        let nr = info.u64_at(24);
                        let mut args = [0u64; 6];
                        for (i, a) in args.iter_mut().enumerate() {
                            *a = info.u64_at(32 + 8 * i);
                        }
                        if let Some(t) = tasks.get_mut(&tid) {
                            t.pending = Some((nr, args));
                        }
                    }
                }
                cont(tid, libc::PTRACE_SYSCALL, 0);
            }
            (libc::SIGTRAP, e)
                if e == libc::PTRACE_EVENT_FORK
                    || e == libc::PTRACE_EVENT_VFORK
                    || e == libc::PTRACE_EVENT_CLONE =>
            {
                let new = sys::ptrace_geteventmsg(tid).unwrap_or(0) as i32;
                if new > 0 {
                    let new_pid = tgid(new).unwrap_or(if e == libc::PTRACE_EVENT_CLONE {
                        pid
                    } else {
                        new as u32
                    });
                    all_tids.insert(new as u32, new_pid);
                    let event = if new_pid == pid {
                        Event::Thread { tid: new as u32 }
                    } else {
                        Event::Fork { child: new_pid }
                    };
                    out.push(Timed {
                        ns: now,
                        tid: tid as u32,
                        event,
                    });
                    if early.remove(&new) {
                        tasks.insert(
                            new,
                            Task {
                                pid: new_pid,
                                pending: None,
                            },
                        );
                        cont(new, libc::PTRACE_CONT, 0);
                    } else {
                        expected.insert(new);
                    }
                }
                cont(tid, libc::PTRACE_CONT, 0);
            }
            (libc::SIGTRAP, e) if e == libc::PTRACE_EVENT_EXEC => {
                // The thread-group leader reports the exec.
                let mut evs = vec![Event::Exec];
                brk.remove(&pid);
                initial_maps(pid, &mut files, &mut evs);
                out.extend(evs.into_iter().map(|event| Timed {
                    ns: now,
                    tid: tid as u32,
                    event,
                }));
                cont(tid, libc::PTRACE_CONT, 0);
            }
            (libc::SIGTRAP, e) if e != 0 => cont(tid, libc::PTRACE_CONT, 0),
            // A signal for the program: deliver it.
            (s, _) => cont(tid, libc::PTRACE_CONT, s),
        }
    }
    Ok((out, all_tids, status))
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

/// The records of a memory-management or file I/O call of thread `tid`
/// of process `pid` that returned `rval`.
fn syscall_events(
    nr: u64,
    a: [u64; 6],
    rval: u64,
    (pid, tid): (u32, u32),
    files: &mut Files,
    brk: &mut HashMap<u32, u64>,
    out: &mut Vec<Event>,
) {
    let nr = nr as i64;
    let io = [
        (libc::SYS_read, IoCall::Read),
        (libc::SYS_write, IoCall::Write),
        (libc::SYS_pread64, IoCall::Pread),
        (libc::SYS_pwrite64, IoCall::Pwrite),
    ];
    if let Some(&(_, call)) = io.iter().find(|(n, _)| *n == nr) {
        if rval > 0 {
            io_event(call, a, rval, tid, files, out);
        }
    } else if nr == libc::SYS_mmap {
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

/// The record of an I/O call that moved `len` bytes, if it went to a
/// regular file (not a pipe, socket, terminal or /proc, /sys, /dev file).
/// read(2) and write(2) took their position from the descriptor, which
/// now stands `len` bytes past it.
fn io_event(
    call: IoCall,
    a: [u64; 6],
    len: u64,
    tid: u32,
    files: &mut Files,
    out: &mut Vec<Event>,
) {
    let fd = a[0] as i32;
    let link = PathBuf::from(format!("/proc/{tid}/fd/{fd}"));
    let Ok(target) = fs::read_link(&link) else {
        return;
    };
    let shown = target.display().to_string();
    if !shown.starts_with('/')
        || ["/proc/", "/sys/", "/dev/"]
            .iter()
            .any(|p| shown.starts_with(p))
    {
        return;
    }
    let Some((file, size)) = files.id_and_size(&link, &shown, out) else {
        return;
    };
    let offset = match call {
        IoCall::Pread | IoCall::Pwrite => a[3],
        IoCall::Read | IoCall::Write => {
            let Some(pos) = fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("pos:"))
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
            else {
                return;
            };
            pos.saturating_sub(len)
        }
    };
    // A file that shrank since (truncate) is no longer a place to replay.
    if offset + len > size {
        return;
    }
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

/// Merge the tracer's records and the fault samples by time into the
/// encoded trace.
fn merge(
    opts: &RecordOptions,
    timed: Vec<Timed>,
    tids: HashMap<u32, u32>,
    samples: Vec<Sample>,
    lost: u64,
    status: i32,
) -> Traced {
    enum Item {
        Record(Event),
        Fault(u64, bool),
    }
    let faults = samples.len() as u64;
    let mut all: Vec<(u64, u32, Item)> = timed
        .into_iter()
        .map(|t| (t.ns, t.tid, Item::Record(t.event)))
        .collect();
    all.extend(
        samples
            .into_iter()
            .map(|(ns, tid, page, w)| (ns, tid, Item::Fault(page, w))),
    );
    // Stable: the tracer's records keep their order at equal times.
    all.sort_by_key(|r| r.0);
    let mut enc = Encoder::new();
    let mut cur = (0u32, 0u32);
    let mut procs = HashSet::new();
    let mut threads = HashSet::new();
    let mut unknown = 0u64;
    for (_, tid, item) in all {
        let Some(&pid) = tids.get(&tid) else {
            unknown += 1;
            continue;
        };
        // File records are not a task's: no switch needed for them.
        if !matches!(item, Item::Record(Event::File { .. })) && cur != (pid, tid) {
            cur = (pid, tid);
            procs.insert(pid);
            threads.insert(tid);
            enc.push(&Event::Task { pid, tid });
        }
        match item {
            Item::Record(e) => enc.push(&e),
            Item::Fault(page, write) => enc.push(&Event::Fault { page, write }),
        }
    }
    let meta = Meta {
        command: opts.command.clone(),
        arch: std::env::consts::ARCH.to_string(),
        kernel: crate::guest::kernel_release(),
        fault_around_bytes: 0,
        wall_ns: 0,
        plain_wall_ns: 0,
        lost_faults: lost + unknown,
        status,
        epoch_ms: 0,
    };
    Traced {
        meta,
        records: enc.finish(),
        faults,
        processes: procs.len(),
        threads: threads.len(),
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
fn drain_rings(
    rings: Vec<Ring>,
    stop: &AtomicBool,
    seen: &AtomicU64,
    progress: bool,
) -> (Vec<Sample>, u64) {
    let mut out = Vec::new();
    let mut lost = 0;
    let start = Instant::now();
    let mut shown = 0;
    loop {
        let last = stop.load(Ordering::SeqCst);
        for r in &rings {
            read_ring(r, &mut out, &mut lost);
        }
        seen.store(out.len() as u64, Ordering::Relaxed);
        if progress && start.elapsed().as_secs() > shown {
            shown = start.elapsed().as_secs();
            eprint!(
                "\rfoliosim record: {shown} s, {} page faults recorded",
                out.len()
            );
            let _ = io::stderr().flush();
        }
        if last {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    if progress && shown > 0 {
        eprintln!();
    }
    (out, lost)
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
            syscall_events(libc::SYS_brk as u64, [0; 6], rv, (1, 1), f, brk, out)
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
}

//! The host-state guard: every host setting the engine changes is recorded
//! before the change and put back on success, on error, on panic (Drop), on
//! SIGINT / SIGTERM / SIGHUP / SIGQUIT (a handler wakes a restorer thread
//! through a self-pipe; the thread restores, kills the workload, removes the
//! work directory and re-raises the signal), and even after SIGKILL: the
//! saved values and the undo list are written to
//! /run/foliosim-native.saved before each change, and a supervisor process
//! forked before the first change (in its own session, so terminal signals
//! miss it) waits on a pipe whose write end only the engine holds. When the
//! engine dies without saying it restored the host (SIGKILL, the OOM
//! killer), the pipe reads end-of-file and the supervisor restores from
//! the file, holding the run lock it inherited until it is done. The next
//! run also restores from a file it finds (a second line of defence).
//!
//! Besides knobs, the guard undoes what the run created on the host (an
//! [`Undo`] list, undone newest first): swap devices (swapoff), loop devices
//! (detached, and removed if the run added them), zram devices (reset and
//! hot-removed), memory cgroups (their processes moved back to the parent,
//! then removed) and a zram module the run loaded. Whoever creates such a
//! thing holds the guard's lock ([`HostGuard::lock`]) from before the
//! creation until it is recorded, so a signal never finds it half-made.
//!
//! One native run at a time: an in-process mutex and an flock on
//! /run/foliosim-native.lock serialise runs across threads and processes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sys;

pub(crate) const STATE_FILE: &str = "/run/foliosim-native.saved";
const LOCK_FILE: &str = "/run/foliosim-native.lock";

/// The signals after which the host is restored before the process ends.
const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Something the run created on the host, undone at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Undo {
    /// A swap area: swapoff(path).
    Swapon(PathBuf),
    /// Loop device `index` attached to `backing`: detached (only if it is
    /// still attached to `backing`), and removed if the run `created` it;
    /// else its `queue/` settings (read_ahead_kb, which attaching changes,
    /// and rotational) are put back to their values before the run.
    Loop {
        index: u32,
        backing: PathBuf,
        created: bool,
        queue: Vec<(String, String)>,
    },
    /// zram device `id` added through zram-control: reset and hot-removed.
    Zram(u32),
    /// A zram device is being hot-added (recorded before the write to
    /// zram-control, whose answer names it): every zram device not in
    /// `existing` is reset and hot-removed. Replaced by [`Undo::Zram`]
    /// once the id is known.
    ZramAdding { existing: Vec<u32> },
    /// A memory cgroup: its processes are moved to `parent` (a cgroup
    /// directory), then it is removed.
    Cgroup { dir: PathBuf, parent: PathBuf },
    /// The zram module was loaded by the run: `modprobe -r zram`.
    ZramModule,
}

impl Undo {
    fn line(&self) -> String {
        match self {
            Undo::Swapon(p) => format!("swapon\t{}", p.display()),
            Undo::Loop {
                index,
                backing,
                created,
                queue,
            } => {
                let queue: Vec<String> = queue.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!(
                    "loop\t{index}\t{}\t{}\t{}",
                    backing.display(),
                    *created as u8,
                    queue.join(",")
                )
            }
            Undo::Zram(id) => format!("zram\t{id}"),
            Undo::ZramAdding { existing } => {
                let ids: Vec<String> = existing.iter().map(u32::to_string).collect();
                format!("zram-adding\t{}", ids.join(","))
            }
            Undo::Cgroup { dir, parent } => {
                format!("cgroup\t{}\t{}", dir.display(), parent.display())
            }
            Undo::ZramModule => "zram-module".to_string(),
        }
    }

    fn parse(line: &str) -> Option<Undo> {
        Some(match line.split('\t').collect::<Vec<_>>()[..] {
            ["swapon", p] => Undo::Swapon(p.into()),
            // Written by a foliosim that did not keep the queue settings.
            ["loop", _, _, _] => Undo::parse(&format!("{line}\t"))?,
            ["loop", i, b, c, q] => Undo::Loop {
                index: i.parse().ok()?,
                backing: b.into(),
                created: c == "1",
                queue: q
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            },
            ["zram", id] => Undo::Zram(id.parse().ok()?),
            ["cgroup", d, p] => Undo::Cgroup {
                dir: d.into(),
                parent: p.into(),
            },
            ["zram-module"] => Undo::ZramModule,
            ["zram-adding", ids] => Undo::ZramAdding {
                existing: ids
                    .split(',')
                    .filter(|i| !i.is_empty())
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .ok()?,
            },
            _ => return None,
        })
    }

    fn describe(&self) -> String {
        match self {
            Undo::Swapon(p) => format!("swapoff {}", p.display()),
            Undo::Loop { index, .. } => format!("detached /dev/loop{index}"),
            Undo::Zram(id) => format!("removed /dev/zram{id}"),
            Undo::ZramAdding { .. } => "removed a zram device being added".to_string(),
            Undo::Cgroup { dir, .. } => format!("removed cgroup {}", dir.display()),
            Undo::ZramModule => "unloaded the zram module".to_string(),
        }
    }
}

/// What must be undone, shared with the restorer thread.
pub(crate) struct Shared {
    /// Original values of the knobs changed, in the order they were changed.
    saved: Vec<(PathBuf, String)>,
    /// What the run created, oldest first.
    undo: Vec<Undo>,
    /// tracefs mounted by us.
    tracefs: Option<PathBuf>,
    /// The fresh work directory (removed whole).
    workdir: Option<PathBuf>,
    /// The workload process (killed).
    workload: i32,
}

static SHARED: Mutex<Shared> = Mutex::new(Shared {
    saved: Vec::new(),
    undo: Vec::new(),
    tracefs: None,
    workdir: None,
    workload: 0,
});

/// Write end of the self-pipe the signal handler writes the signal to.
static SIG_PIPE: AtomicI32 = AtomicI32::new(-1);
/// The signal that interrupted the run (0 if none).
pub(crate) static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

static IN_PROCESS: Mutex<()> = Mutex::new(());

fn shared() -> MutexGuard<'static, Shared> {
    SHARED.lock().unwrap_or_else(|p| p.into_inner())
}

/// An error once a signal interrupted the run (checked with the state
/// locked before changing the host, see [`HostGuard::lock`]).
fn interrupted() -> io::Result<()> {
    match INTERRUPTED.load(Ordering::SeqCst) {
        0 => Ok(()),
        sig => Err(io::Error::other(format!(
            "interrupted by {}",
            sys::signal_name(sig)
        ))),
    }
}

/// Whether a native run (or a killed run's supervisor) holds the run
/// lock; works without root (a shared lock on the file opened read-only).
pub(crate) fn run_in_progress() -> bool {
    let Ok(file) = File::open(LOCK_FILE) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own; closing it drops the lock.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0 }
}

/// Exclusive use of the host for one run.
pub(crate) struct RunLock {
    _file: File,
    _inproc: MutexGuard<'static, ()>,
}

impl RunLock {
    /// The lock if no native run holds it; None while one does (a live
    /// run, or the supervisor of a killed one restoring the host).
    pub(crate) fn try_acquire() -> io::Result<Option<RunLock>> {
        let Ok(inproc) = IN_PROCESS.try_lock() else {
            return Ok(None);
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_FILE)?;
        // SAFETY: flock on a descriptor we own.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS) {
            return Ok(None);
        }
        Ok(Some(RunLock {
            _file: file,
            _inproc: inproc,
        }))
    }

    pub(crate) fn acquire() -> io::Result<RunLock> {
        let inproc = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_FILE)?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            // A kernel without file locking (FILE_LOCKING=n, as small
            // guest kernels are built): no other process can hold the
            // lock either.
            if io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
                return Ok(RunLock {
                    _file: file,
                    _inproc: inproc,
                });
            }
            foliosim_uapi::note!(
                "foliosim native: waiting for another native run to finish ({LOCK_FILE})"
            );
            // SAFETY: as above.
            sys::cvt(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) })?;
        }
        Ok(RunLock {
            _file: file,
            _inproc: inproc,
        })
    }
}

/// What putting the host back did: each thing restored, and each thing
/// that could not be (still listed in the state file).
#[derive(Debug, Default)]
pub struct Recovery {
    pub restored: Vec<String>,
    pub failed: Vec<String>,
}

impl Recovery {
    /// Say on standard error, as `who`, what was restored and what failed.
    pub fn note(&self, who: &str) {
        if !self.restored.is_empty() {
            eprintln!(
                "{who}: a native run was killed before restoring the host; restored: {}",
                self.restored.join(", ")
            );
        }
        for f in &self.failed {
            eprintln!("{who}: could not restore what a killed native run left: {f}");
        }
    }
}

/// The name of a run's work directory in the directory `parent` it was
/// asked to use: `foliosim-native-<pid>-<n>`.
const WORKDIR_PREFIX: &str = "foliosim-native-";

/// Whether directory `name` is the work directory of a native run whose
/// process is gone: `foliosim-native-<pid>-<n>` exactly (other names that
/// merely share the prefix, such as a test's own scratch directory, are
/// not ours), with no process `<pid>` alive.
fn stale_workdir_name(name: &str) -> bool {
    let Some((pid, n)) = name
        .strip_prefix(WORKDIR_PREFIX)
        .and_then(|r| r.split_once('-'))
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(pid) && digits(n) && !Path::new("/proc").join(pid).exists()
}

/// Remove the work directories of runs that are over under `parent` (call
/// with the RunLock held and the state file recovered). A killed run's
/// state file is gone after a reboot (it lives in /run), its work
/// directory (swap files on disk) is not. Only directories named as a run
/// names them, whose process is gone, are removed; one still holding an
/// active swap area or a loop device's backing file is left, and said.
pub(crate) fn clean_stale_workdirs(parent: &Path, r: &mut Recovery) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let loops: Vec<String> = fs::read_dir("/sys/block")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| fs::read_to_string(e.path().join("loop/backing_file")).ok())
                .collect()
        })
        .unwrap_or_default();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !stale_workdir_name(&name) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = e.path();
        let inside = |p: &str| Path::new(p.trim()).starts_with(&dir);
        let busy = swaps
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .any(inside)
            || loops.iter().any(|b| inside(b));
        if busy {
            r.failed.push(format!(
                "{} holds an active swap area or loop device; left in place",
                dir.display()
            ));
            continue;
        }
        match fs::remove_dir_all(&dir) {
            Ok(()) => r.restored.push(format!("removed {}", dir.display())),
            Err(e) => r.failed.push(format!("removing {}: {e}", dir.display())),
        }
    }
}

/// The state a run saved (the workload is not known: it died with the
/// engine).
fn load_state(text: &str) -> Shared {
    let mut sh = Shared {
        saved: Vec::new(),
        undo: Vec::new(),
        tracefs: None,
        workdir: None,
        workload: 0,
    };
    for line in text.lines() {
        if let Some(u) = Undo::parse(line) {
            sh.undo.push(u);
            continue;
        }
        match line.split('\t').collect::<Vec<_>>()[..] {
            ["knob", path, value] => sh.saved.push((path.into(), value.to_string())),
            ["workdir", path] => sh.workdir = Some(path.into()),
            ["tracefs", path] => sh.tracefs = Some(path.into()),
            _ => {}
        }
    }
    sh
}

/// Put back what a killed run left behind (call with the RunLock held:
/// then no live run owns the state file). The state file goes only once
/// everything is restored; what failed stays in it for the next try.
pub(crate) fn recover_stale() -> Recovery {
    // A state file being written when the run was killed: the change it
    // announced was not made yet.
    let _ = fs::remove_file(format!("{STATE_FILE}.tmp"));
    match fs::read_to_string(STATE_FILE) {
        Ok(text) => restore(&mut load_state(&text)),
        Err(_) => Recovery::default(),
    }
}

fn persist(sh: &Shared) {
    let mut text = String::new();
    for (p, v) in &sh.saved {
        text.push_str(&format!("knob\t{}\t{v}\n", p.display()));
    }
    // Read back to front: what was created is undone newest first, then
    // the work directory (which holds swap files) goes, then the knobs.
    if let Some(w) = &sh.workdir {
        text.push_str(&format!("workdir\t{}\n", w.display()));
    }
    if let Some(t) = &sh.tracefs {
        text.push_str(&format!("tracefs\t{}\n", t.display()));
    }
    for u in &sh.undo {
        text.push_str(&u.line());
        text.push('\n');
    }
    let tmp = format!("{STATE_FILE}.tmp");
    if let Ok(mut f) = File::create(&tmp) {
        if f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .is_ok()
        {
            let _ = fs::rename(&tmp, STATE_FILE);
        }
    }
}

/// Wait (up to `limit`) until `pid` has exited: gone, or a zombie (its
/// memory is freed by then). Never reaps it.
fn wait_exited(pid: i32, limit: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => {
                let state = s
                    .rfind(')')
                    .and_then(|i| s[i + 1..].split_whitespace().next());
                if matches!(state, Some("Z" | "X")) {
                    return;
                }
            }
            Err(_) => return,
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Undo one thing; Ok(false) if there was nothing left to undo.
pub(crate) fn undo_one(u: &Undo) -> Result<bool, String> {
    match u {
        Undo::Swapon(p) => crate::swapdev::swapoff(p),
        Undo::Loop {
            index,
            backing,
            created,
            queue,
        } => crate::swapdev::detach_loop(*index, backing, *created, queue),
        Undo::Zram(id) => crate::swapdev::remove_zram(*id),
        Undo::ZramAdding { existing } => {
            let mut any = false;
            for id in crate::swapdev::zram_ids() {
                if !existing.contains(&id) {
                    any |= crate::swapdev::remove_zram(id)?;
                }
            }
            Ok(any)
        }
        Undo::Cgroup { dir, parent } => crate::memcg::remove(dir, parent),
        Undo::ZramModule => crate::swapdev::unload_zram(),
    }
}

/// Undo everything recorded, newest first; what could not be undone
/// stays recorded (and in the state file).
fn restore(sh: &mut Shared) -> Recovery {
    let mut r = Recovery::default();
    if sh.workload > 0 {
        sys::kill(sh.workload, libc::SIGKILL);
        // Its memory (and swap) must be gone before its cgroups and swap
        // devices can be.
        if !sh.undo.is_empty() {
            wait_exited(sh.workload, Duration::from_secs(5));
        }
        sh.workload = 0;
    }
    let mut kept = Vec::new();
    while let Some(u) = sh.undo.pop() {
        match undo_one(&u) {
            Ok(true) => r.restored.push(u.describe()),
            Ok(false) => {}
            Err(e) => {
                r.failed.push(e);
                kept.push(u);
            }
        }
    }
    kept.reverse();
    sh.undo = kept;
    let mut kept = Vec::new();
    for (p, v) in sh.saved.drain(..).rev() {
        match fs::write(&p, &v) {
            Ok(()) => r.restored.push(format!("{} = {v}", p.display())),
            // A setting of a device the run removed: nothing to put back.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                r.failed
                    .push(format!("restoring {} = {v}: {e}", p.display()));
                kept.push((p, v));
            }
        }
    }
    kept.reverse();
    sh.saved = kept;
    if let Some(t) = sh.tracefs.take() {
        match sys::umount(&t) {
            Ok(()) => r
                .restored
                .push(format!("unmounted tracefs at {}", t.display())),
            // Not mounted (any more) there.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOENT)) => {}
            Err(e) => {
                r.failed
                    .push(format!("unmounting tracefs at {}: {e}", t.display()));
                sh.tracefs = Some(t);
            }
        }
    }
    if let Some(w) = sh.workdir.take() {
        match fs::remove_dir_all(&w) {
            Ok(()) => r.restored.push(format!("removed {}", w.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                r.failed.push(format!("removing {}: {e}", w.display()));
                sh.workdir = Some(w);
            }
        }
    }
    if r.failed.is_empty() {
        let _ = fs::remove_file(STATE_FILE);
    } else {
        persist(sh);
    }
    r
}

/// Fork the supervisor: it outlives the engine, and restores the host from
/// the state file if the engine dies without writing `DONE` to the
/// returned pipe. Called before the first host change, while the engine
/// holds the run lock (which the supervisor inherits and keeps until it
/// has restored).
fn spawn_supervisor() -> io::Result<(OwnedFd, i32)> {
    let (rx, tx) = sys::pipe()?;
    match sys::fork()? {
        0 => {
            drop(tx);
            supervise(rx)
        }
        pid => {
            drop(rx);
            Ok((tx, pid))
        }
    }
}

/// What the engine writes to the supervisor's pipe when the host is
/// restored (or was never changed).
const DONE: u8 = b'D';

/// The supervisor's life: leave the engine's session (so a Ctrl-C to the
/// terminal's foreground group does not kill it), wait for `DONE` or
/// end-of-file, restore on end-of-file, exit. It only uses the state file,
/// never memory shared with the engine's threads.
fn supervise(rx: OwnedFd) -> ! {
    sys::setsid();
    for sig in SIGNALS {
        sys::ignore_signal(sig);
    }
    let mut b = [0u8; 1];
    let said_done = matches!(sys::read(rx.as_raw_fd(), &mut b), Ok(1) if b[0] == DONE);
    if !said_done {
        // The engine died. Its workload dies with it (PR_SET_PDEATHSIG):
        // give it a moment to release its memory, swap and cgroups.
        std::thread::sleep(Duration::from_millis(100));
        let r = recover_stale();
        for what in r.restored {
            let _ = sys::write_all(
                2,
                format!("foliosim native: the engine was killed; restored {what}\n").as_bytes(),
            );
        }
        for what in r.failed {
            let _ = sys::write_all(
                2,
                format!("foliosim native: the engine was killed; {what}\n").as_bytes(),
            );
        }
    }
    sys::exit_now(0)
}

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIG_PIPE.load(Ordering::SeqCst);
    let b = sig as u8;
    // SAFETY: write(2) is async-signal-safe; `b` is a valid byte on our stack.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
}

fn restorer(rx: OwnedFd) {
    loop {
        let mut b = [0u8; 1];
        match sys::read(rx.as_raw_fd(), &mut b) {
            Ok(1) if b[0] != 0 => {}
            _ => return,
        }
        let sig = b[0] as libc::c_int;
        INTERRUPTED.store(sig, Ordering::SeqCst);
        for e in restore(&mut shared()).failed {
            eprintln!("foliosim native: {e}");
        }
        eprintln!(
            "foliosim native: interrupted by {}; host settings restored",
            sys::signal_name(sig)
        );
        // Re-raise with the disposition the process had before the run.
        let old = OLD_ACTIONS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(s, _)| *s == sig)
            .map(|(_, a)| a.0);
        match old {
            // SAFETY: `a` is a sigaction the kernel gave us earlier.
            Some(a) => unsafe {
                libc::sigaction(sig, &a, std::ptr::null_mut());
            },
            // SAFETY: resetting a disposition to the default is always valid.
            None => unsafe {
                libc::signal(sig, libc::SIG_DFL);
            },
        }
        let dfl = old.is_none_or(|a| a.sa_sigaction == libc::SIG_DFL);
        // SAFETY: sending a signal to ourselves has no memory-safety
        // preconditions.
        unsafe { libc::kill(libc::getpid(), sig) };
        if dfl {
            // The default action of these signals ends the process; should
            // it somehow not, do not return into a run without its settings.
            std::thread::sleep(std::time::Duration::from_secs(1));
            // SAFETY: _exit ends the process.
            unsafe { libc::_exit(128 + sig) };
        }
    }
}

#[derive(Clone, Copy)]
struct Action(libc::sigaction);
// SAFETY: a sigaction is plain data (handler addresses and masks).
unsafe impl Send for Action {}

static OLD_ACTIONS: Mutex<Vec<(libc::c_int, Action)>> = Mutex::new(Vec::new());

/// The guard of one run.
pub(crate) struct HostGuard {
    /// The write end of the supervisor's pipe, and its pid.
    supervisor: Option<(OwnedFd, i32)>,
    tx: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    done: bool,
}

impl HostGuard {
    /// Install the signal handlers and the restorer thread.
    pub(crate) fn install() -> io::Result<HostGuard> {
        INTERRUPTED.store(0, Ordering::SeqCst);
        // Before any thread of ours and any host change.
        let supervisor = Some(spawn_supervisor()?);
        let (rx, tx) = sys::pipe()?;
        SIG_PIPE.store(tx.as_raw_fd(), Ordering::SeqCst);
        let thread = std::thread::Builder::new()
            .name("foliosim-restore".into())
            .spawn(move || restorer(rx))?;
        let mut olds = OLD_ACTIONS.lock().unwrap_or_else(|p| p.into_inner());
        olds.clear();
        for sig in SIGNALS {
            // SAFETY: sigaction is plain data; all-zero is a valid value.
            let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
            new.sa_sigaction = on_signal as *const () as usize;
            new.sa_flags = libc::SA_RESTART;
            // SAFETY: as above.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `new` and `old` are valid sigaction structs; the handler
            // only calls write(2), which is async-signal-safe.
            unsafe {
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, &mut old);
            }
            if old.sa_sigaction == libc::SIG_IGN {
                // The process ignores this signal: keep it ignored.
                // SAFETY: `old` came from the kernel.
                unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
                continue;
            }
            olds.push((sig, Action(old)));
        }
        Ok(HostGuard {
            supervisor,
            tx: Some(tx),
            thread: Some(thread),
            done: false,
        })
    }

    /// Set a sysfs knob, recording its old value first (once).
    pub(crate) fn set_knob(&self, path: &Path, value: &str) -> io::Result<()> {
        let mut sh = shared();
        interrupted()?;
        let cur = crate::host::read_knob(path)?;
        if cur == value {
            return Ok(());
        }
        if !sh.saved.iter().any(|(p, _)| p == path) {
            sh.saved.push((path.to_path_buf(), cur));
            persist(&sh);
        }
        fs::write(path, value)
    }

    pub(crate) fn mount_tracefs(&self, at: &Path) -> io::Result<()> {
        let mut sh = shared();
        interrupted()?;
        // Recorded before the mount, so no kill leaves it unrecorded.
        sh.tracefs = Some(at.to_path_buf());
        persist(&sh);
        if let Err(e) = sys::mount_tracefs(at) {
            sh.tracefs = None;
            persist(&sh);
            return Err(e);
        }
        Ok(())
    }

    pub(crate) fn unmount_tracefs(&self) -> io::Result<()> {
        let mut sh = shared();
        if let Some(t) = sh.tracefs.take() {
            sys::umount(&t)?;
        }
        Ok(())
    }

    /// Create a fresh work directory inside `parent`, or `parent` itself
    /// if it does not exist yet (its parent must); it is removed at the end.
    pub(crate) fn create_workdir(&self, parent: &Path) -> io::Result<PathBuf> {
        let mut sh = shared();
        interrupted()?;
        // Recorded before it is created, so no kill leaves it unrecorded
        // (removing a directory that was never made is harmless).
        let record = |sh: &mut Shared, p: Option<&Path>| {
            sh.workdir = p.map(Path::to_path_buf);
            persist(sh);
        };
        if !parent.exists() {
            record(&mut sh, Some(parent));
            if let Err(e) = fs::create_dir(parent) {
                record(&mut sh, None);
                return Err(e);
            }
            return Ok(parent.to_path_buf());
        }
        for i in 0..1000u64 {
            let p = parent.join(format!(
                "{WORKDIR_PREFIX}{}-{}",
                sys::getpid(),
                sys::now_ns() % 1_000_000_007 + i
            ));
            if p.exists() {
                continue;
            }
            record(&mut sh, Some(&p));
            match fs::create_dir(&p) {
                Ok(()) => return Ok(p),
                Err(e) => {
                    record(&mut sh, None);
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        continue;
                    }
                    return Err(e);
                }
            }
        }
        Err(io::Error::other("could not create a fresh work directory"))
    }

    pub(crate) fn set_workload(&self, pid: i32) {
        shared().workload = pid;
    }

    /// Exclusive use of the guard's state while creating something on the
    /// host: the restorer waits until it is recorded. Refused once a signal
    /// interrupted the run (the restorer may have put the host back
    /// already: nothing new must be made after that).
    pub(crate) fn lock(&self) -> Result<Locked<'_>, crate::NativeError> {
        let sh = shared();
        let sig = INTERRUPTED.load(Ordering::SeqCst);
        if sig != 0 {
            return Err(crate::NativeError::Refused(format!(
                "interrupted by {}; host settings were restored",
                sys::signal_name(sig)
            )));
        }
        Ok(Locked {
            sh,
            _guard: std::marker::PhantomData,
        })
    }

    /// Undo (newest first) and forget every recorded cgroup; returns the
    /// problems met (the cgroups that could not be removed stay recorded).
    pub(crate) fn remove_cgroups(&self) -> Vec<String> {
        let mut sh = shared();
        let mut errs = Vec::new();
        let mut kept = Vec::new();
        while let Some(u) = sh.undo.pop() {
            if !matches!(u, Undo::Cgroup { .. }) {
                kept.push(u);
                continue;
            }
            if let Err(e) = undo_one(&u) {
                errs.push(e);
                kept.push(u);
            }
        }
        kept.reverse();
        sh.undo = kept;
        persist(&sh);
        errs
    }

    /// Undo everything now; returns what went wrong.
    pub(crate) fn finish(&mut self) -> Vec<String> {
        let errs = restore(&mut shared()).failed;
        self.uninstall();
        errs
    }

    fn uninstall(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let olds = std::mem::take(&mut *OLD_ACTIONS.lock().unwrap_or_else(|p| p.into_inner()));
        for (sig, a) in olds {
            // SAFETY: `a` is the sigaction the kernel returned at install.
            unsafe { libc::sigaction(sig, &a.0, std::ptr::null_mut()) };
        }
        SIG_PIPE.store(-1, Ordering::SeqCst);
        if let Some(tx) = self.tx.take() {
            let _ = sys::write_all(tx.as_raw_fd(), &[0]);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.release_supervisor();
    }

    /// Tell the supervisor the host is restored (if it is: otherwise the
    /// state file still lists what is left, and the supervisor tries too).
    fn release_supervisor(&mut self) {
        if let Some((tx, pid)) = self.supervisor.take() {
            if !Path::new(STATE_FILE).exists() {
                let _ = sys::write_all(tx.as_raw_fd(), &[DONE]);
            }
            drop(tx);
            // It exits at once (restoring first if the state file is
            // still there): reap it.
            let _ = sys::waitpid(pid, false);
        }
    }
}

/// The guard's state, locked (see [`HostGuard::lock`]).
pub(crate) struct Locked<'a> {
    sh: MutexGuard<'static, Shared>,
    _guard: std::marker::PhantomData<&'a HostGuard>,
}

impl Locked<'_> {
    /// Record something about to be created (or just created), and save the
    /// record for a later run in case this one is killed.
    pub(crate) fn push(&mut self, u: Undo) {
        self.sh.undo.push(u);
        persist(&self.sh);
    }

    /// Replace the newest record (a [`Undo::ZramAdding`] once the device's
    /// id is known).
    pub(crate) fn replace_last(&mut self, u: Undo) {
        self.sh.undo.pop();
        self.push(u);
    }
}

impl Drop for HostGuard {
    fn drop(&mut self) {
        if !self.done {
            for e in restore(&mut shared()).failed {
                eprintln!("foliosim native: {e}");
            }
            self.uninstall();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory that only shares the prefix (the native tests'
    /// `foliosim-native-test-corpus-<pid>`) and a live run's directory are
    /// not removed; a gone run's is.
    #[test]
    fn only_gone_runs_work_directories_are_stale() {
        let me = std::process::id();
        assert!(!stale_workdir_name(&format!(
            "foliosim-native-test-corpus-{me}"
        )));
        assert!(!stale_workdir_name("foliosim-native-test-corpus-99999999"));
        assert!(!stale_workdir_name(&format!("foliosim-native-{me}-3")));
        assert!(!stale_workdir_name("foliosim-native-12-"));
        assert!(!stale_workdir_name("other-99999999-1"));
        // No pid reaches 2^22 on Linux (pid_max's limit).
        assert!(stale_workdir_name("foliosim-native-99999999-1"));
    }

    #[test]
    fn state_lines_read_back_as_written() {
        let undo = [
            Undo::Swapon("/var/tmp/w/swap-0".into()),
            Undo::Loop {
                index: 3,
                backing: "/var/tmp/w/swap-1.img".into(),
                created: false,
                queue: vec![
                    ("read_ahead_kb".into(), "128".into()),
                    ("rotational".into(), "0".into()),
                ],
            },
            Undo::Loop {
                index: 9,
                backing: "/var/tmp/w/swap-2.img".into(),
                created: true,
                queue: Vec::new(),
            },
            Undo::Zram(2),
            Undo::ZramAdding {
                existing: vec![0, 1],
            },
            Undo::Cgroup {
                dir: "/sys/fs/cgroup/memory/f".into(),
                parent: "/sys/fs/cgroup/memory".into(),
            },
            Undo::ZramModule,
        ];
        for u in &undo {
            assert_eq!(Undo::parse(&u.line()).as_ref(), Some(u), "{}", u.line());
        }
        // A loop line without queue settings (an older state file).
        let old = Undo::parse("loop\t4\t/x/swap.img\t1");
        assert!(
            matches!(old, Some(Undo::Loop { index: 4, created: true, ref queue, .. })
            if queue.is_empty())
        );
        let text = "knob\t/sys/a\talways\nworkdir\t/var/tmp/w\ntracefs\t/t\nswapon\t/s\n";
        let sh = load_state(text);
        assert_eq!(sh.saved, [(PathBuf::from("/sys/a"), "always".to_string())]);
        assert_eq!(sh.workdir.as_deref(), Some(Path::new("/var/tmp/w")));
        assert_eq!(sh.tracefs.as_deref(), Some(Path::new("/t")));
        assert_eq!(sh.undo, [Undo::Swapon("/s".into())]);
    }
}

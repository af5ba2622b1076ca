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
    /// still attached to `backing`), and removed if the run `created` it.
    Loop {
        index: u32,
        backing: PathBuf,
        created: bool,
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
            } => format!("loop\t{index}\t{}\t{}", backing.display(), *created as u8),
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
            ["loop", i, b, c] => Undo::Loop {
                index: i.parse().ok()?,
                backing: b.into(),
                created: c == "1",
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

/// Exclusive use of the host for one run.
pub(crate) struct RunLock {
    _file: File,
    _inproc: MutexGuard<'static, ()>,
}

impl RunLock {
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

/// Put back settings (and remove the work directory) a killed run left behind (call with the RunLock held:
/// then no live run owns the state file). Returns what was restored.
pub(crate) fn recover_stale() -> Vec<String> {
    let Ok(text) = fs::read_to_string(STATE_FILE) else {
        return Vec::new();
    };
    let mut done = Vec::new();
    for line in text.lines().rev() {
        if let Some(u) = Undo::parse(line) {
            match undo_one(&u) {
                Ok(true) => done.push(u.describe()),
                Ok(false) => {}
                Err(e) => eprintln!("foliosim native: {e}"),
            }
            continue;
        }
        match line.split('\t').collect::<Vec<_>>()[..] {
            ["knob", path, value] if fs::write(path, value).is_ok() => {
                done.push(format!("{path} = {value}"));
            }
            ["workdir", path] if fs::remove_dir_all(path).is_ok() => {
                done.push(format!("removed {path}"));
            }
            ["tracefs", path] if sys::umount(Path::new(path)).is_ok() => {
                done.push(format!("unmounted tracefs at {path}"));
            }
            _ => {}
        }
    }
    let _ = fs::remove_file(STATE_FILE);
    done
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
        } => crate::swapdev::detach_loop(*index, backing, *created),
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

/// Undo everything recorded; returns the problems met.
fn restore(sh: &mut Shared) -> Vec<String> {
    let mut errs = Vec::new();
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
        if let Err(e) = undo_one(&u) {
            errs.push(e);
            kept.push(u);
        }
    }
    kept.reverse();
    sh.undo = kept;
    for (p, v) in sh.saved.iter().rev() {
        if let Err(e) = fs::write(p, v) {
            errs.push(format!("restoring {} = {v}: {e}", p.display()));
        }
    }
    if errs.is_empty() {
        sh.saved.clear();
    }
    if let Some(t) = sh.tracefs.take() {
        if let Err(e) = sys::umount(&t) {
            errs.push(format!("unmounting tracefs at {}: {e}", t.display()));
        }
    }
    if let Some(w) = sh.workdir.take() {
        if let Err(e) = fs::remove_dir_all(&w) {
            if e.kind() != io::ErrorKind::NotFound {
                errs.push(format!("removing {}: {e}", w.display()));
            }
        }
    }
    if errs.is_empty() {
        let _ = fs::remove_file(STATE_FILE);
    } else {
        persist(sh);
    }
    errs
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
        for what in recover_stale() {
            let _ = sys::write_all(
                2,
                format!("foliosim native: the engine was killed; restored {what}\n").as_bytes(),
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
        let errs = restore(&mut shared());
        for e in errs {
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
                "foliosim-native-{}-{}",
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
        let errs = restore(&mut shared());
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
            for e in restore(&mut shared()) {
                eprintln!("foliosim native: {e}");
            }
            self.uninstall();
        }
    }
}

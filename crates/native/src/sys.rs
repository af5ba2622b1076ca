//! Thin safe wrappers over the system calls of the native engine: the
//! engine (parent) side, and, in the second half, the workload processes
//! and their scenario threads (`workload.rs`, `threads.rs`), which call
//! libc only through these. Every `unsafe` block says why it is sound.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

pub(crate) fn cstr(p: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

pub(crate) fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

pub(crate) fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

/// `uname -m`.
pub(crate) fn machine() -> String {
    // SAFETY: utsname is plain old data; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    // SAFETY: uname() NUL-terminates `machine`.
    let c = unsafe { std::ffi::CStr::from_ptr(u.machine.as_ptr()) };
    c.to_string_lossy().into_owned()
}

/// A pipe whose ends are closed on exec (they are inherited across fork).
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// write(2) all of `buf`.
pub(crate) fn write_all(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is a valid readable slice of the given length.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// read(2) once, retrying on EINTR.
pub(crate) fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is a valid writable slice of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// poll(2) one descriptor for input; true if readable (or hung up).
pub(crate) fn poll_in(fd: RawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `p` is one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if n >= 0 {
            return Ok(n > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

pub(crate) fn kill(pid: i32, sig: i32) {
    if pid > 0 {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(pid, sig) };
    }
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
}

/// waitpid(pid); None with WNOHANG if it still runs.
pub(crate) fn waitpid(pid: i32, nohang: bool) -> io::Result<Option<Exit>> {
    let mut status = 0;
    loop {
        let flags = if nohang { libc::WNOHANG } else { 0 };
        // SAFETY: `status` is a valid writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r == 0 {
            return Ok(None);
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(Some(if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        }));
    }
}

/// waitpid(pid, __WALL) of a traced task: its id and raw wait status.
pub(crate) fn wait_any(pid: i32) -> io::Result<(i32, i32)> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid writable int.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok((r, status));
    }
}

/// Bytes of the file open at `fd` that are in the page cache
/// (cachestat(2), Linux 6.5+).
pub(crate) fn cached_bytes(fd: &impl AsRawFd) -> io::Result<u64> {
    const SYS_CACHESTAT: libc::c_long = 451;
    // struct cachestat_range { off, len } (len 0: to the end) and struct
    // cachestat { nr_cache, nr_dirty, nr_writeback, nr_evicted,
    // nr_recently_evicted } (include/uapi/linux/mman.h).
    let range = [0u64; 2];
    let mut stat = [0u64; 5];
    // SAFETY: both structures are valid for the sizes the kernel reads
    // and writes.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd(),
            range.as_ptr(),
            stat.as_mut_ptr(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stat[0] * 4096)
}

/// waitpid(2) of `pid` (-1: any child) with `__WALL`, returning
/// `ErrorKind::Interrupted` when a signal interrupts it.
pub(crate) fn wait_any_interruptible(pid: i32) -> io::Result<(i32, i32)> {
    let mut status = 0;
    // SAFETY: `status` is a valid writable int.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((r, status))
}

/// Send `sig` to thread `tid` of this process.
pub(crate) fn tgkill_self(tid: i32, sig: i32) {
    // SAFETY: a plain system call on numbers.
    unsafe {
        libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, sig);
    }
}

extern "C" fn ignore_handler(_: libc::c_int) {}

/// Catch `sig` with a handler that does nothing and without SA_RESTART,
/// so that it interrupts a blocking call of the thread it is sent to.
pub(crate) fn interrupt_on(sig: i32) -> io::Result<()> {
    // SAFETY: a zeroed sigaction with a valid handler and an empty mask.
    let r = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = ignore_handler as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The type of a ptrace(2) request in the C library's prototype (glibc:
/// unsigned, musl: int), which libc's `PTRACE_*` constants have.
#[cfg(target_env = "musl")]
pub(crate) type PtraceReq = libc::c_int;
#[cfg(not(target_env = "musl"))]
pub(crate) type PtraceReq = libc::c_uint;

/// A ptrace(2) request on a tracee that takes no pointer (`data` is a
/// number: options or a signal).
pub(crate) fn ptrace(req: PtraceReq, tid: i32, addr: u64, data: u64) -> io::Result<i64> {
    // SAFETY: requests passed here read no memory of ours (`addr` and
    // `data` are numbers to them).
    let r = unsafe { libc::ptrace(req, tid, addr, data) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

/// PTRACE_GETEVENTMSG: the message of the tracee's last ptrace event.
pub(crate) fn ptrace_geteventmsg(tid: i32) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: the kernel writes one unsigned long to `msg`.
    let r = unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, tid, 0, &mut msg) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(msg as u64)
}

pub(crate) fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGKILL => "SIGKILL (out of memory?)".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGABRT => "SIGABRT".into(),
        s => format!("signal {s}"),
    }
}

/// The calling thread's CPU affinity.
pub(crate) fn get_affinity() -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid for writes of size_of::<cpu_set_t>() bytes.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    Ok(set)
}

pub(crate) fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) })?;
    Ok(())
}

pub(crate) fn cpus(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET only reads the set, and `c` is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

pub(crate) fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET writes inside `set`; callers pass CPUs from cpus().
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

/// An anonymous or file mapping of the engine, unmapped on drop.
///
/// Invariant: `[addr, addr + len)` is a mapping the kernel made for this
/// value alone; nothing else refers into it.
pub(crate) struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    fn new(len: usize, prot: i32, flags: i32, fd: RawFd) -> io::Result<Mapping> {
        let addr = mmap(0, len, prot, flags, fd, 0);
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { addr, len })
    }

    pub(crate) fn anon(len: usize) -> io::Result<Mapping> {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        Mapping::new(len, rw, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)
    }

    /// A read-only shared mapping of a file (for mincore; it maps nothing
    /// until touched).
    pub(crate) fn file_ro(fd: &impl AsRawFd, len: usize) -> io::Result<Mapping> {
        Mapping::new(len, libc::PROT_READ, libc::MAP_SHARED, fd.as_raw_fd())
    }

    /// Residency of every page (mincore).
    pub(crate) fn mincore(&self) -> io::Result<Vec<u8>> {
        let mut v = vec![0u8; self.len.div_ceil(foliosim_uapi::PAGE_SIZE as usize)];
        // SAFETY: the range is our mapping and `v` has one byte per page.
        cvt(unsafe { libc::mincore(self.addr, self.len, v.as_mut_ptr()) })?;
        Ok(v)
    }

    /// madvise(2) `advice` on the whole mapping; false on failure.
    pub(crate) fn madvise(&self, advice: i32) -> bool {
        // SAFETY: advice on our own mapping, which nothing refers into.
        unsafe { libc::madvise(self.addr, self.len, advice) == 0 }
    }

    /// Write one byte to every page of an anonymous mapping (warming host
    /// memory, docs/fidelity.md, "Host behaviours").
    pub(crate) fn touch_all(&self) {
        let base = self.addr as *mut u8;
        let mut off = 0;
        while off < self.len {
            // SAFETY: `off` is inside our mapping, which nothing else refers
            // into; an anonymous mapping is writable.
            unsafe { std::ptr::write_volatile(base.add(off), 1) };
            off += foliosim_uapi::PAGE_SIZE as usize;
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we own the mapping and nothing refers into it any more.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// posix_fadvise(POSIX_FADV_DONTNEED) on a whole file.
pub(crate) fn fadvise_dontneed(fd: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: posix_fadvise has no memory-safety preconditions.
    let r = unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

pub(crate) fn mount_tracefs(at: &Path) -> io::Result<()> {
    mount("nodev", at, "tracefs", 0, "")
}

/// mount(2) of filesystem `fstype` from `source` on `at` with `data`
/// (empty: none).
pub(crate) fn mount(
    source: &str,
    at: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> io::Result<()> {
    let target = cstr(at)?;
    let c = |s: &str| cstr(Path::new(s));
    let (source, fstype, data) = (c(source)?, c(fstype)?, c(data)?);
    let data_ptr = if data.as_bytes().is_empty() {
        std::ptr::null()
    } else {
        data.as_ptr().cast()
    };
    // SAFETY: all arguments are NUL-terminated strings (or NULL data) that
    // outlive the call.
    cvt(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data_ptr,
        )
    })?;
    Ok(())
}

/// Write back every dirty page, then restart the machine (reboot(2) with
/// LINUX_REBOOT_CMD_RESTART). Only the init process of a guest calls this:
/// QEMU started with `-no-reboot` exits instead of restarting, also on
/// kernels without ACPI where a power-off would hang.
pub(crate) fn restart_machine() -> ! {
    // SAFETY: sync and reboot take no pointers; reboot only returns on
    // failure (not the init process, or no CAP_SYS_BOOT).
    unsafe {
        libc::sync();
        libc::reboot(libc::LINUX_REBOOT_CMD_RESTART);
    }
    exit_now(1)
}

pub(crate) fn umount(at: &Path) -> io::Result<()> {
    let target = cstr(at)?;
    // SAFETY: `target` is a NUL-terminated string that outlives the call.
    cvt(unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) })?;
    Ok(())
}

/// CLOCK_MONOTONIC in ns.
pub(crate) fn now_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

pub(crate) fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid writable timespec.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// fork(2): 0 in the child, the child's pid in the parent.
pub(crate) fn fork() -> io::Result<i32> {
    // SAFETY: the child only reads a pipe, works on files and exits (see
    // guard::supervise); it never touches locks other threads may hold.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// setsid(2): a new session without a controlling terminal.
pub(crate) fn setsid() {
    // SAFETY: setsid has no memory-safety preconditions.
    unsafe { libc::setsid() };
}

/// Ignore signal `sig` from now on.
pub(crate) fn ignore_signal(sig: i32) {
    // SAFETY: SIG_IGN is a valid disposition for these signals.
    unsafe { libc::signal(sig, libc::SIG_IGN) };
}

/// _exit(2): end the process at once (no atexit handlers, no unwinding).
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(code) }
}

/// Run `f` with SIGINT, SIGTERM, SIGHUP and SIGQUIT blocked: one that
/// arrives meanwhile is delivered (with its usual effect) only once `f`
/// has returned.
pub fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    let set = terminal_signals();
    // SAFETY: sigset_t is plain data; all-zero is a valid value to fill.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` and `old` are valid sigset_t values owned here.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
    let out = f();
    // SAFETY: `old` is the mask pthread_sigmask returned.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    out
}

/// The terminal signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT.
fn terminal_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t owned here.
    unsafe {
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::sigaddset(&mut set, sig);
        }
    }
    set
}

/// Take the terminal signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) away
/// from every thread and handle them in one: they are blocked in the
/// calling thread, and so in every thread it starts from now on (call
/// this before starting any), and a new thread waits for them
/// (sigwait(2)). For each one that arrives it calls `gate(sig, ends,
/// deliver)`: `deliver` gives the signal its usual effect (the process's
/// disposition at that moment: an engine's handler, or the default,
/// which ends the process), `ends` says whether that disposition is the
/// default. A signal the process ignores is never seen. Child processes
/// started with `std::process::Command` start with no signal blocked.
pub fn route_terminal_signals(
    gate: impl Fn(i32, bool, &mut dyn FnMut()) + Send + 'static,
) -> io::Result<()> {
    let set = terminal_signals();
    // SAFETY: `set` is a valid sigset_t; the old mask is not wanted.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    std::thread::Builder::new()
        .name("foliosim-signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` and `sig` are valid and owned by this thread.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                continue;
            }
            let ends = disposition_is_default(sig);
            gate(sig, ends, &mut || deliver_here(sig));
        })?;
    Ok(())
}

/// Whether signal `sig` has its default disposition now.
fn disposition_is_default(sig: i32) -> bool {
    // SAFETY: sigaction is plain data; all-zero is a valid value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `old`.
    unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    old.sa_sigaction == libc::SIG_DFL
}

/// Deliver `sig` to the calling thread, which has it blocked: unblock it,
/// send it (a handler runs, or the default action ends the process,
/// before the send returns), block it again.
fn deliver_here(sig: i32) {
    // SAFETY: plain data, initialised by sigemptyset.
    let mut one: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `one` is a valid sigset_t owned here; pthread_kill targets
    // this live thread.
    unsafe {
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::pthread_kill(libc::pthread_self(), sig);
        libc::pthread_sigmask(libc::SIG_BLOCK, &one, std::ptr::null_mut());
    }
}

// The workload side: calls the workload processes and their scenario
// threads make after fork, while measured. None of these allocates, none
// changes errno on success paths beyond what the system call does, and
// they are small enough to inline, so that the workload's code paths and
// stack use stay those its set-up warms (`workload.rs`). Results are the
// system call's raw ones; callers read errno themselves.

/// write(2) once; the raw result.
#[inline]
pub(crate) fn write_once(fd: RawFd, buf: &[u8]) -> isize {
    // SAFETY: `buf` is readable for its length.
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }
}

/// read(2) once; the raw result.
#[inline]
pub(crate) fn read_once(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: `buf` is writable for its length.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
}

/// pread64(2) once; the raw result.
#[inline]
pub(crate) fn pread_once(fd: RawFd, buf: &mut [u8], pos: u64) -> isize {
    // SAFETY: `buf` is writable for its length.
    unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), pos as libc::off_t) }
}

/// pwrite64(2) once; the raw result.
#[inline]
pub(crate) fn pwrite_once(fd: RawFd, buf: &[u8], pos: u64) -> isize {
    // SAFETY: `buf` is readable for its length.
    unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), pos as libc::off_t) }
}

/// lseek(2) to `pos` (SEEK_SET); false on failure.
#[inline]
pub(crate) fn lseek_set(fd: RawFd, pos: u64) -> bool {
    // SAFETY: lseek has no memory-safety preconditions.
    unsafe { libc::lseek(fd, pos as libc::off_t, libc::SEEK_SET) >= 0 }
}

/// fsync(2); false on failure.
#[inline]
pub(crate) fn fsync(fd: RawFd) -> bool {
    // SAFETY: fsync has no memory-safety preconditions.
    unsafe { libc::fsync(fd) == 0 }
}

/// open(2) with O_CLOEXEC added; -1 on failure.
#[inline]
pub(crate) fn open_raw(path: &std::ffi::CStr, flags: i32) -> RawFd {
    // SAFETY: `path` is NUL-terminated.
    unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) }
}

/// close(2) a raw descriptor the caller owns and no Rust object wraps.
#[inline]
pub(crate) fn close(fd: RawFd) {
    // SAFETY: closing a descriptor has no memory-safety preconditions; the
    // caller owns it.
    unsafe { libc::close(fd) };
}

/// close_range(2) of `first..=last` (descriptors no Rust object wraps).
#[inline]
pub(crate) fn close_range(first: u32, last: u32) {
    // SAFETY: closing descriptors has no memory-safety preconditions (the
    // caller uses none of them through Rust objects any more).
    unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
}

/// pipe2(O_CLOEXEC) as raw descriptors (read end, write end).
#[inline]
pub(crate) fn pipe_raw() -> Option<[RawFd; 2]> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    (unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0).then_some(fds)
}

/// getppid(2).
#[inline]
pub(crate) fn getppid() -> i32 {
    // SAFETY: getppid has no preconditions and cannot fail.
    unsafe { libc::getppid() }
}

/// waitpid(2) once; the raw result.
#[inline]
pub(crate) fn waitpid_raw(pid: i32, flags: i32) -> i32 {
    let mut st = 0;
    // SAFETY: `st` is a valid writable int.
    unsafe { libc::waitpid(pid, &mut st, flags) }
}

/// pause(2): sleep until a signal arrives.
#[inline]
pub(crate) fn pause() {
    // SAFETY: pause only waits for a signal.
    unsafe { libc::pause() };
}

/// fork(2) as the bare system call: unlike glibc's fork() it runs no
/// at-fork handlers, so neither process writes libc's memory on the way
/// out. The caller must be single-threaded and must not rely on the libc
/// state those handlers maintain (malloc locks, the cached thread id).
#[inline]
pub(crate) fn raw_fork() -> i32 {
    // SAFETY: clone(SIGCHLD) without a new stack is fork(2); the workload
    // processes that call it are single-threaded.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
        ) as i32
    }
}

/// getrusage(RUSAGE_SELF): (minor faults, major faults).
#[inline]
pub(crate) fn rusage_faults() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is valid.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a valid writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    (r.ru_minflt as u64, r.ru_majflt as u64)
}

/// prctl(PR_SET_PDEATHSIG, sig): `sig` when the parent exits.
#[inline]
pub(crate) fn set_parent_death_signal(sig: i32) {
    // SAFETY: this prctl only changes this process's attributes.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) };
}

/// prctl(PR_SET_CHILD_SUBREAPER): adopt orphaned descendants.
#[inline]
pub(crate) fn set_child_subreaper() {
    // SAFETY: this prctl only changes this process's attributes.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Reset signal `sig` to its default disposition.
#[inline]
pub(crate) fn default_signal(sig: i32) {
    // SAFETY: SIG_DFL is a valid disposition for every catchable signal.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
}

/// Unblock every signal of the calling thread.
#[inline]
pub(crate) fn unblock_all_signals() {
    // SAFETY: plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t owned here.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// The reporter `catch_fault_signals` installed: called with the signal
/// and the faulting address, in the signal handler.
static FAULT_REPORTER: std::sync::OnceLock<fn(i32, u64) -> !> = std::sync::OnceLock::new();

extern "C" fn on_fault_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as u64;
    match FAULT_REPORTER.get() {
        Some(report) => report(sig, addr),
        None => exit_now(3),
    }
}

/// Have SIGSEGV and SIGBUS call `report(sig, addr)` once (SA_RESETHAND),
/// in the signal handler: `report` may use only async-signal-safe calls
/// and must end the process. The first reporter a process installs stays.
pub(crate) fn catch_fault_signals(report: fn(i32, u64) -> !) {
    let _ = FAULT_REPORTER.set(report);
    for sig in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: plain data; all-zero is valid.
        let mut a: libc::sigaction = unsafe { std::mem::zeroed() };
        a.sa_sigaction = on_fault_signal as *const () as usize;
        a.sa_flags = libc::SA_SIGINFO | libc::SA_RESETHAND;
        // SAFETY: `a` is a valid sigaction whose handler only reads the
        // siginfo and calls the reporter.
        unsafe {
            libc::sigemptyset(&mut a.sa_mask);
            libc::sigaction(sig, &a, std::ptr::null_mut());
        }
    }
}

/// A glibc symbol of type `T` (`__rseq_offset`, `__rseq_size`, 2.35+).
fn glibc_constant<T: Copy>(name: &std::ffi::CStr) -> Option<T> {
    // SAFETY: dlsym with a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    // SAFETY: the callers name glibc variables of type `T` that are set
    // before main and never change.
    (!p.is_null()).then(|| unsafe { *(p as *const T) })
}

/// glibc's `__rseq_offset`: the rseq area's offset from the thread pointer.
pub(crate) fn rseq_offset() -> Option<isize> {
    glibc_constant(c"__rseq_offset")
}

/// glibc's `__rseq_size`: the registered rseq area's size (0: none).
pub(crate) fn rseq_size() -> Option<u32> {
    glibc_constant(c"__rseq_size")
}

/// The calling thread's thread pointer (its TCB address).
#[inline]
pub(crate) fn thread_pointer() -> usize {
    // SAFETY: pthread_self has no preconditions.
    (unsafe { libc::pthread_self() }) as usize
}

/// The address of the calling thread's errno.
#[inline]
pub(crate) fn errno_address() -> usize {
    // SAFETY: __errno_location has no preconditions.
    (unsafe { libc::__errno_location() }) as usize
}

/// rseq(2) with RSEQ_FLAG_UNREGISTER for the area at `area` of `len`
/// bytes registered with signature `sig`; the raw result.
pub(crate) fn rseq_unregister(area: usize, len: u32, flags: i32, sig: u32) -> i64 {
    // SAFETY: unregistering this thread's rseq area only stops the kernel
    // from writing it; nothing in this program relies on its contents.
    unsafe { libc::syscall(libc::SYS_rseq, area as *mut libc::c_void, len, flags, sig) }
}

/// The calling thread's stack as (lowest address, size in bytes).
pub(crate) fn thread_stack() -> Option<(usize, usize)> {
    // SAFETY: plain data, initialised by pthread_getattr_np.
    let mut attr: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    let mut addr: *mut libc::c_void = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: standard use of pthread_getattr_np on the calling thread.
    let ok = unsafe {
        libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 && {
            let r = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
            libc::pthread_attr_destroy(&mut attr);
            r
        }
    };
    ok.then_some((addr as usize, size))
}

// Memory of the workload's own mappings. Safe code never names a raw
// address here: a scenario region is a `Region` only `Region::map` makes,
// and every access names an offset the region checks against its length.
// What lies at a checked offset is the kernel's business: a range the
// scenario unmapped or protected, a file page past the end of the file, or
// a region a child did not inherit (MADV_DONTFORK) faults with SIGSEGV or
// SIGBUS, the modelled outcome the fault reporter turns into the step's
// error (`catch_fault_signals`). Memory the workload owns otherwise (its
// program's file mappings, stack and tables) is reached only through
// `populate`, which changes no byte, `FileMapping` and `rewrite_u8`, whose
// callers vouch for the address.

/// mmap(2) with `flags` as given; the address, or MAP_FAILED.
fn mmap(hint: u64, len: usize, prot: i32, flags: i32, fd: RawFd, off: u64) -> *mut libc::c_void {
    // SAFETY: callers never pass MAP_FIXED, so the hint is only a hint: the
    // kernel picks a free range, which aliases nothing of ours.
    unsafe {
        libc::mmap(
            hint as *mut libc::c_void,
            len,
            prot,
            flags,
            fd,
            off as libc::off_t,
        )
    }
}

/// Whether nothing is mapped in `[addr, addr + len)` of this process:
/// an inaccessible MAP_FIXED_NOREPLACE mapping there succeeds (it is
/// unmapped again at once).
pub(crate) fn range_free(addr: u64, len: u64) -> bool {
    let probe =
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE;
    let p = mmap(addr, len as usize, libc::PROT_NONE, probe, -1, 0);
    if p == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: `p` is the mapping just made, which nothing refers to.
    unsafe { libc::munmap(p, len as usize) };
    p as u64 == addr
}

/// An offset range outside a region (`Region`), or a word offset not a
/// multiple of 8: the offset of its end (of the word, when misaligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadOffset(pub u64);

/// A scenario region of a workload process: `len` bytes at `addr` that
/// `map` mapped in this process or an ancestor it forked from.
///
/// Invariant: no Rust object lives in `[addr, addr + len)`. The workload
/// makes no mapping but scenario regions once its steps run (it allocates
/// nothing then), so whatever the kernel maps in that range after an unmap
/// is another scenario region, never memory Rust code refers to; an access
/// of an unmapped page there faults (see above) instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    addr: u64,
    len: u64,
}

impl Region {
    /// A region not mapped (yet): every access is out of range.
    pub(crate) const NONE: Region = Region { addr: 0, len: 0 };

    /// mmap(2) without MAP_FIXED (the hint is only a hint); None when it
    /// failed (errno says why). Allocates nothing.
    #[inline]
    pub(crate) fn map(
        hint: u64,
        len: usize,
        prot: i32,
        flags: i32,
        fd: RawFd,
        off: u64,
    ) -> Option<Region> {
        let addr = mmap(hint, len, prot, flags & !libc::MAP_FIXED, fd, off);
        (addr != libc::MAP_FAILED).then_some(Region {
            addr: addr as u64,
            len: len as u64,
        })
    }

    /// The address the kernel mapped the region at.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// mremap(2) of the whole region to `new_len` bytes with `MREMAP_*`
    /// `flags` (MREMAP_FIXED: at `new_addr`, which the workload checked
    /// at set-up with [`range_free`]); None when the call failed (errno
    /// says why).
    #[inline]
    pub(crate) fn remap(&self, new_len: u64, flags: i32, new_addr: u64) -> Option<Region> {
        // SAFETY: the region holds no Rust object (the invariant), so
        // moving or resizing it invalidates nothing of ours; with
        // MREMAP_FIXED the target held none of our memory at set-up and
        // the workload maps nothing but scenario regions after it (the
        // compiler refuses targets that overlap those).
        let a = unsafe {
            libc::mremap(
                self.addr as *mut libc::c_void,
                self.len as usize,
                new_len as usize,
                flags,
                new_addr as *mut libc::c_void,
            )
        };
        (a != libc::MAP_FAILED).then_some(Region {
            addr: a as u64,
            len: new_len,
        })
    }

    /// The address of `[offset, offset + len)` of the region, if inside.
    #[inline(always)]
    fn at(&self, offset: u64, len: u64) -> Result<u64, BadOffset> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(self.addr + offset),
            Some(end) => Err(BadOffset(end)),
            None => Err(BadOffset(u64::MAX)),
        }
    }

    /// munmap(2) of `[offset, offset + len)`; Ok(false) when the call
    /// failed (errno says why).
    #[inline]
    pub(crate) fn munmap(&self, offset: u64, len: u64) -> Result<bool, BadOffset> {
        let a = self.at(offset, len)?;
        // SAFETY: the range is inside the region, where no Rust object
        // lives (the invariant).
        Ok(unsafe { libc::munmap(a as *mut libc::c_void, len as usize) } == 0)
    }

    /// madvise(2) `advice` on `[offset, offset + len)`; Ok(false) when the
    /// call failed (errno says why).
    #[inline]
    pub(crate) fn madvise(&self, offset: u64, len: u64, advice: i32) -> Result<bool, BadOffset> {
        let a = self.at(offset, len)?;
        // SAFETY: advice (even MADV_DONTNEED, which zeroes) on a range
        // inside the region, where no Rust object lives (the invariant).
        Ok(unsafe { libc::madvise(a as *mut libc::c_void, len as usize, advice) } == 0)
    }

    /// Store `v` at byte `offset`.
    #[inline(always)]
    pub(crate) fn store_u8(&self, offset: u64, v: u8) -> Result<(), BadOffset> {
        let a = self.at(offset, 1)?;
        // SAFETY: a byte inside the region, where no Rust object lives (the
        // invariant); an unmapped or read-only page faults instead.
        unsafe { std::ptr::write_volatile(a as *mut u8, v) };
        Ok(())
    }

    /// Fill the page at `offset` (page-aligned) with `bytes` (a page): the
    /// first byte stored alone first, so that a fault on the page is the
    /// one-byte store's.
    pub(crate) fn store_page(&self, offset: u64, bytes: &[u8]) -> Result<(), BadOffset> {
        let a = self.at(offset, bytes.len() as u64)?;
        self.store_u8(offset, bytes[0])?;
        // SAFETY: a whole page inside the region, where no Rust object
        // lives (the invariant), now present and writable (the store above
        // faulted it in or failed).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), a as *mut u8, bytes.len()) };
        Ok(())
    }

    /// Load the byte at `offset`.
    #[inline(always)]
    pub(crate) fn load_u8(&self, offset: u64) -> Result<u8, BadOffset> {
        let a = self.at(offset, 1)?;
        // SAFETY: as in `store_u8`; any byte value is a valid u8.
        Ok(unsafe { std::ptr::read_volatile(a as *const u8) })
    }

    /// Load the 8-byte word at `offset` (a multiple of 8).
    #[inline(always)]
    pub(crate) fn load_u64(&self, offset: u64) -> Result<u64, BadOffset> {
        let a = self.at(offset, 8)?;
        if a % 8 != 0 {
            return Err(BadOffset(offset + 8));
        }
        // SAFETY: an aligned word inside the region, where no Rust object
        // lives (the invariant); any bits are a valid u64.
        Ok(unsafe { std::ptr::read_volatile(a as *const u64) })
    }
}

/// MADV_POPULATE_WRITE (`write`) or MADV_POPULATE_READ of `len` bytes at
/// `addr`, any memory of this process; false on failure (errno says why).
/// Safe for any address: populating faults pages in (writable, for a
/// write) and changes no byte.
#[inline]
pub(crate) fn populate(addr: u64, len: usize, write: bool) -> bool {
    let advice = if write {
        libc::MADV_POPULATE_WRITE
    } else {
        libc::MADV_POPULATE_READ
    };
    // SAFETY: populate advice changes the contents of no byte (above).
    unsafe { libc::madvise(addr as *mut libc::c_void, len, advice) == 0 }
}

/// Whether the page at `addr` is resident (mincore(2)); None on failure.
#[inline]
pub(crate) fn page_resident(addr: u64) -> Option<bool> {
    let mut v = 0u8;
    // SAFETY: mincore reads no memory at `addr` and writes one byte of
    // residency for one page into `v`.
    let r = unsafe { libc::mincore(addr as *mut libc::c_void, 4096, &mut v) };
    (r == 0).then_some(v & 1 != 0)
}

/// Rewrite the byte at `addr` with its own value (makes its page writable
/// and private without changing it).
///
/// # Safety
/// `addr` is a byte of this process's writable memory that no other
/// thread accesses meanwhile (it may be uninitialised: it is copied as
/// such).
#[inline(always)]
pub(crate) unsafe fn rewrite_u8(addr: u64) {
    let p = addr as *mut std::mem::MaybeUninit<u8>;
    // SAFETY: the caller's promise; a MaybeUninit copy of the byte writes
    // back whatever it held.
    unsafe { std::ptr::write_volatile(p, std::ptr::read_volatile(p)) };
}

/// A private file mapping of this process's own (program text and data,
/// a library) as /proc/self/maps lists it.
///
/// Invariant: `[addr, addr + len)` is such a mapping with protection
/// `prot`, no other thread runs, and the mapping stays while the value
/// lives.
pub(crate) struct FileMapping {
    addr: u64,
    len: usize,
    prot: i32,
}

impl FileMapping {
    /// # Safety
    /// The invariant holds for the value made.
    pub(crate) unsafe fn new(addr: u64, len: usize, prot: i32) -> FileMapping {
        FileMapping { addr, len, prot }
    }

    /// Fault every page in without fault accounting (MADV_POPULATE_READ);
    /// then whether the first page is resident.
    pub(crate) fn populate_read(&self) -> bool {
        populate(self.addr, self.len, false);
        page_resident(self.addr) == Some(true)
    }

    /// Give the mapping an anon_vma, so that fork(2) copies its page
    /// tables: rewrite its first byte with its own value (a private copy
    /// of that page; the file is not changed), under a temporary
    /// PROT_WRITE when the mapping is read-only. Execute permission is
    /// kept, so code running from it keeps running. A mapping without read
    /// permission is left alone.
    pub(crate) fn give_anon_vma(&self) {
        if self.prot & libc::PROT_READ == 0 {
            return;
        }
        if self.prot & libc::PROT_WRITE != 0 {
            // SAFETY: the first byte of a writable private mapping of ours;
            // no other thread runs (the invariant).
            unsafe { rewrite_u8(self.addr) };
            return;
        }
        let p = self.addr as *mut libc::c_void;
        // SAFETY: adding write permission to a private mapping of ours (the
        // invariant) changes no byte and keeps execute permission.
        if unsafe { libc::mprotect(p, self.len, self.prot | libc::PROT_WRITE) } != 0 {
            return;
        }
        // SAFETY: the first byte of that mapping, writable now; no other
        // thread runs (the invariant).
        unsafe { rewrite_u8(self.addr) };
        // SAFETY: back to the mapping's own protection.
        unsafe { libc::mprotect(p, self.len, self.prot) };
    }
}

// Scenario threads.

/// futex(FUTEX_WAIT): block while `w` holds `val`.
#[inline]
pub(crate) fn futex_wait(w: &std::sync::atomic::AtomicU32, val: u32) {
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 of ours; it only blocks
    // while the word holds `val`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// futex(FUTEX_WAKE): wake every waiter on `w`.
#[inline]
pub(crate) fn futex_wake(w: &std::sync::atomic::AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 of ours.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            w.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

/// gettid(2).
#[inline]
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Run thread `tid` SCHED_FIFO at `prio`, else at nice `nice`. The raw
/// system call: musl's sched_setscheduler() is a stub that fails with
/// ENOSYS.
pub(crate) fn sched_fifo_or_nice(tid: i32, prio: i32, nice: i32) {
    // SAFETY: plain data; every field is an integer.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = prio;
    // SAFETY: these only change thread `tid`'s scheduling policy or nice
    // value.
    unsafe {
        if libc::syscall(
            libc::SYS_sched_setscheduler,
            tid,
            libc::SCHED_FIFO,
            &param as *const libc::sched_param,
        ) != 0
        {
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
        }
    }
}

/// sched_setaffinity(2) of thread `tid`; Err(errno).
pub(crate) fn set_thread_affinity(tid: i32, set: &libc::cpu_set_t) -> Result<(), u64> {
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r != 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0) as u64);
    }
    Ok(())
}

/// The start routine and argument of a thread `spawn_thread` made.
struct ThreadStart<T: 'static> {
    main: fn(&'static T),
    arg: &'static T,
}

extern "C" fn thread_start<T: Sync + 'static>(p: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `p` is the leaked ThreadStart<T> that `spawn_thread` passed;
    // it is never freed.
    let s: &ThreadStart<T> = unsafe { &*(p as *const ThreadStart<T>) };
    (s.main)(s.arg);
    std::ptr::null_mut()
}

/// pthread_create a detached-by-leak thread with a `stack`-byte stack
/// running `main(arg)`; Err(the pthread error number). Allocates.
pub(crate) fn spawn_thread<T: Sync + 'static>(
    stack: usize,
    main: fn(&'static T),
    arg: &'static T,
) -> Result<(), u64> {
    let start: &'static ThreadStart<T> = Box::leak(Box::new(ThreadStart { main, arg }));
    // SAFETY: plain data, initialised by pthread_attr_init.
    let mut attr: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    // SAFETY: an integer or a pointer (musl), written by pthread_create.
    let mut th: libc::pthread_t = unsafe { std::mem::zeroed() };
    // SAFETY: standard pthread use; `start` and `arg` live for the
    // process's life.
    let r = unsafe {
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, stack);
        let r = libc::pthread_create(
            &mut th,
            &attr,
            thread_start::<T>,
            start as *const ThreadStart<T> as *mut libc::c_void,
        );
        libc::pthread_attr_destroy(&mut attr);
        r
    };
    if r != 0 {
        return Err(r as u64);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    /// A fresh private anonymous region of `pages` pages.
    pub(crate) fn anon(pages: u64) -> Region {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        Region::map(0, (pages * PAGE) as usize, rw, flags, -1, 0).expect("mmap")
    }

    #[test]
    fn region_accesses_inside_reach_the_mapping() {
        let r = anon(2);
        assert_eq!(r.load_u8(0), Ok(0), "fresh anonymous memory reads zero");
        r.store_u8(2 * PAGE - 1, 7).unwrap();
        assert_eq!(r.load_u8(2 * PAGE - 1), Ok(7));
        r.store_u8(PAGE, 0xab).unwrap();
        assert_eq!(r.load_u64(PAGE), Ok(0xab), "little-endian word");
        assert_eq!(r.load_u64(2 * PAGE - 8), Ok(7 << 56));
        assert_eq!(r.madvise(0, 2 * PAGE, libc::MADV_DONTNEED), Ok(true));
        assert_eq!(r.load_u8(2 * PAGE - 1), Ok(0), "MADV_DONTNEED zeroed it");
        assert_eq!(r.munmap(0, 2 * PAGE), Ok(true));
    }

    #[test]
    fn region_refuses_offsets_past_its_end() {
        let r = anon(2);
        let len = 2 * PAGE;
        assert_eq!(r.store_u8(len, 1), Err(BadOffset(len + 1)));
        assert_eq!(r.load_u8(u64::MAX), Err(BadOffset(u64::MAX)));
        assert_eq!(r.load_u64(len - 4), Err(BadOffset(len + 4)));
        assert_eq!(r.load_u64(4), Err(BadOffset(12)), "misaligned word");
        assert_eq!(
            r.madvise(PAGE, 2 * PAGE, libc::MADV_DONTNEED),
            Err(BadOffset(3 * PAGE))
        );
        assert_eq!(r.munmap(PAGE, u64::MAX), Err(BadOffset(u64::MAX)));
        assert_eq!(r.munmap(len, PAGE), Err(BadOffset(len + PAGE)));
        // Nothing was unmapped or zeroed: the region still reads back.
        r.store_u8(len - 1, 9).unwrap();
        assert_eq!(
            r.madvise(len, PAGE, libc::MADV_DONTNEED),
            Err(BadOffset(len + PAGE))
        );
        assert_eq!(r.load_u8(len - 1), Ok(9));
        assert_eq!(r.munmap(0, len), Ok(true));
    }

    #[test]
    fn an_unmapped_region_refuses_every_access() {
        let r = Region::NONE;
        assert_eq!(r.load_u8(0), Err(BadOffset(1)));
        assert_eq!(r.store_u8(0, 1), Err(BadOffset(1)));
        assert_eq!(r.load_u64(0), Err(BadOffset(8)));
        assert_eq!(
            r.madvise(0, PAGE, libc::MADV_DONTNEED),
            Err(BadOffset(PAGE))
        );
        assert_eq!(r.munmap(0, PAGE), Err(BadOffset(PAGE)));
        // An empty range is inside even an empty region.
        assert_eq!(r.at(0, 0), Ok(0));
    }

    #[test]
    fn engine_mapping_touches_every_page() {
        let m = Mapping::anon(4 * PAGE as usize).expect("mmap");
        assert!(m.madvise(libc::MADV_NOHUGEPAGE));
        assert_eq!(m.mincore().unwrap(), vec![0; 4], "nothing touched yet");
        m.touch_all();
        let v = m.mincore().unwrap();
        assert!(v.iter().all(|&b| b & 1 != 0), "{v:?}");
    }
}

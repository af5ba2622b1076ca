//! Thin safe wrappers over the system calls the engine (parent) side uses.
//! The workload side (after fork) calls libc directly, see `workload.rs`.

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

/// An anonymous or file mapping unmapped on drop.
pub(crate) struct Mapping {
    pub addr: *mut libc::c_void,
    pub len: usize,
}

impl Mapping {
    pub(crate) fn anon(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses
        // aliases nothing.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { addr, len })
    }

    /// A read-only shared mapping of a file (for mincore; it maps nothing
    /// until touched).
    pub(crate) fn file_ro(fd: &impl AsRawFd, len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh read-only mapping chosen by the kernel aliases
        // nothing we hold.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { addr, len })
    }

    /// Residency of every page (mincore).
    pub(crate) fn mincore(&self) -> io::Result<Vec<u8>> {
        let mut v = vec![0u8; self.len.div_ceil(4096)];
        // SAFETY: the range is our mapping and `v` has one byte per page.
        cvt(unsafe { libc::mincore(self.addr, self.len, v.as_mut_ptr()) })?;
        Ok(v)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we own the mapping and nothing refers into it any more.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

/// Write one byte to every page of an anonymous mapping (warming host
/// memory, host-notes 2).
pub(crate) fn touch_anon(m: &Mapping) {
    let base = m.addr as *mut u8;
    let mut off = 0;
    while off < m.len {
        // SAFETY: `off` is inside the writable anonymous mapping `m`.
        unsafe { std::ptr::write_volatile(base.add(off), 1) };
        off += 4096;
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
    // SAFETY: sigset_t is plain data; all-zero is a valid value to fill.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` and `old` are valid sigset_t values owned here.
    unsafe {
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
    }
    let out = f();
    // SAFETY: `old` is the mask pthread_sigmask returned.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    out
}

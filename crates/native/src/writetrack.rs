//! Later writes of a recorded process, epoch by epoch: userfaultfd
//! write-protection in its asynchronous mode, with PAGEMAP_SCAN.
//!
//! A userfaultfd belongs to the memory of the process that creates it, so
//! the recorder makes the traced process create one: at a seccomp stop
//! of one of its threads it turns the stopped call into userfaultfd(2),
//! takes a copy of the new descriptor (pidfd_getfd(2)), has the thread
//! close its own, and lets the original call start again. From then on
//! the recorder registers the process's private anonymous mappings for
//! write-protection (`UFFDIO_REGISTER_MODE_WP` with `UFFD_FEATURE_WP_ASYNC`:
//! a write to a protected page is resolved by the kernel itself,
//! `do_wp_page()` clearing the PTE's uffd-wp bit) and, at every epoch,
//! asks PAGEMAP_SCAN for the pages written since the last scan and
//! protects them again (`PM_SCAN_WP_MATCHING` on `PAGE_IS_WRITTEN`). The
//! first write to such a page in the next epoch faults once, and the
//! fault tracepoint sees it.
//!
//! The scan asks for written pages that are present: an unpopulated PTE
//! of a registered mapping counts as written too, and protecting it would
//! put a marker there whose first touch then faults twice (the new PTE
//! inherits the protection).
//!
//! File mappings are not registered: a registered mapping loses
//! fault-around (`uffd_disable_fault_around()`), which would change the
//! recorded faults. The scan reports written present pages only
//! (`pte_none` entries are no category), so no page table is allocated
//! for it.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::pagemap;

use foliosim_uapi::pagemap::page_is::{
    PFNZERO as PAGE_IS_PFNZERO, PRESENT as PAGE_IS_PRESENT, WRITTEN as PAGE_IS_WRITTEN,
};

/// `PM_SCAN_WP_MATCHING` (include/uapi/linux/fs.h).
const PM_SCAN_WP_MATCHING: u64 = 1 << 0;

/// include/uapi/linux/userfaultfd.h
const UFFD_API: u64 = 0xAA;
const UFFD_USER_MODE_ONLY: u64 = 1;
const UFFD_FEATURE_WP_ASYNC: u64 = 1 << 15;
const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
/// `_IOWR(0xAA, 0x3F, struct uffdio_api)` and `_IOWR(0xAA, 0x00, struct
/// uffdio_register)`.
const UFFDIO_API: u64 = 0xC018_AA3F;
const UFFDIO_REGISTER: u64 = 0xC020_AA00;

/// The top of the user address space with 4-level page tables: the
/// kernel's `TASK_SIZE_MAX` on x86_64 (a page below 2^47), above which
/// PAGEMAP_SCAN refuses a range.
const USER_TOP: u64 = (1 << 47) - 4096;

/// A written range of a scan: first page, end page, and whether it maps
/// the shared zero page (written "by" a read fault: a write to it is the
/// program's own copy-on-write fault, not the protection's).
pub(crate) type Written = (u64, u64, bool);

/// The write tracking of one process's memory.
pub(crate) struct Tracker {
    uffd: OwnedFd,
    pagemap: File,
}

impl Tracker {
    /// Make thread `tid` of process `pid`, stopped at a seccomp stop,
    /// create a userfaultfd for the process's memory (see the module
    /// documentation); register its private anonymous mappings. On return
    /// the thread is stopped at the exit of an injected call with its
    /// registers set to make the original call again: resume it with
    /// PTRACE_CONT. An error other than [`Injected::Died`] leaves it
    /// so too, without tracking.
    pub(crate) fn inject(pid: u32, tid: i32) -> Result<Tracker, Injected> {
        let (saved, fd) = inject::userfaultfd(tid, UFFD_USER_MODE_ONLY | libc::O_CLOEXEC as u64)?;
        let taken = take_fd(pid, fd);
        inject::close_and_restart(tid, &saved, fd)?;
        let uffd = taken.map_err(Injected::Failed)?;
        let mut api = [UFFD_API, UFFD_FEATURE_WP_ASYNC, 0];
        // SAFETY: `api` is a struct uffdio_api (three u64) that the call
        // reads and writes.
        let r = unsafe { libc::ioctl(uffd.as_raw_fd(), UFFDIO_API as _, api.as_mut_ptr()) };
        if r < 0 {
            return Err(Injected::Failed(io::Error::last_os_error()));
        }
        let pagemap = File::open(format!("/proc/{pid}/pagemap")).map_err(Injected::Failed)?;
        let t = Tracker { uffd, pagemap };
        t.register_anon_maps(pid);
        Ok(t)
    }

    /// Register `[start, start + len)` for write-protection (an error for
    /// a range that is not one mapping the kernel allows).
    pub(crate) fn register(&self, start: u64, len: u64) -> io::Result<()> {
        // struct uffdio_register { struct uffdio_range { start, len },
        // mode, ioctls }
        let mut reg = [start, len, UFFDIO_REGISTER_MODE_WP, 0];
        // SAFETY: `reg` is a struct uffdio_register the call reads and
        // writes.
        let r = unsafe {
            libc::ioctl(
                self.uffd.as_raw_fd(),
                UFFDIO_REGISTER as _,
                reg.as_mut_ptr(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Register every private anonymous mapping of `pid` (heap and stack
    /// included) now in /proc/PID/maps, or those overlapping `within`.
    pub(crate) fn register_anon_maps_in(&self, pid: u32, within: Option<(u64, u64)>) {
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return;
        };
        for line in maps.lines() {
            let mut f = line.split_whitespace();
            let (Some(range), Some(perms)) = (f.next(), f.next()) else {
                continue;
            };
            let path = f.nth(3).unwrap_or("");
            let anon = path.is_empty() || path == "[heap]" || path == "[stack]";
            if !anon || !perms.ends_with('p') {
                continue;
            }
            let Some((a, b)) = range.split_once('-') else {
                continue;
            };
            let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
                continue;
            };
            if within.is_some_and(|(s, e)| b <= s || a >= e) {
                continue;
            }
            let _ = self.register(a, b - a);
        }
    }

    fn register_anon_maps(&self, pid: u32) {
        self.register_anon_maps_in(pid, None);
    }

    /// The pages written since the last scan, protected again.
    pub(crate) fn scan(&self) -> io::Result<Vec<Written>> {
        let regions = pagemap::pagemap_scan_with(
            &self.pagemap,
            (0, USER_TOP),
            PM_SCAN_WP_MATCHING,
            PAGE_IS_WRITTEN | PAGE_IS_PRESENT,
            PAGE_IS_WRITTEN | PAGE_IS_PRESENT | PAGE_IS_PFNZERO,
        )?;
        Ok(regions
            .into_iter()
            .map(|(s, e, c)| (s >> 12, e >> 12, c & PAGE_IS_PFNZERO != 0))
            .collect())
    }
}

/// Why a process could not be made to track its writes.
#[derive(Debug)]
pub(crate) enum Injected {
    /// Nothing was changed: the thread is at its seccomp stop as before.
    Untouched(io::Error),
    /// The thread ended (or changed beyond use) while the recorder
    /// worked on it: the wait status the recorder took, for the tracer
    /// to handle as if it had seen it itself.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Died(i32, i32),
    /// A call failed; the thread is left to make its original call.
    Failed(io::Error),
}

/// A copy of descriptor `fd` of process `pid` (pidfd_open(2) and
/// pidfd_getfd(2), Linux 5.6+).
fn take_fd(pid: u32, fd: i32) -> io::Result<OwnedFd> {
    // SAFETY: plain system calls on numbers; the descriptors they return
    // are owned at once.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0);
        if pidfd < 0 {
            return Err(io::Error::last_os_error());
        }
        let pidfd = OwnedFd::from_raw_fd(pidfd as i32);
        let ours = libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0);
        if ours < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(ours as i32))
    }
}

/// System calls made by a traced thread on the recorder's behalf.
#[cfg(target_arch = "x86_64")]
mod inject {
    use super::Injected;
    use crate::sys;
    use std::io;

    /// The `syscall` instruction's length: rewinding the instruction
    /// pointer by it makes the thread execute it again.
    const SYSCALL_LEN: u64 = 2;
    const SYS_USERFAULTFD: u64 = 323;
    const SYS_CLOSE: u64 = 3;

    fn get(tid: i32) -> io::Result<libc::user_regs_struct> {
        // SAFETY: a zeroed user_regs_struct is valid; the kernel fills it.
        let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        // SAFETY: PTRACE_GETREGS writes one user_regs_struct to `r`.
        let rc = unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, 0, &mut r) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r)
    }

    fn set(tid: i32, r: &libc::user_regs_struct) -> io::Result<()> {
        // SAFETY: PTRACE_SETREGS reads one user_regs_struct from `r`.
        let rc = unsafe { libc::ptrace(libc::PTRACE_SETREGS, tid, 0, r) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `PTRACE_GET_SYSCALL_INFO`'s `op` at a stop of `tid`: 1 at a
    /// syscall-entry stop, 2 at an exit stop, 3 at a seccomp stop.
    fn stop_op(tid: i32) -> u8 {
        crate::record::syscall_info(tid).map_or(0, |i| i.0[0])
    }

    /// Resume `tid` until the exit stop of the call it is in or about to
    /// make (through its entry and seccomp stops), and wait for it.
    fn to_exit(tid: i32) -> Result<(), Injected> {
        loop {
            sys::ptrace(libc::PTRACE_SYSCALL, tid, 0, 0).map_err(Injected::Failed)?;
            let (t, st) = sys::wait_any(tid).map_err(Injected::Failed)?;
            let seccomp = (st >> 16) & 0xff == libc::PTRACE_EVENT_SECCOMP;
            let syscall = libc::WSTOPSIG(st) == libc::SIGTRAP | 0x80;
            if !libc::WIFSTOPPED(st) || !(syscall || seccomp) {
                return Err(Injected::Died(t, st));
            }
            if syscall && stop_op(tid) == 2 {
                return Ok(());
            }
        }
    }

    /// The registers of a thread at its seccomp stop.
    pub(super) type Saved = libc::user_regs_struct;

    /// Set the registers saved at the seccomp stop back, the instruction
    /// pointer on the `syscall` instruction and the call's number where
    /// it reads it: resumed, the thread makes its original call again.
    fn restore(tid: i32, saved: &Saved) -> io::Result<()> {
        let mut r = *saved;
        r.rip -= SYSCALL_LEN;
        r.rax = saved.orig_rax;
        set(tid, &r)
    }

    /// At a seccomp stop of `tid`: make the stopped call
    /// userfaultfd(`flags`) instead. The registers saved at the stop and
    /// the new descriptor's number in the thread's process (on an error
    /// the thread is already set to make its original call again).
    pub(super) fn userfaultfd(tid: i32, flags: u64) -> Result<(Saved, i32), Injected> {
        let saved = get(tid).map_err(Injected::Untouched)?;
        // At a seccomp stop the call is not made yet: changing its number
        // and arguments makes another (the filter checks it again, and
        // lets userfaultfd through).
        let mut r = saved;
        r.orig_rax = SYS_USERFAULTFD;
        r.rdi = flags;
        set(tid, &r).map_err(Injected::Untouched)?;
        to_exit(tid)?;
        let fd = get(tid).map_err(Injected::Failed)?.rax as i64;
        if fd < 0 {
            restore(tid, &saved).map_err(Injected::Failed)?;
            return Err(Injected::Failed(io::Error::from_raw_os_error(-fd as i32)));
        }
        Ok((saved, fd as i32))
    }

    /// At the exit of the injected call: close(2) descriptor `fd` in the
    /// thread's process, then set it to make its original call again.
    pub(super) fn close_and_restart(tid: i32, saved: &Saved, fd: i32) -> Result<(), Injected> {
        // Send the thread back to the `syscall` instruction with close's
        // number: it stops at close's entry, its seccomp stop (the
        // recorder's filter traces close) and its exit.
        let mut r = get(tid).map_err(Injected::Failed)?;
        r.rip -= SYSCALL_LEN;
        r.rax = SYS_CLOSE;
        r.rdi = fd as u64;
        set(tid, &r).map_err(Injected::Failed)?;
        to_exit(tid)?;
        restore(tid, saved).map_err(Injected::Failed)
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod inject {
    use super::Injected;
    use std::io;

    pub(super) type Saved = ();

    pub(super) fn userfaultfd(_tid: i32, _flags: u64) -> Result<(Saved, i32), Injected> {
        Err(Injected::Untouched(io::Error::new(
            io::ErrorKind::Unsupported,
            "system-call injection is x86_64 only",
        )))
    }

    pub(super) fn close_and_restart(_tid: i32, _saved: &Saved, _fd: i32) -> Result<(), Injected> {
        Ok(())
    }
}

//! The workload: the forked process (and its own forked children) that runs
//! the scenario's steps with real system calls, pinned to one CPU, while
//! the engine measures it from outside.
//!
//! The workload must fault exactly where the scenario faults and nowhere
//! else, because its fault counts are reported:
//! * its program text and read-only data are populated with
//!   MADV_POPULATE_READ at set-up, and those file mappings are given an
//!   anon_vma (one byte rewritten under a temporary PROT_WRITE), so that
//!   fork(2) copies their page tables and a forked child never faults on
//!   its own code;
//! * every code path the steps use runs once at set-up (a scratch mapping,
//!   a scratch fork), so libc's first-use writes happen then;
//! * everything it writes while measured (its stack, its tables, errno, the
//!   rseq area the kernel updates) is made writable ahead of time with
//!   MADV_POPULATE_WRITE, at set-up and again after each fork step (after
//!   fork every private page is copy-on-write shared);
//! * what a fork step still costs in the workload's own memory is measured
//!   in the processes themselves (getrusage, and tracepoint counters each
//!   process opens on itself) and reported as overhead, which the engine
//!   subtracts. Only the few events a new child causes before its own
//!   counters exist are estimated (page faults from getrusage, less what
//!   the new counter already saw; TLB flushes are not corrected). Since
//!   getrusage also counts faults taken in kernel mode, which
//!   exceptions:page_fault_user does not, glibc's rseq area is unregistered
//!   at set-up: the kernel would write it copy-on-write after each fork.
//!
//! Messages to the engine are `crate::protocol::Msg` records (fixed-size,
//! below PIPE_BUF, so writes from several processes never interleave). Only the root process
//! waits for the engine (at phase markers); a forking process waits for its
//! child's steps through a pipe, so exactly one workload process runs at a
//! time.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use crate::memcg::WlCgroup;
use crate::perf::{self, Event};
use crate::protocol::{Failure, Mark, Msg, Notice, MSG_BYTES, NO_STEP};
use crate::sys::{self, BadOffset, Region};
use foliosim_scenario::{IoCall, PageData};
use foliosim_uapi::pagedata::{fill_page, PageContent};
use foliosim_uapi::Madv;
use foliosim_workload::{Op, Pat, Workload as Plan, PAGE_SIZE, PMD_SIZE};

/// At most this many tracepoint counters (crate::perf opens 13).
pub(crate) const MAX_EVENTS: usize = 16;
/// Index of `exceptions:page_fault_user` in the event list, if any.
fn page_fault_user(events: &[Event]) -> Option<usize> {
    events
        .iter()
        .position(|e| e.name == "exceptions:page_fault_user")
}

/// The step being executed (for the fault reporter).
static CUR_STEP: AtomicU64 = AtomicU64::new(NO_STEP);
/// Where messages go (for the fault reporter).
static MSG_FD: AtomicI32 = AtomicI32::new(-1);

/// Bytes of stack below the current frame written before measuring.
const STACK_PREFAULT: usize = 32 << 10;
/// The page size, for addresses.
const PAGE: usize = PAGE_SIZE as usize;

/// What the engine hands the workload at fork time.
pub(crate) struct Setup<'a> {
    pub plan: &'a Plan,
    pub paths: &'a [CString],
    pub events: &'a [Event],
    /// The memory cgroups of the memcg steps (created by the engine).
    pub cgroups: &'a [WlCgroup],
    /// Host CPU of each scenario thread (thread `i` on `thread_cpus[i]`).
    pub thread_cpus: &'a [usize],
    pub msg_w: RawFd,
    pub go_r: RawFd,
    pub engine_pid: i32,
    /// An address in the engine's frame that forked: the workload never
    /// returns above it, so its stack is below.
    pub stack_top: usize,
}

struct Proc<'a> {
    plan: &'a Plan,
    paths: &'a [CString],
    events: &'a [Event],
    /// This process's own (not inherited) tracepoint counters, one per
    /// event (negative: could not be opened), to measure its overhead.
    own: Vec<i32>,
    cgroups: &'a [WlCgroup],
    msg_w: RawFd,
    go_r: RawFd,
    /// Every region this process has mapped (`Region::NONE`: not yet).
    regions: Vec<Region>,
    /// Live children (capacity reserved: pushing never allocates).
    children: Vec<libc::pid_t>,
    stack_top: usize,
    stack_low: usize,
    /// Pages of thread-local storage the kernel or libc write behind our
    /// back: the thread control block, errno, the rseq area (the kernel
    /// updates it when the task is scheduled back in).
    tls_pages: [usize; 4],
    t_wall: u64,
    t_cpu: u64,
    /// The scenario threads (created at set-up when the plan has any).
    threads: Vec<crate::threads::Thread>,
    /// How many of them the last threads step started (0: none alive).
    live_threads: usize,
    /// The descriptor of each `[[file]]` an I/O step uses (-1: none),
    /// opened read-write at set-up and inherited by fork children.
    fds: Vec<RawFd>,
    /// The buffer of the I/O steps (the largest call's size), written
    /// before measuring so that reading into it never faults.
    io_buf: Vec<u8>,
}

fn exit(code: i32) -> ! {
    sys::exit_now(code)
}

fn errno() -> u64 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as u64
}

fn send(fd: RawFd, m: &Msg) {
    let rec = m.encode();
    loop {
        let n = sys::write_once(fd, &rec[..MSG_BYTES]);
        if n == MSG_BYTES as isize {
            return;
        }
        if n < 0 && errno() == libc::EINTR as u64 {
            continue;
        }
        // The engine is gone.
        exit(4);
    }
}

fn rusage() -> (u64, u64) {
    sys::rusage_faults()
}

fn clock(id: libc::clockid_t) -> u64 {
    crate::sys::clock(id)
}

fn raw_fork() -> i32 {
    sys::raw_fork()
}

/// The SIGSEGV/SIGBUS reporter (`sys::catch_fault_signals`): the step that
/// faulted, and the address. Runs in the signal handler: write and _exit
/// are async-signal-safe, and encoding allocates nothing.
fn on_fault(sig: i32, addr: u64) -> ! {
    let m = Msg::Error {
        step: CUR_STEP.load(Ordering::Relaxed),
        why: Failure::Signal,
        err: sig as u64,
        addr,
        pid: sys::getpid() as u64,
    }
    .encode();
    sys::write_once(MSG_FD.load(Ordering::Relaxed), &m[..MSG_BYTES]);
    sys::exit_now(3)
}

/// Die with the parent, and adopt orphaned grandchildren (so `wait` reaps
/// a whole subtree and its rusage stays in the tree).
fn tie_to_parent(parent: i32) {
    sys::set_parent_death_signal(libc::SIGKILL);
    sys::set_child_subreaper();
    if sys::getppid() != parent {
        sys::exit_now(1);
    }
}

/// Signal dispositions of a workload process: the engine's interrupt
/// handlers are dropped, nothing is blocked, SIGSEGV and SIGBUS are
/// reported with the step that caused them.
fn reset_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        sys::default_signal(sig);
    }
    sys::unblock_all_signals();
    sys::catch_fault_signals(on_fault);
}

/// Close every descriptor but stdio and `keep`.
fn close_other_fds(keep: &mut [RawFd]) {
    use sys::close_range;
    keep.sort_unstable();
    let mut from = 3u32;
    for &k in keep.iter() {
        let k = k as u32;
        if k > from {
            close_range(from, k - 1);
        }
        from = from.max(k + 1);
    }
    close_range(from, u32::MAX);
}

/// The signature glibc registers its rseq area with (`RSEQ_SIG`).
#[cfg(target_arch = "x86_64")]
const RSEQ_SIG: u32 = 0x5305_3053;
#[cfg(target_arch = "aarch64")]
const RSEQ_SIG: u32 = 0xd428_bc00;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const RSEQ_SIG: u32 = 0;
/// `RSEQ_FLAG_UNREGISTER` (include/uapi/linux/rseq.h).
const RSEQ_FLAG_UNREGISTER: libc::c_int = 1;
/// The smallest rseq registration (the original `struct rseq`).
const ORIG_RSEQ_SIZE: u32 = 32;

/// Unregister the rseq area glibc registered for this thread (at set-up,
/// before any fork, so no workload process has one); Err(errno).
///
/// With rseq registered, the kernel writes the area (cpu_id, rseq_cs) on
/// the way back to user mode after a migration or preemption and in every
/// new child (kernel/rseq.c: __rseq_handle_notify_resume(), rseq_fork()
/// copies the registration). After a fork that area's page is copy-on-write
/// shared, so that write is a copy-on-write fault taken in kernel mode:
/// counted in getrusage's ru_minflt but not by exceptions:page_fault_user.
/// The estimate of a new child's overhead from getrusage then counted it as
/// a user fault, and a parent preempted by its new child (timing) took one
/// more; the native page_fault_user count came out one short. The workload
/// never uses rseq itself; glibc falls back to system calls (sched_getcpu)
/// when the area says "not registered".
fn unregister_rseq() -> Result<(), u64> {
    let (Some(offset), Some(size)) = (sys::rseq_offset(), sys::rseq_size()) else {
        return Ok(()); // this libc registers no rseq area
    };
    if size == 0 {
        return Ok(()); // registration disabled or refused by the kernel
    }
    let area = sys::thread_pointer().wrapping_add_signed(offset);
    // glibc registers max(__rseq_size, 32) bytes (2.40+: __rseq_size is
    // the feature size, which may be smaller); before 2.40 both are 32.
    let mut err = 0;
    for len in [size.max(ORIG_RSEQ_SIZE), size] {
        let r = sys::rseq_unregister(area, len, RSEQ_FLAG_UNREGISTER, RSEQ_SIG);
        if r == 0 {
            return Ok(());
        }
        err = errno();
        if err == libc::ENOSYS as u64 {
            return Ok(()); // no rseq in this kernel: nothing registered
        }
    }
    Err(err)
}

/// Populate every private file mapping of the process (program text, data,
/// libraries) without fault accounting, and give each an anon_vma so that
/// fork copies their page tables.
fn populate_file_mappings() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[4] == "0" {
            continue; // anonymous, or no file
        }
        let perms = f[1].as_bytes();
        if perms.len() < 4 || perms[3] != b'p' || &perms[..3] == b"---" {
            continue;
        }
        let Some((a, b)) = f[0].split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        else {
            continue;
        };
        let mut prot = 0;
        if perms[0] == b'r' {
            prot |= libc::PROT_READ;
        }
        if perms[1] == b'w' {
            prot |= libc::PROT_WRITE;
        }
        if perms[2] == b'x' {
            prot |= libc::PROT_EXEC;
        }
        // SAFETY: a private file mapping of ours as /proc/self/maps lists
        // it, at set-up: no other thread exists yet, and nothing unmaps it.
        let m = unsafe { sys::FileMapping::new(start as u64, end - start, prot) };
        if m.populate_read() {
            m.give_anon_vma();
        }
    }
}

/// The calling thread's stack as (lowest address, size in bytes), from
/// pthread_getattr_np; None if it cannot be read.
fn thread_stack() -> Option<(usize, usize)> {
    sys::thread_stack()
}

/// The lowest address of the calling thread's stack we may write.
fn stack_low() -> usize {
    thread_stack().map_or(0, |(low, _)| low + 4 * PAGE)
}

/// Break copy-on-write sharing of `[start, end)` ahead of time with
/// MADV_POPULATE_WRITE: the kernel faults the pages writable through GUP.
/// Such faults raise no exceptions:page_fault_user and no perf fault
/// events, but mm_account_fault() still adds them to the task's min_flt
/// (getrusage), so nothing may be populated inside a window whose faults
/// are estimated from getrusage. Returns false if that failed.
fn populate_write(start: usize, end: usize) -> bool {
    let s = start & !(PAGE - 1);
    let e = (end + PAGE - 1) & !(PAGE - 1);
    if e <= s {
        return true;
    }
    sys::populate(s as u64, e - s, true)
}

/// Make `[start, end)` writable without faulting later: populate it, or
/// else rewrite one byte of every page with its own value (which also
/// grows the stack mapping down if needed).
///
/// # Safety
/// `[start, end)` is writable memory of this process (this thread's stack,
/// our own tables) that no other thread accesses meanwhile.
unsafe fn warm_range(start: usize, end: usize) {
    if populate_write(start, end) {
        return;
    }
    let mut p = start & !(PAGE - 1);
    while p < end {
        // SAFETY: a byte of `[start, end)`, the caller's promise.
        unsafe { sys::rewrite_u8(p.max(start) as u64) };
        p += PAGE;
    }
}

/// The stack from `STACK_PREFAULT` below the current frame up to the
/// workload's top frame.
#[inline(never)]
fn prefault_stack(top: usize, low: usize) {
    let here = 0u8;
    let sp = ptr::addr_of!(here) as usize;
    let lo = (sp.saturating_sub(STACK_PREFAULT).max(low)) & !(PAGE - 1);
    // SAFETY: this thread's stack between its lowest writable address and
    // the workload's top frame; no other thread uses it.
    unsafe { warm_range(lo, top) };
    std::hint::black_box(&here);
}

/// The pages of thread-local data written behind our back (see
/// `Proc::tls_pages`).
fn tls_pages() -> [usize; 4] {
    let tp = sys::thread_pointer();
    let errno = sys::errno_address();
    let rseq = sys::rseq_offset().map_or(0, |o| tp.wrapping_add_signed(o));
    [tp, tp.wrapping_sub(PAGE), errno, rseq]
}

/// Write `data` to the file at `path` in one write(2); Err(errno).
/// Allocates nothing (the workload uses it while measured).
fn write_file(path: &std::ffi::CStr, data: &[u8]) -> Result<(), u64> {
    let fd = sys::open_raw(path, libc::O_WRONLY);
    if fd < 0 {
        return Err(errno());
    }
    let n = sys::write_once(fd, data);
    let err = errno();
    sys::close(fd);
    if n != data.len() as isize {
        return Err(if n < 0 { err } else { libc::EIO as u64 });
    }
    Ok(())
}

/// The decimal number at the start of the file at `path`; Err(errno).
fn read_u64(path: &std::ffi::CStr) -> Result<u64, u64> {
    let fd = sys::open_raw(path, libc::O_RDONLY);
    if fd < 0 {
        return Err(errno());
    }
    let mut buf = [0u8; 32];
    let n = sys::read_once(fd, &mut buf);
    let err = errno();
    sys::close(fd);
    if n < 0 {
        return Err(err);
    }
    let mut v: u64 = 0;
    let mut digits = 0;
    for &b in &buf[..n as usize] {
        if !b.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add((b - b'0') as u64);
        digits += 1;
    }
    if digits == 0 {
        return Err(libc::EINVAL as u64);
    }
    Ok(v)
}

/// `v` in decimal followed by a newline, in `buf`.
fn fmt_u64(mut v: u64, buf: &mut [u8; 24]) -> &[u8] {
    let mut i = buf.len() - 1;
    buf[i] = b'\n';
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// The line written to memory.reclaim: `amount`, and `swappiness=N` (201:
/// `swappiness=max`) if given, formatted into `buf` without allocating.
fn reclaim_request(amount: u64, swappiness: Option<u32>, buf: &mut [u8; 48]) -> &[u8] {
    let mut digits = [0u8; 24];
    let a = fmt_u64(amount, &mut digits);
    let mut n = a.len() - 1; // without its newline
    buf[..n].copy_from_slice(&a[..n]);
    if let Some(s) = swappiness {
        let arg: &[u8] = b" swappiness=";
        buf[n..n + arg.len()].copy_from_slice(arg);
        n += arg.len();
        let value = if s > 200 {
            &b"max\n"[..]
        } else {
            fmt_u64(u64::from(s), &mut digits)
        };
        buf[n..n + value.len()].copy_from_slice(value);
        n += value.len();
    } else {
        buf[n] = b'\n';
        n += 1;
    }
    &buf[..n]
}

/// The byte stores write: 1, or 0 for `access = "write-zero"`.
static STORE_VALUE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);

/// What a write leaves in the whole page (a [`PageContent`] code), or
/// [`ONE_BYTE`]: the store of `STORE_VALUE` alone.
static STORE_CONTENT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(ONE_BYTE);
const ONE_BYTE: u8 = u8::MAX;

/// One byte read or written at `offset` of region `r` (a fault there is
/// a modelled outcome that the SIGSEGV/SIGBUS reporter turns into an
/// error); with a `data` kind, the write fills the page.
#[inline(always)]
fn access(r: &Region, offset: u64, write: bool) -> Result<(), BadOffset> {
    if !write {
        return r.load_u8(offset).map(drop);
    }
    match STORE_CONTENT.load(Ordering::Relaxed) {
        ONE_BYTE => r.store_u8(offset, STORE_VALUE.load(Ordering::Relaxed)),
        c => store_page(r, offset, PageContent(c)),
    }
}

/// Fill the page holding `offset` with data of kind `c`, the random bytes
/// seeded by the page's address (no heap allocation).
#[inline(never)]
fn store_page(r: &Region, offset: u64, c: PageContent) -> Result<(), BadOffset> {
    let page = offset & !(PAGE_SIZE - 1);
    let mut buf = [0u8; PAGE_SIZE as usize];
    fill_page(c, r.addr() + page, &mut buf);
    r.store_page(page, &buf)
}

/// A madvise step: `advice` on `len` bytes at `offset` of region `r`, in
/// consecutive madvise(2) calls of `per_call` bytes each, ascending, the
/// last one shorter (one call when `per_call` is `len`), like the
/// simulator. No allocation. Ok(false) when a call fails (errno is that
/// call's).
/// The number of an error name a madvise step may expect
/// (`foliosim_scenario::ERRNOS`).
fn errno_number(name: &str) -> i32 {
    match name {
        "EINVAL" => libc::EINVAL,
        "EAGAIN" => libc::EAGAIN,
        "ENOMEM" => libc::ENOMEM,
        "EBUSY" => libc::EBUSY,
        "EPERM" => libc::EPERM,
        "EFAULT" => libc::EFAULT,
        "EIO" => libc::EIO,
        _ => unreachable!("the scenario parser admits only ERRNOS"),
    }
}

/// The name of an error number [`errno_number`] gives.
pub(crate) fn errno_name(n: i32) -> &'static str {
    foliosim_scenario::ERRNOS
        .iter()
        .map(|&(name, _)| name)
        .find(|&name| errno_number(name) == n)
        .unwrap_or("an error")
}

fn madvise_calls(
    r: &Region,
    offset: u64,
    len: u64,
    per_call: u64,
    advice: i32,
) -> Result<bool, BadOffset> {
    let chunk = per_call.max(1);
    let mut done = 0;
    loop {
        let n = chunk.min(len - done);
        if !r.madvise(offset + done, n, advice)? {
            return Ok(false);
        }
        done += n;
        if done >= len {
            return Ok(true);
        }
    }
}

/// The touch loops, in the simulator's order (crates/sim/src/engine.rs),
/// over `len` bytes at `offset` of region `r`. The loops walk addresses
/// (a page-table boundary is one of the address).
#[inline(never)]
fn touch(r: &Region, offset: u64, len: u64, write: bool, pat: &Pat) -> Result<(), BadOffset> {
    let base = r.addr();
    let start = base + offset;
    let end = start + len;
    match pat {
        Pat::Seq => {
            let mut a = start;
            while a < end {
                access(r, a - base, write)?;
                a += PAGE_SIZE;
            }
        }
        Pat::Stride(s) => {
            let mut a = start;
            while a < end {
                access(r, a - base, write)?;
                // A stride past the end of the address space ends the touch.
                a = a.saturating_add(*s);
            }
        }
        Pat::OnePerPt => {
            let mut a = start;
            while a < end {
                access(r, a - base, write)?;
                a = (a & !(PMD_SIZE - 1)) + PMD_SIZE;
            }
        }
        Pat::Random(order) => {
            for &i in order {
                access(r, offset + i as u64 * PAGE_SIZE, write)?;
            }
        }
        Pat::SeqWords => {
            let mut off = offset;
            while off < offset + len {
                r.load_u64(off)?;
                off += WORD;
            }
        }
        Pat::RandomWords(order) => {
            let words = PAGE_SIZE / WORD;
            for round in 0..words {
                // Round r's word before the shift: rounds 8a..8a+7 visit
                // words a, a+64, .., a+448 (eight cache lines 512 bytes
                // apart), so a page's line is reused only 8 rounds later.
                let first = (round % 8) * 64 + round / 8;
                for (i, &p) in order.iter().enumerate() {
                    let w = (first + i as u64) % words;
                    r.load_u64(offset + p as u64 * PAGE_SIZE + w * WORD)?;
                }
            }
        }
    }
    Ok(())
}

/// The load size of a word touch (`unit = "word"`; word touches only
/// read).
const WORD: u64 = 8;

/// The error of a step whose range is not inside its region (a compiled
/// workload the parser's checks should have refused).
fn bad_offset(e: BadOffset) -> (Failure, u64) {
    (Failure::BadOffset, e.0)
}

/// A touch, madvise or munmap step on the scenario regions `regions` (the
/// steps a scenario thread may run as well as the main one). Err: the
/// error code and errno of a failed system call.
fn exec_region_op(op: &Op, regions: &[Region]) -> Result<(), (Failure, u64)> {
    // The callers pass only these three.
    let Some((region, offset, len)) = op.region_range() else {
        return Ok(());
    };
    CUR_STEP.store(u64::from(op.step()), Ordering::Relaxed);
    let r = &regions[region as usize];
    let ok = match op {
        Op::Touch {
            write,
            zero,
            data,
            pat,
            ..
        } => {
            STORE_VALUE.store(if *zero { 0 } else { 1 }, Ordering::Relaxed);
            let content = match data {
                PageData::Store => ONE_BYTE,
                PageData::Zero => PageContent::ZERO.0,
                PageData::Repeated => PageContent::REPEATED.0,
                PageData::Random { percent } => PageContent::random(*percent).0,
            };
            STORE_CONTENT.store(content, Ordering::Relaxed);
            touch(r, offset, len, *write, pat).map_err(bad_offset)?;
            true
        }
        Op::Madvise {
            advice,
            per_call,
            errno: want,
            ..
        } => {
            let ok = madvise_calls(r, offset, len, *per_call, advice.raw()).map_err(bad_offset)?;
            match (ok, want.map(errno_number)) {
                (false, Some(want)) if errno() == want as u64 => return Ok(()),
                (true, Some(want)) => return Err((Failure::MadviseSucceeded, want as u64)),
                _ => ok,
            }
        }
        _ => r.munmap(offset, len).map_err(bad_offset)?,
    };
    match (ok, op) {
        (true, _) => Ok(()),
        (false, Op::Madvise { .. }) => Err((Failure::Madvise, errno())),
        (false, _) => Err((Failure::Munmap, errno())),
    }
}

/// A scenario thread's step (touch, madvise or munmap; the plan has no
/// other in a thread), on the main thread's region addresses. An error is
/// reported with the step and ends the process (exit_group), threads and
/// all.
fn exec_thread_op(op: &Op, regions: &[Region]) {
    if let Err((code, err)) = exec_region_op(op, regions) {
        let pid = sys::getpid() as u64;
        let m = Msg::Error {
            step: CUR_STEP.load(Ordering::Relaxed),
            why: code,
            err,
            addr: 0,
            pid,
        };
        send(MSG_FD.load(Ordering::Relaxed), &m);
        exit(2)
    }
}

/// Make the calling scenario thread's stack (with its TLS block at the
/// top) and its rseq area writable now, without faults later.
pub(crate) fn prewarm_thread() {
    if let Some((low, size)) = thread_stack() {
        populate_write(low, low + size);
    }
    for p in tls_pages() {
        if p != 0 {
            populate_write(p, p + 1);
        }
    }
}

/// Run the root workload process. Never returns.
pub(crate) fn root_main(s: Setup<'_>) -> ! {
    tie_to_parent(s.engine_pid);
    reset_signals();
    close_other_fds(&mut [s.msg_w, s.go_r]);
    MSG_FD.store(s.msg_w, Ordering::Relaxed);
    let rseq = unregister_rseq();
    populate_file_mappings();
    let mut p = Proc {
        plan: s.plan,
        paths: s.paths,
        events: &s.events[..s.events.len().min(MAX_EVENTS)],
        own: Vec::new(),
        cgroups: s.cgroups,
        msg_w: s.msg_w,
        go_r: s.go_r,
        regions: vec![Region::NONE; s.plan.regions.len()],
        children: Vec::with_capacity(s.plan.max_children.max(1)),
        stack_top: s.stack_top,
        stack_low: stack_low(),
        tls_pages: tls_pages(),
        t_wall: 0,
        t_cpu: 0,
        threads: Vec::new(),
        live_threads: 0,
        fds: Vec::new(),
        io_buf: vec![1u8; s.plan.max_io_chunk as usize],
    };
    if let Err(e) = rseq {
        p.fail(Failure::Rseq, e);
    }
    for (i, &io) in s.plan.io_files.iter().enumerate() {
        let fd = if io {
            let fd = sys::open_raw(&s.paths[i], libc::O_RDWR);
            if fd < 0 {
                p.fail(Failure::Open, errno());
            }
            fd
        } else {
            -1
        };
        p.fds.push(fd);
    }
    p.own = vec![-1; p.events.len()];
    p.open_own();
    p.check_remap_targets(&s.plan.root);
    p.warm_up();
    p.prewarm();
    let pid = sys::getpid() as u64;
    p.sync(&Msg::Ready { pid });
    if !s.thread_cpus.is_empty() {
        // After READY: the engine's inherited counters count the threads.
        match crate::threads::start(s.thread_cpus, &p.regions, exec_thread_op) {
            Ok(t) => p.threads = t,
            Err(e) => p.fail(Failure::Thread, e),
        }
        for (i, t) in p.threads.iter().enumerate() {
            let tid = t.ctl.tid.load(Ordering::Acquire) as u64;
            send(
                p.msg_w,
                &Msg::Thread {
                    index: i as u32,
                    tid,
                },
            );
        }
        p.prewarm();
    }
    let plan = p.plan;
    p.exec(&plan.root);
    p.mark(Mark::End, 0);
    exit(0)
}

impl Proc<'_> {
    /// Tell the engine something it reports on stderr (the run goes on).
    fn note(&self, what: Notice, err: u64) {
        let pid = sys::getpid() as u64;
        let step = CUR_STEP.load(Ordering::Relaxed);
        send(
            self.msg_w,
            &Msg::Note {
                step,
                what,
                err,
                pid,
            },
        );
    }

    /// A write to a cgroup file whose EAGAIN / EBUSY means "reclaimed less
    /// than asked" (a note); other errors end the run with `code`.
    fn reclaim_write(&self, path: &std::ffi::CStr, data: &[u8], code: Failure) {
        match write_file(path, data) {
            Ok(()) => {}
            Err(e) if e == libc::EAGAIN as u64 || e == libc::EBUSY as u64 => {
                self.note(Notice::ReclaimShort, e)
            }
            Err(e) => self.fail(code, e),
        }
    }

    fn fail(&self, why: Failure, err: u64) -> ! {
        let pid = sys::getpid() as u64;
        let step = CUR_STEP.load(Ordering::Relaxed);
        send(
            self.msg_w,
            &Msg::Error {
                step,
                why,
                err,
                addr: 0,
                pid,
            },
        );
        exit(2)
    }

    /// Open this process's own tracepoint counters (in place: no
    /// allocation), closing inherited ones, which count the parent.
    fn open_own(&mut self) {
        for (i, e) in self.events.iter().enumerate() {
            if self.own[i] >= 0 {
                // A descriptor of ours (a copy of the parent's).
                sys::close(self.own[i]);
            }
            self.own[i] = perf::open_raw(0, e, false);
        }
    }

    fn read_own(&self) -> [u64; MAX_EVENTS] {
        let mut v = [0u64; MAX_EVENTS];
        for (i, &fd) in self.own.iter().enumerate() {
            if fd >= 0 {
                v[i] = perf::read_raw(fd);
            }
        }
        v
    }

    /// Report overhead: faults, and tracepoint hits `after - before` plus
    /// `extra_pfu` page faults that happened before the counters counted.
    fn send_overhead(
        &self,
        faults: (u64, u64),
        before: &[u64; MAX_EVENTS],
        after: &[u64; MAX_EVENTS],
        extra_pfu: u64,
    ) {
        send(
            self.msg_w,
            &Msg::Overhead {
                minflt: faults.0,
                majflt: faults.1,
            },
        );
        let pfu = page_fault_user(self.events);
        for i in 0..self.own.len() {
            if self.own[i] < 0 {
                continue;
            }
            let mut d = after[i].saturating_sub(before[i]);
            if Some(i) == pfu {
                d += extra_pfu;
            }
            if d != 0 {
                send(
                    self.msg_w,
                    &Msg::OverheadEvent {
                        event: i as u32,
                        count: d,
                    },
                );
            }
        }
    }

    /// Send a message and wait until the engine says go (root only).
    fn sync(&mut self, m: &Msg) {
        send(self.msg_w, m);
        let mut b = 0u8;
        loop {
            let n = sys::read_once(self.go_r, std::slice::from_mut(&mut b));
            if n == 1 {
                break;
            }
            if n < 0 && errno() == libc::EINTR as u64 {
                continue;
            }
            exit(0); // the engine closed the pipe: stop
        }
        self.t_wall = clock(libc::CLOCK_MONOTONIC);
        self.t_cpu = clock(libc::CLOCK_THREAD_CPUTIME_ID);
    }

    fn mark(&mut self, mark: Mark, idx: u32) {
        let wall = clock(libc::CLOCK_MONOTONIC).saturating_sub(self.t_wall);
        let cpu = clock(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(self.t_cpu);
        self.sync(&Msg::Mark {
            mark,
            phase: idx,
            wall_ns: wall,
            cpu_ns: cpu,
            pid: sys::getpid() as u64,
        });
    }

    /// Run every code path the steps use once, on a scratch mapping, so
    /// that libc's and our first-use writes happen now (set-up, not
    /// measured). The fork comes first: after it every private page is
    /// write-protected, and `prewarm` afterwards makes them writable again.
    fn warm_up(&mut self) {
        let pid = raw_fork();
        if pid == 0 {
            exit(0);
        }
        if pid > 0 {
            sys::waitpid_raw(pid, 0);
        }
        let len = 4 * PAGE_SIZE as usize;
        let m = Region::map(
            0,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if let Some(r) = m {
            let len = len as u64;
            for write in [false, true] {
                let _ = touch(&r, 0, len, write, &Pat::Seq);
                let _ = touch(&r, 0, len, write, &Pat::Stride(2 * PAGE_SIZE));
                let _ = touch(&r, 0, len, write, &Pat::OnePerPt);
                let _ = touch(&r, 0, len, write, &Pat::Random(vec![3, 1, 0, 2]));
            }
            let _ = r.madvise(0, len, libc::MADV_NORMAL);
            // mremap steps: a move (the probe of MREMAP_FIXED is an mmap).
            let (r, len) = match r.remap(2 * len, libc::MREMAP_MAYMOVE, 0) {
                Some(moved) => (moved, 2 * len),
                None => (r, len),
            };
            let _ = r.munmap(0, len);
        }
        // Opening and closing /dev/null, a pipe, zero-length reads and
        // writes, and status queries.
        let fd = sys::open_raw(c"/dev/null", libc::O_RDONLY);
        if fd >= 0 {
            sys::close(fd);
        }
        if let Some([r, w]) = sys::pipe_raw() {
            sys::close(r);
            sys::close(w);
        }
        sys::write_once(self.msg_w, &[]);
        sys::read_once(self.go_r, &mut []);
        sys::kill(sys::getpid(), 0);
        sys::waitpid_raw(-1, libc::WNOHANG);
        sys::getppid();
        if !self.cgroups.is_empty() {
            let mut buf = [0u8; 24];
            let _ = write_file(c"/dev/null", fmt_u64(4096, &mut buf));
            let _ = read_u64(c"/proc/self/oom_score_adj");
        }
        rusage();
        let z = [0u64; MAX_EVENTS];
        std::hint::black_box(self.read_own());
        std::hint::black_box(&z);
        clock(libc::CLOCK_MONOTONIC);
        clock(libc::CLOCK_THREAD_CPUTIME_ID);
    }

    /// Make everything this process writes while measured writable now
    /// (after a fork, all of it is copy-on-write shared).
    #[inline(never)]
    fn prewarm(&mut self) {
        prefault_stack(self.stack_top, self.stack_low);
        fn vec_range<T>(v: &Vec<T>) -> (usize, usize) {
            let s = v.as_ptr() as usize;
            (s, s + v.capacity() * std::mem::size_of::<T>())
        }
        for (s, e) in [
            vec_range(&self.regions),
            vec_range(&self.own),
            vec_range(&self.children),
            vec_range(&self.fds),
            vec_range(&self.io_buf),
        ] {
            if e > s {
                // SAFETY: the spare capacity and contents of our own vectors,
                // which no other thread accesses now (a scenario thread only
                // reads `regions`, and only while it runs steps).
                unsafe { warm_range(s, e) };
            }
        }
        for a in [
            ptr::addr_of!(CUR_STEP) as usize,
            ptr::addr_of!(MSG_FD) as usize,
        ] {
            // SAFETY: our own statics; no scenario thread runs steps now.
            unsafe { warm_range(a, a + 8) };
        }
        // Populate only: these pages are also written by libc (and, were
        // rseq registered, by the kernel), so they are never rewritten
        // from here.
        for p in self.tls_pages {
            if p != 0 {
                populate_write(p, p + 1);
            }
        }
        std::hint::black_box(&mut *self);
    }

    fn exec(&mut self, ops: &[Op]) {
        for op in ops {
            self.op(op);
        }
    }

    fn op(&mut self, op: &Op) {
        CUR_STEP.store(op.step() as u64, Ordering::Relaxed);
        match op {
            Op::Mmap {
                region,
                size,
                advise,
                ..
            } => self.mmap(op, *region, *size, advise),
            Op::Touch { .. } | Op::Madvise { .. } | Op::Munmap { .. } => {
                if let Err((code, err)) = exec_region_op(op, &self.regions) {
                    self.fail(code, err);
                }
            }
            Op::Mremap { .. } => self.mremap(op),
            Op::Fork { child, .. } => self.fork(child),
            Op::Wait { .. } => self.wait(),
            Op::Phase { idx, .. } => self.mark(Mark::Phase, *idx),
            Op::PhaseEnd { .. } => self.mark(Mark::PhaseEnd, 0),
            Op::Pagemap { idx, .. } => self.pagemap(*idx),
            Op::Memcg { cg, .. } => self.memcg_move(*cg),
            Op::MemcgReclaim {
                cg,
                amount,
                swappiness,
                ..
            } => self.memcg_reclaim(*cg, *amount, *swappiness),
            Op::Khugepaged { full_scans, .. } => self.khugepaged(*full_scans),
            Op::MemcgLimit { cg, limit, .. } => self.memcg_limit(*cg, *limit),
            Op::MemcgHigh { cg, high, .. } => self.memcg_high(*cg, *high),
            Op::Io {
                file, count, fsync, ..
            } => self.io(op, *file, *count, *fsync),
            Op::Threads {
                step,
                sleep,
                threads,
            } => {
                self.run_threads(*sleep, threads);
                CUR_STEP.store(*step as u64, Ordering::Relaxed);
            }
            Op::Join { .. } => self.join_threads(),
            Op::ForceEmpty { cg, .. } => self.force_empty(*cg),
        }
    }

    /// An mmap step (`op`) of `size` bytes: map region `region`, apply
    /// `advise` and tell the engine where it is.
    fn mmap(&mut self, op: &Op, region: u32, size: u64, advise: &[Madv]) {
        let r = self.map(op);
        self.regions[region as usize] = r;
        for &a in advise {
            match r.madvise(0, size, a.raw()) {
                Ok(true) => {}
                Ok(false) => self.fail(Failure::Madvise, errno()),
                Err(e) => self.fail(Failure::BadOffset, e.0),
            }
        }
        send(
            self.msg_w,
            &Msg::Mapped {
                region,
                addr: r.addr(),
                len: size,
            },
        );
    }

    /// Every mremap step's `at` range must be free of this process's own
    /// mappings (program, libraries, heap, stack), which MREMAP_FIXED
    /// would replace: checked at set-up, before any scenario region
    /// exists and outside every measurement (the compiler already refused
    /// targets that overlap scenario regions).
    fn check_remap_targets(&self, ops: &[Op]) {
        for op in ops {
            match *op {
                Op::Mremap {
                    step,
                    flags,
                    new_addr,
                    new_len,
                    ..
                } if flags & libc::MREMAP_FIXED != 0 => {
                    CUR_STEP.store(u64::from(step), Ordering::Relaxed);
                    if !sys::range_free(new_addr, new_len) {
                        self.fail(Failure::MremapTaken, new_addr);
                    }
                }
                Op::Fork { ref child, .. } => self.check_remap_targets(child),
                _ => {}
            }
        }
        CUR_STEP.store(NO_STEP, Ordering::Relaxed);
    }

    /// An mremap step (`op`, an `Op::Mremap`): the region moves or
    /// resizes; the new one takes its place and the engine learns where.
    fn mremap(&mut self, op: &Op) {
        let &Op::Mremap {
            region,
            new_region,
            new_len,
            flags,
            new_addr,
            ..
        } = op
        else {
            return;
        };
        let Some(r) = self.regions[region as usize].remap(new_len, flags, new_addr) else {
            self.fail(Failure::Mremap, errno());
        };
        self.regions[region as usize] = Region::NONE;
        self.regions[new_region as usize] = r;
        send(
            self.msg_w,
            &Msg::Mapped {
                region: new_region,
                addr: r.addr(),
                len: new_len,
            },
        );
    }

    /// The mmap(2) of an mmap step (`op`, an `Op::Mmap`), with its file
    /// opened for the call.
    fn map(&self, op: &Op) -> Region {
        let &Op::Mmap {
            flags,
            prot,
            file,
            size,
            file_offset,
            hint,
            ..
        } = op
        else {
            return Region::NONE;
        };
        let mut fd = -1;
        if let Some(fi) = file {
            let oflags = if prot & libc::PROT_WRITE != 0 && flags & libc::MAP_SHARED != 0 {
                libc::O_RDWR
            } else {
                libc::O_RDONLY
            };
            fd = sys::open_raw(&self.paths[fi as usize], oflags);
            if fd < 0 {
                self.fail(Failure::Open, errno());
            }
        }
        let r = Region::map(hint, size as usize, prot, flags, fd, file_offset);
        let err = errno();
        if fd >= 0 {
            sys::close(fd);
        }
        let Some(r) = r else {
            self.fail(Failure::Mmap, err);
        };
        r
    }

    /// A pagemap step: the engine reads our pagemap while we wait.
    fn pagemap(&mut self, idx: u32) {
        // The phase's clocks keep running across the engine's read.
        let (wall, cpu) = (self.t_wall, self.t_cpu);
        self.sync(&Msg::Pagemap { idx });
        self.t_wall = wall;
        self.t_cpu = cpu;
    }

    /// A memcg step: move this process into memory cgroup `cg`.
    fn memcg_move(&self, cg: u32) {
        // "0" moves the writing process (cgroup_procs_write_start).
        if let Err(e) = write_file(&self.cgroups[cg as usize].procs, b"0\n") {
            self.fail(Failure::MemcgMove, e);
        }
    }

    /// A memcg_reclaim step: have cgroup `cg` reclaim `amount` bytes, at
    /// memory.reclaim's `swappiness` if given (201: `max`; the engine
    /// refused it on cgroup v1 before the run).
    fn memcg_reclaim(&self, cg: u32, amount: u64, swappiness: Option<u32>) {
        let c = &self.cgroups[cg as usize];
        let mut buf = [0u8; 48];
        match &c.reclaim {
            Some(reclaim) => {
                let text = reclaim_request(amount, swappiness, &mut buf);
                self.reclaim_write(reclaim, text, Failure::MemcgReclaim)
            }
            None => {
                // cgroup v1: lower the limit below the usage by the amount
                // (the kernel reclaims until the usage fits), then put it
                // back.
                let usage = match read_u64(&c.usage) {
                    Ok(u) => u,
                    Err(e) => self.fail(Failure::MemcgUsage, e),
                };
                let mut buf = [0u8; 24];
                let target = fmt_u64(usage.saturating_sub(amount), &mut buf);
                self.reclaim_write(&c.limit, target, Failure::MemcgLimit);
                if let Err(e) = write_file(&c.limit, &c.restore_limit) {
                    self.fail(Failure::MemcgLimit, e);
                }
            }
        }
    }

    /// A khugepaged step: let the host's khugepaged scan without sleeping
    /// (`scan_sleep_millisecs` 0) until its `full_scans` counter has
    /// advanced by `n`, then put the sleep back. The engine's guard
    /// restores the host's own value after the run in any case.
    fn khugepaged(&self, n: u32) {
        const SLEEP: &std::ffi::CStr =
            c"/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs";
        const FULL_SCANS: &std::ffi::CStr =
            c"/sys/kernel/mm/transparent_hugepage/khugepaged/full_scans";
        let fail = |e| -> ! { self.fail(Failure::Khugepaged, e) };
        let sleep = read_u64(SLEEP).unwrap_or_else(|e| fail(e));
        let start = read_u64(FULL_SCANS).unwrap_or_else(|e| fail(e));
        write_file(SLEEP, b"0\n").unwrap_or_else(|e| fail(e));
        // A full scan covers every registered mm of the host: generous.
        let limit = std::time::Duration::from_secs(60 + 10 * u64::from(n));
        let t0 = std::time::Instant::now();
        let done = loop {
            match read_u64(FULL_SCANS) {
                Ok(now) if now >= start + u64::from(n) => break Ok(()),
                Ok(_) if t0.elapsed() >= limit => break Err(libc::ETIMEDOUT as u64),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        let mut buf = [0u8; 24];
        write_file(SLEEP, fmt_u64(sleep, &mut buf)).unwrap_or_else(|e| fail(e));
        done.unwrap_or_else(|e| fail(e));
    }

    /// A memcg_limit step: set cgroup `cg`'s limit (None: no limit).
    fn memcg_limit(&self, cg: u32, limit: Option<u64>) {
        let c = &self.cgroups[cg as usize];
        let mut buf = [0u8; 24];
        let data = match limit {
            Some(l) => fmt_u64(l, &mut buf),
            None => c.unlimited,
        };
        match write_file(&c.limit, data) {
            Ok(()) => {}
            Err(e) if e == libc::EBUSY as u64 => self.note(Notice::LimitBusy, e),
            Err(e) => self.fail(Failure::MemcgLimit, e),
        }
    }

    /// A memcg_high step: write cgroup `cg`'s memory.high (None: `max`;
    /// cgroup v2 only, refused on v1 before the run). The write reclaims
    /// down to the new value in this process (`memory_high_write()`).
    fn memcg_high(&self, cg: u32, high: Option<u64>) {
        let c = &self.cgroups[cg as usize];
        let Some(file) = &c.high else {
            self.fail(Failure::MemcgHigh, libc::ENOENT as u64);
        };
        let mut buf = [0u8; 24];
        let data = match high {
            Some(h) => fmt_u64(h, &mut buf),
            None => b"max\n",
        };
        if let Err(e) = write_file(file, data) {
            self.fail(Failure::MemcgHigh, e);
        }
    }

    /// A force_empty step on cgroup `cg` (cgroup v1).
    fn force_empty(&self, cg: u32) {
        if let Some(f) = &self.cgroups[cg as usize].force_empty {
            self.reclaim_write(f, b"0\n", Failure::ForceEmpty);
        } else {
            self.fail(Failure::ForceEmpty, libc::ENOENT as u64);
        }
    }

    /// An I/O step (`op`, an `Op::Io`) on `[[file]]` `file`: `count`
    /// passes, then an fsync if asked.
    fn io(&mut self, op: &Op, file: u32, count: u32, fsync: bool) {
        let &Op::Io {
            call,
            offset,
            len,
            chunk,
            ..
        } = op
        else {
            return;
        };
        let fd = self.fds[file as usize];
        for _ in 0..count {
            if let Err(e) = self.io_pass(fd, call, offset, len, chunk) {
                self.fail(Failure::Io, e);
            }
        }
        if fsync && !sys::fsync(fd) {
            self.fail(Failure::Io, errno());
        }
    }

    /// A threads step: each scenario thread runs its steps.
    fn run_threads(&mut self, sleep: bool, threads: &[Vec<Op>]) {
        for (t, ops) in self.threads.iter().zip(threads) {
            if let Err(e) = t.run(ops, sleep) {
                self.fail(Failure::Affinity, e);
            }
        }
        self.live_threads = threads.len();
    }

    /// A join step: the threads of the last threads step stop.
    fn join_threads(&mut self) {
        for t in &self.threads[..self.live_threads] {
            t.join();
        }
        self.live_threads = 0;
    }

    /// One pass of an I/O step: calls of `chunk` bytes over
    /// `[offset, offset + len)` (read and write after an lseek to the
    /// start). Err(errno) if a call fails or a read ends early.
    fn io_pass(
        &mut self,
        fd: RawFd,
        call: IoCall,
        offset: u64,
        len: u64,
        chunk: u64,
    ) -> Result<(), u64> {
        if matches!(call, IoCall::Read | IoCall::Write) && !sys::lseek_set(fd, offset) {
            return Err(errno());
        }
        let mut done = 0;
        while done < len {
            let n = chunk.min(len - done) as usize;
            let pos = offset + done;
            let buf = &mut self.io_buf[..n];
            let got = match call {
                IoCall::Read => sys::read_once(fd, buf),
                IoCall::Pread => sys::pread_once(fd, buf, pos),
                IoCall::Write => sys::write_once(fd, buf),
                IoCall::Pwrite => sys::pwrite_once(fd, buf, pos),
            };
            if got < 0 {
                if errno() == libc::EINTR as u64 {
                    continue;
                }
                return Err(errno());
            }
            if got == 0 {
                return Err(libc::EIO as u64);
            }
            done += got as u64;
        }
        Ok(())
    }

    /// fork(2): the child runs `child` and then waits to be killed; this
    /// process waits until the child's steps are done.
    fn fork(&mut self, child: &[Op]) {
        let Some([done_r, done_w]) = sys::pipe_raw() else {
            self.fail(Failure::Pipe, errno());
        };
        // The child starts its steps once our own fork overhead is reported,
        // so that a phase the child opens never sees our bookkeeping.
        let Some([ready_r, ready_w]) = sys::pipe_raw() else {
            self.fail(Failure::Pipe, errno());
        };
        let me = sys::getpid();
        // Our page_fault_user overhead is counted by our own counter from
        // here (everything is writable now: nothing faults before fork).
        let o0 = self.read_own();
        let r0 = rusage();
        let pid = raw_fork();
        if pid == 0 {
            sys::close(ready_w);
            self.child_main(child, done_r, done_w, ready_r, me);
        }
        sys::close(ready_r);
        // What fork(2) itself does (copying and write-protecting page
        // tables, flushing the TLB) is the scenario's; what follows is
        // ours: copy-on-write of our own stack and tables. Tracepoints
        // count from here, except page_fault_user, which fork(2) never
        // hits (the user-mode faults since `o0` are all ours).
        let mut o_mid = self.read_own();
        if let Some(i) = page_fault_user(self.events) {
            o_mid[i] = o0[i];
        }
        if pid < 0 {
            self.fail(Failure::Fork, errno());
        }
        sys::close(done_w); // our copy of the write end
        self.children.push(pid);
        self.prewarm();
        let o1 = self.read_own();
        let r1 = rusage();
        self.send_overhead((r1.0 - r0.0, r1.1 - r0.1), &o_mid, &o1, 0);
        sys::write_once(ready_w, &[1u8]);
        sys::close(ready_w);
        let mut b = 0u8;
        let n = loop {
            let n = sys::read_once(done_r, std::slice::from_mut(&mut b));
            if n < 0 && errno() == libc::EINTR as u64 {
                continue;
            }
            break n;
        };
        sys::close(done_r);
        if n != 1 {
            self.fail(Failure::ChildDied, pid as u64);
        }
    }

    fn child_main(
        &mut self,
        ops: &[Op],
        done_r: RawFd,
        done_w: RawFd,
        ready_r: RawFd,
        parent: i32,
    ) -> ! {
        // Everything until the steps is overhead. Our own counters are
        // opened first; the user faults before that are those getrusage(2)
        // counts minus those the new counter saw: `r_open - c_open`, taken
        // with no fault in between (the pair is repeated until the counter
        // did not move across the getrusage). getrusage's ru_minflt also counts faults taken in
        // kernel mode or through GUP, which page_fault_user does not see,
        // so none may happen before it: no populate, and no rseq area for
        // the kernel to write on our way out of fork (`unregister_rseq`);
        // read_raw() and rusage() write their buffers before the kernel
        // fills them.
        self.open_own();
        let pfu = page_fault_user(self.events);
        let pfu_now = |own: &[i32]| match pfu {
            Some(i) if own[i] >= 0 => perf::read_raw(own[i]),
            _ => 0,
        };
        let (r_open, c_open) = loop {
            let c = pfu_now(&self.own);
            let r = rusage();
            if pfu_now(&self.own) == c {
                break (r, c);
            }
        };
        let mut before = [0; MAX_EVENTS];
        if let Some(i) = pfu {
            before[i] = c_open;
        }
        sys::close(done_r); // our copy of the read end
        tie_to_parent(parent);
        self.children.clear();
        self.prewarm();
        let o = self.read_own();
        let r = rusage();
        self.send_overhead(r, &before, &o, r_open.0 + r_open.1);
        let mut b = 0u8;
        while sys::read_once(ready_r, std::slice::from_mut(&mut b)) < 0
            && errno() == libc::EINTR as u64
        {}
        sys::close(ready_r);
        self.exec(ops);
        sys::write_once(done_w, &[1u8]);
        loop {
            // Until SIGKILL from the parent's `wait`, or the parent-death
            // signal.
            sys::pause();
        }
    }

    /// Every live child (and, through the subreaper, its descendants) exits.
    fn wait(&mut self) {
        for &c in self.children.iter().filter(|&&c| c > 0) {
            // `c` is a child's pid, never 0 or -1, which would mean a group.
            sys::kill(c, libc::SIGKILL);
        }
        self.children.clear();
        loop {
            let r = sys::waitpid_raw(-1, 0);
            if r < 0 && errno() != libc::EINTR as u64 {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::tests::anon;

    #[test]
    fn memory_reclaim_requests_are_the_kernels_syntax() {
        // user_proactive_reclaim(): a size, then "swappiness=%d" (0 to 200)
        // or "swappiness=max", space separated.
        let mut buf = [0u8; 48];
        assert_eq!(reclaim_request(1 << 20, None, &mut buf), b"1048576\n");
        assert_eq!(
            reclaim_request(4096, Some(0), &mut buf),
            b"4096 swappiness=0\n"
        );
        assert_eq!(
            reclaim_request(u64::MAX, Some(200), &mut buf),
            b"18446744073709551615 swappiness=200\n"
        );
        assert_eq!(
            reclaim_request(8192, Some(201), &mut buf),
            b"8192 swappiness=max\n"
        );
    }

    #[test]
    fn a_touch_stops_at_the_first_access_outside_its_region() {
        let r = anon(4);
        // Pages 2 and 0, then page 9 of a 4-page region: refused before
        // any access there, after the two before it.
        let e = touch(&r, 0, 4 * PAGE_SIZE, true, &Pat::Random(vec![2, 0, 9, 1]));
        assert_eq!(e, Err(BadOffset(9 * PAGE_SIZE + 1)));
        let written: Vec<u8> = (0..4).map(|p| r.load_u8(p * PAGE_SIZE).unwrap()).collect();
        assert_eq!(written, [1, 0, 1, 0]);
        // A range reaching past the end is refused at its first page
        // outside.
        let e = touch(&r, 2 * PAGE_SIZE, 3 * PAGE_SIZE, false, &Pat::Seq);
        assert_eq!(e, Err(BadOffset(4 * PAGE_SIZE + 1)));
        let e = touch(&r, 3 * PAGE_SIZE, PAGE_SIZE + 8, false, &Pat::SeqWords);
        assert_eq!(e, Err(BadOffset(4 * PAGE_SIZE + 8)));
        assert_eq!(r.munmap(0, 4 * PAGE_SIZE), Ok(true));
    }

    #[test]
    fn madvise_calls_check_every_chunk() {
        let r = anon(4);
        assert_eq!(
            madvise_calls(&r, 0, 4 * PAGE_SIZE, PAGE_SIZE, libc::MADV_NORMAL),
            Ok(true)
        );
        // From page 2 in calls of two pages: the second call (pages 4-5)
        // lies past the 4-page region.
        let e = madvise_calls(
            &r,
            2 * PAGE_SIZE,
            6 * PAGE_SIZE,
            2 * PAGE_SIZE,
            libc::MADV_NORMAL,
        );
        assert_eq!(e, Err(BadOffset(6 * PAGE_SIZE)));
        assert_eq!(r.munmap(0, 4 * PAGE_SIZE), Ok(true));
    }
}

//! Scenario threads in the workload process (`op = "threads"` / `"join"`).
//!
//! The threads are created once, at set-up (after the engine opened its
//! inherited tracepoint counters, so they count the threads too), pinned to
//! the main thread's CPU and blocked on a futex: until a threads step they
//! never run on another CPU, so the mm's `mm_cpumask()` holds only the main
//! thread's CPU, as in the simulator. A threads step moves thread `i` to its
//! host CPU (`sched_setaffinity()` while it sleeps) and wakes it; it runs
//! its compiled steps and then spins in user space or blocks on its futex.
//! The main thread busy-waits meanwhile, so its own CPU keeps the mm loaded
//! and active (the simulator's CPU 0 is not idle either), and the threads
//! run one after the other, as the simulator runs them. A sleeping thread
//! counts as asleep only once it is off its CPU: `/proc/self/task/<tid>/
//! syscall` reads "running" until `wait_task_inactive()` saw the context
//! switch done. `join` releases the threads: they go back to their futex
//! (a thread that exits and one that blocks leave the CPU the same way:
//! the idle task keeps the mm loaded lazily), and the main thread waits
//! until they are off their CPUs.
//!
//! Threads are never joined with pthread_join: every exit path of the
//! workload is `_exit()` (exit_group), which ends them with the process,
//! and the engine kills the whole process on error.
//!
//! Spinning threads run at nice -20, so that other work on the host rarely
//! preempts them while the main thread flushes (a preempted spinner takes
//! no shootdown IPI, see [`thread_preemptions`]).

use std::ffi::CString;
use std::ptr;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use foliosim_workload::Op;

use crate::sys::{self, futex_wait, futex_wake, Region};

/// Being created.
const T_START: u32 = 0;
/// Blocked on the futex, waiting for work.
const T_IDLE: u32 = 1;
/// Main → thread: run `ops`.
const T_RUN: u32 = 2;
/// Thread → main: the steps are done; now spinning or asleep.
const T_DONE: u32 = 3;
/// Main → thread: join.
const T_RELEASE: u32 = 4;

/// Stack of a scenario thread (its steps need little; the TLS block sits
/// at its top).
const STACK: usize = 256 << 10;

/// What the main thread and one scenario thread share (leaked at set-up,
/// so it lives as long as the process).
pub(crate) struct ThreadCtl {
    /// The futex word: one of the `T_*` states.
    state: AtomicU32,
    /// After its steps: 1 = block on the futex, 0 = spin.
    sleep: AtomicU32,
    ops: AtomicPtr<Op>,
    ops_len: AtomicUsize,
    pub tid: AtomicI32,
    /// The main thread's regions (a vector that is never resized).
    regions: *const Region,
    nr_regions: usize,
    /// Runs a compiled thread op (the workload's step executor).
    exec: fn(&Op, &[Region]),
}

// SAFETY: `regions` points into a buffer the main thread never frees or
// resizes; it writes it only while no thread runs steps, and the state
// word's release/acquire orders those writes before a thread's reads.
unsafe impl Sync for ThreadCtl {}

/// The main thread's handle of one scenario thread.
pub(crate) struct Thread {
    pub ctl: &'static ThreadCtl,
    /// `/proc/self/task/<tid>/syscall`
    syscall: CString,
    /// The host CPU it runs its steps on.
    cpu: libc::cpu_set_t,
}

/// Block until the word leaves `val`.
fn wait_while(w: &AtomicU32, val: u32) {
    while w.load(Ordering::Acquire) == val {
        futex_wait(w, val);
    }
}

/// Busy-wait (in user space, no system call) until the word is `val`.
fn spin_until(w: &AtomicU32, val: u32) {
    while w.load(Ordering::Acquire) != val {
        std::hint::spin_loop();
    }
}

fn thread_main(t: &'static ThreadCtl) {
    let tid = sys::gettid();
    // Real-time priority 1 (else nice -20): fair tasks and kernel threads do
    // not preempt it (see the module comment). A failure only makes
    // preemption likelier.
    sys::sched_fifo_or_nice(tid, 1, -20);
    // Everything the thread writes while measured, written now: its stack
    // (with the TLS block at its top) and the rseq area the kernel updates.
    super::workload::prewarm_thread();
    t.tid.store(tid, Ordering::Release);
    loop {
        t.state.store(T_IDLE, Ordering::Release);
        futex_wake(&t.state);
        wait_while(&t.state, T_IDLE);
        let ops = t.ops.load(Ordering::Acquire);
        let n = t.ops_len.load(Ordering::Acquire);
        // SAFETY: the main thread stored a slice of the plan (alive for the
        // process's life) and the regions vector before T_RUN.
        let (ops, regions) = unsafe {
            (
                std::slice::from_raw_parts(ops, n),
                std::slice::from_raw_parts(t.regions, t.nr_regions),
            )
        };
        for op in ops {
            (t.exec)(op, regions);
        }
        let sleep = t.sleep.load(Ordering::Acquire) != 0;
        t.state.store(T_DONE, Ordering::Release);
        futex_wake(&t.state);
        if sleep {
            wait_while(&t.state, T_DONE);
        } else {
            while t.state.load(Ordering::Acquire) == T_DONE {
                std::hint::spin_loop();
            }
        }
    }
}

/// Create `cpus.len()` threads, blocked, on the calling thread's CPU.
/// Err(errno) if one cannot be created. Allocates (set-up only).
pub(crate) fn start(
    cpus: &[usize],
    regions: &[Region],
    exec: fn(&Op, &[Region]),
) -> Result<Vec<Thread>, u64> {
    let mut out = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        let ctl: &'static ThreadCtl = Box::leak(Box::new(ThreadCtl {
            state: AtomicU32::new(T_START),
            sleep: AtomicU32::new(0),
            ops: AtomicPtr::new(ptr::null_mut()),
            ops_len: AtomicUsize::new(0),
            tid: AtomicI32::new(0),
            regions: regions.as_ptr(),
            nr_regions: regions.len(),
            exec,
        }));
        sys::spawn_thread(STACK, thread_main, ctl)?;
        wait_while(&ctl.state, T_START);
        let tid = ctl.tid.load(Ordering::Acquire);
        out.push(Thread {
            ctl,
            syscall: CString::new(format!("/proc/self/task/{tid}/syscall")).expect("no NUL"),
            cpu: crate::sys::cpu_set(&[cpu]),
        });
    }
    Ok(out)
}

impl Thread {
    /// Move the (blocked) thread to its CPU and have it run `ops`; return
    /// once its steps are done and it spins or, with `sleep`, is off its
    /// CPU. Err(errno) if it cannot be moved.
    pub(crate) fn run(&self, ops: &[Op], sleep: bool) -> Result<(), u64> {
        let tid = self.ctl.tid.load(Ordering::Acquire);
        sys::set_thread_affinity(tid, &self.cpu)?;
        let c = self.ctl;
        c.ops.store(ops.as_ptr() as *mut Op, Ordering::Release);
        c.ops_len.store(ops.len(), Ordering::Release);
        c.sleep.store(sleep as u32, Ordering::Release);
        c.state.store(T_RUN, Ordering::Release);
        futex_wake(&c.state);
        spin_until(&c.state, T_DONE);
        if sleep {
            self.wait_off_cpu();
        }
        Ok(())
    }

    /// `join`: release the thread and wait until it is blocked again and
    /// off its CPU.
    pub(crate) fn join(&self) {
        let c = self.ctl;
        c.state.store(T_RELEASE, Ordering::Release);
        futex_wake(&c.state);
        spin_until(&c.state, T_IDLE);
        self.wait_off_cpu();
    }

    /// Until the thread is switched out: `/proc/<tid>/syscall` says
    /// "running" while it runs or is still on its CPU. Allocates nothing.
    fn wait_off_cpu(&self) {
        let mut buf = [0u8; 16];
        for _ in 0..1_000_000 {
            let fd = sys::open_raw(&self.syscall, libc::O_RDONLY);
            if fd < 0 {
                return;
            }
            let n = sys::read_once(fd, &mut buf);
            sys::close(fd);
            if n <= 0 || !buf.starts_with(b"running") {
                return;
            }
            std::hint::spin_loop();
        }
    }
}

/// Involuntary context switches of the thread `tid` of `pid` so far
/// (engine side): a spinning thread preempted while the main thread
/// flushes takes no shootdown IPI.
pub(crate) fn thread_preemptions(pid: i32, tid: u64) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
}

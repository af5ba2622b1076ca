//! Tracepoint hit counts of the workload process tree with
//! perf_event_open(PERF_TYPE_TRACEPOINT, config = the event's tracefs id,
//! pid = the workload, cpu = -1, inherit = 1 so forked children count too).

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use std::path::{Path, PathBuf};

use crate::guard::HostGuard;

/// The tracepoints counted, by counter name.
pub(crate) use foliosim_uapi::counters::TRACEPOINTS;

/// `kmem:mm_page_alloc` is counted per order 2..=9 only, as
/// `kmem:mm_page_alloc/order=<n>`, and only movable allocations: the
/// workload's large folios (anonymous, page cache, shmem and swap-in
/// folios are all allocated movable). Order 0 and 1, and unmovable
/// allocations of any order, are mostly the kernel's own on the
/// workload's behalf: slabs, and on arm64 the 16 KiB order-2 kernel stack
/// of every fork.
const ALLOC_ORDERS: std::ops::RangeInclusive<u32> = 2..=9;
/// MIGRATE_MOVABLE of `enum migratetype` (include/linux/mmzone.h).
const MIGRATE_MOVABLE: u32 = 1;

/// `tlb:tlb_flush` split by its `reason` field (enum tlb_flush_reason),
/// as `tlb:tlb_flush/<reason>`.
use foliosim_uapi::counters::TLB_FLUSH_REASONS as TLB_REASONS;

/// One counter to open: its output name, tracepoint id and filter.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub name: String,
    pub id: u64,
    pub filter: Option<CString>,
}

/// The events found, and the names the host cannot provide.
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    pub events: Vec<Event>,
    pub missing: Vec<(String, String)>,
}

pub(crate) fn tracefs_root() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events").is_dir())
}

fn read_ids(root: &Path) -> Events {
    let mut ev = Events::default();
    for name in TRACEPOINTS {
        let (sys, event) = name.split_once(':').expect("system:event");
        let p = root.join("events").join(sys).join(event).join("id");
        match fs::read_to_string(&p)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            Some(id) if name == "kmem:mm_page_alloc" => {
                for o in ALLOC_ORDERS {
                    ev.events.push(Event {
                        name: format!("{name}/order={o}"),
                        id,
                        filter: Some(
                            CString::new(format!(
                                "order == {o} && migratetype == {MIGRATE_MOVABLE}"
                            ))
                            .expect("no NUL"),
                        ),
                    });
                }
            }
            Some(id) => {
                ev.events.push(Event {
                    name: name.to_string(),
                    id,
                    filter: None,
                });
                if name == "tlb:tlb_flush" {
                    for (r, label) in TLB_REASONS {
                        ev.events.push(Event {
                            name: format!("{name}/{label}"),
                            id,
                            filter: Some(CString::new(format!("reason == {r}")).expect("no NUL")),
                        });
                    }
                }
            }
            None => ev
                .missing
                .push((name.to_string(), format!("{} is missing", p.display()))),
        }
    }
    // Kernel functions a guest registered kprobe events for (in the group
    // KFUNC_GROUP, see `guest::register_kfuncs`).
    for k in foliosim_uapi::counters::KFUNCS {
        let p = root
            .join("events")
            .join(KFUNC_GROUP)
            .join(k.event)
            .join("id");
        if let Some(id) = fs::read_to_string(&p)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            ev.events.push(Event {
                name: format!("{}{}", foliosim_uapi::counters::KFUNC_PREFIX, k.name),
                id,
                filter: (!k.filter.is_empty()).then(|| CString::new(k.filter).expect("no NUL")),
            });
        }
    }
    ev
}

/// The kprobe event group of the counted kernel functions.
pub(crate) const KFUNC_GROUP: &str = "foliosim_kfunc";

/// Look the tracepoint ids up in tracefs, mounting it for the moment if it
/// is not mounted (the mount is undone at once, and by the guard if the run
/// is interrupted).
pub(crate) fn resolve(guard: &HostGuard) -> Events {
    if let Some(root) = tracefs_root() {
        return read_ids(&root);
    }
    let at = PathBuf::from("/sys/kernel/tracing");
    match guard.mount_tracefs(&at) {
        Ok(()) => {
            let ev = read_ids(&at);
            let _ = guard.unmount_tracefs();
            ev
        }
        Err(e) => none_counted(&format!("tracefs is not mounted ({e})")),
    }
}

/// Why the tracepoints of a run with `NativeOptions::trace` off are missing.
pub(crate) const UNTRACED: &str = "not traced in this run (timing run)";

/// No events: every tracepoint reported missing, for `why`.
pub(crate) fn none_counted(why: &str) -> Events {
    Events {
        events: Vec::new(),
        missing: TRACEPOINTS
            .iter()
            .map(|n| (n.to_string(), why.to_string()))
            .collect(),
    }
}

/// struct perf_event_attr up to PERF_ATTR_SIZE_VER8 (136 bytes), as u64s.
#[repr(C)]
struct Attr([u64; 17]);

// perf_event_open(2) values (include/uapi/linux/perf_event.h), shared
// with the recorder's sampling events (record.rs).
pub(crate) const PERF_TYPE_TRACEPOINT: u64 = 2;
pub(crate) const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
pub(crate) const ATTR_SIZE: u64 = 136;
pub(crate) const FLAG_INHERIT: u64 = 1 << 1;
/// _IOW('$', 6, char *)
pub(crate) const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;

/// perf_event_open for one event: `pid` (0 = the caller), any CPU,
/// inherited by children if `inherit`. Returns the descriptor or -errno.
/// Allocates nothing, so the workload can call it after fork.
pub(crate) fn open_raw(pid: i32, e: &Event, inherit: bool) -> i32 {
    let mut a = Attr([0; 17]);
    a.0[0] = PERF_TYPE_TRACEPOINT | (ATTR_SIZE << 32); // type, size
    a.0[1] = e.id; // config
    a.0[5] = if inherit { FLAG_INHERIT } else { 0 }; // flags: enabled
                                                     // SAFETY: `a` is a zero-initialised perf_event_attr of the size given in
                                                     // it; the kernel only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &a as *const Attr,
            pid,
            -1,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return -(std::io::Error::last_os_error().raw_os_error().unwrap_or(1));
    }
    let fd = fd as i32;
    if let Some(f) = &e.filter {
        // SAFETY: `f` is a NUL-terminated filter string that outlives the
        // call; the ioctl only reads it.
        if unsafe { libc::ioctl(fd, PERF_EVENT_IOC_SET_FILTER as _, f.as_ptr()) } < 0 {
            let err = std::io::Error::last_os_error().raw_os_error().unwrap_or(1);
            // SAFETY: `fd` is the descriptor just opened, not used elsewhere.
            unsafe { libc::close(fd) };
            return -err;
        }
    }
    fd
}

/// The count of an open counter (0 if it cannot be read).
pub(crate) fn read_raw(fd: i32) -> u64 {
    let mut v = 0u64;
    // SAFETY: eight writable bytes.
    let n = unsafe { libc::read(fd, std::ptr::addr_of_mut!(v).cast(), 8) };
    if n == 8 {
        v
    } else {
        0
    }
}

fn open(pid: i32, e: &Event) -> io::Result<OwnedFd> {
    let fd = open_raw(pid, e, true);
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: open_raw returned a new descriptor that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Open counters of one workload.
pub(crate) struct Counters {
    fds: Vec<(String, OwnedFd)>,
}

impl Counters {
    /// Open every event for `pid`; the ones that fail are added to
    /// `missing`.
    pub(crate) fn open(pid: i32, ev: &Events, missing: &mut Vec<(String, String)>) -> Counters {
        let mut fds = Vec::new();
        for e in &ev.events {
            match open(pid, e) {
                Ok(fd) => fds.push((e.name.clone(), fd)),
                Err(err) => missing.push((e.name.clone(), format!("perf_event_open: {err}"))),
            }
        }
        Counters { fds }
    }

    /// The kernel functions' events (`kfunc/...`) for kswapd thread
    /// `pid`, named `kswapd/kfunc/...`; the ones that cannot be opened are
    /// left out.
    pub(crate) fn open_kswapd(pid: i32, ev: &Events) -> Counters {
        use foliosim_uapi::counters::KSWAPD_PREFIX;
        let fds = ev
            .events
            .iter()
            .filter(|e| e.name.starts_with(foliosim_uapi::counters::KFUNC_PREFIX))
            .filter_map(|e| Some((format!("{KSWAPD_PREFIX}{}", e.name), open(pid, e).ok()?)))
            .collect();
        Counters { fds }
    }

    pub(crate) fn read(&self) -> Vec<(String, u64)> {
        self.fds
            .iter()
            .filter_map(|(n, fd)| {
                let mut b = [0u8; 8];
                match crate::sys::read(fd.as_raw_fd(), &mut b) {
                    Ok(8) => Some((n.clone(), u64::from_ne_bytes(b))),
                    _ => None,
                }
            })
            .collect()
    }
}

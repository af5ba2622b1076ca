//! The pagemap step natively: the engine reads the workload's
//! `/proc/PID/pagemap` with pread(2) calls of the step's read size (the
//! same read(2) sizes the simulator models), runs PAGEMAP_SCAN on it, and
//! reads `/proc/kpageflags` for the present pages. The engine runs as root,
//! so the kernel shows PFNs and swap offsets; an unprivileged step
//! (`privileged = false`) gets bits 0-54 cleared, which is what the kernel
//! gives a reader without CAP_SYS_ADMIN (fs/proc/task_mmu.c:
//! pagemap_read(), `pm.show_pfn`).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use foliosim_uapi::pagemap::{PM_PFRAME_MASK, PM_PRESENT};

use foliosim_workload::PAGE_SIZE;

/// What one pagemap step read.
pub(crate) struct PagemapRead {
    pub entries: Vec<u64>,
    /// Wall time of the pread loop, ns.
    pub read_ns: u64,
    /// The engine thread's CPU time over the pread loop, ns
    /// (CLOCK_THREAD_CPUTIME_ID: the reads' kernel work is charged to the
    /// reading thread; unlike the wall time, it leaves out the time other
    /// processes on a shared machine take the CPU away).
    pub read_cpu_ns: u64,
    /// PAGEMAP_SCAN regions (start, end, categories), if asked.
    pub scan: Option<Vec<(u64, u64, u64)>>,
    /// kpageflags words of the present pages, if asked.
    pub kpageflags: Option<Vec<u64>>,
}

/// `_IOWR('f', 16, struct pm_scan_arg)` (include/uapi/linux/fs.h).
const PAGEMAP_SCAN: u64 = 0xC060_6610;
/// Every `PAGE_IS_*` category.
const ALL_CATEGORIES: u64 = (1 << 9) - 1;

/// `struct pm_scan_arg`
#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

/// Read the pagemap of `[addr, addr + len)` of `pid` in calls of
/// `read_size` bytes (the last one shorter).
pub(crate) fn read(
    pid: i32,
    addr: u64,
    len: u64,
    read_size: u64,
    privileged: bool,
    scan: bool,
    kpageflags: bool,
) -> io::Result<PagemapRead> {
    let f = File::open(format!("/proc/{pid}/pagemap"))?;
    let total = (len / PAGE_SIZE * 8) as usize;
    let mut bytes = vec![0u8; total];
    // A large zeroed allocation is fresh untouched memory: fault its pages
    // in now, or the reads below would time a page fault inside
    // copy_to_user() for every 4 KiB of output.
    for i in (0..total).step_by(PAGE_SIZE as usize) {
        // SAFETY: `i` is within `bytes`; a volatile write so the store that
        // faults the page in is not elided.
        unsafe { std::ptr::write_volatile(bytes.as_mut_ptr().add(i), 0) };
    }
    let mut pos = 0usize;
    let base = addr / PAGE_SIZE * 8;
    let t = Instant::now();
    let cpu0 = crate::sys::clock(libc::CLOCK_THREAD_CPUTIME_ID);
    while pos < total {
        let n = (read_size as usize).min(total - pos);
        let got = f.read_at(&mut bytes[pos..pos + n], base + pos as u64)?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("pagemap read returned 0 at entry {}", pos / 8),
            ));
        }
        pos += got;
    }
    let read_ns = t.elapsed().as_nanos() as u64;
    let read_cpu_ns = crate::sys::clock(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(cpu0);
    let mut entries: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let kpageflags = if kpageflags {
        Some(kpageflags_of(&entries)?)
    } else {
        None
    };
    if !privileged {
        for e in &mut entries {
            *e &= !PM_PFRAME_MASK;
        }
    }
    let scan = if scan {
        Some(pagemap_scan(&f, addr, addr + len)?)
    } else {
        None
    };
    Ok(PagemapRead {
        entries,
        read_ns,
        read_cpu_ns,
        scan,
        kpageflags,
    })
}

/// The kpageflags words of the present entries' PFNs.
fn kpageflags_of(entries: &[u64]) -> io::Result<Vec<u64>> {
    let kf = File::open("/proc/kpageflags")?;
    let mut out = Vec::new();
    for &e in entries.iter().filter(|&&e| e & PM_PRESENT != 0) {
        let mut b = [0u8; 8];
        kf.read_exact_at(&mut b, (e & PM_PFRAME_MASK) * 8)?;
        out.push(u64::from_le_bytes(b));
    }
    Ok(out)
}

/// PAGEMAP_SCAN of `[start, end)`: every category of interest, no filter,
/// all categories returned, no write-protection.
pub(crate) fn pagemap_scan(f: &File, start: u64, end: u64) -> io::Result<Vec<(u64, u64, u64)>> {
    pagemap_scan_with(f, (start, end), 0, 0, ALL_CATEGORIES)
}

/// PAGEMAP_SCAN of `[start, end)` with `flags` (`PM_SCAN_*`): the pages
/// with every category of `category_mask`, as regions of equal
/// `return_mask` categories.
pub(crate) fn pagemap_scan_with(
    f: &File,
    (start, end): (u64, u64),
    flags: u64,
    category_mask: u64,
    return_mask: u64,
) -> io::Result<Vec<(u64, u64, u64)>> {
    let mut out = Vec::new();
    let mut buf = vec![[0u64; 3]; 512];
    let mut cur = start;
    while cur < end {
        let mut arg = PmScanArg {
            size: std::mem::size_of::<PmScanArg>() as u64,
            start: cur,
            end,
            flags,
            vec: buf.as_mut_ptr() as u64,
            vec_len: buf.len() as u64,
            category_mask,
            return_mask,
            ..Default::default()
        };
        // SAFETY: `arg` is a valid pm_scan_arg whose `vec` points at
        // `buf`, which holds `vec_len` page_region records and outlives
        // the call.
        let n = unsafe { libc::ioctl(f.as_raw_fd(), PAGEMAP_SCAN as _, &mut arg) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        for r in &buf[..n as usize] {
            match out.last_mut() {
                // The kernel restarts its merging at each call.
                Some((_, e, c)) if *e == r[0] && *c == r[2] => *e = r[1],
                _ => out.push((r[0], r[1], r[2])),
            }
        }
        if arg.walk_end <= cur {
            break;
        }
        cur = arg.walk_end;
    }
    Ok(out)
}

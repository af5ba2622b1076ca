//! Swap devices of `[[system.swap]]`, created before the workload with the
//! smallest footprint that works and removed afterwards (docs/fidelity.md,
//! "Host behaviours"):
//! * `kind = "file"`: a swap file in the run's work directory (fallocated,
//!   the swap header written here, no `mkswap` needed);
//! * `kind = "block"`: a loop device (LOOP_CONFIGURE, direct I/O so swapped
//!   pages do not sit in the page cache of its backing file) over such a
//!   file, `queue/rotational` set as the scenario says;
//! * `kind = "zram"`: a zram device added through
//!   /sys/class/zram-control/hot_add, `disksize` set.
//!
//! Each is enabled with swapon(2) at a priority that keeps the scenario's
//! order (the first device highest) and above the host's usual ones. Every
//! step is recorded in the guard (see guard.rs) before or while it is made,
//! under the guard's lock, so that it is undone on every way out.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use foliosim_scenario::{SwapDevice, SwapKind};
use foliosim_uapi::PAGE_SIZE;

use crate::guard::{HostGuard, Locked, Undo};
use crate::{sys, NativeError};

const ZRAM_CONTROL: &str = "/sys/class/zram-control";
const LOOP_CONTROL: &str = "/dev/loop-control";

/// The priority of the first device; the next ones count down.
const TOP_PRIORITY: i32 = 32767;
const SWAP_FLAG_PREFER: i32 = 0x8000;
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_REMOVE: libc::c_ulong = 0x4C81;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LO_FLAGS_DIRECT_IO: u32 = 16;

/// struct loop_info64 (include/uapi/linux/loop.h).
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// struct loop_config.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

const _: () = assert!(std::mem::size_of::<LoopConfig>() == 304);

/// The swap areas the host has: (name, type, priority) from /proc/swaps.
pub(crate) fn host_swaps() -> Vec<(String, String, String)> {
    let text = fs::read_to_string("/proc/swaps").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.to_string(),
                f.get(4)?.to_string(),
            ))
        })
        .collect()
}

/// Bytes free for use on the filesystem of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = sys::cstr(dir).ok()?;
    // SAFETY: statvfs is plain data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` is writable.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Check, without changing anything, that the host can make the devices.
/// Returns notes for stderr.
pub(crate) fn preflight(devs: &[SwapDevice], workdir: &Path) -> Result<Vec<String>, NativeError> {
    let mut notes = Vec::new();
    let host = host_swaps();
    if !host.is_empty() {
        let list: Vec<String> = host
            .iter()
            .map(|(n, t, p)| format!("{n} ({t}, priority {p})"))
            .collect();
        notes.push(if devs.is_empty() {
            format!(
                "the scenario has no swap device, but the host has swap, which reclaim can use: \
                 {} (left alone)",
                list.join(", ")
            )
        } else {
            format!(
                "the host already has swap: {} (left alone); the scenario's devices get higher \
                 priorities, but reclaim can still use the host's",
                list.join(", ")
            )
        });
    }
    if devs.is_empty() {
        return Ok(notes);
    }
    if host.len() + devs.len() > 32 {
        return Err(NativeError::Refused(format!(
            "the scenario asks for {} swap devices and the host has {}: Linux allows at most 32 \
             swap areas (fewer, depending on its configuration)",
            devs.len(),
            host.len()
        )));
    }
    let on_disk: u64 = devs
        .iter()
        .filter(|d| d.kind != SwapKind::Zram)
        .map(|d| d.size)
        .sum();
    if on_disk > 0 {
        let dir = workdir
            .ancestors()
            .find(|a| a.exists())
            .unwrap_or(Path::new("/"));
        if let Some(free) = free_bytes(dir) {
            let margin = 256 << 20;
            if on_disk + margin > free {
                return Err(NativeError::Refused(format!(
                    "the scenario's swap files and loop devices need {} MiB on the filesystem of \
                     {} (plus a 256 MiB margin) but it has {} MiB free",
                    on_disk >> 20,
                    dir.display(),
                    free >> 20
                )));
            }
        }
    }
    for (i, d) in devs.iter().enumerate() {
        match d.kind {
            SwapKind::File => {}
            SwapKind::Block { .. } => {
                if !Path::new(LOOP_CONTROL).exists() {
                    return Err(NativeError::Refused(format!(
                        "system.swap[{}] kind = \"block\" is a loop device natively, but {} \
                         does not exist (no loop driver: CONFIG_BLK_DEV_LOOP)",
                        i + 1,
                        LOOP_CONTROL
                    )));
                }
            }
            SwapKind::Zram => {
                if !Path::new(ZRAM_CONTROL).exists() && which("modprobe").is_none() {
                    return Err(NativeError::Refused(format!(
                        "system.swap[{}] kind = \"zram\": {ZRAM_CONTROL} does not exist (zram \
                         not built in or loaded) and there is no modprobe to load it",
                        i + 1
                    )));
                }
            }
        }
    }
    Ok(notes)
}

fn which(cmd: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
}

/// The version-1 swap header ("SWAPSPACE2") of a device of `size` bytes,
/// as mkswap writes it (without a UUID).
fn header(size: u64) -> [u8; PAGE_SIZE as usize] {
    let mut h = [0u8; PAGE_SIZE as usize];
    let last_page = (size / PAGE_SIZE - 1).min(u32::MAX as u64) as u32;
    h[1024..1028].copy_from_slice(&1u32.to_ne_bytes()); // version
    h[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    // nr_badpages = 0, uuid = 0
    h[1052..1060].copy_from_slice(b"foliosim"); // volume name
    h[PAGE_SIZE as usize - 10..].copy_from_slice(b"SWAPSPACE2");
    h
}

/// Write the swap header at the start of `f` and make it durable.
fn write_header(f: &File, size: u64) -> io::Result<()> {
    f.write_all_at(&header(size), 0)?;
    f.sync_all()
}

/// A file of `size` bytes with its blocks allocated (fallocate, else
/// zeroes) and a swap header, mode 0600.
fn swap_file(path: &Path, size: u64) -> io::Result<()> {
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    // SAFETY: fallocate on a descriptor we own.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) };
    if r != 0 {
        let zeroes = vec![0u8; 1 << 20];
        let mut w = io::BufWriter::new(&f);
        let mut left = size;
        while left > 0 {
            let n = left.min(zeroes.len() as u64) as usize;
            w.write_all(&zeroes[..n])?;
            left -= n as u64;
        }
        w.flush()?;
    }
    write_header(&f, size)
}

/// A path to the block device `name` (loop0, zram1): /dev/`name`, or a node
/// made in `dir` if devtmpfs did not make one.
fn block_node(name: &str, dir: &Path) -> io::Result<PathBuf> {
    let dev = PathBuf::from(format!("/dev/{name}"));
    if dev.exists() {
        return Ok(dev);
    }
    let node = dir.join(name);
    let devno = fs::read_to_string(format!("/sys/block/{name}/dev"))?;
    let (maj, min) = devno
        .trim()
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| io::Error::other(format!("bad /sys/block/{name}/dev: {devno:?}")))?;
    let c = sys::cstr(&node)?;
    // SAFETY: mknod with a NUL-terminated path; creates a device node.
    sys::cvt(unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(maj, min)) })?;
    Ok(node)
}

/// Open block device `name` read-write (through a node in /run that is
/// unlinked at once if /dev has none).
fn open_block(name: &str) -> io::Result<File> {
    let dev = PathBuf::from(format!("/dev/{name}"));
    if dev.exists() {
        return OpenOptions::new().read(true).write(true).open(dev);
    }
    let node = block_node(name, Path::new("/run"))?;
    let f = OpenOptions::new().read(true).write(true).open(&node);
    let _ = fs::remove_file(&node);
    f
}

fn swapon(path: &Path, priority: i32) -> io::Result<()> {
    let c = sys::cstr(path)?;
    let flags = SWAP_FLAG_PREFER | (priority & SWAP_FLAG_PRIO_MASK);
    // SAFETY: swapon with a NUL-terminated path.
    sys::cvt(unsafe { libc::swapon(c.as_ptr(), flags) })?;
    Ok(())
}

/// Is `path` an active swap area?
fn is_swap(path: &Path) -> bool {
    let p = path.display().to_string();
    host_swaps().iter().any(|(n, _, _)| *n == p)
}

/// swapoff(path); Ok(false) if it was not a swap area.
pub(crate) fn swapoff(path: &Path) -> Result<bool, String> {
    if !is_swap(path) {
        return Ok(false);
    }
    let c = sys::cstr(path).map_err(|e| e.to_string())?;
    // SAFETY: swapoff with a NUL-terminated path.
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        let e = io::Error::last_os_error();
        return Err(format!("swapoff {}: {e}", path.display()));
    }
    Ok(true)
}

/// The backing file of loop device `index`, if it is attached.
fn loop_backing(index: u32) -> Option<String> {
    fs::read_to_string(format!("/sys/block/loop{index}/loop/backing_file"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

fn loop_ctl(req: libc::c_ulong, arg: libc::c_long) -> io::Result<i32> {
    let ctl = OpenOptions::new()
        .read(true)
        .write(true)
        .open(LOOP_CONTROL)?;
    // SAFETY: a loop-control ioctl with an integer argument.
    sys::cvt(unsafe { libc::ioctl(ctl.as_raw_fd(), req as _, arg) })
}

/// The `queue/` settings of loop device `index` that a run changes:
/// read_ahead_kb (LOOP_CONFIGURE sets it from the backing file's device)
/// and rotational.
fn loop_queue(index: u32) -> Vec<(String, String)> {
    ["read_ahead_kb", "rotational"]
        .into_iter()
        .filter_map(|k| {
            let v = fs::read_to_string(format!("/sys/block/loop{index}/queue/{k}")).ok()?;
            Some((k.to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Detach loop device `index` if it is still attached to `backing`, then
/// remove it if the run added it, or put its `queue` settings back.
/// Ok(false) if there was nothing to do.
pub(crate) fn detach_loop(
    index: u32,
    backing: &Path,
    created: bool,
    queue: &[(String, String)],
) -> Result<bool, String> {
    let name = format!("loop{index}");
    let ours = |b: &str| {
        let b = b.strip_suffix(" (deleted)").unwrap_or(b);
        Path::new(b) == backing
    };
    let mut did = false;
    if let Some(b) = loop_backing(index) {
        if !ours(&b) {
            // Someone else's now: leave it.
            return Ok(false);
        }
        let f = open_block(&name).map_err(|e| format!("opening /dev/{name}: {e}"))?;
        // SAFETY: LOOP_CLR_FD takes no argument.
        if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD as _, 0) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENXIO) {
                return Err(format!("detaching /dev/{name}: {e}"));
            }
        }
        drop(f);
        let t0 = Instant::now();
        while loop_backing(index).is_some() {
            if t0.elapsed() > Duration::from_secs(5) {
                return Err(format!("/dev/{name} is still attached after LOOP_CLR_FD"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        did = true;
    }
    if created && Path::new(&format!("/sys/block/{name}")).exists() {
        match loop_ctl(LOOP_CTL_REMOVE, index as libc::c_long) {
            Ok(_) => did = true,
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {}
            Err(e) => return Err(format!("removing /dev/{name}: {e}")),
        }
    } else if !created && loop_backing(index).is_none() {
        // Ours to set back while nobody else has attached it.
        for (k, v) in queue {
            let p = format!("/sys/block/{name}/queue/{k}");
            match crate::host::read_knob(Path::new(&p)) {
                Ok(cur) if cur == *v => {}
                Ok(_) => {
                    fs::write(&p, v).map_err(|e| format!("restoring {p} = {v}: {e}"))?;
                    did = true;
                }
                Err(_) => {}
            }
        }
    }
    Ok(did)
}

/// Reset and hot-remove zram device `id`. Ok(false) if it is gone.
/// The ids of the zram devices that exist (`/sys/block/zram<id>`).
pub(crate) fn zram_ids() -> Vec<u32> {
    let mut ids: Vec<u32> = fs::read_dir("/sys/block")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("zram")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

pub(crate) fn remove_zram(id: u32) -> Result<bool, String> {
    let dir = PathBuf::from(format!("/sys/block/zram{id}"));
    if !dir.exists() {
        return Ok(false);
    }
    if is_swap(Path::new(&format!("/dev/zram{id}"))) {
        return Err(format!(
            "/dev/zram{id} is still a swap area; not removing it"
        ));
    }
    fs::write(dir.join("reset"), "1").map_err(|e| format!("resetting /dev/zram{id}: {e}"))?;
    fs::write(Path::new(ZRAM_CONTROL).join("hot_remove"), id.to_string())
        .map_err(|e| format!("removing /dev/zram{id} (zram-control/hot_remove): {e}"))?;
    Ok(true)
}

/// `modprobe -r zram`.
pub(crate) fn unload_zram() -> Result<bool, String> {
    if !Path::new("/sys/module/zram").exists() {
        return Ok(false);
    }
    let st = std::process::Command::new(which("modprobe").unwrap_or("modprobe".into()))
        .args(["-r", "zram"])
        .status()
        .map_err(|e| format!("modprobe -r zram: {e}"))?;
    if !st.success() {
        return Err(format!("modprobe -r zram: {st}"));
    }
    Ok(true)
}

/// Make zram available: loaded already, or `modprobe zram` (recorded).
fn ensure_zram(g: &HostGuard, at: &str) -> Result<(), NativeError> {
    if Path::new(ZRAM_CONTROL).exists() {
        return Ok(());
    }
    let refuse = |why: String| {
        NativeError::Refused(format!(
            "{at}: kind = \"zram\": {ZRAM_CONTROL} does not exist (zram is neither built in nor \
             loaded) and {why}"
        ))
    };
    let Some(modprobe) = which("modprobe") else {
        return Err(refuse("there is no modprobe to load it".into()));
    };
    let mut l = g.lock()?;
    l.push(Undo::ZramModule);
    let out = std::process::Command::new(modprobe)
        .args(["zram", "num_devices=0"])
        .output()
        .map_err(|e| refuse(format!("`modprobe zram` could not run: {e}")))?;
    if !out.status.success() || !Path::new(ZRAM_CONTROL).exists() {
        return Err(refuse(format!(
            "`modprobe zram` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// What a created device is, for notes.
pub(crate) struct Created {
    pub path: PathBuf,
    pub what: String,
}

/// Create and enable every device, in order. `dir` is the run's work
/// directory.
pub(crate) fn create_all(
    g: &HostGuard,
    devs: &[SwapDevice],
    dir: &Path,
) -> Result<Vec<Created>, NativeError> {
    let mut out = Vec::new();
    for (i, d) in devs.iter().enumerate() {
        let at = format!("system.swap[{}] (kind = \"{}\")", i + 1, d.kind.name());
        let prio = TOP_PRIORITY - i as i32;
        let io = |what: String| NativeError::Io {
            at: at.clone(),
            what,
        };
        let created = match d.kind {
            SwapKind::File => {
                let path = dir.join(format!("swap-{i}"));
                swap_file(&path, d.size)
                    .map_err(|e| io(format!("creating the swap file {}: {e}", path.display())))?;
                let mut l = g.lock()?;
                l.push(Undo::Swapon(path.clone()));
                swapon(&path, prio).map_err(|e| io(format!("swapon {}: {e}", path.display())))?;
                Created {
                    what: "swap file".into(),
                    path,
                }
            }
            SwapKind::Block { rotational } => {
                let backing = dir.join(format!("swap-{i}.img"));
                swap_file(&backing, d.size).map_err(|e| {
                    io(format!(
                        "creating the loop backing file {}: {e}",
                        backing.display()
                    ))
                })?;
                // From attaching to swapon, under the guard's lock; the
                // loop device stays open until swap holds it (with
                // AUTOCLEAR, its last close detaches it).
                let mut l = g.lock()?;
                let (index, dio, _dev) = attach_loop(&mut l, &backing, &at)?;
                set_rotational(index, rotational, &at)?;
                let path = block_node(&format!("loop{index}"), dir)
                    .map_err(|e| io(format!("finding /dev/loop{index}: {e}")))?;
                l.push(Undo::Swapon(path.clone()));
                swapon(&path, prio).map_err(|e| io(format!("swapon {}: {e}", path.display())))?;
                Created {
                    what: format!(
                        "loop device over {} (rotational={}{})",
                        backing.display(),
                        rotational as u8,
                        if dio {
                            ", direct I/O"
                        } else {
                            ", buffered I/O"
                        }
                    ),
                    path,
                }
            }
            SwapKind::Zram => {
                ensure_zram(g, &at)?;
                let mut l = g.lock()?;
                // Recorded before the device exists: a kill before its id
                // is known removes every zram device that was not there.
                l.push(Undo::ZramAdding {
                    existing: zram_ids(),
                });
                let id: u32 = fs::read_to_string(Path::new(ZRAM_CONTROL).join("hot_add"))
                    .map_err(|e| io(format!("{ZRAM_CONTROL}/hot_add: {e}")))?
                    .trim()
                    .parse()
                    .map_err(|e| io(format!("{ZRAM_CONTROL}/hot_add: {e}")))?;
                l.replace_last(Undo::Zram(id));
                let name = format!("zram{id}");
                fs::write(format!("/sys/block/{name}/disksize"), d.size.to_string())
                    .map_err(|e| io(format!("setting /sys/block/{name}/disksize: {e}")))?;
                let path =
                    block_node(&name, dir).map_err(|e| io(format!("finding /dev/{name}: {e}")))?;
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| io(format!("opening {}: {e}", path.display())))?;
                write_header(&f, d.size)
                    .map_err(|e| io(format!("writing the swap header: {e}")))?;
                drop(f);
                l.push(Undo::Swapon(path.clone()));
                swapon(&path, prio).map_err(|e| io(format!("swapon {}: {e}", path.display())))?;
                Created {
                    what: "zram device".into(),
                    path,
                }
            }
        };
        out.push(created);
    }
    Ok(out)
}

/// Attach a free loop device to `backing` (direct I/O if the filesystem
/// allows it); returns its index, whether direct I/O is on, and the open
/// device (closing the last descriptor detaches it, LO_FLAGS_AUTOCLEAR).
fn attach_loop(
    l: &mut Locked<'_>,
    backing: &Path,
    at: &str,
) -> Result<(u32, bool, File), NativeError> {
    let io = |what: String| NativeError::Io {
        at: at.to_string(),
        what,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(backing)
        .map_err(|e| io(format!("opening {}: {e}", backing.display())))?;
    for _ in 0..16 {
        let existing: Vec<String> = fs::read_dir("/sys/block")
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let index = loop_ctl(LOOP_CTL_GET_FREE, 0)
            .map_err(|e| io(format!("{LOOP_CONTROL} LOOP_CTL_GET_FREE: {e}")))?
            as u32;
        let name = format!("loop{index}");
        let created = !existing.contains(&name);
        l.push(Undo::Loop {
            index,
            backing: backing.to_path_buf(),
            created,
            queue: loop_queue(index),
        });
        let dev = open_block(&name).map_err(|e| io(format!("opening /dev/{name}: {e}")))?;
        for dio in [true, false] {
            // SAFETY: all-zero is a valid loop_config.
            let mut cfg: LoopConfig = unsafe { std::mem::zeroed() };
            cfg.fd = file.as_raw_fd() as u32;
            cfg.block_size = 4096;
            cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | if dio { LO_FLAGS_DIRECT_IO } else { 0 };
            // SAFETY: LOOP_CONFIGURE reads a loop_config, which `cfg` is.
            let r = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE as _, &cfg) };
            if r == 0 {
                // With AUTOCLEAR the device detaches when its last user
                // (swap, once enabled) closes it; the guard detaches it too.
                return Ok((index, dio, dev));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EBUSY) => break, // taken meanwhile: another one
                Some(libc::EINVAL) if dio => continue,
                _ => return Err(io(format!("LOOP_CONFIGURE of /dev/{name}: {e}"))),
            }
        }
    }
    Err(io(
        "no free loop device (LOOP_CTL_GET_FREE kept giving busy ones)".into(),
    ))
}

fn set_rotational(index: u32, rotational: bool, at: &str) -> Result<(), NativeError> {
    let p = format!("/sys/block/loop{index}/queue/rotational");
    let want = if rotational { "1" } else { "0" };
    let res = fs::write(&p, want).and_then(|_| fs::read_to_string(&p));
    match res {
        Ok(v) if v.trim() == want => Ok(()),
        Ok(v) => Err(NativeError::Refused(format!(
            "{at}: rotational = {rotational}: wrote {want} to {p} but it reads {}; the host \
             cannot give this loop device the rotational flag the scenario asks for",
            v.trim()
        ))),
        Err(e) => Err(NativeError::Refused(format!(
            "{at}: rotational = {rotational}: {p} cannot be set ({e}); the host cannot give \
             this loop device the rotational flag the scenario asks for"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_header_layout() {
        let h = header(16 << 20);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert_eq!(u32::from_ne_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(h[1028..1032].try_into().unwrap()), 4095);
        assert_eq!(u32::from_ne_bytes(h[1032..1036].try_into().unwrap()), 0);
        assert!(h[..1024].iter().all(|&b| b == 0));
    }
}

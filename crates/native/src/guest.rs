//! The native engine as the first process of a virtual machine that
//! `foliosim vm` booted with nothing but an initramfs: the filesystems a
//! native run reads and writes, the kernel it runs on, and the restart
//! that ends the machine (crates/vm drives this).

use std::fs;
use std::path::Path;

use crate::sys;

/// Where the guest's scenario files, swap files and loop backing files
/// live: the ext4 filesystem of the work disk when there is one.
pub const WORK_MOUNT: &str = "/work";

/// Keep the runner's own memory out of the guest's reclaim:
/// `mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)` for this process
/// (the engine). Under global pressure the kernel would otherwise swap
/// out the engine's heap and stack while it waits for the workload, and
/// the engine's faults on them at the phase's end would count in the
/// machine's vmstat. The workload the engine forks is not locked: fork
/// clears the locks of the child's copies (`dup_mmap()`), and what the
/// child writes is its own. The pages fault in as used (MCL_ONFAULT), so
/// the lock takes no memory of its own. Returns a note if the kernel
/// refuses.
pub fn lock_runner_memory() -> Option<String> {
    // SAFETY: mlockall() takes flags only and changes no memory contents.
    let r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) };
    (r != 0).then(|| {
        format!(
            "the runner's memory is not locked (mlockall: {}); under global \
             pressure its own faults count in the machine's vmstat",
            std::io::Error::last_os_error()
        )
    })
}

/// Mount what a native run needs: /proc, /sys, /dev, /run, /tmp, tracefs,
/// debugfs, the memory cgroup controller (cgroup v2 at /sys/fs/cgroup
/// with the memory controller enabled for children; cgroup v1 at
/// /sys/fs/cgroup/memory on a kernel without v2), and the work disk `disk` (ext4) on
/// [`WORK_MOUNT`]. Returns notes on what could not be mounted; an error
/// for what a run cannot do without.
pub fn mount_all(disk: Option<&str>) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    let must = |src: &str, at: &str, fs_type: &str| -> Result<(), String> {
        fs::create_dir_all(at).map_err(|e| format!("mkdir {at}: {e}"))?;
        sys::mount(src, Path::new(at), fs_type, 0, "")
            .map_err(|e| format!("mounting {fs_type} on {at}: {e}"))
    };
    must("proc", "/proc", "proc")?;
    must("sysfs", "/sys", "sysfs")?;
    // The kernel may have mounted devtmpfs itself (DEVTMPFS_MOUNT).
    if !Path::new("/dev/null").exists() {
        must("devtmpfs", "/dev", "devtmpfs")?;
    }
    must("tmpfs", "/run", "tmpfs")?;
    must("tmpfs", "/tmp", "tmpfs")?;
    if let Err(e) = must("nodev", "/sys/kernel/tracing", "tracefs") {
        notes.push(format!("{e}: tracepoints will not be counted"));
    }
    if let Err(e) = must("nodev", "/sys/kernel/debug", "debugfs") {
        notes.push(e);
    }
    // cgroup v2, Linux's default, where memory.reclaim is the kernel's
    // own (cgroup v1 has none, and the native engine would emulate it by
    // lowering the limit, which reclaims as direct reclaim); v1 only for
    // a kernel without v2.
    let root = Path::new("/sys/fs/cgroup");
    fs::create_dir_all(root).map_err(|e| format!("mkdir /sys/fs/cgroup: {e}"))?;
    if sys::mount("cgroup2", root, "cgroup2", 0, "").is_ok() {
        if let Err(e) = fs::write(root.join("cgroup.subtree_control"), "+memory") {
            notes.push(format!(
                "cgroup v2: enabling the memory controller: {e}; memcg steps will be refused"
            ));
        }
    } else {
        must("tmpfs", "/sys/fs/cgroup", "tmpfs")?;
        let v1 = root.join("memory");
        let _ = fs::create_dir_all(&v1);
        if let Err(e) = sys::mount("cgroup", &v1, "cgroup", 0, "memory") {
            notes.push(format!(
                "no memory cgroup controller ({e}): memcg steps will be refused"
            ));
        }
    }
    if let Some(dev) = disk {
        if !Path::new(dev).exists() {
            return Err(format!(
                "the work disk {dev} is missing: the kernel has no virtio-blk driver \
                 (CONFIG_VIRTIO_BLK, CONFIG_VIRTIO_PCI)"
            ));
        }
        must(dev, WORK_MOUNT, "ext4")?;
    }
    Ok(notes)
}

/// Register a kprobe event for each function of
/// [`foliosim_uapi::counters::KFUNCS`] (the machine is thrown away after
/// the run, so they are never removed); the native engine then counts
/// them as `kfunc/<function>`. Returns the functions that could not be
/// probed, with why.
pub fn register_kfuncs() -> Vec<(String, String)> {
    use std::io::Write as _;
    let path = "/sys/kernel/tracing/kprobe_events";
    let mut failed = Vec::new();
    for k in foliosim_uapi::counters::KFUNCS {
        let line = format!(
            "p:{}/{} {} {}\n",
            crate::perf::KFUNC_GROUP,
            k.event,
            k.function,
            k.fetch
        );
        let res = fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = res {
            failed.push((
                format!("kfunc/{}", k.name),
                format!("no kprobe on {} ({e})", k.function),
            ));
        }
    }
    failed
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Write back dirty data and end the machine: QEMU, started with
/// `-no-reboot`, exits on the restart.
pub fn restart() -> ! {
    sys::restart_machine()
}

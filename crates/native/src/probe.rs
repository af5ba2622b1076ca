//! `foliosim probe`: the host as a scenario `[system]` fragment.
//!
//! Knobs the scenario language has are written as keys, so the fragment can
//! be pasted into a scenario (or its values passed with `--set`) and a
//! simulation mirrors the host; facts the language has no key for yet
//! (kernel release, swap devices, config options) are written as comments.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use crate::host::{device_read_ahead_kb, knob_value, meminfo, mthp_dirs, THP_DIR};

/// The host description for scenario files kept under `workdir`.
pub fn probe(workdir: &Path) -> String {
    let mut out = String::new();
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let _ = writeln!(out, "# foliosim probe of this host");
    let _ = writeln!(out, "# kernel = \"{}\"", release.trim());
    let _ = writeln!(out, "# page_size = 4096");
    let _ = writeln!(out, "[system]");
    let _ = writeln!(
        out,
        "arch = \"{}\"",
        std::env::consts::ARCH.replace("aarch64", "arm64")
    );
    let (total, _) = meminfo();
    let _ = writeln!(out, "memory = {}", total & !((4 << 20) - 1));
    let thp = |f: &str| {
        fs::read_to_string(Path::new(THP_DIR).join(f))
            .map(|t| knob_value(&t))
            .ok()
    };
    if let Some(v) = thp("enabled") {
        let _ = writeln!(out, "transparent_hugepage.enabled = \"{v}\"");
    }
    if let Some(v) = thp("use_zero_page") {
        let _ = writeln!(out, "transparent_hugepage.use_zero_page = {v}");
    }
    for (name, dir) in mthp_dirs() {
        if let Ok(t) = fs::read_to_string(dir.join("enabled")) {
            let _ = writeln!(
                out,
                "transparent_hugepage.{name}.enabled = \"{}\"",
                knob_value(&t)
            );
        }
    }
    let _ = writeln!(
        out,
        "fault_around_bytes = 65536  # debugfs value unreadable here; the kernel default"
    );
    match device_read_ahead_kb(workdir) {
        Some((dev, kb)) => {
            let rot = fs::read_to_string(format!("/sys/block/{dev}/queue/rotational"))
                .map(|s| s.trim() == "1")
                .unwrap_or(false);
            let _ = writeln!(
                out,
                "read_ahead_kb = {kb}  # {dev} (rotational={}), holding {}",
                rot as u8,
                workdir.display()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "# read_ahead_kb: no block device found for {}",
                workdir.display()
            );
        }
    }
    probe_swap(&mut out);
    probe_config(&mut out);
    out
}

fn probe_swap(out: &mut String) {
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let devs: Vec<&str> = swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    if devs.is_empty() {
        let _ = writeln!(out, "# swap: none configured");
    }
    for d in devs {
        let kind = if d.contains("zram") {
            "zram"
        } else if Path::new(d).is_file() {
            "file"
        } else {
            "block"
        };
        let _ = writeln!(out, "# swap: {d} ({kind})");
    }
}

fn probe_config(out: &mut String) {
    let mglru = fs::read_to_string("/sys/kernel/mm/lru_gen/enabled").map(|s| s.trim().to_string());
    let _ = writeln!(
        out,
        "# config: MGLRU {}",
        mglru.map_or("not built (CONFIG_LRU_GEN=n)".to_string(), |v| format!(
            "enabled={v}"
        ))
    );
    // Soft-dirty and per-page mapcount are not visible from sysfs; they need
    // /proc/config.gz (gzip), which the probe does not decode yet.
    let cfg = Path::new("/proc/config.gz").exists();
    let _ = writeln!(
        out,
        "# config: /proc/config.gz {}",
        if cfg {
            "present (soft-dirty, PAGE_MAPCOUNT not decoded yet)"
        } else {
            "absent"
        }
    );
}

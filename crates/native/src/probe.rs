//! `foliosim probe`: the host as a scenario `[system]` fragment.
//!
//! Knobs the scenario language has are written as keys, so the fragment can
//! be pasted into a scenario (or its values passed with `--set`) and a
//! simulation mirrors the host: the THP knobs, `read_ahead_kb`, and the swap
//! areas as `[[system.swap]]` tables (or `swap = []`). Facts the language
//! has no key for (kernel release, each swap area's kind, rotational flag
//! and priority, configuration options from /proc/config.gz, zswap) are
//! written as comments.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use foliosim_uapi::knobs::{self, Access, Instance, Kind};
use foliosim_uapi::{Arch, PAGE_SIZE};

use crate::host::{device_read_ahead_kb, knob_value, meminfo};

/// The host description for scenario files kept under `workdir`.
pub fn probe(workdir: &Path) -> String {
    let mut out = String::new();
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let _ = writeln!(out, "# foliosim probe of this host");
    let _ = writeln!(out, "# kernel = \"{}\"", release.trim());
    let _ = writeln!(out, "# page_size = {PAGE_SIZE}");
    if let Ok(left) = fs::read_to_string(crate::guard::STATE_FILE) {
        // A native run is in progress, or one was killed and nothing has
        // restored its changes yet: what is read below may be its settings.
        let _ = writeln!(
            out,
            "# WARNING: {} lists {} host change(s) of a native run that is running or was \
             killed; the values below may be that run's, not the host's own (`foliosim \
             restore` as root puts them back)",
            crate::guard::STATE_FILE,
            left.lines().count()
        );
    }
    let _ = writeln!(out, "[system]");
    for inst in knobs::instances() {
        system_line(&mut out, &inst, workdir);
    }
    probe_swap(&mut out);
    probe_config(&mut out);
    out
}

/// The line of knob instance `inst` in the fragment: the host's value
/// (from its file where it has one), or a comment when it is unknown.
fn system_line(out: &mut String, inst: &Instance, workdir: &Path) {
    let key = &inst.key;
    match *inst.knob {
        knobs::ARCH => {
            let arch = std::env::consts::ARCH;
            let arch = Arch::from_name(arch).map_or(arch, Arch::as_str);
            let _ = writeln!(out, "{key} = \"{arch}\"");
        }
        knobs::MEMORY => {
            let (total, _) = meminfo();
            let align = match inst.knob.kind {
                Kind::Bytes { align, .. } => align,
                _ => 1,
            };
            let _ = writeln!(out, "{key} = {}", total / align * align);
        }
        knobs::CPUS => {
            if let Some(n) = host_cpus() {
                let online =
                    fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{key} = {n}  # the CPUs this process may run on; online: {}",
                    online.trim()
                );
            }
        }
        _ => match inst.knob.host.map(|h| h.access) {
            Some(Access::Debugfs) => {
                let _ = writeln!(
                    out,
                    "{key} = {}  # debugfs value unreadable here; the kernel default",
                    inst.default
                );
            }
            Some(Access::Device) => device_line(out, key, workdir),
            _ => {
                let Some(t) = inst.path.as_ref().and_then(|p| fs::read_to_string(p).ok()) else {
                    return;
                };
                let v = knob_value(&t);
                if inst.knob.kind == Kind::Flag {
                    // The file's own words ("Y"/"N" for a module
                    // parameter) in the scenario's spelling.
                    match inst.knob.parse(&v) {
                        Some(flag) => {
                            let _ = writeln!(out, "{key} = {flag}");
                        }
                        None => {
                            let _ = writeln!(out, "# {key}: the host shows {v:?}");
                        }
                    }
                } else if matches!(inst.knob.kind, Kind::Thp | Kind::Mthp) {
                    let _ = writeln!(out, "{key} = \"{v}\"");
                } else {
                    let _ = writeln!(out, "{key} = {v}");
                }
            }
        },
    }
}

/// A device knob (`read_ahead_kb`, `max_sectors_kb`: `key` is the queue
/// attribute) of the device holding `workdir`.
fn device_line(out: &mut String, key: &str, workdir: &Path) {
    match crate::host::device_queue_attr(workdir, key) {
        Some((dev, _, kb)) => {
            let rot = fs::read_to_string(format!("/sys/block/{dev}/queue/rotational"))
                .map(|s| s.trim() == "1")
                .unwrap_or(false);
            let _ = writeln!(
                out,
                "{key} = {kb}  # {dev} (rotational={}), holding {}",
                rot as u8,
                workdir.display()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "# {key}: no block device found for {}",
                workdir.display()
            );
        }
    }
}

/// How many CPUs this process may run on (its affinity mask: the CPUs a
/// native run can pin the workload and its threads to), as the language's
/// `system.cpus` (at most 64).
fn host_cpus() -> Option<u64> {
    let set = crate::sys::get_affinity().ok()?;
    let n = crate::sys::cpus(&set).len() as u64;
    (n > 0).then_some(n.min(foliosim_uapi::MAX_CPUS as u64))
}

/// A swap area of /proc/swaps as the probe describes it.
struct HostSwap {
    name: String,
    /// "file", "partition", "zram" or "loop".
    kind: &'static str,
    rotational: Option<bool>,
    /// Size in bytes with the header page, as `size` in `[[system.swap]]`
    /// (/proc/swaps counts the usable KiB, without the header).
    size: u64,
    priority: i64,
}

/// `queue/rotational` of the block device `name` (a partition asks its
/// disk).
fn block_rotational(name: &str) -> Option<bool> {
    let base = fs::canonicalize(format!("/sys/class/block/{name}")).ok()?;
    [
        base.join("queue/rotational"),
        base.join("../queue/rotational"),
    ]
    .iter()
    .find_map(|p| fs::read_to_string(p).ok())
    .map(|s| s.trim() == "1")
}

/// `queue/rotational` of the device holding `path`.
fn file_rotational(path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let dev = fs::metadata(path).ok()?.dev();
    let base = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
    [
        format!("{base}/queue/rotational"),
        format!("{base}/../queue/rotational"),
    ]
    .iter()
    .find_map(|p| fs::read_to_string(p).ok())
    .map(|s| s.trim() == "1")
}

fn host_swaps() -> Vec<HostSwap> {
    let text = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let mut out: Vec<HostSwap> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = f.first()?.replace("\\040", " ");
            let typ = *f.get(1)?;
            let size_kb: u64 = f.get(2)?.parse().ok()?;
            let priority = f.get(4)?.parse().ok()?;
            let dev = name.strip_prefix("/dev/").unwrap_or("");
            let (kind, rotational) = if typ == "file" {
                ("file", file_rotational(Path::new(&name)))
            } else if dev.starts_with("zram") {
                ("zram", block_rotational(dev))
            } else if dev.starts_with("loop") {
                ("loop", block_rotational(dev))
            } else {
                ("partition", block_rotational(dev))
            };
            Some(HostSwap {
                name,
                kind,
                rotational,
                size: size_kb * 1024 + PAGE_SIZE,
                priority,
            })
        })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.priority));
    out
}

/// The swap areas as comments, and as `[[system.swap]]` tables (highest
/// priority first) so that a simulation mirrors them.
fn probe_swap(out: &mut String) {
    let swaps = host_swaps();
    if swaps.is_empty() {
        let _ = writeln!(out, "# swap: none configured");
        let _ = writeln!(out, "swap = []");
        return;
    }
    for s in &swaps {
        let rot = s
            .rotational
            .map_or("unknown".to_string(), |r| (r as u8).to_string());
        let _ = writeln!(
            out,
            "# swap: {} ({}, rotational={rot}, {} KiB usable, priority {})",
            s.name,
            s.kind,
            (s.size - PAGE_SIZE) >> 10,
            s.priority
        );
    }
    for s in &swaps {
        // The language's sizes: whole pages, at least 1 MiB.
        let size = s.size / PAGE_SIZE * PAGE_SIZE;
        if size < 1 << 20 {
            let _ = writeln!(
                out,
                "# swap: {} is smaller than 1 MiB: not described as [[system.swap]]",
                s.name
            );
            continue;
        }
        let _ = writeln!(out, "[[system.swap]]  # {}", s.name);
        match s.kind {
            "file" => {
                let _ = writeln!(out, "kind = \"file\"");
            }
            "zram" => {
                let _ = writeln!(out, "kind = \"zram\"");
            }
            _ => {
                let _ = writeln!(out, "kind = \"block\"");
                let _ = writeln!(out, "rotational = {}", s.rotational.unwrap_or(false));
            }
        }
        let _ = writeln!(out, "size = {size}");
    }
}

/// The configuration options that change behaviour the model has.
const CONFIG_OPTIONS: [&str; 9] = [
    "CONFIG_MEM_SOFT_DIRTY",
    "CONFIG_PAGE_MAPCOUNT",
    "CONFIG_NO_PAGE_MAPCOUNT",
    "CONFIG_LRU_GEN",
    "CONFIG_LRU_GEN_ENABLED",
    "CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS",
    "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE",
    "CONFIG_TRANSPARENT_HUGEPAGE_NEVER",
    "CONFIG_ZSWAP",
];

/// The value of each of [`CONFIG_OPTIONS`] in a kernel .config text: `y`,
/// `m`, a string or number, `n` ("is not set"), or None if absent.
fn config_values(config: &str) -> Vec<(&'static str, Option<String>)> {
    CONFIG_OPTIONS
        .iter()
        .map(|&opt| {
            let not_set = format!("# {opt} is not set");
            let value = config.lines().find_map(|l| {
                let l = l.trim();
                if l == not_set {
                    return Some("n".to_string());
                }
                l.strip_prefix(opt)
                    .and_then(|r| r.strip_prefix('='))
                    .map(str::to_string)
            });
            (opt, value)
        })
        .collect()
}

/// /proc/config.gz, decompressed.
fn read_config_gz(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    flate2::read::GzDecoder::new(fs::File::open(path)?).read_to_string(&mut text)?;
    Ok(text)
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
    let zswap = fs::read_to_string("/sys/module/zswap/parameters/enabled")
        .map(|s| s.trim().to_string())
        .ok();
    let cfg = Path::new("/proc/config.gz");
    match read_config_gz(cfg) {
        Ok(text) => {
            for (opt, v) in config_values(&text) {
                let line = match v.as_deref() {
                    Some("n") => format!("{opt} is not set"),
                    Some(v) => format!("{opt}={v}"),
                    None => format!(
                        "{opt} is not in /proc/config.gz (not set: the option or one it \
                         depends on is off)"
                    ),
                };
                let extra = match (opt, &zswap) {
                    ("CONFIG_ZSWAP", Some(z)) => format!("; zswap enabled={z} at run time"),
                    ("CONFIG_ZSWAP", None) => "; zswap not present at run time".to_string(),
                    _ => String::new(),
                };
                let _ = writeln!(out, "# config: {line}{extra}");
            }
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "# config: /proc/config.gz unreadable ({e}): soft-dirty, PAGE_MAPCOUNT, MGLRU and \
                 THP defaults unknown"
            );
            if let Some(z) = &zswap {
                let _ = writeln!(out, "# config: zswap enabled={z} at run time");
            }
        }
    }
}

/// The THP knobs a scenario can set that [`probe_overrides`] reads from
/// the host; the swap readahead knobs are not mirrored (a native run
/// writes them, defaults included).
const MIRRORED_THP: [knobs::Knob; 3] = [
    knobs::THP_ENABLED,
    knobs::THP_USE_ZERO_PAGE,
    knobs::MTHP_ENABLED,
];

/// What [`probe_overrides`] found on the host of a native run, from the
/// settings its report lists (`system`): the same keys, the run's values.
pub fn probed_in(system: &std::collections::BTreeMap<String, String>) -> Vec<(String, String)> {
    let keys = [
        knobs::CPUS.key.to_string(),
        knobs::READ_AHEAD_KB.key.to_string(),
        knobs::MAX_SECTORS_KB.key.to_string(),
    ];
    let thp = knobs::instances()
        .filter(|i| MIRRORED_THP.contains(i.knob))
        .map(|i| i.key);
    keys.into_iter()
        .chain(thp)
        .filter_map(|k| system.get(&k).map(|v| (k.clone(), v.clone())))
        .collect()
}

/// The host's knob values as `--set` overrides (knob key, value) for the
/// knobs a simulation can mirror: `cpus`, THP settings and the device's
/// `read_ahead_kb` and `max_sectors_kb` (`compare` applies those a scenario leaves at their
/// defaults, so the model runs with the host's configuration).
pub fn probe_overrides(workdir: &Path) -> Vec<(String, String)> {
    // Wait for a native run (or the supervisor of a killed one) to put the
    // host back, so that its settings are never taken for the host's own.
    // Without root there is no lock to take, and no run of ours changed
    // anything.
    let _quiet = (crate::sys::geteuid() == 0)
        .then(crate::guard::RunLock::acquire)
        .and_then(Result::ok);
    if crate::sys::geteuid() == 0 {
        crate::guard::recover_stale().note("foliosim");
    }
    let mut out = Vec::new();
    if let Some(n) = host_cpus() {
        out.push((knobs::CPUS.key.into(), n.to_string()));
    }
    for inst in knobs::instances().filter(|i| MIRRORED_THP.contains(i.knob)) {
        let Some(path) = &inst.path else { continue };
        if let Ok(t) = fs::read_to_string(path) {
            out.push((inst.key, knob_value(&t)));
        }
    }
    if let Some((_, kb)) = device_read_ahead_kb(workdir) {
        out.push((knobs::READ_AHEAD_KB.key.into(), kb.to_string()));
    }
    if let Some((_, _, kb)) = crate::host::device_queue_attr(workdir, knobs::MAX_SECTORS_KB.key) {
        out.push((knobs::MAX_SECTORS_KB.key.into(), kb.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn config_values_of_a_config_text() {
        let text = "CONFIG_ZSWAP=y\n# CONFIG_MEM_SOFT_DIRTY is not set\nCONFIG_PAGE_MAPCOUNT=y\n\
                    CONFIG_LRU_GEN_ENABLED=y\nCONFIG_LRU_GEN=y\n\
                    # CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS is not set\n\
                    CONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n";
        let v = config_values(text);
        let get = |o: &str| v.iter().find(|(n, _)| *n == o).unwrap().1.clone();
        assert_eq!(get("CONFIG_ZSWAP").as_deref(), Some("y"));
        assert_eq!(get("CONFIG_MEM_SOFT_DIRTY").as_deref(), Some("n"));
        assert_eq!(get("CONFIG_PAGE_MAPCOUNT").as_deref(), Some("y"));
        assert_eq!(get("CONFIG_NO_PAGE_MAPCOUNT"), None);
        // A prefix is not the option (CONFIG_LRU_GEN vs _ENABLED).
        assert_eq!(get("CONFIG_LRU_GEN").as_deref(), Some("y"));
        assert_eq!(get("CONFIG_LRU_GEN_ENABLED").as_deref(), Some("y"));
        assert_eq!(
            get("CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS").as_deref(),
            Some("n")
        );
        assert_eq!(get("CONFIG_TRANSPARENT_HUGEPAGE_NEVER"), None);
    }

    #[test]
    fn config_gz_is_decoded() {
        let dir = std::env::temp_dir().join(format!("foliosim-probe-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("config.gz");
        let mut enc =
            flate2::write::GzEncoder::new(fs::File::create(&p).unwrap(), Default::default());
        enc.write_all(b"# CONFIG_NO_PAGE_MAPCOUNT is not set\nCONFIG_PAGE_MAPCOUNT=y\n")
            .unwrap();
        enc.finish().unwrap();
        let text = read_config_gz(&p).unwrap();
        let v = config_values(&text);
        assert_eq!(v[1], ("CONFIG_PAGE_MAPCOUNT", Some("y".to_string())));
        assert_eq!(v[2], ("CONFIG_NO_PAGE_MAPCOUNT", Some("n".to_string())));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_fragment_is_a_valid_scenario() {
        let text = probe(Path::new("/var/tmp"));
        let sc = foliosim_scenario::parse_str("probe.toml", &text, &[])
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(sc.system.explicit.contains("swap"), "{text}");
        let n = host_cpus().expect("an affinity mask");
        assert!(text.contains(&format!("cpus = {n}")), "{text}");
        assert_eq!(sc.system.cpus as u64, n);
        if Path::new("/proc/config.gz").exists() {
            assert!(text.contains("CONFIG_PAGE_MAPCOUNT"), "{text}");
            assert!(
                text.contains("CONFIG_TRANSPARENT_HUGEPAGE_MADVISE"),
                "{text}"
            );
        }
    }
}

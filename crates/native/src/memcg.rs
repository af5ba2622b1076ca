//! Memory cgroups for the `memcg`, `memcg_reclaim` and `force_empty` steps.
//!
//! The engine creates one cgroup per `memcg` step before the workload
//! starts (cgroup v1: under the engine's own memory cgroup, as
//! `foliosim-<pid>-<n>`, with `memory.limit_in_bytes`; cgroup v2: the same
//! under the engine's cgroup when it delegates the memory controller, with
//! `memory.max`), records each in the guard, and removes them after the
//! workload (moving any process still inside to the parent first). The
//! workload process that runs a step does the step's own write itself, so
//! that the reclaim it causes runs in its context and is measured as the
//! simulator counts it:
//! * `memcg`: "0" to the cgroup's `cgroup.procs` (moves the writer);
//! * `memcg_reclaim`: cgroup v2 writes the amount to `memory.reclaim`;
//!   cgroup v1 has no such file, so the limit is lowered to the usage minus
//!   the amount (the kernel reclaims until the usage fits, in the writer's
//!   context) and put back;
//! * `force_empty`: "0" to v1 `memory.force_empty` (v2 has none: refused).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::guard::{HostGuard, Undo};
use crate::{sys, NativeError};
use foliosim_workload::{MemcgDecl, Workload as Plan};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

/// Where the engine's cgroups go.
#[derive(Clone, Debug)]
pub(crate) struct Hierarchy {
    pub version: Version,
    /// The engine's own memory cgroup directory: the parent of the run's.
    pub base: PathBuf,
}

impl Hierarchy {
    fn limit_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }

    fn usage_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.usage_in_bytes",
            Version::V2 => "memory.current",
        }
    }

    /// The highest usage since the last reset (v2: since the reset
    /// through the open file, `peak_write()`).
    fn peak_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.max_usage_in_bytes",
            Version::V2 => "memory.peak",
        }
    }

    fn unlimited(&self) -> &'static str {
        match self.version {
            Version::V1 => "-1",
            Version::V2 => "max",
        }
    }
}

/// One `mountinfo` line: mount root, mount point, fs type, super options.
fn mounts() -> Vec<(String, PathBuf, String, String)> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split_whitespace().collect();
            let post: Vec<&str> = post.split_whitespace().collect();
            Some((
                unescape(pre.get(3)?),
                PathBuf::from(unescape(pre.get(4)?)),
                post.first()?.to_string(),
                post.get(2).copied().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup directory of `path` (from /proc/self/cgroup) in a hierarchy
/// mounted at `mount` whose root is `root`.
fn join_cgroup(mount: &Path, root: &str, path: &str) -> PathBuf {
    let rel = if root != "/" {
        path.strip_prefix(root).unwrap_or(path)
    } else {
        path
    };
    mount.join(rel.trim_start_matches('/'))
}

/// Find the memory controller: cgroup v1 if a v1 hierarchy has it, else
/// cgroup v2 if the engine's cgroup lets its children use it.
pub(crate) fn detect() -> Result<Hierarchy, String> {
    let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = mounts();
    // cgroup v1: "4:memory:/path".
    for line in own.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctrls, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        if !ctrls.split(',').any(|c| c == "memory") {
            continue;
        }
        let m = mounts
            .iter()
            .find(|(_, _, t, o)| t == "cgroup" && o.split(',').any(|c| c == "memory"));
        let Some((root, mount, _, _)) = m else {
            return Err(
                "the memory controller is in a cgroup v1 hierarchy that is not mounted here".into(),
            );
        };
        let base = join_cgroup(mount, root, path);
        if !base.join("memory.limit_in_bytes").exists() {
            return Err(format!(
                "{} has no memory.limit_in_bytes (cgroup v1 memory controller)",
                base.display()
            ));
        }
        return Ok(Hierarchy {
            version: Version::V1,
            base,
        });
    }
    // cgroup v2: "0::/path".
    let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        return Err("no memory cgroup controller: neither cgroup v1 nor v2 has one".into());
    };
    let Some((root, mount, _, _)) = mounts.iter().find(|(_, _, t, _)| t == "cgroup2") else {
        return Err("no memory cgroup controller (cgroup v2 is not mounted)".into());
    };
    let base = join_cgroup(mount, root, path);
    let has = |f: &str| {
        fs::read_to_string(base.join(f))
            .map(|s| s.split_whitespace().any(|c| c == "memory"))
            .unwrap_or(false)
    };
    if !has("cgroup.subtree_control") {
        let why = if has("cgroup.controllers") {
            "its cgroup.subtree_control does not enable it, and cgroup v2 allows that only in \
             a cgroup without processes (or the root): run the engine from the root cgroup or \
             from a cgroup whose children get +memory"
        } else {
            "the memory controller is not available there (cgroup.controllers)"
        };
        return Err(format!(
            "cgroup v2 at {}: new child cgroups would have no memory controller: {why}",
            base.display()
        ));
    }
    Ok(Hierarchy {
        version: Version::V2,
        base,
    })
}

/// Check the plan's memcg steps against the host (nothing is changed).
/// Returns notes for stderr.
pub(crate) fn preflight(plan: &Plan) -> Result<Option<(Hierarchy, Vec<String>)>, NativeError> {
    if plan.memcgs.is_empty() {
        return Ok(None);
    }
    let h = detect().map_err(|why| {
        NativeError::Refused(format!(
            "{}: memcg steps need a memory cgroup controller: {why}",
            plan.memcgs[0].at
        ))
    })?;
    let mut notes = Vec::new();
    match h.version {
        Version::V1 => {
            refuse_v2_only(plan)?;
            if let Some(at) = &plan.reclaim_at {
                notes.push(format!(
                    "{at}: memcg_reclaim runs on cgroup v1 here, which has no memory.reclaim: it \
                     is emulated by lowering the cgroup's memory.limit_in_bytes to its usage \
                     minus the amount (the kernel reclaims until the usage fits) and then \
                     putting the limit back"
                ));
            }
            if let Some(m) = plan.memcgs.iter().find(|m| m.memsw_limit.is_some()) {
                if !h.base.join("memory.memsw.limit_in_bytes").exists() {
                    return Err(NativeError::Refused(format!(
                        "{}: memsw_limit: {} has no memory.memsw.limit_in_bytes (swap \
                         accounting is off: boot with swapaccount=1)",
                        m.at,
                        h.base.display()
                    )));
                }
            }
            if !h.base.join("memory.force_empty").exists() && plan.force_empty_at.is_some() {
                return Err(NativeError::Refused(format!(
                    "{}: force_empty: {} has no memory.force_empty",
                    plan.force_empty_at.as_deref().unwrap_or_default(),
                    h.base.display()
                )));
            }
        }
        Version::V2 => {
            if let Some(m) = plan.memcgs.iter().find(|m| m.memsw_limit.is_some()) {
                return Err(NativeError::Refused(format!(
                    "{}: memsw_limit is cgroup v1's memory.memsw.limit_in_bytes, and this \
                     host's memory controller is on cgroup v2, which limits swap apart \
                     (use swap_max)",
                    m.at
                )));
            }
            if let Some(at) = &plan.force_empty_at {
                return Err(NativeError::Refused(format!(
                    "{at}: force_empty is cgroup v1's memory.force_empty, and this host's memory \
                     controller is on cgroup v2, which has no such file (use memcg_reclaim)"
                )));
            }
            if plan.reclaim_at.is_some() && !h.base.join("memory.reclaim").exists() {
                return Err(NativeError::Refused(format!(
                    "{}: memcg_reclaim needs cgroup v2's memory.reclaim (Linux 5.19+), which {} \
                     does not have",
                    plan.reclaim_at.as_deref().unwrap_or_default(),
                    h.base.display()
                )));
            }
        }
    }
    notes.push(format!(
        "memcg steps: {} memory cgroup(s) under {} (cgroup {})",
        plan.memcgs.len(),
        h.base.display(),
        if h.version == Version::V1 { "v1" } else { "v2" }
    ));
    Ok(Some((h, notes)))
}

/// The cgroup v2 files a `memcg` step sets when the cgroup is made: the
/// step's key, the file, and the value (None: left as created).
fn v2_settings(m: &MemcgDecl) -> [(&'static str, &'static str, Option<u64>); 6] {
    [
        ("zswap_max", "memory.zswap.max", m.zswap_max),
        ("swap_max", "memory.swap.max", m.swap_max),
        ("swap_high", "memory.swap.high", m.swap_high),
        ("high", "memory.high", m.high),
        ("min", "memory.min", (m.min != 0).then_some(m.min)),
        ("low", "memory.low", (m.low != 0).then_some(m.low)),
    ]
}

/// Refuse, before the run changes anything, what only cgroup v2 has on a
/// cgroup v1 host: memory.reclaim's `swappiness=`, memory.zswap.max,
/// memory.swap.max, memory.swap.high, memory.high, memory.min and
/// memory.low.
fn refuse_v2_only(plan: &Plan) -> Result<(), NativeError> {
    if let Some(at) = &plan.reclaim_swappiness_at {
        return Err(NativeError::Refused(format!(
            "{at}: swappiness is an argument of cgroup v2's memory.reclaim, which this host's \
             cgroup v1 memory controller does not have: run it with `--engine vm`"
        )));
    }
    if let Some(at) = &plan.high_at {
        return Err(NativeError::Refused(format!(
            "{at}: memcg_high writes cgroup v2's memory.high, which this host's cgroup v1 \
             memory controller does not have: run it with `--engine vm`"
        )));
    }
    for m in &plan.memcgs {
        let Some((key, file, _)) = v2_settings(m).into_iter().find(|s| s.2.is_some()) else {
            continue;
        };
        let also = match key {
            "zswap_max" => " (and zswap runs only in guests)",
            "swap_max" | "swap_high" => {
                " (v1's memory.memsw.limit_in_bytes limits memory and swap together, which \
                 the model does not)"
            }
            _ => "",
        };
        return Err(NativeError::Refused(format!(
            "{}: {key} is cgroup v2's {file}, which this host's cgroup v1 memory controller \
             does not have{also}: run it with `--engine vm`",
            m.at
        )));
    }
    Ok(())
}

/// What the workload needs to run the steps of one cgroup, prepared before
/// it starts (it allocates nothing while measured).
#[derive(Debug)]
pub(crate) struct WlCgroup {
    pub procs: CString,
    pub limit: CString,
    pub usage: CString,
    /// v2 memory.reclaim.
    pub reclaim: Option<CString>,
    /// v1 memory.force_empty.
    pub force_empty: Option<CString>,
    /// v2 memory.high.
    pub high: Option<CString>,
    /// The limit to put back after the v1 reclaim emulation ("-1\n" or the
    /// step's limit).
    pub restore_limit: Vec<u8>,
    /// What the limit file takes for "no limit" ("-1\n" or "max\n").
    pub unlimited: &'static [u8],
}

/// The run's cgroups: their directories and limits, and what the workload
/// needs.
#[derive(Debug)]
pub(crate) struct Cgroups {
    pub hierarchy: Hierarchy,
    dirs: Vec<(PathBuf, Option<u64>)>,
    /// Per cgroup: does it have a memory+swap limit (v1)?
    memsw: Vec<bool>,
    pub wl: Vec<WlCgroup>,
    /// cgroup v2: each cgroup's memory.peak, open since the phase's reset
    /// (the reset holds for that open file only).
    peaks: std::sync::Mutex<Vec<Option<fs::File>>>,
}

fn cstr(p: &Path) -> Result<CString, NativeError> {
    sys::cstr(p).map_err(|e| NativeError::Io {
        at: "native engine".into(),
        what: format!("{}: {e}", p.display()),
    })
}

impl Cgroups {
    /// Name the cgroups of `plan` (`foliosim-<engine pid>-<n>`).
    pub(crate) fn new(h: Hierarchy, plan: &Plan) -> Result<Cgroups, NativeError> {
        let pid = sys::getpid();
        let mut dirs = Vec::new();
        let mut wl = Vec::new();
        for (n, m) in plan.memcgs.iter().enumerate() {
            let dir = h.base.join(format!("foliosim-{pid}-{n}"));
            let restore = match m.limit {
                Some(l) => l.to_string(),
                None => h.unlimited().to_string(),
            };
            wl.push(WlCgroup {
                procs: cstr(&dir.join("cgroup.procs"))?,
                limit: cstr(&dir.join(h.limit_file()))?,
                usage: cstr(&dir.join(h.usage_file()))?,
                reclaim: match h.version {
                    Version::V2 => Some(cstr(&dir.join("memory.reclaim"))?),
                    Version::V1 => None,
                },
                force_empty: match h.version {
                    Version::V1 => Some(cstr(&dir.join("memory.force_empty"))?),
                    Version::V2 => None,
                },
                high: match h.version {
                    Version::V2 => Some(cstr(&dir.join("memory.high"))?),
                    Version::V1 => None,
                },
                restore_limit: format!("{restore}\n").into_bytes(),
                unlimited: match h.version {
                    Version::V1 => b"-1\n",
                    Version::V2 => b"max\n",
                },
            });
            dirs.push((dir, m.limit));
        }
        Ok(Cgroups {
            hierarchy: h,
            dirs,
            memsw: plan
                .memcgs
                .iter()
                .map(|m| m.memsw_limit.is_some())
                .collect(),
            wl,
            peaks: Default::default(),
        })
    }

    /// Create every cgroup (recorded in the guard first) and set its limit.
    pub(crate) fn create(&self, g: &HostGuard, plan: &Plan) -> Result<(), NativeError> {
        for (i, (dir, limit)) in self.dirs.iter().enumerate() {
            let at = &plan.memcgs[i].at;
            let err = |what: String| NativeError::Io {
                at: at.clone(),
                what,
            };
            let mut l = g.lock()?;
            l.push(Undo::Cgroup {
                dir: dir.clone(),
                parent: self.hierarchy.base.clone(),
            });
            fs::create_dir(dir)
                .map_err(|e| err(format!("creating the memory cgroup {}: {e}", dir.display())))?;
            if self.hierarchy.version == Version::V1 {
                // A v1 cgroup takes its parent's memory.swappiness when it
                // is created (mem_cgroup_css_alloc()), and ours is made
                // under the runner's cgroup, not the root: give it
                // vm.swappiness (the scenario's), as a cgroup of the root
                // would have, and as every cgroup reads it on v2.
                let f = dir.join("memory.swappiness");
                let v = fs::read_to_string("/proc/sys/vm/swappiness")
                    .map_err(|e| err(format!("reading /proc/sys/vm/swappiness: {e}")))?;
                fs::write(&f, v.trim())
                    .map_err(|e| err(format!("writing {} to {}: {e}", v.trim(), f.display())))?;
            }
            if let Some(limit) = limit {
                let f = dir.join(self.hierarchy.limit_file());
                fs::write(&f, limit.to_string())
                    .map_err(|e| err(format!("writing {limit} to {}: {e}", f.display())))?;
            }
            // cgroup v1 only (refused on v2 before the run), after the
            // memory limit, which it must not be below.
            if let Some(memsw) = plan.memcgs[i].memsw_limit {
                let f = dir.join("memory.memsw.limit_in_bytes");
                fs::write(&f, memsw.to_string())
                    .map_err(|e| err(format!("writing {memsw} to {}: {e}", f.display())))?;
            }
            // cgroup v2 only (refused on v1 before the run).
            for (_, file, v) in v2_settings(&plan.memcgs[i]) {
                if let Some(v) = v {
                    let f = dir.join(file);
                    fs::write(&f, v.to_string())
                        .map_err(|e| err(format!("writing {v} to {}: {e}", f.display())))?;
                }
            }
        }
        Ok(())
    }
}

impl Cgroups {
    /// Reset every existing cgroup's peak usage to its usage now, at a
    /// phase start (v1: a write to memory.max_usage_in_bytes,
    /// `mem_cgroup_reset()`; v2: a write to memory.peak, kept open so that
    /// the phase end reads the same file, `peak_write()`).
    pub(crate) fn reset_peaks(&self) {
        let mut peaks = self.peaks.lock().unwrap_or_else(|e| e.into_inner());
        peaks.clear();
        for (dir, _) in &self.dirs {
            let f = dir.join(self.hierarchy.peak_file());
            let open = match self.hierarchy.version {
                Version::V1 => {
                    let _ = fs::write(&f, "0");
                    let _ = fs::write(dir.join("memory.memsw.max_usage_in_bytes"), "0");
                    None
                }
                Version::V2 => fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&f)
                    .and_then(|mut file| {
                        io::Write::write_all(&mut file, b"reset\n")?;
                        Ok(file)
                    })
                    .ok(),
            };
            peaks.push(open);
        }
    }

    /// Usage and peak usage of cgroup `i` (directory `dir`), in bytes.
    fn usage(&self, i: usize, dir: &Path) -> (Option<i64>, Option<i64>) {
        let parse = |t: String| t.trim().parse::<i64>().ok();
        let usage = fs::read_to_string(dir.join(self.hierarchy.usage_file()))
            .ok()
            .and_then(parse);
        let mut peaks = self.peaks.lock().unwrap_or_else(|e| e.into_inner());
        let peak = match peaks.get_mut(i).and_then(Option::as_mut) {
            Some(file) => {
                let mut t = String::new();
                io::Seek::rewind(file)
                    .and_then(|()| io::Read::read_to_string(file, &mut t))
                    .ok()
                    .and_then(|_| parse(t))
            }
            None => fs::read_to_string(dir.join(self.hierarchy.peak_file()))
                .ok()
                .and_then(parse),
        };
        (usage, peak)
    }

    /// The `memory.stat` fields of every cgroup of the run that exists, as
    /// `memcg/<n>/<field>` (n: the memcg step, counted from 0 in step
    /// order; cgroup v1's hierarchical `total_*` and limits left out).
    pub(crate) fn stats(&self) -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        for (n, (dir, _)) in self.dirs.iter().enumerate() {
            let Ok(text) = fs::read_to_string(dir.join("memory.stat")) else {
                continue;
            };
            for (k, v) in crate::host::parse_name_values(&text) {
                if k.starts_with("total_") || k.starts_with("hierarchical_") {
                    continue;
                }
                out.insert(format!("memcg/{n}/{k}"), v);
            }
            let (usage, peak) = self.usage(n, dir);
            if let Some(v) = usage {
                out.insert(format!("memcg/{n}/usage_bytes"), v);
            }
            if let Some(v) = peak {
                out.insert(format!("memcg/{n}/peak_bytes"), v);
            }
            // v1: how many charges hit the limit; v2 (no failcnt): the
            // `max` and `high` events of memory.events.
            match self.hierarchy.version {
                Version::V1 => {
                    if let Ok(t) = fs::read_to_string(dir.join("memory.failcnt")) {
                        if let Ok(v) = t.trim().parse() {
                            out.insert(format!("memcg/{n}/failcnt"), v);
                        }
                    }
                    // The memory+swap counter of a cgroup with its limit.
                    if self.memsw[n] {
                        for (file, name) in [
                            ("memory.memsw.usage_in_bytes", "memsw_usage_bytes"),
                            ("memory.memsw.max_usage_in_bytes", "memsw_peak_bytes"),
                        ] {
                            if let Ok(t) = fs::read_to_string(dir.join(file)) {
                                if let Ok(v) = t.trim().parse() {
                                    out.insert(format!("memcg/{n}/{name}"), v);
                                }
                            }
                        }
                    }
                }
                Version::V2 => {
                    let t = fs::read_to_string(dir.join("memory.events")).unwrap_or_default();
                    for (k, v) in crate::host::parse_name_values(&t) {
                        if k == "max" || k == "high" || k == "low" {
                            out.insert(format!("memcg/{n}/events_{k}"), v);
                        }
                    }
                    // memory.swap.current and the max, fail and high
                    // events of memory.swap.events.
                    if let Ok(t) = fs::read_to_string(dir.join("memory.swap.current")) {
                        if let Ok(v) = t.trim().parse() {
                            out.insert(format!("memcg/{n}/swap_bytes"), v);
                        }
                    }
                    let t = fs::read_to_string(dir.join("memory.swap.events")).unwrap_or_default();
                    for (k, v) in crate::host::parse_name_values(&t) {
                        if k == "max" || k == "fail" || k == "high" {
                            out.insert(format!("memcg/{n}/swap_events_{k}"), v);
                        }
                    }
                }
            }
        }
        out
    }
}

/// The pids in a cgroup.
fn procs(dir: &Path) -> io::Result<Vec<String>> {
    Ok(fs::read_to_string(dir.join("cgroup.procs"))?
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// Remove cgroup `dir`, moving its processes to `parent` first (waiting up
/// to 5 s for exiting ones). Ok(false) if it did not exist.
pub(crate) fn remove(dir: &Path, parent: &Path) -> Result<bool, String> {
    if !dir.exists() {
        return Ok(false);
    }
    let t0 = Instant::now();
    loop {
        if let Ok(pids) = procs(dir) {
            for pid in pids {
                let _ = fs::write(parent.join("cgroup.procs"), &pid);
            }
        }
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) if t0.elapsed() > Duration::from_secs(5) => {
                let left = procs(dir).unwrap_or_default().join(" ");
                return Err(format!(
                    "removing the memory cgroup {}: {e} (processes left: {left})",
                    dir.display()
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_paths() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(
            join_cgroup(Path::new("/sys/fs/cgroup/memory"), "/", "/x/y"),
            PathBuf::from("/sys/fs/cgroup/memory/x/y")
        );
        assert_eq!(
            join_cgroup(Path::new("/sys/fs/cgroup/memory"), "/x", "/x/y"),
            PathBuf::from("/sys/fs/cgroup/memory/y")
        );
        assert_eq!(
            join_cgroup(Path::new("/sys/fs/cgroup"), "/", "/"),
            PathBuf::from("/sys/fs/cgroup/")
        );
    }

    #[test]
    fn the_engine_cgroup_is_found_when_there_is_one() {
        match detect() {
            Ok(h) => assert!(h.base.is_dir(), "{h:?}"),
            Err(e) => eprintln!("no memory cgroup here: {e}"),
        }
    }
}

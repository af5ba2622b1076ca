//! The host knobs of a native run, from the knob table
//! ([`foliosim_uapi::knobs::KNOBS`]): which files are written (and put
//! back by the guard), which values are refused because the host cannot
//! take them, and the read-ahead check of the files' device.

use std::path::{Path, PathBuf};

use foliosim_scenario::{Scenario, System};
use foliosim_uapi::knobs::{self, Access, Instance, Value};

use crate::{host, NativeError};

/// The value a scenario gives knob instance `inst` (None: the scenario's
/// `System` has no field for it).
fn value(system: &mut System, inst: &Instance) -> Option<Value> {
    system.knob_mut(inst.knob, inst.kb).map(|f| f.get())
}

/// The writes of the scenario's host knobs, in table order: every knob the
/// native engine sets ([`Access::Set`]), defaults included, so that a host
/// changed by hand does not leak into the result; in a guest also the
/// debugfs knobs that differ from the default. Refused when a file is
/// missing and the run needs it.
pub(crate) fn writes(sc: &Scenario, guest: bool) -> Result<Vec<(PathBuf, String)>, NativeError> {
    let mut system = sc.system.clone();
    let mut out = Vec::new();
    for inst in knobs::instances() {
        let (Some(host), Some(path)) = (inst.knob.host, &inst.path) else {
            continue;
        };
        let Some(value) = value(&mut system, &inst) else {
            continue;
        };
        let path = PathBuf::from(path);
        match host.access {
            Access::Set { required, lacks } => {
                if !path.exists() {
                    if required {
                        return Err(NativeError::Refused(format!(
                            "{} does not exist: the host kernel has no {}",
                            path.display(),
                            lacks.unwrap_or("such knob")
                        )));
                    }
                    if value == inst.default {
                        continue;
                    }
                    let lacks = lacks.map_or_else(String::new, |l| format!(" (no {l})"));
                    return Err(NativeError::Refused(format!(
                        "{} = {value}: {} does not exist on this host{lacks}",
                        inst.key,
                        path.display()
                    )));
                }
            }
            // A guest's debugfs and module parameters are its own: the
            // value is written there.
            Access::Debugfs | Access::GuestOnly { .. } if guest && value != inst.default => {}
            Access::Debugfs | Access::Device | Access::GuestOnly { .. } => continue,
        }
        out.push((path, inst.knob.host_spelling(value)));
    }
    Ok(out)
}

/// Refuse a value of a debugfs knob other than its default outside a guest
/// (the host's debugfs cannot be read or written here), and of a knob that
/// would change the host for good ([`Access::GuestOnly`]).
pub(crate) fn check_host_knobs(sc: &Scenario, guest: bool) -> Result<(), NativeError> {
    if guest {
        return Ok(());
    }
    let mut system = sc.system.clone();
    for inst in knobs::instances() {
        let access = inst.knob.host.map(|h| h.access);
        if let Some(Access::GuestOnly { why }) = access {
            match value(&mut system, &inst) {
                Some(v) if v != inst.default => {
                    return Err(NativeError::Refused(format!(
                        "{key} = {v}: the native engine never changes {key} on the host: {why}",
                        key = inst.key,
                    )))
                }
                _ => continue,
            }
        }
        if access != Some(Access::Debugfs) {
            continue;
        }
        match value(&mut system, &inst) {
            Some(v) if v != inst.default => {
                return Err(NativeError::Refused(format!(
                    "{key} = {v}: the host's {key} (debugfs) cannot be read or written here \
                     (EPERM), so natively only the kernel default {} can run; use `foliosim \
                     run` to simulate other values",
                    inst.default,
                    key = inst.key,
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// `read_ahead_kb` against the device holding `dir` (the work directory or
/// its nearest existing ancestor): see [`check_device_knob`]; a guest
/// writes the device's bdi file, also when it has the value if `rewrite`.
pub(crate) fn check_read_ahead(
    sc: &Scenario,
    dir: &Path,
    guest: bool,
    rewrite: bool,
    notes: &mut Vec<String>,
) -> Result<Option<(PathBuf, String)>, NativeError> {
    let key = knobs::READ_AHEAD_KB.key;
    let found = host::device_read_ahead_kb(dir).map(|(dev, kb)| {
        let bdi = host::bdi_read_ahead_path(dir);
        (dev, bdi, kb)
    });
    let want = sc.system.read_ahead_kb;
    check_device_knob(key, want, found, dir, guest, rewrite, notes)
}

/// `max_sectors_kb` against the device holding `dir`: see
/// [`check_device_knob`]; a guest writes the device's queue file.
pub(crate) fn check_max_sectors(
    sc: &Scenario,
    dir: &Path,
    guest: bool,
    notes: &mut Vec<String>,
) -> Result<Option<(PathBuf, String)>, NativeError> {
    let key = knobs::MAX_SECTORS_KB.key;
    let found = host::device_queue_attr(dir, key).map(|(dev, path, kb)| (dev, Some(path), kb));
    let want = sc.system.max_sectors_kb;
    check_device_knob(key, want, found, dir, guest, false, notes)
}

/// A knob of the device holding `dir` (`found`: the device, the file a
/// guest writes, the value it has): a host run refuses another value than
/// `want` (the engine does not change the host's disk), a guest sets it
/// (the returned write, put back by the guard), also when it has the
/// value if `rewrite`. Unknown (no block device, as for a file on tmpfs):
/// a note.
fn check_device_knob(
    key: &str,
    want: u64,
    found: Option<(String, Option<PathBuf>, u64)>,
    dir: &Path,
    guest: bool,
    rewrite: bool,
    notes: &mut Vec<String>,
) -> Result<Option<(PathBuf, String)>, NativeError> {
    match found {
        Some((_, path, kb)) if (kb != want || rewrite) && guest => {
            let p = path.ok_or_else(|| {
                NativeError::Refused(format!("{key} of {}: no file to write", dir.display()))
            })?;
            Ok(Some((p, want.to_string())))
        }
        Some((dev, _, kb)) if kb != want => Err(NativeError::Refused(format!(
            "{key} = {want} but the device holding {} ({dev}) has {key} = {kb}; the native \
             engine does not change the host's disk: run with --set {key}={kb}",
            dir.display()
        ))),
        Some(_) => Ok(None),
        None => {
            notes.push(format!(
                "the {key} of the device holding {} is unknown; {key} = {want} is not checked",
                dir.display()
            ));
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(set: &[(&str, &str)]) -> Scenario {
        let set: Vec<(String, String)> = set
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        foliosim_scenario::parse_str("t.toml", "", &set).expect("valid scenario")
    }

    #[test]
    fn debugfs_knobs_run_natively_only_at_the_default() {
        assert!(check_host_knobs(&sc(&[]), false).is_ok());
        let other = sc(&[("fault_around_bytes", "4096")]);
        assert!(check_host_knobs(&other, true).is_ok());
        match check_host_knobs(&other, false) {
            Err(NativeError::Refused(why)) => {
                // mm/memory.c: fault_around_pages = 65536 >> PAGE_SHIFT.
                assert!(why.starts_with("fault_around_bytes = 4096: "), "{why}");
                assert!(why.contains("kernel default 65536"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn zswap_runs_only_in_guests() {
        // Enabling zswap once would change the host until reboot: natively
        // refused with the reason, never written; a guest writes it (the
        // module parameters spell flags N / Y), the enable last.
        let on = sc(&[("zswap.enabled", "1"), ("zswap.max_pool_percent", "5")]);
        match check_host_knobs(&on, false) {
            Err(NativeError::Refused(why)) => {
                assert!(why.contains("zswap_ever_enabled"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert!(check_host_knobs(&on, true).is_ok());
        let default = writes(&sc(&[]), false).unwrap_or_default();
        assert!(default
            .iter()
            .all(|(p, _)| !p.starts_with("/sys/module/zswap")));
        if let Ok(guest) = writes(&on, true) {
            let z: Vec<_> = guest
                .iter()
                .filter(|(p, _)| p.starts_with("/sys/module/zswap"))
                .collect();
            let names: Vec<_> = z
                .iter()
                .map(|(p, v)| (p.to_str().unwrap(), v.as_str()))
                .collect();
            assert_eq!(
                names,
                [
                    ("/sys/module/zswap/parameters/max_pool_percent", "5"),
                    ("/sys/module/zswap/parameters/enabled", "Y"),
                ]
            );
        }
    }

    /// Every write names an existing file of the table with the host's
    /// spelling; the debugfs knob only in a guest and off its default.
    #[test]
    fn writes_follow_the_table() {
        if !Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            return; // a host without THP refuses every native run
        }
        let s = sc(&[("vma_ra_enabled", "0"), ("fault_around_bytes", "4096")]);
        let host = writes(&s, false).expect("THP host");
        assert!(host.iter().all(|(p, _)| p.exists()));
        let get = |w: &[(PathBuf, String)], f: &str| {
            w.iter()
                .find(|(p, _)| p == Path::new(f))
                .map(|(_, v)| v.clone())
        };
        let thp = "/sys/kernel/mm/transparent_hugepage/enabled";
        assert_eq!(get(&host, thp).as_deref(), Some("madvise"));
        let debugfs = "/sys/kernel/debug/fault_around_bytes";
        assert_eq!(get(&host, debugfs), None);
        if Path::new("/sys/kernel/mm/swap/vma_ra_enabled").exists() {
            // The sysfs file reads and takes true / false.
            let ra = get(&host, "/sys/kernel/mm/swap/vma_ra_enabled");
            assert_eq!(ra.as_deref(), Some("false"));
        }
        let guest = writes(&s, true).expect("THP host");
        assert_eq!(get(&guest, debugfs).as_deref(), Some("4096"));
        assert_eq!(guest.len(), host.len() + 1);
    }
}

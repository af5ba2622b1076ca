//! The cost model (design layer 3, "simulated hardware"): turns the counted
//! primitives of a phase into modelled time with a [`Profile`] of per-event
//! costs, and fits such profiles to native measurements ([`fit`]).
//!
//! Modelled time is linear in the counts: `t = Σ count(c) · ns(c)` over the
//! counters the profile prices. What that leaves out (caches, contention,
//! I/O latency, other CPUs) is listed in docs/cost-model.md.

#![forbid(unsafe_code)]

mod builtin;
pub mod fit;
pub mod nnls;
pub mod profile;

use std::collections::BTreeMap;

pub use profile::{default_profile_name, CostError, Profile};

use foliosim_report::{PhaseTime, Report};

/// The modelled time of one phase's counters: the total and every priced
/// counter's share (ns, non-zero ones only).
pub fn phase_time(profile: &Profile, counters: &BTreeMap<String, i64>) -> PhaseTime {
    let mut breakdown = BTreeMap::new();
    let mut total = 0.0;
    for (name, cost) in &profile.costs {
        let n = counters.get(name).copied().unwrap_or(0).max(0) as f64;
        let ns = n * cost.ns;
        if ns > 0.0 {
            total += ns;
            breakdown.insert(name.clone(), ns.round() as u64);
        }
    }
    PhaseTime {
        profile: profile.name.clone(),
        modelled_ns: total.round() as u64,
        breakdown,
    }
}

/// Modelled time for every phase of a simulated report. A profile for
/// another architecture is refused (its costs describe another CPU's
/// primitives).
pub fn annotate(report: &mut Report, profile: &Profile) -> Result<(), String> {
    if report.arch != profile.arch {
        return Err(format!(
            "cost profile `{}` is for {}, the run simulates {}: choose a profile for {} \
             (--profile)",
            profile.name, profile.arch, report.arch, report.arch
        ));
    }
    for p in &mut report.phases {
        p.time = Some(phase_time(profile, &p.counters));
    }
    Ok(())
}

/// The cost profile `profile` (a file or a shipped profile's name) or,
/// without one, the shipped profile of `arch` (None if there is none).
/// A profile for another architecture is refused (its costs describe
/// another CPU's primitives).
pub fn profile_for(profile: Option<&str>, arch: &str) -> Result<Option<Profile>, String> {
    let name = match profile {
        Some(p) => p.to_string(),
        None => match default_profile_name(arch) {
            Some(n) => n.to_string(),
            None => return Ok(None),
        },
    };
    let prof = Profile::resolve(&name).map_err(|e| e.to_string())?;
    if prof.arch != arch {
        return Err(format!(
            "cost profile `{}` is for {}, the run simulates {arch}: choose a profile for {arch} \
             (--profile)",
            prof.name, prof.arch
        ));
    }
    Ok(Some(prof))
}

/// Modelled time for a simulated report with the profile `profile` (a
/// file or a shipped profile's name), or, without one, the shipped
/// profile of the report's architecture (none: the report is left as it
/// is). The `--profile` option of `run` and `compare`, sweeps and the
/// Python binding.
pub fn add_time(report: &mut Report, profile: Option<&str>) -> Result<(), String> {
    match profile_for(profile, &report.arch)? {
        Some(prof) => annotate(report, &prof),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_is_the_priced_sum() {
        let p = Profile::parse(
            "t.toml",
            "name = \"t\"\narch = \"x86_64\"\ncpu = \"c\"\n[cost]\n\
             \"pgfault\" = { ns = 100, source = \"s\" }\n\
             \"sim/page_zero\" = { ns = 2.5, source = \"s\" }\n",
        )
        .unwrap();
        let counters = BTreeMap::from([
            ("pgfault".to_string(), 10i64),
            ("sim/page_zero".to_string(), 4),
            ("sim/ptep_get".to_string(), 1000),
            ("nr_inactive_anon".to_string(), -5),
        ]);
        let t = phase_time(&p, &counters);
        assert_eq!(t.modelled_ns, 1010);
        assert_eq!(t.breakdown["pgfault"], 1000);
        assert_eq!(t.breakdown["sim/page_zero"], 10);
        assert_eq!(t.breakdown.len(), 2);
    }

    #[test]
    fn add_time_takes_the_arch_profile_or_the_one_named() {
        let report = |arch: &str| Report {
            arch: arch.into(),
            phases: vec![foliosim_report::Phase {
                name: "p".into(),
                counters: BTreeMap::from([("pgfault".to_string(), 3i64)]),
                ..Default::default()
            }],
            ..Default::default()
        };
        for arch in ["x86_64", "arm64"] {
            let mut r = report(arch);
            add_time(&mut r, None).unwrap();
            let t = r.phases[0].time.as_ref().expect("timed");
            assert_eq!(Some(t.profile.as_str()), default_profile_name(arch));
            assert!(t.breakdown["pgfault"] > 0);
        }
        // A profile of another CPU is refused; an unknown one is an error.
        let mut r = report("x86_64");
        let e = add_time(&mut r, Some("arm64-neoverse")).unwrap_err();
        assert!(e.contains("is for arm64"), "{e}");
        assert!(add_time(&mut r, Some("no-such-cpu")).is_err());
        assert!(r.phases[0].time.is_none());
        // An architecture without a shipped profile stays untimed.
        let mut r = report("riscv64");
        add_time(&mut r, None).unwrap();
        assert!(r.phases[0].time.is_none());
    }
}

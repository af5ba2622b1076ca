//! `foliosim calibrate --check PROFILE`: a profile's error on measured
//! phases, without fitting (the out-of-sample check of a shipped profile
//! against runs it was not fitted to).

use std::fmt::Write as _;

use foliosim_cost::fit::{median, rel_err};
use foliosim_cost::{phase_time, Profile};

use super::{pct, Measured};

/// One line per phase measured natively for at least `min_ms` (the same
/// threshold as the fit): the median native time, the profile's modelled
/// time (as `foliosim run` computes it) and the error; then the median and
/// worst absolute errors.
pub(super) fn check_text(
    profile: &Profile,
    phases: &[Measured],
    min_ms: f64,
) -> Result<String, String> {
    let mut rows: Vec<(&str, f64, f64, f64)> = phases
        .iter()
        .filter_map(|m| {
            let med = median(&m.cpu);
            if med.is_nan() || med < min_ms * 1e6 {
                return None;
            }
            let model = phase_time(profile, &m.counters).modelled_ns as f64;
            Some((m.name.as_str(), med, model, rel_err(model, med)))
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(b.0));
    let Some(worst) = rows.iter().max_by(|a, b| a.3.abs().total_cmp(&b.3.abs())) else {
        return Err(format!(
            "--check: no phase measured for at least {min_ms} ms"
        ));
    };
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(5).max(5);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{:<w$}  {:>11}  {:>11}  {:>8}",
        "phase", "measured ms", "modelled ms", "error"
    );
    for (name, med, model, err) in &rows {
        let _ = writeln!(
            text,
            "{name:<w$}  {:>11.3}  {:>11.3}  {:>8}",
            med / 1e6,
            model / 1e6,
            pct(*err)
        );
    }
    let errs: Vec<f64> = rows.iter().map(|r| r.3.abs()).collect();
    let _ = writeln!(
        text,
        "{} phases under profile {}: median |error| {:.1}%, worst {:.1}% ({})",
        rows.len(),
        profile.name,
        100.0 * median(&errs),
        100.0 * worst.3.abs(),
        worst.0
    );
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn phase(name: &str, faults: i64, cpu_ms: &[f64]) -> Measured {
        Measured {
            name: name.into(),
            counters: BTreeMap::from([("pgfault".to_string(), faults)]),
            cpu: cpu_ms.iter().map(|ms| ms * 1e6).collect(),
            wall: Vec::new(),
            fault_mismatch: None,
        }
    }

    #[test]
    fn errors_against_the_median_and_the_worst_phase() {
        // 1 µs per fault: 2000 faults model 2 ms, 16000 model 16 ms.
        let p = Profile::parse(
            "t.toml",
            "name = \"t\"\narch = \"x86_64\"\ncpu = \"c\"\n[cost]\n\
             \"pgfault\" = { ns = 1000, source = \"s\" }\n",
        )
        .unwrap();
        let phases = [
            // median 2.5 ms: modelled 2 ms is -20.0%
            phase("b/x", 2000, &[2.0, 2.5, 9.0]),
            // median 10 ms: modelled 16 ms is +60.0%
            phase("a/y", 16000, &[10.0]),
            // under --min-ms 1: not listed
            phase("c/z", 100, &[0.5]),
        ];
        let text = check_text(&p, &phases, 1.0).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        // Sorted by name; 16 ms modelled against 10 ms measured is +60%.
        assert!(
            lines[1].starts_with("a/y") && lines[1].ends_with("+60.0%"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("b/x") && lines[2].ends_with("-20.0%"),
            "{text}"
        );
        assert_eq!(
            lines[3],
            "2 phases under profile t: median |error| 40.0%, worst 60.0% (a/y)"
        );
        assert!(check_text(&p, &phases[2..], 1.0).is_err());
    }
}

//! Base-vs-patched arithmetic and the three renderings.

use foliosim_explore::diff::{self, Cell};
use foliosim_explore::{Row, Table};
use foliosim_testkit::{assert_contains, assert_starts_with};

fn row(point: u64, grid: [&str; 2], arch: &str, name: &str, value: i128) -> Row {
    Row {
        point,
        grid: grid.map(String::from).to_vec(),
        scenario: "s".into(),
        arch: arch.into(),
        engine: "sim".into(),
        phase: "measured".into(),
        kind: if name == "modelled_ns" {
            "time"
        } else {
            "counter"
        }
        .into(),
        name: name.into(),
        value: Some(value),
        error: String::new(),
    }
}

/// A sweep over switch × folio_size × arch with chosen values.
fn table() -> Table {
    let mut t = Table::new(&["switch".into(), "folio_size".into(), "arch".into()]);
    let mut p = 0;
    for size in ["4K", "64K"] {
        for arch in ["x86_64", "arm64"] {
            for (sw, ptep, ns) in [("0", 200, 1000), ("1", 150, 1100)] {
                let ptep = if size == "4K" { 200 } else { ptep };
                t.rows.push(row(p, [sw, size], arch, "pgfault", 256));
                t.rows.push(row(p, [sw, size], arch, "sim/ptep_get", ptep));
                // 0 → 7 on x86 only: a zero base.
                let z = if arch == "x86_64" && sw == "1" { 7 } else { 0 };
                t.rows.push(row(p, [sw, size], arch, "sim/tlbi_page", z));
                t.rows.push(row(p, [sw, size], arch, "modelled_ns", ns));
                p += 1;
            }
        }
    }
    t
}

#[test]
fn cell_arithmetic() {
    let c = Cell {
        base: Some(200),
        patched: Some(150),
    };
    assert_eq!(c.change(), Some(-50));
    assert_eq!(c.percent(), Some(-25.0));
    let grow = Cell {
        base: Some(3),
        patched: Some(4),
    };
    assert!((grow.percent().unwrap() - 100.0 / 3.0).abs() < 1e-12);
    // A zero base has no percentage, whatever the patched value.
    for patched in [0, 5] {
        let z = Cell {
            base: Some(0),
            patched: Some(patched),
        };
        assert_eq!(z.change(), Some(patched));
        assert_eq!(z.percent(), None);
    }
    let missing = Cell {
        base: None,
        patched: Some(1),
    };
    assert_eq!((missing.change(), missing.percent()), (None, None));
    assert!(missing.changed());
}

#[test]
fn text_shows_changed_rows_per_arch() {
    let d = diff::diff_table(&table(), "switch", None, None).unwrap();
    assert_eq!((d.base.as_str(), d.patched.as_str()), ("0", "1"));
    assert_eq!(d.column_keys, ["arch"]);
    assert_eq!(d.groups, [["x86_64"], ["arm64"]]);
    assert_eq!(d.blocks.len(), 2, "a block per folio_size");
    let text = d.text(false);
    assert!(text.is_ascii(), "{text}");
    assert_starts_with(&text, "switch=0 (base) vs switch=1 (patched)\n");
    // pgfault did not change anywhere: hidden; shown with --all.
    assert!(!text.contains("pgfault"), "{text}");
    assert!(d.text(true).contains("pgfault"));
    let line = |name: &str, block: usize| -> Vec<String> {
        let b = text.split("\nfolio_size=").nth(block + 1).unwrap();
        b.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {b}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // 64K: 200 → 150 is −50, −25.00 %; 1000 → 1100 ns is +100, +10.00 %.
    assert_eq!(
        line("sim/ptep_get", 1),
        [
            "sim/ptep_get",
            "200",
            "150",
            "-50",
            "-25.00%",
            "200",
            "150",
            "-50",
            "-25.00%"
        ]
    );
    assert_eq!(
        line("modelled_ns", 1),
        [
            "modelled_ns",
            "1000",
            "1100",
            "+100",
            "+10.00%",
            "1000",
            "1100",
            "+100",
            "+10.00%"
        ]
    );
    // A zero base is n/a, an unchanged zero too.
    assert_eq!(
        line("sim/tlbi_page", 0),
        ["sim/tlbi_page", "0", "7", "+7", "n/a", "0", "0", "0", "n/a"]
    );
    // 4K: ptep_get unchanged everywhere, so not listed.
    assert!(!text
        .split("\nfolio_size=")
        .nth(1)
        .unwrap()
        .contains("ptep_get"));
    // Fixed width: every value line of a block is as long as its header.
    let b = text.split("\nfolio_size=").nth(2).unwrap();
    let lens: Vec<usize> = b.lines().skip(1).map(str::len).collect();
    assert!(lens.windows(2).all(|w| w[0] == w[1]), "{b}\n{lens:?}");
}

#[test]
fn one_value_makes_one_table() {
    let mut d = diff::diff_table(&table(), "switch", None, None).unwrap();
    d.retain_names(&["modelled_ns".to_string()]).unwrap();
    let text = d.text(false);
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(lines.contains(&vec!["modelled_ns"]), "{text}");
    assert!(
        lines.contains(&vec![
            "folio_size",
            "base",
            "patched",
            "change",
            "%",
            "base",
            "patched",
            "change",
            "%"
        ]),
        "{text}"
    );
    // Both blocks, one line each: 1000 → 1100 ns is +100, +10.00 %.
    for size in ["4K", "64K"] {
        assert!(
            lines.contains(&vec![
                size, "1000", "1100", "+100", "+10.00%", "1000", "1100", "+100", "+10.00%"
            ]),
            "{text}"
        );
    }
}

#[test]
fn markdown_and_csv() {
    let d = diff::diff_table(&table(), "switch", Some(("0", "1")), None).unwrap();
    let md = d.markdown(false);
    assert_contains(
        &md,
        "| counter | x86_64 base | x86_64 patched | x86_64 change | x86_64 % | arm64 base |",
    );
    assert_contains(
        &md,
        "| `sim/ptep_get` | 200 | 150 | -50 | -25.00% | 200 | 150 | -50 | -25.00% |",
    );
    let csv = d.csv(false).unwrap();
    assert_starts_with(
        &csv,
        "folio_size,arch,phase,kind,name,base,patched,change,pct_change\n",
    );
    assert_contains(
        &csv,
        "64K,arm64,measured,counter,sim/ptep_get,200,150,-50,-25.0000\n",
    );
    assert_contains(&csv, "4K,x86_64,measured,counter,sim/tlbi_page,0,7,7,n/a\n");
    // An unchanged cell is not a record unless --all.
    assert!(
        !csv.contains("4K,arm64,measured,counter,sim/tlbi_page"),
        "{csv}"
    );
    assert!(d
        .csv(true)
        .unwrap()
        .contains("4K,arm64,measured,counter,sim/tlbi_page,0,0,0,n/a\n"));
}

#[test]
fn by_errors_name_the_values() {
    let t = table();
    let e = diff::diff_table(&t, "folio", None, None).unwrap_err();
    assert!(
        e.contains("no such column") && e.contains("switch, folio_size"),
        "{e}"
    );
    let e = diff::diff_table(&t, "switch", Some(("0", "2")), None).unwrap_err();
    assert_contains(&e, "no point has switch = 2");
    // Columns by folio_size instead of arch: arch makes the blocks.
    let d = diff::diff_table(&t, "switch", None, Some(&["folio_size".to_string()])).unwrap();
    assert_eq!(d.groups, [["4K"], ["64K"]]);
    assert_eq!(
        d.blocks[0].label,
        [("arch".to_string(), "x86_64".to_string())]
    );
}

#[test]
fn reports_keep_their_modelled_time() {
    let json = |ptep: i64, ns: u64| {
        format!(
            r#"{{"scenario":"s","arch":"arm64","engine":"sim","system":{{}},
               "phases":[{{"name":"measured","counters":{{"sim/ptep_get":{ptep},"pgfault":16}},
               "folios":{{}},"modelled_ns":{ns},"profile":"p","breakdown":{{}}}}],
               "expectations":[]}}"#
        )
    };
    let a = diff::reports_from_json(&json(4096, 2000)).unwrap();
    let b = diff::reports_from_json(&json(256, 1500)).unwrap();
    let d = diff::diff_reports(&a, &b).unwrap();
    let text = d.text(false);
    // 4096 → 256: −3840, −93.75 %; 2000 → 1500 ns: −25.00 %.
    assert_contains(&text, "-3840  -93.75%");
    assert_contains(&text, "-500  -25.00%");
    assert!(!text.contains("pgfault"), "{text}");
}

/// A table of `folio_size` × `repeat` whose pgfault runs are `runs` per
/// folio size.
fn repeated(runs: &[(&str, [i128; 3])]) -> Table {
    let mut t = Table::new(&["folio_size".into(), "repeat".into()]);
    let mut p = 0;
    for (size, values) in runs {
        for (i, v) in values.iter().enumerate() {
            let run = (i + 1).to_string();
            t.rows.push(row(p, [size, &run], "x86_64", "pgfault", *v));
            p += 1;
        }
    }
    t
}

#[test]
fn tables_compare_point_by_point_over_their_repeats() {
    use foliosim_explore::nway::{compare_tables, TableInput};
    let a = repeated(&[("4K", [256, 256, 256]), ("64K", [20, 22, 24])]);
    // 4K: the same runs; 64K: mean 40 against 22, stddev 2 on both sides.
    let b = repeated(&[("4K", [256, 256, 256]), ("64K", [38, 40, 42])]);
    let input = |label: &str, table| TableInput {
        label: label.into(),
        file: format!("{label}.csv"),
        table,
    };
    let n = compare_tables(&[input("a", &a), input("b", &b)], 0.05).unwrap();
    let titles: Vec<&str> = n.groups.iter().map(|g| g.scenario.as_str()).collect();
    assert_eq!(titles, ["s folio_size=4K", "s folio_size=64K"]);
    assert_eq!(
        n.groups[1].rows[0].samples,
        [vec![20.0, 22.0, 24.0], vec![38.0, 40.0, 42.0]]
    );
    let j: serde_json::Value = serde_json::from_str(&n.json(false)).unwrap();
    // 4K did not change: no row unless --all.
    assert_eq!(j["scenarios"][0]["rows"], serde_json::json!([]));
    let b64 = &j["scenarios"][1]["rows"][0]["inputs"][1];
    // Welch: t = 18 / sqrt(4/3 + 4/3) = 11.02 on 4 degrees of freedom,
    // p ≈ 0.0004.
    assert!((b64["t"].as_f64().unwrap() - 11.02).abs() < 0.01, "{b64}");
    assert_eq!(b64["df"], 4.0);
    assert_eq!(b64["significant"], true);
    assert!(
        (b64["change_pct"].as_f64().unwrap() - 81.82).abs() < 0.01,
        "{b64}"
    );
    assert_contains(&n.text(false), "s folio_size=64K");
}

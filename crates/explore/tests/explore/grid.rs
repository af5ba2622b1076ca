//! Grid parsing, sweep files and expansion: counts, order, and errors that
//! name the key and where it was written.

use std::path::{Path, PathBuf};

use foliosim_explore::{expand, grid, parse_sweep_str, Source, SweepSpec};
use foliosim_testkit::{assert_contains, assert_starts_with};

/// A small anonymous scenario: 1 MiB written on a 256 MiB machine.
fn scenario(dir: &Path) -> PathBuf {
    let text = foliosim_testkit::anon_measured("anon-1m", "256M", "1M");
    foliosim_testkit::write(dir, "anon-1m.toml", &text)
}

fn spec_with(dir: &Path, args: &[&str], zip: bool) -> SweepSpec {
    let mut spec = SweepSpec::new(vec![scenario(dir)]);
    let dims = args
        .iter()
        .map(|a| grid::parse_grid_arg(a).unwrap())
        .collect();
    spec.grid.add(dims, zip);
    spec
}

/// The error of expanding [`spec_with`]`(dir, args, zip)`.
fn expand_err(dir: &Path, args: &[&str], zip: bool) -> String {
    expand(&spec_with(dir, args, zip)).unwrap_err()
}

#[test]
fn ranges_expand_inclusively() {
    let d = grid::parse_grid_arg("fault_around_bytes=4096<<[0..9]").unwrap();
    assert_eq!(d.key, "fault_around_bytes");
    // 4096<<0 .. 4096<<9: ten values, 4 KiB to 2 MiB.
    assert_eq!(d.values.len(), 10);
    assert_eq!(d.values.first().unwrap(), "4096");
    assert_eq!(d.values.last().unwrap(), "2097152");
    assert_eq!(
        grid::parse_grid_arg("x=[1..4]").unwrap().values,
        ["1", "2", "3", "4"]
    );
    // Sizes stay strings, lists and ranges mix.
    assert_eq!(
        grid::parse_grid_arg("step.1.size=64K,[1..2],2M")
            .unwrap()
            .values,
        ["64K", "1", "2", "2M"]
    );
}

#[test]
fn bad_ranges_name_the_argument() {
    for (arg, why) in [
        ("x=[4..1]", "empty range"),
        ("x=[a..3]", "not an integer"),
        ("x=[1..3", "[A..B]"),
        ("x=1,,2", "empty value"),
        ("x=4096<<[60..70]", "does not fit"),
        ("x", "KEY="),
    ] {
        let e = grid::parse_grid_arg(arg).unwrap_err();
        assert!(e.starts_with(&format!("--grid {arg}")), "{e}");
        assert!(e.contains(why), "{arg}: {e}");
    }
}

#[test]
fn product_and_zip_counts() {
    let tmp = tempfile::tempdir().unwrap();
    // Product: 2 × 3 × 2 = 12, the last key varying fastest.
    let spec = spec_with(
        tmp.path(),
        &[
            "arch=x86_64,arm64",
            "fault_around_bytes=4096<<[0..2]",
            "series.batch_anon_unmap=0,1",
        ],
        false,
    );
    let pts = expand(&spec).unwrap();
    assert_eq!(pts.len(), 12);
    assert_eq!(pts[0].grid[2].1, "0");
    assert_eq!(pts[1].grid[2].1, "1");
    assert_eq!(pts[1].grid[1].1, "4096");
    assert_eq!(pts[2].grid[1].1, "8192");
    assert_eq!(pts[6].arch, "arm64");
    assert!(pts.iter().enumerate().all(|(i, p)| p.index == i));
    assert_eq!(pts[0].name, "anon-1m");
    // Zipped: the two lists advance together, 3 points.
    let spec = spec_with(
        tmp.path(),
        &["memory=256M,512M,1G", "fault_around_bytes=4K,8K,16K"],
        true,
    );
    let pts = expand(&spec).unwrap();
    assert_eq!(pts.len(), 3);
    assert_eq!(
        pts[2].overrides,
        [
            ("memory".to_string(), "1G".to_string()),
            ("fault_around_bytes".to_string(), "16K".to_string())
        ]
    );
    // Zipped lists of different lengths are refused, naming the keys.
    let e = expand_err(tmp.path(), &["memory=256M,512M", "read_ahead_kb=1"], true);
    assert_contains(&e, "`memory` has 2");
    assert_contains(&e, "`read_ahead_kb` has 1");
}

#[test]
fn unknown_key_names_the_grid_argument() {
    let tmp = tempfile::tempdir().unwrap();
    for (arg, says) in [
        (
            "fault_around_byts=4096,8192",
            "unknown key `fault_around_byts`",
        ),
        // A value the scenario refuses, too.
        ("fault_around_bytes=0,4096", "fault_around_bytes=0"),
    ] {
        let e = expand_err(tmp.path(), &[arg], false);
        assert_starts_with(&e, &format!("--grid {arg}"));
        assert_contains(&e, says);
    }
}

#[test]
fn empty_reserved_duplicate_and_large_grids_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let e = expand(&SweepSpec::new(vec![scenario(tmp.path())])).unwrap_err();
    assert_contains(&e, "grid is empty");
    let e = expand_err(tmp.path(), &["name=a,b"], false);
    assert_contains(&e, "column");
    let e = expand(&spec_with(
        tmp.path(),
        &["memory=256M", "memory=512M"],
        false,
    ))
    .unwrap_err();
    assert_contains(&e, "already swept by --grid memory=256M");
    // 101 × 100 = 10,100 points: more than 10,000 needs --yes; the count
    // is refused before any scenario is loaded.
    let mut spec = spec_with(
        tmp.path(),
        &["seed=[0..100]", "read_ahead_kb=[1..100]"],
        false,
    );
    let e = expand(&spec).unwrap_err();
    assert_contains(&e, "10100 points");
    assert_contains(&e, "--yes");
    spec.allow_large = true;
    assert_eq!(expand(&spec).unwrap().len(), 10_100);
}

#[test]
fn folio_size_sets_the_thp_knobs_together() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = spec_with(tmp.path(), &["folio_size=4K,64K,2M"], false);
    let pts = expand(&spec).unwrap();
    let knob = |i: usize, k: &str| {
        pts[i]
            .overrides
            .iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(pts[0].grid, [("folio_size".to_string(), "4K".to_string())]);
    for (i, key, want) in [
        (0, "transparent_hugepage.enabled", "never"),
        (1, "transparent_hugepage.hugepages-64kB.enabled", "always"),
        (1, "transparent_hugepage.hugepages-16kB.enabled", "never"),
        (2, "transparent_hugepage.enabled", "always"),
    ] {
        assert_eq!(knob(i, key).as_deref(), Some(want), "point {i}, {key}");
    }
    let e = expand_err(tmp.path(), &["folio_size=8K"], false);
    assert_starts_with(&e, "--grid folio_size=8K");
    assert_contains(&e, "4K, 16K");
}

#[test]
fn sweep_files_give_lines_in_errors() {
    let tmp = tempfile::tempdir().unwrap();
    scenario(tmp.path());
    let file = tmp.path().join("s.toml");
    let text = r#"scenarios = ["anon-1m.toml"]
engine = "sim"

[set]
read_ahead_kb = 64

[grid]
arch = ["x86_64", "arm64"]
fault_around_bytes = "4096<<[0..3]"

[[zip]]
memory = ["256M", "512M"]
"series.batch_anon_unmap" = [false, true]
"#;
    let spec = parse_sweep_str(&file, text).unwrap();
    assert_eq!(spec.scenarios, [tmp.path().join("anon-1m.toml")]);
    assert_eq!(spec.engine.as_deref(), Some("sim"));
    assert_eq!(spec.base[0].key, "read_ahead_kb");
    assert_eq!(spec.base[0].value, "64");
    assert_eq!(
        spec.grid.keys(),
        [
            "arch",
            "fault_around_bytes",
            "memory",
            "series.batch_anon_unmap"
        ]
    );
    // 2 × 4 × 2 (the zipped pair is one axis).
    assert_eq!(expand(&spec).unwrap().len(), 16);
    assert_eq!(
        spec.grid.axes[1].dims[0].source,
        Source::File {
            path: file.clone(),
            line: 9
        }
    );
    // An unknown key on line 13 of the file is blamed on that line.
    let bad = text.replace(
        "\"series.batch_anon_unmap\"",
        "\"series.batch_anon_unmapp\"",
    );
    let e = expand(&parse_sweep_str(&file, &bad).unwrap()).unwrap_err();
    let at = format!("{}:13", file.display());
    assert!(e.starts_with(&at), "{e}");
    assert_contains(&e, "series.batch_anon_unmapp");
    // An unknown table of the sweep file, with its line.
    let e = parse_sweep_str(&file, &format!("{text}\n[grids]\nx = [1]\n")).unwrap_err();
    // The text ends with a newline, then a blank line: [grids] is line 15.
    assert!(e.starts_with(&format!("{}:15", file.display())), "{e}");
    assert_contains(&e, "unknown key");
}

/// The sweep files in docs/scenarios.md parse and expand to the points
/// their comments count: 2 arches × 2 switch values × 6 sizes × 3 swap
/// kinds = 72, and 2 arches × 3 zipped (memory, size) pairs = 6. Their
/// scenario paths are relative to a sweep file in sweeps/.
#[test]
fn sweep_files_in_the_language_reference_expand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/scenarios.md")).unwrap();
    let files: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .filter(|b| b.lines().any(|l| l.starts_with("scenarios =")))
        .collect();
    let counts: Vec<usize> = files
        .iter()
        .map(|text| {
            let spec = parse_sweep_str(&root.join("sweeps/doc.toml"), text)
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            expand(&spec).unwrap_or_else(|e| panic!("{e}")).len()
        })
        .collect();
    assert_eq!(counts, [72, 6]);
}

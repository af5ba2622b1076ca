//! `foliosim plot` and `foliosim report` end to end: runs of the example
//! scenario (docs/report/pageout-64k.toml, made small with --set), their
//! folio maps, a sweep table built from several runs, the HTML report, and
//! the errors (no output file is left behind by a failed command).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use foliosim_testkit::assert_contains;

fn foliosim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("runs foliosim")
}

fn ok(args: &[&str]) -> String {
    let o = foliosim(args);
    assert!(
        o.status.success(),
        "foliosim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit code 2, a message containing `want`, and no `out` file.
fn fails(args: &[&str], want: &str, out: &Path) {
    let o = foliosim(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "foliosim {args:?}: {err}");
    assert!(err.contains(want), "foliosim {args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "{} left behind", out.display());
}

/// The example scenario, 16 MiB, arm64 with 64 KiB mTHP, to a JSON file.
fn run_json(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut args = vec![
        "run",
        "docs/report/pageout-64k.toml",
        "--arch",
        "arm64",
        "--set",
        "transparent_hugepage.hugepages-64kB.enabled=always",
        "--set",
        "step.1.size=16M",
        "--format",
        "json",
        "-o",
    ];
    let o = out.to_str().unwrap().to_string();
    args.push(&o);
    args.extend_from_slice(extra);
    ok(&args);
    out
}

/// `foliosim plot --map REPORT --phase PHASE --region buf` with `extra`
/// arguments; its standard output.
fn plot_map(report: &Path, phase: &str, extra: &[&str]) -> String {
    let r = report.to_str().unwrap();
    let mut args = vec!["plot", "--map", r, "--phase", phase, "--region", "buf"];
    args.extend_from_slice(extra);
    ok(&args)
}

#[test]
fn folio_maps_from_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = run_json(dir.path(), "r.json", &[]);
    let j = json.to_str().unwrap();
    let svg = dir.path().join("map.svg");
    plot_map(&json, "fault", &["-o", svg.to_str().unwrap()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    // 16 MiB of 64 KiB folios on arm64: all contpte (docs/report's
    // scenario; the rules are in crates/sim/tests/model/folio_map.rs).
    assert_contains(&text, "4096 pages: 4096 in 64 KiB folios, 4096 contpte");
    let png = dir.path().join("map.png");
    plot_map(&json, "pageout", &["-o", png.to_str().unwrap()]);
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");

    let bad = dir.path().join("bad.svg");
    let b = bad.to_str().unwrap();
    fails(
        &[
            "plot", "--map", j, "--phase", "nope", "--region", "buf", "-o", b,
        ],
        "no such phase; the report has: fault, pageout",
        &bad,
    );
    fails(
        &[
            "plot", "--map", j, "--phase", "fault", "--region", "x", "-o", b,
        ],
        "--region x: no folio map of it in phase fault; maps: buf",
        &bad,
    );
    fails(
        &[
            "plot", "--map", j, "--phase", "fault", "--region", "buf", "-o", "m.gif",
        ],
        ".svg or .png",
        Path::new("m.gif"),
    );
    // docs/report/mixed.toml: 1024 pages; 768 written (3 MiB), 16 read
    // (the zero page), 240 never touched. Of the written: the refaults
    // after the unaligned DONTNEED give 6 pages of 4 KiB, 4 of 16 KiB and
    // 8 of 32 KiB folios (crates/sim/tests/model/folio_map.rs derives them), the
    // pageout of 256 KiB 64 swap entries, the other 686 pages are in
    // 64 KiB folios, all contpte but the 9 + 5 pages left of the two
    // partly zapped folios (unfolded).
    let mixed = dir.path().join("mixed.json");
    ok(&[
        "run",
        "docs/report/mixed.toml",
        "--arch",
        "arm64",
        "--format",
        "json",
        "-o",
        mixed.to_str().unwrap(),
    ]);
    let svg = plot_map(&mixed, "end", &[]);
    assert_contains(
        &svg,
        "1024 pages: 6 in 4 KiB folios, 4 in 16 KiB folios, 8 in 32 KiB folios, \
             686 in 64 KiB folios, 672 contpte, 64 swap entries, 16 zero page, 240 not mapped",
    );
    // A bare report, as older versions wrote it, is read too.
    let one: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let doc = dir.path().join("doc.json");
    std::fs::write(&doc, one["reports"][0].to_string()).unwrap();
    let svg = plot_map(&doc, "pageout", &[]);
    assert_contains(&svg, "4096 pages: 4096 swap entries");
    // A run without map = true has no maps, and says how to get one.
    let plain = run_json(dir.path(), "plain.json", &["--set", "step.1.map=false"]);
    fails(
        &[
            "plot",
            "--map",
            plain.to_str().unwrap(),
            "--phase",
            "fault",
            "--region",
            "buf",
            "-o",
            b,
        ],
        "map = true",
        &bad,
    );
}

/// A sweep table of `step.1.size` × `series.batch_anon_unmap`, written by
/// `foliosim sweep`.
fn sweep_csv(dir: &Path) -> PathBuf {
    let p = dir.join("sweep.csv");
    ok(&[
        "sweep",
        "docs/report/pageout-64k.toml",
        "--arch",
        "arm64",
        "--set",
        "transparent_hugepage.hugepages-64kB.enabled=always",
        "--grid",
        "step.1.size=4M,8M,16M",
        "--grid",
        "series.batch_anon_unmap=0,1",
        "-q",
        "-o",
        p.to_str().unwrap(),
    ]);
    p
}

/// `foliosim plot` of the sweep table `table`: counter `y` of phase
/// "pageout" over `step.1.size`, with `extra` arguments; its standard
/// output.
fn plot_sizes(table: &str, y: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "plot",
        table,
        "--y",
        y,
        "--x",
        "step.1.size",
        "--phase",
        "pageout",
    ];
    args.extend_from_slice(extra);
    ok(&args)
}

#[test]
fn sweep_plots_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = sweep_csv(dir.path());
    let s = sweep.to_str().unwrap();
    let svg = dir.path().join("time.svg");
    plot_sizes(s, "modelled_ns", &["-o", svg.to_str().unwrap()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert_contains(&text, "series.batch_anon_unmap=0");
    assert_contains(&text, "series.batch_anon_unmap=1");
    assert_contains(&text, "step.1.size (bytes)");
    assert_contains(&text, "modelled_ns (modelled time, ms)");
    // Without -o: the SVG on stdout.
    let stdout = plot_sizes(s, "pswpout", &[]);
    assert!(
        stdout.starts_with("<svg") && stdout.contains("pswpout (count)"),
        "{stdout}"
    );
    let bad = dir.path().join("bad.png");
    let b = bad.to_str().unwrap();
    fails(
        &["plot", s, "--y", "pswpout", "--x", "step.1.size", "-o", b],
        "pswpout is in several phases (fault, pageout); choose one with --phase",
        &bad,
    );
    fails(
        &["plot", s, "--y", "pswpout", "--x", "nope", "-o", b],
        "--x nope: not a grid key of the sweep; its keys are: step.1.size, series.batch_anon_unmap",
        &bad,
    );

    let base = run_json(dir.path(), "base.json", &[]);
    let patched = run_json(
        dir.path(),
        "patched.json",
        &["--set", "series.batch_anon_unmap=true"],
    );
    let html = dir.path().join("report.html");
    ok(&[
        "report",
        base.to_str().unwrap(),
        patched.to_str().unwrap(),
        s,
        "--y",
        "modelled_ns",
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>Difference</h2>"));
    assert!(page.contains("<td>series.batch_anon_unmap</td><td>0</td><td>1</td>"));
    // Two reports × two phases of maps, two phases of modelled_ns.
    assert_eq!(page.matches("<svg").count(), 6);
    // A broken input (a value that is not a number on the table's third
    // line): an error naming file, line and column; no report.
    let broken = dir.path().join("broken.csv");
    let mut lines: Vec<String> = std::fs::read_to_string(&sweep)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let mut cells: Vec<&str> = lines[2].split(',').collect();
    let value = lines[0].split(',').position(|c| c == "value").unwrap();
    cells[value] = "12x";
    lines[2] = cells.join(",");
    std::fs::write(&broken, lines.join("\n")).unwrap();
    let out = dir.path().join("r2.html");
    fails(
        &[
            "report",
            broken.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        "broken.csv: line 3: `value` \"12x\" is not an integer",
        &out,
    );
}

#[test]
fn what_a_switch_changes_facets_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = sweep_csv(dir.path());
    let s = sweep.to_str().unwrap();
    let out = dir.path().join("p.svg");
    let o = out.to_str().unwrap();
    let by = "series.batch_anon_unmap";
    // The buffer is written with zeros, so each page paged out is a
    // zero-filled one that swap records without I/O (`swpout_zero`; the
    // swap write path checks folio_zero_filled()). Batching the unmap
    // changes how PTEs are cleared, not which pages go: size / 4 KiB with
    // the switch off and on, so every cell is +0.0%.
    let svg = ok(&[
        "plot",
        s,
        "--by",
        by,
        "--y",
        "swpout_zero",
        "--phase",
        "pageout",
    ]);
    assert!(svg.starts_with("<svg"), "{svg}");
    assert_eq!(svg.matches("+0.0%").count(), 3, "{svg}");
    for want in [
        "4M",
        "8M",
        "16M",
        "step.1.size",
        "series.batch_anon_unmap=0 (base)",
    ] {
        assert!(svg.contains(want), "{want} not in the heatmap");
    }
    // modelled_ns: each cell is the table's own patched/base ratio.
    let table = std::fs::read_to_string(&sweep).unwrap();
    let value = |size: &str, batch: &str| -> f64 {
        let head: Vec<&str> = table.lines().next().unwrap().split(',').collect();
        let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
        let row = table
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|c| {
                c[col("step.1.size")] == size
                    && c[col(by)] == batch
                    && c[col("phase")] == "pageout"
                    && c[col("name")] == "modelled_ns"
            })
            .unwrap();
        row[col("value")].parse().unwrap()
    };
    let svg = ok(&[
        "plot",
        s,
        "--by",
        by,
        "--y",
        "modelled_ns",
        "--phase",
        "pageout",
    ]);
    for size in ["4M", "8M", "16M"] {
        let (b, p) = (value(size, "0"), value(size, "1"));
        let want = format!("{:+.1}%", 100.0 * (p - b) / b);
        assert!(svg.contains(&want), "{size}: {want} not in the heatmap");
    }
    // Facets: one panel per switch value, one line (the value) in each.
    ok(&[
        "plot",
        s,
        "--y",
        "modelled_ns",
        "--x",
        "step.1.size",
        "--phase",
        "pageout",
        "--facet",
        by,
        "-o",
        o,
    ]);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.contains("series.batch_anon_unmap=0") && svg.contains("series.batch_anon_unmap=1"));
    // A filter keeps the points with the values named.
    let one = ok(&[
        "plot",
        s,
        "--y",
        "modelled_ns",
        "--x",
        "step.1.size",
        "--phase",
        "pageout",
        "--where",
        "series.batch_anon_unmap=1",
    ]);
    assert!(!one.contains("series.batch_anon_unmap=0"), "{one}");
    let bad = dir.path().join("bad.svg");
    fails(
        &[
            "plot",
            s,
            "--y",
            "modelled_ns",
            "--x",
            "series.batch_anon_unmap",
            "--phase",
            "pageout",
            "--where",
            "step.1.size=5M",
            "-o",
            bad.to_str().unwrap(),
        ],
        "--where step.1.size=5M: the sweep has no such value; its values: 4M, 8M, 16M",
        &bad,
    );
    fails(
        &[
            "plot",
            s,
            "--by",
            "nope",
            "--y",
            "swpout_zero",
            "-o",
            bad.to_str().unwrap(),
        ],
        "--by nope: the table has no such column",
        &bad,
    );
    // The report shows the table and the heatmap of what the switch changes.
    let html = dir.path().join("r.html");
    ok(&[
        "report",
        s,
        "--by",
        by,
        "--y",
        "swpout_zero",
        "--phase",
        "pageout",
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(
            "<h3>swpout_zero: series.batch_anon_unmap=1 against series.batch_anon_unmap=0</h3>"
        ),
        "{page}"
    );
    // The sweep's provenance: this build, the engine, the overrides.
    let made = page
        .lines()
        .find(|l| l.contains("Made by: "))
        .expect("a provenance line");
    for want in [
        "foliosim 0.1.0",
        "engine sim",
        "--arch arm64",
        "hugepages-64kB.enabled=always",
    ] {
        assert!(made.contains(want), "{want} not in {made}");
    }
    // 3 cells in the table, 3 in the heatmap.
    assert_eq!(page.matches("+0.0%").count(), 6);
}

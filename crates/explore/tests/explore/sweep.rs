//! Running sweeps: the simulator's numbers against kernel rules, failed
//! points, the table formats and resuming.

use std::collections::BTreeSet;

use foliosim_explore::SimOptions;
use std::path::{Path, PathBuf};

use foliosim_explore::{
    expand, grid, sweep, Engine, PointResult, SweepOptions, SweepSpec, Table, TableFormat,
};
use foliosim_testkit::{
    anon_measured, assert_contains, assert_starts_with, file, mmap_file, name, phase, system_mem,
    touch, write,
};

/// Anonymous memory: 1 MiB written once, on a 64 MiB machine without swap.
fn anon(dir: &Path) -> PathBuf {
    write(dir, "anon.toml", &anon_measured("anon", "64M", "1M"))
}

/// A warm file of 4 MiB in order-0 folios (4 KiB writes), read page by page.
fn warm_file(dir: &Path) -> PathBuf {
    let text = [
        name("warm"),
        system_mem("128M", ""),
        file("data", "4M", "fill = \"write\"\nwrite_size = \"4K\""),
        mmap_file("f", "data", "4M", "prot = \"r\""),
        phase("measured"),
        touch("f", "read", "pattern = \"sequential\""),
    ];
    write(dir, "warm.toml", &text.concat())
}

fn run(path: PathBuf, grids: &[&str], jobs: usize) -> (Vec<String>, Vec<PointResult>) {
    let mut spec = SweepSpec::new(vec![path]);
    spec.grid.add(
        grids
            .iter()
            .map(|g| grid::parse_grid_arg(g).unwrap())
            .collect(),
        false,
    );
    let points = expand(&spec).unwrap();
    let opts = SweepOptions {
        jobs: Some(jobs),
        progress: false,
    };
    (spec.grid.keys(), sweep(&points, &Engine::sim(), &opts))
}

fn counter(r: &PointResult, name: &str) -> i64 {
    r.result.as_ref().unwrap().phases[0].counters[name]
}

#[test]
fn anonymous_faults_follow_the_folio_size() {
    // A 1 MiB anonymous write faults once per folio: with mTHP off that is
    // 1 MiB / 4 KiB = 256 faults (do_anonymous_page maps one page); with
    // 64 KiB mTHP always, 1 MiB / 64 KiB = 16 (alloc_anon_folio takes the
    // largest enabled order that fits the aligned range).
    let tmp = tempfile::tempdir().unwrap();
    let (_, res) = run(
        anon(tmp.path()),
        &["folio_size=4K,64K", "arch=x86_64,arm64"],
        2,
    );
    assert_eq!(res.len(), 4);
    for r in &res[..2] {
        assert_eq!(counter(r, "pgfault"), 256, "{:?}", r.point);
    }
    for r in &res[2..] {
        assert_eq!(counter(r, "pgfault"), 16, "{:?}", r.point);
        assert_eq!(counter(r, "hugepages-64kB/anon_fault_alloc"), 16);
    }
    assert_eq!(res[1].result.as_ref().unwrap().arch, "arm64");
}

#[test]
fn fault_around_divides_read_faults() {
    // Warm order-0 page cache of F = 4 MiB / 4 KiB = 1024 pages. A read
    // fault maps the whole fault-around window of fault_around_bytes =
    // 4096 << n, i.e. 2^n pages aligned to 2^n (do_fault_around), so a
    // sequential read takes F / 2^n faults: 1024, 512, ..., 32 for n = 0..5.
    let tmp = tempfile::tempdir().unwrap();
    let (_, res) = run(
        warm_file(tmp.path()),
        &["fault_around_bytes=4096<<[0..5]"],
        2,
    );
    let faults: Vec<i64> = res.iter().map(|r| counter(r, "pgfault")).collect();
    assert_eq!(faults, [1024, 512, 256, 128, 64, 32]);
}

#[test]
fn a_failed_point_is_one_row_and_the_sweep_goes_on() {
    // 128 MiB of anonymous memory on a 64 MiB machine without swap cannot
    // be written: the process is OOM-killed. The 1 MiB point still runs.
    let tmp = tempfile::tempdir().unwrap();
    let (keys, res) = run(anon(tmp.path()), &["step.1.size=128M,1M"], 2);
    assert!(res[0].result.is_err());
    assert_eq!(counter(&res[1], "pgfault"), 256);
    let t = Table::from_results(&keys, &res);
    let failed: Vec<_> = t.rows.iter().filter(|r| r.failed()).collect();
    assert_eq!(failed.len(), 1);
    let f = failed[0];
    assert_eq!(
        (f.point, f.grid.as_slice()),
        (0, ["128M".to_string()].as_slice())
    );
    assert!(f.phase.is_empty() && f.kind.is_empty() && f.name.is_empty());
    assert_eq!(f.value, None);
    assert!(f.error.contains("anon.toml"), "{}", f.error);
    assert!(t
        .rows
        .iter()
        .any(|r| r.point == 1 && r.name == "pgfault" && r.value == Some(256)));
}

#[test]
fn every_format_reads_back_and_csv_quotes_commas() {
    let tmp = tempfile::tempdir().unwrap();
    anon(tmp.path());
    // A swept value with a comma and quotes (from a sweep file's list),
    // and a failed point (128 MiB on a 64 MiB machine).
    let file = tmp.path().join("s.toml");
    let text = r#"scenarios = ["anon.toml"]
[grid]
description = ["with, comma \"q\"", "plain"]
"step.1.size" = ["128M", "1M"]
"#;
    let spec = foliosim_explore::parse_sweep_str(&file, text).unwrap();
    let points = expand(&spec).unwrap();
    let res = sweep(&points, &Engine::sim(), &SweepOptions::default());
    let mut t = Table::from_results(&spec.grid.keys(), &res);
    // A raw pagemap entry with bit 63 (present) set: an unsigned word.
    let mut pm = t.rows.last().unwrap().clone();
    (pm.kind, pm.name, pm.value) = (
        "pagemap".into(),
        "pagemap/scan/0".into(),
        Some(1 << 63 | 42),
    );
    t.rows.push(pm);
    let csv = String::from_utf8(t.encode(TableFormat::Csv).unwrap()).unwrap();
    assert_starts_with(
        &csv,
        "point,description,step.1.size,scenario,arch,engine,phase,kind,name,value,error\n",
    );
    // RFC 4180: the field is quoted and its quotes doubled.
    assert_contains(
        &csv,
        "0,\"with, comma \"\"q\"\"\",128M,anon,x86_64,sim,,,,,",
    );
    assert_contains(&csv, ",measured,counter,pgfault,256,\n");
    for f in [
        TableFormat::Csv,
        TableFormat::Jsonl,
        TableFormat::Arrow,
        TableFormat::Parquet,
    ] {
        let bytes = t.encode(f).unwrap();
        assert_eq!(TableFormat::sniff(&bytes), f);
        let back = Table::decode(&bytes, f).unwrap();
        assert_eq!(back, t, "{f:?}");
    }
}

#[test]
fn resume_skips_completed_points_and_reruns_failed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let path = anon(tmp.path());
    // First run: 2 points, one of which fails.
    let (keys, res) = run(path.clone(), &["step.1.size=128M,1M"], 1);
    let mut old = Table::from_results(&keys, &res);
    // The second run asks for 3 sizes (memory raised so 128M fits).
    let mut spec = SweepSpec::new(vec![path]);
    spec.grid.add(
        vec![grid::parse_grid_arg("step.1.size=128M,1M,2M").unwrap()],
        false,
    );
    spec.base.push(foliosim_explore::Setting {
        key: "memory".into(),
        value: "64M".into(),
        source: foliosim_explore::Source::SetArg("memory=64M".into()),
    });
    let points = expand(&spec).unwrap();
    let points = old.resume(&keys, points, "sim").unwrap();
    let sizes: Vec<&str> = points.iter().map(|p| p.grid[0].1.as_str()).collect();
    assert_eq!(
        sizes,
        ["128M", "2M"],
        "1M is done; the failed 128M runs again"
    );
    assert!(
        !old.rows.iter().any(|r| r.failed()),
        "the failed row is dropped"
    );
    // A table of another grid is refused.
    let e = old
        .clone()
        .resume(&["memory".to_string()], expand(&spec).unwrap(), "sim")
        .unwrap_err();
    assert!(
        e.contains("over step.1.size") && e.contains("over memory"),
        "{e}"
    );
    let new = sweep(&points, &Engine::sim(), &SweepOptions::default());
    old.append(Table::from_results(&keys, &new)).unwrap();
    // Point numbers stay unique: 1 (kept), then 2 and 3.
    let ids: BTreeSet<u64> = old.rows.iter().map(|r| r.point).collect();
    assert_eq!(ids, BTreeSet::from([1, 2, 3]));
    // 2 MiB written with mTHP off: 512 faults.
    assert!(old
        .rows
        .iter()
        .any(|r| r.grid[0] == "2M" && r.name == "pgfault" && r.value == Some(512)));
}

#[test]
fn parallel_and_serial_sweeps_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let g = ["fault_around_bytes=4096<<[0..3]", "arch=x86_64,arm64"];
    let (k, a) = run(warm_file(tmp.path()), &g, 1);
    let (_, b) = run(warm_file(tmp.path()), &g, 2);
    assert_eq!(Table::from_results(&k, &a), Table::from_results(&k, &b));
}

#[test]
fn parallel_workers_share_the_memory_limit() {
    // The 64 MiB anon scenario needs about 64.5 MiB by the simulator's
    // estimate (64 MiB base + 16,384 frames × 20 bytes + page tables).
    // With a 100 MiB limit one worker may use all of it; two workers get
    // 50 MiB each, and every point is refused before it runs.
    let tmp = tempfile::tempdir().unwrap();
    let mut spec = SweepSpec::new(vec![anon(tmp.path())]);
    spec.grid.add(
        vec![grid::parse_grid_arg("arch=x86_64,arm64").unwrap()],
        false,
    );
    let points = expand(&spec).unwrap();
    let engine = Engine::Sim(SimOptions {
        max_memory: Some(100 << 20),
        ..SimOptions::default()
    });
    let one = sweep(
        &points,
        &engine,
        &SweepOptions {
            jobs: Some(1),
            progress: false,
        },
    );
    assert!(one.iter().all(|r| r.result.is_ok()));
    let two = sweep(
        &points,
        &engine,
        &SweepOptions {
            jobs: Some(2),
            progress: false,
        },
    );
    for r in &two {
        let e = r.result.as_ref().unwrap_err();
        assert_contains(e, "more than the 50 MiB");
    }
}

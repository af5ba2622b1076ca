//! The fuzz targets' bodies, one function per target (the binaries in
//! `fuzz_targets/` hand libFuzzer's input to them), so that the kept
//! regression inputs run through exactly what the fuzzer runs.

use foliosim_scenario::{Scenario, Source, Step, StepKind};
use foliosim_sim::{RunOptions, SimError};

/// The memory budget of one `engines` input: its text before parsing and
/// its estimate afterwards (`foliosim_sim::admit_text`, `admit`); more is
/// refused, as `--max-memory 1G` refuses it.
pub const BUDGET: u64 = 1 << 30;
/// At most this much address space mapped, counting every mmap step.
pub const MAX_MAPPED: u64 = 1 << 30;
/// At most this many steps, children's and threads' included.
pub const MAX_STEPS: u64 = 4096;
/// At most this many page-sized units of work: the steps times the pages
/// of the scenario's mappings and files (what one step can walk).
pub const MAX_WORK: u64 = 1 << 22;
/// The simulated machine's memory (`memory` is overridden).
pub const MEMORY: u64 = 64 << 20;
/// At most this many units of reclaim work: the steps times the pages of
/// mappings and files beyond the machine's memory (what one step may
/// have to reclaim). A reclaimed page costs about a hundred times a
/// touch (an rmap walk, an unmap and a swap-out, and the invariant
/// checker's view of all three): 1 GiB written through 64 MiB took 1.5 s
/// of CPU in this build, and more than the 10 s limit while fuzzing on a
/// loaded machine.
pub const MAX_RECLAIM_WORK: u64 = 1 << 16;

/// Steps, mapped bytes and file bytes of a scenario.
fn size(steps: &[Step], acc: &mut (u64, u64)) {
    for st in steps {
        acc.0 += 1;
        match &st.kind {
            StepKind::Mmap(m) => acc.1 = acc.1.saturating_add(m.size),
            StepKind::Fork { child } => size(child, acc),
            StepKind::Threads { threads, .. } => threads.iter().for_each(|t| size(t, acc)),
            _ => {}
        }
    }
}

/// Whether `sc` is small enough to simulate here (see the constants).
pub fn bounded(sc: &Scenario) -> bool {
    let mut acc = (0, 0);
    size(&sc.steps, &mut acc);
    let (steps, mapped) = acc;
    let files: u64 = sc.files.iter().fold(0, |t, f| t.saturating_add(f.size));
    let pages = mapped.saturating_add(files) / foliosim_uapi::PAGE_SIZE;
    let beyond = pages.saturating_sub(MEMORY / foliosim_uapi::PAGE_SIZE);
    steps <= MAX_STEPS
        && mapped <= MAX_MAPPED
        && files <= MAX_MAPPED
        && steps * pages <= MAX_WORK
        && steps * beyond <= MAX_RECLAIM_WORK
}

/// `scenario`: parse, validate and apply `--set` overrides; the input is
/// a scenario text, optionally followed by a line `--set` and
/// `KEY=VALUE` lines. Every input parses or is a located error.
pub fn scenario(data: &[u8]) {
    let src = match Source::from_bytes("fuzz.toml".into(), data.to_vec()) {
        Ok(s) => s,
        Err(e) => {
            assert!(e.line > 0, "a UTF-8 error names its line: {e}");
            return;
        }
    };
    let (body, sets) = src.text.split_once("\n--set\n").unwrap_or((&src.text, ""));
    let overrides: Vec<(String, String)> = sets
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Err(e) = foliosim_scenario::parse_str("fuzz.toml", body, &overrides) {
        let _ = e.to_string();
    }
}

/// `engines`: the whole simulated run of a scenario text on a 64 MiB
/// machine (`memory` is overridden): the text admitted by its size,
/// parsed, estimated and admitted, compiled, bounded (up to 1 GiB of
/// mappings, 4,096 steps), simulated with the invariant checker, and the
/// report rendered in every format and read back. Every input ends in a
/// report or an error value; a panic or a broken invariant is a crash.
/// Returns the outcome for the regression tests.
pub fn engines(data: &[u8]) -> Result<(), String> {
    let opts = RunOptions {
        check: true,
        max_memory: Some(BUDGET),
        ..Default::default()
    };
    foliosim_sim::admit_text(data.len() as u64, &opts).map_err(|e| e.to_string())?;
    let src = Source::from_bytes("fuzz.toml".into(), data.to_vec()).map_err(|e| e.to_string())?;
    let memory = [("memory".to_string(), MEMORY.to_string())];
    let sc = src.parse(&memory).map_err(|e| e.to_string())?;
    foliosim_sim::admit(&sc, &opts).map_err(|e| e.to_string())?;
    // The compiler's layout pass maps and unmaps every region in the
    // kernel model (nothing faults): any size, before the bounds.
    let wl = foliosim_sim::compile(&sc).map_err(|e| e.to_string())?;
    if !bounded(&sc) {
        return Err("over the fuzzing bounds".into());
    }
    let report = match foliosim_sim::run_workload(&sc, &wl, opts) {
        Ok(mut r) => {
            r.evaluate(&sc.expects);
            r
        }
        Err(e @ SimError::Invariant { .. }) => panic!("{e}\n--- scenario ---\n{}", src.text),
        Err(e) => return Err(e.to_string()),
    };
    let mut rendered = Vec::new();
    for f in [
        foliosim_report::Format::Json,
        foliosim_report::Format::Table,
        foliosim_report::Format::Csv,
    ] {
        rendered.push(foliosim_report::render(std::slice::from_ref(&report), f));
    }
    let back = foliosim_explore::diff::reports_from_json(&rendered[0])
        .unwrap_or_else(|e| panic!("a rendered report reads back: {e}"));
    assert_eq!(back.len(), 1);
    Ok(())
}

/// `tables`: what reads reports and sweep tables, on arbitrary bytes: a
/// JSON report document (`diff` and `report` read it; a diff of it with
/// itself rendered in every form) and a sweep table in every format: CSV,
/// JSON lines, Arrow IPC and Parquet (a table read is written and read
/// again). Every input is read or
/// refused with an error; none panics.
pub fn tables(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(reports) = foliosim_explore::diff::reports_from_json(text) {
            if let Ok(d) = foliosim_explore::diff::diff_reports(&reports, &reports) {
                let _ = (d.text(true), d.markdown(true), d.csv(true), d.json(true, &[]));
            }
        }
    }
    use foliosim_table::{Table, TableFormat};
    for format in [
        TableFormat::Csv,
        TableFormat::Jsonl,
        TableFormat::Arrow,
        TableFormat::Parquet,
    ] {
        if let Ok(t) = Table::decode(data, format) {
            if let Ok(bytes) = t.encode(format) {
                let again = Table::decode(&bytes, format)
                    .unwrap_or_else(|e| panic!("a written {format:?} table reads back: {e}"));
                assert_eq!(again.rows.len(), t.rows.len());
            }
        }
    }
}

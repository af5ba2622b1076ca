//! Recordings of real programs (`foliosim record`) and their replay as
//! scenarios.
//!
//! A recording is a directory of two files:
//! * `recording.toml`: the scenario header of the replay (`name`,
//!   `description`, `[system]` with the policy it was recorded under),
//!   which the user may edit or override (`--set`) like any scenario's;
//! * `trace.fsr`: the compact binary trace ([`format`]): the program's
//!   memory-management system calls and page faults, per process, in time
//!   order.
//!
//! [`replay_text`] turns a recording into the text of a scenario (the
//! header followed by generated steps, [`replay`]), so every engine and
//! tool that runs a scenario runs a recording. [`summary`] describes one.
//!
//! The recorder itself (ptrace, seccomp and perf) is the native engine's
//! (`foliosim_native::record`): this crate holds no `unsafe` and no
//! knowledge of the kernel, only the format and its translation.

#![forbid(unsafe_code)]

pub mod format;
pub mod replay;

use std::collections::{BTreeMap, HashSet};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

pub use format::{Event, IoCall, MapKind, Meta, Trace};
pub use replay::Options;

/// The header file of a recording directory.
pub const HEADER: &str = "recording.toml";
/// The trace file of a recording directory.
pub const TRACE: &str = "trace.fsr";

/// A recording that cannot be read: the file and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordingError {
    pub file: PathBuf,
    pub what: String,
}

impl fmt::Display for RecordingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.what)
    }
}

impl std::error::Error for RecordingError {}

/// Is `path` a recording directory (a directory with a header file)?
pub fn is_recording(path: &Path) -> bool {
    path.is_dir() && path.join(HEADER).is_file()
}

/// Read and decode the trace of recording `dir`.
pub fn load(dir: &Path) -> Result<Trace, RecordingError> {
    let file = dir.join(TRACE);
    let bytes = std::fs::read(&file).map_err(|e| RecordingError {
        file: file.clone(),
        what: format!("cannot read the trace: {e}"),
    })?;
    format::decode_file(&bytes).map_err(|e| RecordingError {
        file,
        what: e.to_string(),
    })
}

/// The replay scenario of recording `dir`: its label in messages (the
/// header's path, so that errors in the header name its lines) and its
/// text (the header, then the generated `[[file]]`s and steps).
pub fn replay_text(dir: &Path, opts: Options) -> Result<(String, String), RecordingError> {
    let header = dir.join(HEADER);
    let mut text = std::fs::read_to_string(&header).map_err(|e| RecordingError {
        file: header.clone(),
        what: format!("cannot read the recording's header: {e}"),
    })?;
    let trace = load(dir)?;
    if opts.phase_every > 0 && trace.meta.epoch_ms == 0 {
        return Err(RecordingError {
            file: dir.join(TRACE),
            what: "replay.phase_every: the recording has no epochs (it was recorded with \
                   --epoch 0 or by a foliosim before epochs)"
                .into(),
        });
    }
    let r = replay::replay(&trace, opts).map_err(|e| RecordingError {
        file: dir.join(TRACE),
        what: e.to_string(),
    })?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text += "\n# Generated from trace.fsr: `foliosim record --summary` describes it.\n";
    text += &r.text;
    Ok((header.display().to_string(), text))
}

/// What a replay's provenance says of recording `dir`: the command and
/// where it was recorded (None if `dir` is not a readable recording).
pub fn describe(dir: &Path) -> Option<String> {
    if !is_recording(dir) {
        return None;
    }
    let m = load(dir).ok()?.meta;
    Some(format!(
        "`{}` ({} Linux {})",
        m.command.join(" "),
        m.arch,
        m.kernel
    ))
}

/// The number of distinct pages a trace faults, per process, summed.
fn first_touches(trace: &Trace) -> (u64, u64) {
    let mut seen: HashSet<(u32, u64)> = HashSet::new();
    let mut pid = 0;
    let mut faults = 0;
    for (_, e) in &trace.events {
        match e {
            Event::Task { pid: p, .. } => pid = *p,
            Event::Exec => seen.retain(|(p, _)| *p != pid),
            Event::Fault { page, .. } => {
                faults += 1;
                seen.insert((pid, *page));
            }
            _ => {}
        }
    }
    (faults, seen.len() as u64)
}

/// `foliosim record --summary`: what a recording holds.
pub fn summary(dir: &Path) -> Result<String, RecordingError> {
    let trace = load(dir)?;
    let m = &trace.meta;
    let mut procs = HashSet::new();
    let mut threads = HashSet::new();
    let mut execs = 0;
    let mut maps: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut calls: BTreeMap<&str, u64> = BTreeMap::new();
    let mut files = 0;
    let mut epochs = 0;
    for (_, e) in &trace.events {
        match e {
            Event::Task { pid, tid } => {
                procs.insert(*pid);
                threads.insert(*tid);
            }
            Event::Exec => execs += 1,
            Event::File { .. } => files += 1,
            Event::Map { len, kind, .. } => {
                let k = match kind {
                    MapKind::Anon => "anonymous",
                    MapKind::Heap => "heap (brk)",
                    MapKind::Stack => "stack",
                    MapKind::File { .. } => "file",
                    MapKind::Special(_) => "special (vdso, vvar)",
                };
                let e = maps.entry(k).or_default();
                e.0 += 1;
                e.1 += len;
            }
            Event::Unmap { .. } => *calls.entry("munmap / brk shrink").or_default() += 1,
            Event::Remap { .. } => *calls.entry("mremap").or_default() += 1,
            Event::Protect { .. } => *calls.entry("mprotect").or_default() += 1,
            Event::Advise { .. } => *calls.entry("madvise").or_default() += 1,
            Event::Io { call, .. } => *calls.entry(call.name()).or_default() += 1,
            Event::Epoch => epochs += 1,
            Event::Fork { .. } | Event::Thread { .. } | Event::Exit { .. } => {}
            Event::Fault { .. } | Event::Access { .. } => {}
        }
    }
    let (faults, pages) = first_touches(&trace);
    let r = replay::replay(&trace, Options::default()).map_err(|e| RecordingError {
        file: dir.join(TRACE),
        what: e.to_string(),
    })?;
    let mut o = String::new();
    let _ = writeln!(o, "recording {}", dir.display());
    let _ = writeln!(o, "  command      {}", m.command.join(" "));
    let _ = writeln!(o, "  host         {} Linux {}", m.arch, m.kernel);
    let _ = writeln!(
        o,
        "  policy       THP disabled (PR_SET_THP_DISABLE), fault_around_bytes {}",
        m.fault_around_bytes
    );
    let _ = writeln!(o, "  exit status  {}", status_text(m.status));
    let wall = m.wall_ns as f64 / 1e9;
    if m.plain_wall_ns > 0 {
        let plain = m.plain_wall_ns as f64 / 1e9;
        let _ = writeln!(
            o,
            "  wall time    {wall:.3} s recorded, {plain:.3} s without recording ({:.2}x)",
            wall / plain
        );
    } else {
        let _ = writeln!(o, "  wall time    {wall:.3} s recorded");
    }
    let size = std::fs::metadata(dir.join(TRACE)).map_or(0, |m| m.len());
    let _ = writeln!(
        o,
        "  trace        {size} bytes ({:.2} bytes per first-touched page)",
        size as f64 / pages.max(1) as f64
    );
    let _ = writeln!(
        o,
        "  tasks        {}, {}, {}",
        plural(procs.len(), "process", "processes"),
        plural(threads.len(), "thread", "threads"),
        plural(execs, "exec", "execs")
    );
    let _ = writeln!(o, "  files        {files}");
    let _ = writeln!(o, "  mappings");
    for (k, (n, bytes)) in &maps {
        let _ = writeln!(o, "    {k:<22} {n:>7} ({} KiB)", bytes / 1024);
    }
    for (k, n) in &calls {
        let _ = writeln!(o, "  {k:<24} {n:>7}");
    }
    let _ = writeln!(
        o,
        "  page faults  {faults} ({pages} distinct pages per process)"
    );
    let by_kind: Vec<String> = r
        .first_touched
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let _ = writeln!(
        o,
        "  first touches  {} (replayed, by mapping)",
        by_kind.join(", ")
    );
    if m.epoch_ms == 0 {
        let _ = writeln!(o, "  epochs       none (first touches only)");
    } else {
        let _ = writeln!(
            o,
            "  epochs       {epochs} of {} ms: {} later writes of present pages \
             (userfaultfd write-protect + PAGEMAP_SCAN; reads of present pages are not seen)",
            m.epoch_ms, r.written
        );
    }
    if m.lost_faults > 0 {
        let _ = writeln!(
            o,
            "  LOST         {} fault events (the kernel's buffer was full): \
             the recording is incomplete",
            m.lost_faults
        );
    }
    let s = &r.skipped;
    let _ = writeln!(
        o,
        "  replay       {} faults as touches, {} I/O calls ({} KiB); not replayed: {} in \
         vdso/vvar, {} outside every mapping, {} mprotect, {} madvise, {} mremap of a partial \
         region as unmap + map",
        r.faults,
        r.io_calls,
        r.io_bytes / 1024,
        s.special_faults,
        s.stray_faults,
        s.mprotects,
        s.advice,
        s.mremaps
    );
    Ok(o)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A wait status in words.
fn status_text(status: i32) -> String {
    let sig = status & 0x7f;
    if sig == 0 {
        format!("exited with {}", (status >> 8) & 0xff)
    } else {
        format!("killed by signal {sig}")
    }
}

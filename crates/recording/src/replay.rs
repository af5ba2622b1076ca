//! A recording as a scenario: the trace's records, process by process in
//! time order, become the steps of the scenario language (mmap at the
//! recorded address, touch of the recorded pages in their order, munmap,
//! madvise, fork), appended to the recording's header. Every engine then
//! runs it like any scenario.
//!
//! What cannot be replayed is counted, not guessed ([`Skipped`]): faults
//! in the kernel's special mappings (vdso, vvar) or outside every known
//! mapping, mprotect(2) calls, advice the scenario language has no name
//! for. A region is mapped with the protection it was mapped with, plus
//! every protection a later mprotect(2) gave part of it, plus read (and
//! write) when the program faulted on it (reading, writing): so that no
//! replayed touch is refused, and neighbours the kernel kept apart by
//! their protection stay apart. mremap(2) of a whole region becomes an
//! mremap step of that region (at its replayed new address when it moved),
//! so the pages it moved stay present; an mremap of part of a region, or
//! of a region a fork's child inherited, becomes an unmap of the old range
//! and a mapping of the new one, whose moved pages are not present in the
//! replay until touched again.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use foliosim_uapi::Madv;

use crate::format::{Event, FormatError, IoCall, MapKind, Trace};

/// The stack may grow this far below its mapping at exec (the default
/// RLIMIT_STACK): a fault below the stack and within this distance grows
/// it.
const STACK_LIMIT: u64 = 8 << 20;
const PAGE: u64 = 4096;

/// Recorded addresses at or above this (the top 32 TiB of the user
/// address space: shared libraries, mmap, the stack) replay this much
/// lower, below the randomised range where a native replay's own
/// libraries and stack live.
const HIGH: u64 = 0x6000_0000_0000;
const HIGH_SHIFT: u64 = 0x2000_0000_0000;
/// Recorded addresses below this (a static executable's text at 4 MiB
/// and its brk heap) replay this much higher, away from where a static
/// replaying program (the guest's foliosim) is loaded itself.
const LOW: u64 = 0x1000_0000_0000;
const LOW_SHIFT: u64 = 0x1000_0000_0000;

/// Where a recorded address replays: every alignment up to 16 TiB kept.
pub fn replay_address(a: u64) -> u64 {
    if a >= HIGH {
        a - HIGH_SHIFT
    } else if a < LOW {
        a + LOW_SHIFT
    } else {
        a
    }
}

/// What the replay leaves out, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Faults in vdso/vvar/vsyscall mappings.
    pub special_faults: u64,
    /// Faults at addresses no recorded mapping covers.
    pub stray_faults: u64,
    pub mprotects: u64,
    /// madvise calls with advice the scenario language lacks.
    pub advice: u64,
    /// mremap calls replayed as an unmap and a new mapping (not of a whole
    /// region the process mapped itself).
    pub mremaps: u64,
}

/// How a trace becomes steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Start a new phase every this many epochs of the recording (0: one
    /// phase for the whole replay).
    pub phase_every: u64,
}

/// The largest file a replay makes (the largest file ext4 allows with 4
/// KiB blocks).
const MAX_FILE: u64 = 16 << 40;

/// The largest call an I/O step makes (the language's limit on
/// `read_size` and `write_size`).
const MAX_CALL: u64 = 64 << 20;

/// The generated steps and what they leave out.
#[derive(Debug)]
pub struct Replay {
    /// `[[file]]` tables, then `[[step]]`s.
    pub text: String,
    pub skipped: Skipped,
    /// Faults the steps replay (one touch of a page each).
    pub faults: u64,
    /// Later accesses the steps replay.
    pub written: u64,
    /// I/O calls the steps replay, and their bytes.
    pub io_calls: u64,
    pub io_bytes: u64,
    /// Phases the replay has.
    pub phases: u64,
    /// Distinct pages each process first touched, by the kind of their
    /// mapping (`anonymous`, `heap`, `stack`, `file`, `shared`).
    pub first_touched: BTreeMap<&'static str, u64>,
}

#[derive(Clone, Debug)]
struct Vma {
    end: u64,
    /// None: a special mapping (not replayed).
    region: Option<u32>,
    /// The address the region was mapped at.
    region_start: u64,
    kind: MapKind,
    shared: bool,
}

enum Step {
    Mmap {
        region: u32,
        at: u64,
        size: u64,
        kind: MapKind,
        shared: bool,
    },
    Touch {
        region: u32,
        write: bool,
        pages: Vec<u32>,
    },
    Munmap {
        region: u32,
        offset: u64,
        len: u64,
    },
    Madvise {
        region: u32,
        offset: u64,
        len: u64,
        advice: &'static str,
    },
    /// mremap(2) of the whole region to `size` bytes, at the recorded
    /// new address `at` if it moved.
    Mremap {
        region: u32,
        size: u64,
        at: Option<u64>,
        grows: bool,
    },
    /// A fork of process `child` (its steps are rendered in place).
    Fork(u32),
    /// Buffered I/O: consecutive calls of `chunk` bytes over
    /// `[offset, offset + len)` (the last may be shorter).
    Io {
        file: u32,
        call: IoCall,
        offset: u64,
        len: u64,
        chunk: u64,
    },
    /// A new phase, named after the epoch it starts at.
    Phase(u64),
}

#[derive(Default)]
struct Proc {
    vmas: BTreeMap<u64, Vma>,
    steps: Vec<Step>,
}

struct Gen<'t> {
    procs: HashMap<u32, Proc>,
    /// The protection of each region (`PROT_*` bits).
    prot: HashMap<u32, u32>,
    regions: u32,
    files: BTreeMap<u32, u64>,
    /// Each file's size, cached bytes and path when first seen.
    file_info: HashMap<u32, (u64, u64, &'t str)>,
    skipped: Skipped,
    faults: u64,
    written: u64,
    io_calls: u64,
    io_bytes: u64,
    touched: std::collections::HashSet<(u32, u64)>,
    first_touched: BTreeMap<&'static str, u64>,
    /// The lowest page each stack mapping (by the index of its Map
    /// record) grows down to.
    stack_low: HashMap<usize, u64>,
}

/// The top of the user address space with 4-level page tables.
const USER_TOP: u64 = 1 << 47;
/// The largest mapping a replay can express: a touch names its pages
/// with 32-bit indexes.
const MAX_MAP: u64 = (u32::MAX as u64) * PAGE;

/// Check the values of every record a replay uses: page-aligned ranges
/// inside the user address space, faults below its top. A trace that
/// decodes but holds other values is damaged; the error names the
/// record's byte offset.
fn validate(trace: &Trace) -> Result<(), FormatError> {
    for (at, e) in &trace.events {
        let bad = |what: String| {
            Err(FormatError {
                offset: *at,
                in_file: false,
                what,
            })
        };
        let range = |start: u64, len: u64| {
            start.is_multiple_of(PAGE)
                && len.is_multiple_of(PAGE)
                && start.checked_add(len).is_some_and(|end| end <= USER_TOP)
        };
        match e {
            // The kernel's own mappings may lie above the user address
            // space (x86's vsyscall page): only their end must exist.
            Event::Map {
                start,
                len,
                kind: MapKind::Special(_),
                ..
            } if start.checked_add(*len).is_none() => {
                return bad(format!(
                    "a mapping of {len:#x} bytes at {start:#x} wraps around"
                ));
            }
            Event::Map {
                kind: MapKind::Special(_),
                ..
            } => {}
            Event::Map { start, len, .. } if *len == 0 || !range(*start, *len) => {
                return bad(format!(
                    "a mapping of {len:#x} bytes at {start:#x} is not a page-aligned range of \
                     the user address space"
                ));
            }
            Event::Map { len, .. } if *len > MAX_MAP => {
                return bad(format!(
                    "unsupported: a mapping of {len:#x} bytes (a replay maps at most 2^32 pages \
                     at once)"
                ));
            }
            Event::Unmap { start, len }
            | Event::Protect { start, len, .. }
            | Event::Advise { start, len, .. }
                if !range(*start, *len) =>
            {
                return bad(format!(
                    "the range of {len:#x} bytes at {start:#x} is not a page-aligned range of \
                     the user address space"
                ));
            }
            Event::Remap {
                old,
                old_len,
                new,
                new_len,
            } if !range(*old, *old_len) || !range(*new, *new_len) || *new_len > MAX_MAP => {
                return bad(format!(
                    "mremap from {old:#x} (+{old_len:#x}) to {new:#x} (+{new_len:#x}) is not \
                     made of page-aligned ranges of the user address space"
                ));
            }
            Event::Fault { page, .. } if *page >= USER_TOP / PAGE => {
                return bad(format!(
                    "a fault at page {page:#x}, beyond the user address space"
                ));
            }
            Event::Access { page, .. } if *page >= USER_TOP / PAGE => {
                return bad(format!(
                    "an access to page {page:#x}, beyond the user address space"
                ));
            }
            Event::Io { offset, len, .. }
                if offset.checked_add(*len).is_none_or(|e| e > MAX_FILE) =>
            {
                return bad(format!(
                    "an I/O call of {len:#x} bytes at file offset {offset:#x}, beyond the \
                     largest file a replay makes"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Turn a decoded trace into scenario steps (an error for a trace whose
/// records hold impossible values).
pub fn replay(trace: &Trace, opts: Options) -> Result<Replay, FormatError> {
    validate(trace)?;
    let mut g = Gen {
        procs: HashMap::new(),
        prot: HashMap::new(),
        regions: 0,
        files: BTreeMap::new(),
        file_info: HashMap::new(),
        skipped: Skipped::default(),
        faults: 0,
        written: 0,
        io_calls: 0,
        io_bytes: 0,
        touched: Default::default(),
        first_touched: BTreeMap::new(),
        stack_low: stack_extents(trace),
    };
    let mut pid = 0;
    let mut root = None;
    let mut epoch = 0u64;
    let mut phases = 1;
    for (i, (_, e)) in trace.events.iter().enumerate() {
        match e {
            Event::Task { pid: p, .. } => {
                pid = *p;
                root.get_or_insert(pid);
                g.procs.entry(pid).or_default();
            }
            Event::File {
                id,
                size,
                cached,
                path,
                ..
            } => {
                g.file_info.insert(*id, (*size, *cached, path.as_str()));
            }
            Event::Io {
                file,
                call,
                offset,
                len,
            } => g.io(pid, *file, *call, *offset, *len),
            Event::Epoch => {
                epoch += 1;
                if let Some(r) =
                    root.filter(|_| opts.phase_every > 0 && epoch.is_multiple_of(opts.phase_every))
                {
                    g.proc(r).steps.push(Step::Phase(epoch));
                    phases += 1;
                }
            }
            Event::Access { page, write } => g.access(pid, *page, *write),
            Event::Fork { child } => {
                let vmas = g.proc(pid).vmas.clone();
                g.procs.insert(
                    *child,
                    Proc {
                        vmas,
                        steps: Vec::new(),
                    },
                );
                g.proc(pid).steps.push(Step::Fork(*child));
            }
            Event::Thread { .. } | Event::Exit { .. } => {}
            Event::Exec => {
                g.touched.retain(|(p, _)| *p != pid);
                let all: Vec<(u64, u64)> =
                    g.proc(pid).vmas.iter().map(|(s, v)| (*s, v.end)).collect();
                for (s, end) in all {
                    g.unmap(pid, s, end - s);
                }
            }
            Event::Map {
                start,
                len,
                shared,
                kind,
                prot,
            } => {
                let mut start = *start;
                let end = start + len;
                if let Some(&low) = g.stack_low.get(&i) {
                    start = start.min(low);
                }
                if let Some(r) = g.map(pid, start, end, kind.clone(), *shared) {
                    g.prot.insert(r, *prot & 7);
                }
            }
            Event::Unmap { start, len } => g.unmap(pid, *start, *len),
            Event::Remap {
                old,
                old_len,
                new,
                new_len,
            } if g.remap(pid, *old, *old_len, *new, *new_len) => {}
            Event::Remap {
                old,
                old_len,
                new,
                new_len,
            } => {
                g.skipped.mremaps += 1;
                // What moves: the kind (a file mapping's offset where the
                // old range starts) and protection of the region at `old`.
                let moved = g.vma_at(pid, *old).filter(|v| v.region.is_some()).map(|v| {
                    let kind = match &v.kind {
                        MapKind::File { file, offset } => MapKind::File {
                            file: *file,
                            offset: offset + (old - v.region_start),
                        },
                        MapKind::Heap | MapKind::Stack => MapKind::Anon,
                        k => k.clone(),
                    };
                    (kind, v.shared, v.region)
                });
                let old_prot = moved
                    .as_ref()
                    .and_then(|m| m.2)
                    .and_then(|r| g.prot.get(&r).copied());
                g.unmap(pid, *old, *old_len);
                if let Some((kind, shared, _)) = moved {
                    if let Some(r) = g.map(pid, *new, new + new_len, kind, shared) {
                        g.prot.insert(r, old_prot.unwrap_or(3));
                    }
                }
            }
            Event::Protect { start, len, prot } => {
                g.skipped.mprotects += 1;
                for (_, _, s) in g.pieces(pid, *start, *len) {
                    if let Some(r) = g.proc(pid).vmas[&s].region {
                        *g.prot.entry(r).or_default() |= prot & 7;
                    }
                }
            }
            Event::Advise { start, len, advice } => g.advise(pid, *start, *len, *advice),
            Event::Fault { page, write } => g.fault(pid, *page, *write),
        }
    }
    let mut text = String::new();
    for (id, size) in &g.files {
        let (first_size, cached, path) = g.file_info.get(id).copied().unwrap_or((0, 0, ""));
        // A file mostly in the page cache when the program first used it
        // is replayed cached (written before the first step); else cold.
        let fill = if first_size > 0 && cached * 2 >= first_size {
            "write"
        } else {
            "cold"
        };
        let _ = writeln!(
            text,
            "\n[[file]]\n# {}\nname = \"f{id}\"\nsize = {size}\nfill = \"{fill}\"",
            toml_comment(path)
        );
    }
    let first = if opts.phase_every > 0 {
        "epoch-0"
    } else {
        "replay"
    };
    let _ = write!(text, "\n[[step]]\nop = \"phase\"\nname = \"{first}\"\n");
    if let Some(root) = root {
        render(&mut g, root, "step", &mut text);
    }
    Ok(Replay {
        text,
        skipped: g.skipped,
        faults: g.faults,
        written: g.written,
        io_calls: g.io_calls,
        io_bytes: g.io_bytes,
        phases,
        first_touched: g.first_touched,
    })
}

fn toml_comment(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).collect()
}

/// For every stack mapping (the index of its Map record), the lowest
/// page its process faults below it while it is the process's stack.
fn stack_extents(trace: &Trace) -> HashMap<usize, u64> {
    let mut stacks: HashMap<u32, (usize, u64)> = HashMap::new();
    let mut low: HashMap<usize, u64> = HashMap::new();
    let mut pid = 0;
    for (i, (_, e)) in trace.events.iter().enumerate() {
        match e {
            Event::Task { pid: p, .. } => pid = *p,
            Event::Fork { child } => {
                if let Some(&s) = stacks.get(&pid) {
                    stacks.insert(*child, s);
                }
            }
            Event::Exec => {
                stacks.remove(&pid);
            }
            Event::Map {
                start,
                kind: MapKind::Stack,
                ..
            } => {
                stacks.insert(pid, (i, *start));
            }
            Event::Fault { page, .. } => {
                if let Some(&(idx, start)) = stacks.get(&pid) {
                    let a = page * PAGE;
                    if a < start && a.saturating_add(STACK_LIMIT) >= start {
                        let l = low.entry(idx).or_insert(start);
                        *l = (*l).min(a);
                    }
                }
            }
            _ => {}
        }
    }
    low
}

impl Gen<'_> {
    fn proc(&mut self, pid: u32) -> &mut Proc {
        self.procs.entry(pid).or_default()
    }

    /// The mapping of `pid` that holds `addr`, if any.
    fn vma_at(&mut self, pid: u32, addr: u64) -> Option<&Vma> {
        let (_, v) = self.proc(pid).vmas.range(..=addr).next_back()?;
        (v.end > addr).then_some(v)
    }

    /// Map [start, end): the new region, if it is one (not special).
    fn map(&mut self, pid: u32, start: u64, end: u64, kind: MapKind, shared: bool) -> Option<u32> {
        self.unmap(pid, start, end - start);
        let region = match &kind {
            MapKind::Special(_) => None,
            _ => {
                self.regions += 1;
                Some(self.regions)
            }
        };
        if let MapKind::File { file, offset } = &kind {
            let need = offset + (end - start);
            let size = self.file_info.get(file).map_or(0, |f| f.0);
            let e = self.files.entry(*file).or_insert(0);
            *e = (*e).max(need.max(size).div_ceil(PAGE) * PAGE);
        }
        let p = self.proc(pid);
        if let Some(region) = region {
            p.steps.push(Step::Mmap {
                region,
                at: start,
                size: end - start,
                kind: kind.clone(),
                shared,
            });
        }
        p.vmas.insert(
            start,
            Vma {
                end,
                region,
                region_start: start,
                kind,
                shared,
            },
        );
        region
    }

    /// The pieces of `pid`'s mappings inside [start, start + len), as
    /// (piece start, piece end, vma start).
    fn pieces(&mut self, pid: u32, start: u64, len: u64) -> Vec<(u64, u64, u64)> {
        let end = start.saturating_add(len);
        let p = self.proc(pid);
        let first = p.vmas.range(..start).next_back().map(|(s, _)| *s);
        let mut out = Vec::new();
        for (s, v) in p.vmas.range(first.unwrap_or(start)..end) {
            let (a, b) = (start.max(*s), end.min(v.end));
            if a < b {
                out.push((a, b, *s));
            }
        }
        out
    }

    fn unmap(&mut self, pid: u32, start: u64, len: u64) {
        for (a, b, s) in self.pieces(pid, start, len) {
            let p = self.proc(pid);
            let Some(v) = p.vmas.remove(&s) else { continue };
            if let Some(region) = v.region {
                p.steps.push(Step::Munmap {
                    region,
                    offset: a - v.region_start,
                    len: b - a,
                });
            }
            if s < a {
                p.vmas.insert(
                    s,
                    Vma {
                        end: a,
                        ..v.clone()
                    },
                );
            }
            if b < v.end {
                p.vmas.insert(b, v);
            }
        }
    }

    /// A recorded mremap(2) of a whole region the process mapped itself,
    /// in one piece: an mremap step of that region, which keeps its name
    /// (whatever the kernel unmapped at a fixed target goes first). False
    /// for anything else (part of a region, a region inherited at a fork,
    /// a special mapping), which the caller replays as unmap + map.
    fn remap(&mut self, pid: u32, old: u64, old_len: u64, new: u64, new_len: u64) -> bool {
        let Some(v) = self.vma_at(pid, old).cloned() else {
            return false;
        };
        let Some(region) = v.region else {
            return false;
        };
        if v.region_start != old
            || v.end != old + old_len
            || self.region_size(pid, region) != Some(old_len)
        {
            return false;
        }
        if new != old {
            self.unmap(pid, new, new_len);
        }
        if let MapKind::File { file, offset } = &v.kind {
            let need = (offset + new_len).div_ceil(PAGE) * PAGE;
            let e = self.files.entry(*file).or_insert(0);
            *e = (*e).max(need);
        }
        let p = self.proc(pid);
        p.vmas.remove(&old);
        p.steps.push(Step::Mremap {
            region,
            size: new_len,
            at: (new != old).then_some(new),
            grows: new_len > old_len,
        });
        p.vmas.insert(
            new,
            Vma {
                end: new + new_len,
                region_start: new,
                ..v
            },
        );
        true
    }

    /// The size the scenario gives `region` now: that of its last mmap or
    /// mremap step in this process, unless a munmap of it came after
    /// (None: the region comes from the parent, or part of it is gone).
    fn region_size(&mut self, pid: u32, region: u32) -> Option<u64> {
        for s in self.proc(pid).steps.iter().rev() {
            match *s {
                Step::Mmap {
                    region: r, size, ..
                }
                | Step::Mremap {
                    region: r, size, ..
                } if r == region => return Some(size),
                Step::Munmap { region: r, .. } if r == region => return None,
                _ => {}
            }
        }
        None
    }

    fn advise(&mut self, pid: u32, start: u64, len: u64, advice: u32) {
        let Some(name) = i32::try_from(advice)
            .ok()
            .and_then(Madv::from_raw)
            .map(Madv::name)
        else {
            self.skipped.advice += 1;
            return;
        };
        for (a, b, s) in self.pieces(pid, start, len) {
            let p = self.proc(pid);
            let v = &p.vmas[&s];
            if let Some(region) = v.region {
                let offset = a - v.region_start;
                p.steps.push(Step::Madvise {
                    region,
                    offset,
                    len: b - a,
                    advice: name,
                });
            }
        }
    }

    /// One I/O call: extends the previous I/O step when it continues it
    /// (same file and call, at its end, every call so far `chunk` bytes
    /// and this one no longer).
    fn io(&mut self, pid: u32, file: u32, call: IoCall, offset: u64, len: u64) {
        let Some(end) = offset.checked_add(len).filter(|_| len > 0) else {
            return;
        };
        self.io_calls += 1;
        self.io_bytes += len;
        let size = self.file_info.get(&file).map_or(0, |f| f.0);
        let e = self.files.entry(file).or_insert(0);
        *e = (*e).max(end.max(size).div_ceil(PAGE) * PAGE);
        let p = self.proc(pid);
        if let Some(Step::Io {
            file: f,
            call: c,
            offset: o,
            len: l,
            chunk,
        }) = p.steps.last_mut()
        {
            if *f == file
                && *c == call
                && *o + *l == offset
                && (*l).is_multiple_of(*chunk)
                && len <= *chunk
            {
                *l += len;
                return;
            }
        }
        p.steps.push(Step::Io {
            file,
            call,
            offset,
            len,
            chunk: len.min(MAX_CALL),
        });
    }

    /// A later access of `pid` to a present page: a touch like a fault's,
    /// not counted as one.
    fn access(&mut self, pid: u32, page: u64, write: bool) {
        let a = page * PAGE;
        let Some((Some(region), start)) = self.vma_at(pid, a).map(|v| (v.region, v.region_start))
        else {
            return;
        };
        self.written += 1;
        *self.prot.entry(region).or_default() |= if write { 3 } else { 1 };
        let idx = ((a - start) / PAGE) as u32;
        self.push_touch(pid, region, write, idx);
    }

    /// A touch of page `idx` of `region`: appended to the last step when
    /// that touches the same region the same way.
    fn push_touch(&mut self, pid: u32, region: u32, write: bool, idx: u32) {
        let p = self.proc(pid);
        if let Some(Step::Touch {
            region: r,
            write: w,
            pages,
        }) = p.steps.last_mut()
        {
            if *r == region && *w == write {
                pages.push(idx);
                return;
            }
        }
        p.steps.push(Step::Touch {
            region,
            write,
            pages: vec![idx],
        });
    }

    fn fault(&mut self, pid: u32, page: u64, write: bool) {
        let a = page * PAGE;
        let (region, start, kind) = match self.vma_at(pid, a).map(|v| {
            let kind = match (&v.kind, v.shared) {
                (_, true) => "shared",
                (MapKind::Heap, _) => "heap",
                (MapKind::Stack, _) => "stack",
                (MapKind::File { .. }, _) => "file",
                _ => "anonymous",
            };
            (v.region, v.region_start, kind)
        }) {
            Some((Some(r), s, k)) => (r, s, k),
            Some((None, ..)) => {
                self.skipped.special_faults += 1;
                return;
            }
            None => {
                self.skipped.stray_faults += 1;
                return;
            }
        };
        self.faults += 1;
        if self.touched.insert((pid, page)) {
            *self.first_touched.entry(kind).or_default() += 1;
        }
        *self.prot.entry(region).or_default() |= if write { 3 } else { 1 };
        let idx = ((a - start) / PAGE) as u32;
        self.push_touch(pid, region, write, idx);
    }
}

/// Page indexes as runs: `a-b` ascending or descending by one, else
/// single numbers, comma-separated.
pub fn runs(pages: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < pages.len() {
        let a = pages[i];
        let mut j = i;
        let step = match pages.get(i + 1) {
            Some(&n) if n == a.wrapping_add(1) => 1i64,
            Some(&n) if a > 0 && n == a - 1 => -1,
            _ => 0,
        };
        if step != 0 {
            while j + 1 < pages.len() && pages[j + 1] as i64 == pages[j] as i64 + step {
                j += 1;
            }
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            let _ = write!(out, "{a}-{}", pages[j]);
        } else {
            let _ = write!(out, "{a}");
        }
        i = j + 1;
    }
    out
}

fn render(g: &mut Gen<'_>, pid: u32, table: &str, out: &mut String) {
    let steps = g.procs.get_mut(&pid).map(|p| std::mem::take(&mut p.steps));
    for s in steps.unwrap_or_default() {
        let _ = write!(out, "\n[[{table}]]\n");
        match s {
            Step::Mmap {
                region,
                at,
                size,
                kind,
                shared,
            } => {
                let at = replay_address(at);
                let _ = writeln!(out, "op = \"mmap\"\nregion = \"m{region}\"\nat = {at:#x}");
                let p = g.prot.get(&region).copied().unwrap_or(3);
                let prot: String = [(1, 'r'), (2, 'w'), (4, 'x')]
                    .iter()
                    .filter(|(bit, _)| p & bit != 0)
                    .map(|(_, c)| *c)
                    .collect();
                let prot = if prot.is_empty() { "none".into() } else { prot };
                let _ = writeln!(out, "size = {size}\nprot = \"{prot}\"");
                match kind {
                    MapKind::File { file, offset } => {
                        let _ = writeln!(
                            out,
                            "kind = \"file\"\nfile = \"f{file}\"\noffset = {offset}"
                        );
                        if shared {
                            out.push_str("shared = true\n");
                        }
                    }
                    _ if shared => out.push_str("kind = \"shmem\"\nshared = true\n"),
                    _ => out.push_str("kind = \"anon\"\n"),
                }
            }
            Step::Touch {
                region,
                write,
                pages,
            } => {
                let access = if write { "write" } else { "read" };
                let _ = writeln!(
                    out,
                    "op = \"touch\"\nregion = \"m{region}\"\naccess = \"{access}\"\n\
                     pattern = \"list\"\npages = \"{}\"",
                    runs(&pages)
                );
            }
            Step::Munmap {
                region,
                offset,
                len,
            } => {
                let _ = writeln!(
                    out,
                    "op = \"munmap\"\nregion = \"m{region}\"\noffset = {offset}\nlen = {len}"
                );
            }
            Step::Madvise {
                region,
                offset,
                len,
                advice,
            } => {
                let _ = writeln!(
                    out,
                    "op = \"madvise\"\nregion = \"m{region}\"\nadvice = \"{advice}\"\n\
                     offset = {offset}\nlen = {len}"
                );
            }
            Step::Io {
                file,
                call,
                offset,
                len,
                chunk,
            } => {
                let size_key = if call.is_write() {
                    "write_size"
                } else {
                    "read_size"
                };
                let _ = writeln!(
                    out,
                    "op = \"{}\"\nfile = \"f{file}\"\noffset = {offset}\nlen = {len}\n\
                     {size_key} = {chunk}",
                    call.name()
                );
            }
            Step::Phase(epoch) => {
                let _ = writeln!(out, "op = \"phase\"\nname = \"epoch-{epoch}\"");
            }
            Step::Mremap {
                region,
                size,
                at,
                grows,
            } => {
                let _ = writeln!(
                    out,
                    "op = \"mremap\"\nregion = \"m{region}\"\nsize = {size}"
                );
                match at {
                    Some(at) => {
                        let _ = writeln!(out, "at = {:#x}", replay_address(at));
                    }
                    // Grown in place when recorded: the replay lets the
                    // kernel move it if its layout has no room there.
                    None if grows => out.push_str("maymove = true\n"),
                    None => {}
                }
            }
            Step::Fork(child) => {
                out.push_str("op = \"fork\"\n");
                let inner = format!("{table}.child");
                render(g, child, &inner, out);
                let _ = write!(out, "\n[[{table}]]\nop = \"wait\"\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Meta;

    /// Damaged records never panic the decoder or the replay: 20,000
    /// copies of a trace with bytes flipped and cut are each decoded and
    /// replayed, or refused with an error naming a byte.
    #[test]
    fn damaged_traces_are_refused_not_panicked_on() {
        use crate::format::{decode_records, encode_file, Encoder};
        let mut e = Encoder::new();
        let events = [
            Event::Task { pid: 3, tid: 3 },
            Event::File {
                id: 0,
                dev: 1,
                ino: 2,
                size: 9000,
                cached: 4096,
                path: "/lib/x".into(),
            },
            Event::Map {
                start: 0x7fff_f000_0000,
                len: 0x10_0000,
                prot: 3,
                shared: false,
                kind: MapKind::File { file: 0, offset: 0 },
            },
            Event::Map {
                start: 0x5555_5555_4000,
                len: 0x4000,
                prot: 3,
                shared: false,
                kind: MapKind::Stack,
            },
            Event::Fault {
                page: 0x7_ffff_0001,
                write: true,
            },
            Event::Fork { child: 4 },
            Event::Task { pid: 4, tid: 4 },
            Event::Advise {
                start: 0x7fff_f000_0000,
                len: 0x2000,
                advice: 4,
            },
            Event::Remap {
                old: 0x7fff_f000_0000,
                old_len: 0x1000,
                new: 0x7fff_e000_0000,
                new_len: 0x2000,
            },
            Event::Fault {
                page: 0x5_5555_5553,
                write: false,
            },
            Event::Io {
                file: 0,
                call: IoCall::Read,
                offset: 100,
                len: 4000,
            },
            Event::Epoch,
            Event::Access {
                page: 0x5_5555_5553,
                write: true,
            },
            Event::Exec,
            Event::Exit { status: 0 },
        ];
        for ev in &events {
            e.push(ev);
        }
        let file = encode_file(&Meta::default(), &e.finish());
        let good = crate::format::decode_file(&file).unwrap();
        assert!(replay(&good, Options::default()).is_ok());
        // The decompressed records, to damage after the gzip layer.
        let mut raw = Vec::new();
        let mut gz = flate2::read::GzDecoder::new(&file[12..]);
        std::io::Read::read_to_end(&mut gz, &mut raw).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut ok, mut refused) = (0, 0);
        for _ in 0..20_000 {
            let mut b = raw.clone();
            for _ in 0..1 + next() % 3 {
                let i = (next() % b.len() as u64) as usize;
                b[i] = next() as u8;
            }
            b.truncate(1 + (next() % b.len() as u64) as usize);
            match decode_records(&b, crate::format::VERSION).map(|t| replay(&t, Options::default()))
            {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) | Err(e) => {
                    assert!(e.offset <= b.len() as u64, "{e}");
                    refused += 1;
                }
            }
        }
        assert!(ok > 0 && refused > 0, "{ok} replayed, {refused} refused");
    }

    #[test]
    fn runs_go_both_ways() {
        assert_eq!(runs(&[0, 1, 2, 3, 7, 9, 8, 7, 6, 20]), "0-3,7,9-6,20");
        assert_eq!(runs(&[5]), "5");
        assert_eq!(runs(&[]), "");
    }

    fn trace(events: Vec<Event>) -> Trace {
        Trace {
            meta: Meta::default(),
            events: events.into_iter().map(|e| (0, e)).collect(),
        }
    }

    /// A stack grows down to its lowest fault; faults in the vdso and
    /// outside every mapping are counted, not replayed; touches of one
    /// region and access merge.
    #[test]
    fn stack_vdso_and_stray_faults() {
        let top = 0x7fff_ffff_f000u64;
        let t = trace(vec![
            Event::Task { pid: 1, tid: 1 },
            Event::Exec,
            Event::Map {
                start: top - 0x21000,
                len: 0x21000,
                prot: 3,
                shared: false,
                kind: MapKind::Stack,
            },
            Event::Map {
                start: 0x7fff_f7fc_1000,
                len: 0x2000,
                prot: 5,
                shared: false,
                kind: MapKind::Special("[vdso]".into()),
            },
            Event::Fault {
                page: (top >> 12) - 1,
                write: true,
            },
            Event::Fault {
                page: (top >> 12) - 2,
                write: true,
            },
            Event::Fault {
                page: (top - 0x30000) >> 12,
                write: true,
            },
            Event::Fault {
                page: 0x0007_ffff_7fc1,
                write: false,
            },
            Event::Fault {
                page: 0x10,
                write: false,
            },
        ]);
        let r = replay(&t, Options::default()).unwrap();
        assert_eq!(r.faults, 3);
        assert_eq!(r.skipped.special_faults, 1);
        assert_eq!(r.skipped.stray_faults, 1);
        // The stack region starts at the lowest fault: 0x30000 below the
        // top, so its pages are 0x2f, 0x2e (the first two faults) and 0.
        let at = replay_address(top - 0x30000);
        assert_eq!(at, 0x5fff_fffc_f000);
        assert!(
            r.text
                .contains(&format!("at = {at:#x}\nsize = {}", 0x30000)),
            "{}",
            r.text
        );
        assert!(r.text.contains("pages = \"47-46,0\""), "{}", r.text);
    }

    /// A MAP_FIXED mapping over part of another unmaps that part first; a
    /// fork's child runs its own steps, then the parent waits.
    /// An mremap of a whole region is an mremap step of that region at
    /// the replayed new address; later faults touch it relative to its new
    /// start. An mremap of part of a region is an unmap and a new mapping,
    /// and counted.
    #[test]
    fn whole_regions_remap_and_parts_unmap_and_map() {
        let t = trace(vec![
            Event::Task { pid: 1, tid: 1 },
            Event::Map {
                start: 0x7f00_0000_0000,
                len: 0x4000,
                prot: 3,
                shared: false,
                kind: MapKind::Anon,
            },
            Event::Fault {
                page: 0x7_f000_0001,
                write: true,
            },
            Event::Remap {
                old: 0x7f00_0000_0000,
                old_len: 0x4000,
                new: 0x7e00_0000_0000,
                new_len: 0x8000,
            },
            Event::Fault {
                page: 0x7_e000_0006,
                write: true,
            },
            Event::Remap {
                old: 0x7e00_0000_0000,
                old_len: 0x2000,
                new: 0x7d00_0000_0000,
                new_len: 0x2000,
            },
        ]);
        let r = replay(&t, Options::default()).unwrap();
        // 0x7e00_0000_0000 replays 0x2000_0000_0000 lower (HIGH_SHIFT).
        let moved = "op = \"mremap\"\nregion = \"m1\"\nsize = 32768\nat = 0x5e0000000000\n";
        assert!(r.text.contains(moved), "{}", r.text);
        let touch = "region = \"m1\"\naccess = \"write\"\npattern = \"list\"\npages = \"6\"";
        assert!(r.text.contains(touch), "{}", r.text);
        // The part: unmapped from m1, mapped anew as m2.
        let part = "op = \"munmap\"\nregion = \"m1\"\noffset = 0\nlen = 8192\n";
        assert!(r.text.contains(part), "{}", r.text);
        assert!(
            r.text.contains("region = \"m2\"\nat = 0x5d0000000000"),
            "{}",
            r.text
        );
        assert_eq!(r.skipped.mremaps, 1);
    }

    #[test]
    fn fixed_maps_split_and_forks_nest() {
        let t = trace(vec![
            Event::Task { pid: 1, tid: 1 },
            Event::Map {
                start: 0x10000,
                len: 0x10000,
                prot: 0,
                shared: false,
                kind: MapKind::Anon,
            },
            Event::Map {
                start: 0x14000,
                len: 0x4000,
                prot: 3,
                shared: false,
                kind: MapKind::Anon,
            },
            Event::Fork { child: 2 },
            Event::Task { pid: 2, tid: 2 },
            Event::Fault {
                page: 0x15,
                write: true,
            },
            Event::Task { pid: 1, tid: 1 },
            Event::Fault {
                page: 0x10,
                write: false,
            },
        ]);
        let r = replay(&t, Options::default()).unwrap();
        assert_eq!(r.faults, 2);
        let want = "[[step]]\nop = \"munmap\"\nregion = \"m1\"\noffset = 16384\nlen = 16384\n";
        assert!(r.text.contains(want), "{}", r.text);
        let child = "[[step.child]]\nop = \"touch\"\nregion = \"m2\"\naccess = \"write\"\n\
                     pattern = \"list\"\npages = \"1\"";
        assert!(r.text.contains(child), "{}", r.text);
        let wait = r.text.find("op = \"wait\"").unwrap();
        let parent = r.text.find("region = \"m1\"\naccess = \"read\"").unwrap();
        assert!(wait < parent, "{}", r.text);
    }

    fn file(id: u32, size: u64, cached: u64) -> Event {
        Event::File {
            id,
            dev: 1,
            ino: id as u64,
            size,
            cached,
            path: format!("/f{id}"),
        }
    }

    fn io(file: u32, call: IoCall, offset: u64, len: u64) -> Event {
        Event::Io {
            file,
            call,
            offset,
            len,
        }
    }

    /// Consecutive calls that continue each other in equal chunks become
    /// one I/O step; a call of another size, file or kind, or one that
    /// does not continue the range, starts a new one. A file mostly
    /// cached when first seen replays cached, else cold, and is as large
    /// as its furthest byte used.
    #[test]
    fn io_calls_merge_into_steps() {
        let t = trace(vec![
            Event::Task { pid: 1, tid: 1 },
            file(0, 1 << 20, 1 << 20),
            file(1, 0, 0),
            io(0, IoCall::Read, 0, 4096),
            io(0, IoCall::Read, 4096, 4096),
            io(0, IoCall::Read, 8192, 1000),
            // Shorter than the chunk above ended it: a new step.
            io(0, IoCall::Read, 9192, 4096),
            io(1, IoCall::Pwrite, 8192, 8192),
            io(1, IoCall::Pwrite, 16384, 8192),
            // Not at the end of the range before: a new step.
            io(1, IoCall::Pwrite, 0, 8192),
            io(1, IoCall::Pread, 8192, 8192),
        ]);
        let r = replay(&t, Options::default()).unwrap();
        assert_eq!(
            (r.io_calls, r.io_bytes),
            (8, 3 * 4096 + 1000 + 3 * 8192 + 8192)
        );
        let step = |op: &str, f: u32, off: u64, len: u64, key: &str, chunk: u64| {
            format!(
                "[[step]]\nop = \"{op}\"\nfile = \"f{f}\"\noffset = {off}\nlen = {len}\n\
                 {key} = {chunk}\n"
            )
        };
        for want in [
            step("read", 0, 0, 9192, "read_size", 4096),
            step("read", 0, 9192, 4096, "read_size", 4096),
            step("pwrite", 1, 8192, 16384, "write_size", 8192),
            step("pwrite", 1, 0, 8192, "write_size", 8192),
            step("pread", 1, 8192, 8192, "read_size", 8192),
        ] {
            assert!(r.text.contains(&want), "{want}\nnot in\n{}", r.text);
        }
        assert_eq!(r.text.matches("op = \"read\"").count(), 2, "{}", r.text);
        assert!(
            r.text
                .contains("name = \"f0\"\nsize = 1048576\nfill = \"write\""),
            "{}",
            r.text
        );
        // Created empty by the program, written to 24 KiB: cold.
        assert!(
            r.text
                .contains("name = \"f1\"\nsize = 24576\nfill = \"cold\""),
            "{}",
            r.text
        );
    }

    /// Accesses replay as touches of their page without counting as
    /// faults; `phase_every` starts a phase in the first process every so
    /// many epochs, named after the epoch it starts at.
    #[test]
    fn accesses_touch_and_epochs_make_phases() {
        let events = vec![
            Event::Task { pid: 1, tid: 1 },
            Event::Map {
                start: 0x10000,
                len: 0x10000,
                prot: 3,
                shared: false,
                kind: MapKind::Anon,
            },
            Event::Fault {
                page: 0x10,
                write: true,
            },
            Event::Epoch,
            Event::Access {
                page: 0x10,
                write: true,
            },
            Event::Epoch,
            Event::Epoch,
            Event::Fault {
                page: 0x11,
                write: true,
            },
            Event::Epoch,
        ];
        let r = replay(&trace(events.clone()), Options::default()).unwrap();
        assert_eq!((r.faults, r.written, r.phases), (2, 1, 1));
        assert!(r.text.contains("pages = \"0,0-1\""), "{}", r.text);
        assert!(r.text.contains("name = \"replay\""), "{}", r.text);
        let r = replay(&trace(events), Options { phase_every: 2 }).unwrap();
        assert_eq!(r.phases, 3);
        let names: Vec<&str> = r
            .text
            .lines()
            .filter_map(|l| l.strip_prefix("name = \"epoch-"))
            .collect();
        assert_eq!(names, ["0\"", "2\"", "4\""], "{}", r.text);
        // Epoch 2 starts between the access (epoch 1) and the second fault.
        let (p2, second) = (
            r.text.find("epoch-2").unwrap(),
            r.text.find("pages = \"1\"").unwrap(),
        );
        assert!(
            p2 < second && r.text.find("pages = \"0,0\"").unwrap() < p2,
            "{}",
            r.text
        );
    }
}

//! How much memory a simulation will need, known before it starts.
//!
//! The model's state grows with the simulated machine, not with the work:
//! `struct page` arrays for every page frame of `memory`, a page-cache
//! index for every page of every file, a swap map for every slot of every
//! swap area, page-table pages for what is touched, and the per-step
//! arrays the run keeps (random touch orders, raw pagemap entries). The
//! report grows with the work: every phase keeps its counters, folio
//! histograms and folio maps, and every step its validated and compiled
//! form. The estimate sums these per-unit costs of the data layout
//! (ARCHITECTURE.md "The kernel model"), so a scenario that cannot fit is
//! refused with the part that costs most named, instead of failing an
//! allocation midway. Parsing comes before all of it and grows with the
//! text ([`estimate_text`]).
//!
//! The per-phase, per-step and per-text-byte costs were measured as peak
//! RSS (`/usr/bin/time -f %M`) and heap (a counting allocator) of
//! `foliosim run` on generated scenarios, rounded up.

use foliosim_scenario::{Backing, Pattern, Range, Scenario, ScopedMap, Step, StepKind};

/// Bytes of model state per simulated page frame: `struct page` flags,
/// index, mapping (10), the ordered LRU links (8) and the memcg id (2).
const PER_PAGE_FRAME: u64 = 20;
/// Bytes per swap slot: swap_map, swap cache, zeromap, memcg.
const PER_SWAP_SLOT: u64 = 8;
/// Bytes per page of a file or shmem object: its page-cache slot.
const PER_CACHE_PAGE: u64 = 4;
/// Bytes per page of a random touch: its precomputed order.
const PER_RANDOM_PAGE: u64 = 4;
/// Bytes per raw pagemap entry kept for the report: the entry (8), its
/// `serde_json::Value` when the report is rendered (32) and its text in
/// the rendered document (up to 20 digits, a comma, a newline and the
/// indentation: 32), plus slack (8).
const PER_RAW_ENTRY: u64 = 80;
/// Bytes per phase: its counter snapshot kept in the report (14 KiB of
/// heap) and its share of the JSON rendering (`serde_json` values and the
/// text, 68 KiB); 10,000 and 30,000 empty phases peaked at 94.4 KiB of RSS
/// per phase with `--format json` (19 KiB with the table).
const PER_PHASE: u64 = 96 << 10;
/// Bytes per region per phase: its folio histogram and pagemap summary,
/// kept (0.4 KiB with every size bucket filled) and rendered as JSON
/// (1 KiB).
const PER_PHASE_REGION: u64 = 2 << 10;
/// Bytes per page per phase of a region with `map = true`: its state byte
/// kept, and in the JSON rendering one `[state, count]` run per page at
/// worst (440 bytes measured with every other page present).
const PER_PHASE_MAP_PAGE: u64 = 512;
/// Bytes per step (children's and threads' included): the validated step
/// and its compiled operation and location, kept for the run (330 bytes
/// measured).
const PER_STEP: u64 = 512;
/// Bytes of parser state per byte of scenario text while it is parsed
/// (the TOML document, then the located tree): 62 for `[[step]]` tables,
/// 74 for inline steps, 145 for an array of one-digit integers, the
/// densest text measured.
const PER_TEXT_BYTE: u64 = 160;
/// The program itself, its allocator and small tables.
const BASE: u64 = 64 << 20;
const PAGE: u64 = foliosim_uapi::PAGE_SIZE;

/// The estimate: the total and its parts, largest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    pub total: u64,
    /// (what, where in the scenario, bytes).
    pub parts: Vec<(String, u64)>,
}

/// Estimate the peak memory `sc` needs in the simulator.
pub fn estimate_peak(sc: &Scenario) -> Estimate {
    let mut parts: Vec<(String, u64)> = Vec::new();
    let frames = sc.system.memory / PAGE;
    parts.push((
        format!(
            "[system] memory = {} MiB of simulated page frames",
            sc.system.memory >> 20
        ),
        frames.saturating_mul(PER_PAGE_FRAME),
    ));
    // Page tables: a 4 KiB PTE table per 2 MiB populated, at most for the
    // machine's memory.
    parts.push((
        "page tables".to_string(),
        (sc.system.memory / 512).min(1 << 40),
    ));
    for (i, d) in sc.system.swap.iter().enumerate() {
        parts.push((
            format!("system.swap[{}] ({} MiB)", i + 1, d.size >> 20),
            (d.size / PAGE).saturating_mul(PER_SWAP_SLOT),
        ));
    }
    // A file's page-cache index exists twice: in the compiler's layout
    // pass (foliosim_workload::compile) and in the simulated kernel.
    for f in &sc.files {
        parts.push((
            format!("{}: file {:?} ({} MiB)", f.loc, f.name, f.size >> 20),
            f.size.div_ceil(PAGE).saturating_mul(2 * PER_CACHE_PAGE),
        ));
    }
    steps(&sc.steps, &mut ScopedMap::default(), &mut parts);
    let mut work = Work::default();
    work.count(&sc.steps);
    parts.push((
        format!("{} steps: their validated and compiled form", work.steps),
        work.steps.saturating_mul(PER_STEP),
    ));
    // Every phase reports every region's folio histogram and the folio
    // map of every region with `map = true` (an upper bound: every
    // region of the scenario, every mapped page).
    let per_phase = PER_PHASE
        .saturating_add(work.regions.saturating_mul(PER_PHASE_REGION))
        .saturating_add(work.map_pages.saturating_mul(PER_PHASE_MAP_PAGE));
    parts.push((
        format!(
            "{} phases: their counters, folio histograms and maps in the report",
            work.phases
        ),
        work.phases.saturating_mul(per_phase),
    ));
    finish(parts)
}

/// The estimate of `parts`: the total with the program's base, the parts
/// largest first.
fn finish(mut parts: Vec<(String, u64)>) -> Estimate {
    parts.retain(|(_, b)| *b > 0);
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    let total = parts.iter().fold(BASE, |t, (_, b)| t.saturating_add(*b));
    Estimate { total, parts }
}

/// The peak memory of parsing a scenario text of `len` bytes, known
/// before it is parsed.
pub fn estimate_text(len: u64) -> Estimate {
    finish(vec![(
        format!("parsing the scenario text ({} MiB)", len >> 20),
        len.saturating_mul(PER_TEXT_BYTE),
    )])
}

/// What grows with the work: steps at any depth, phases, regions and the
/// pages of the regions with a folio map.
#[derive(Default)]
struct Work {
    steps: u64,
    phases: u64,
    regions: u64,
    map_pages: u64,
    /// The regions with a folio map (names are unique in a scenario).
    mapped: std::collections::HashSet<String>,
}

impl Work {
    fn count(&mut self, list: &[Step]) {
        for st in list {
            self.steps += 1;
            match &st.kind {
                StepKind::Phase { .. } => self.phases += 1,
                StepKind::Mmap(m) => {
                    self.regions += 1;
                    if m.map {
                        self.map_pages = self.map_pages.saturating_add(m.size / PAGE);
                        self.mapped.insert(m.region.clone());
                    }
                }
                // A new region of the workload; its folio map (if the
                // region has one) may be this size.
                StepKind::Mremap(m) => {
                    self.regions += 1;
                    if self.mapped.contains(&m.region) {
                        self.map_pages = self.map_pages.saturating_add(m.size / PAGE);
                    }
                }
                StepKind::Fork { child } => self.count(child),
                StepKind::Threads { threads, .. } => {
                    for t in threads {
                        self.count(t);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Bytes of `r` in a region of `size` bytes.
fn range_len(r: &Range, size: u64) -> u64 {
    r.len.unwrap_or(size.saturating_sub(r.offset))
}

fn steps(list: &[Step], regions: &mut ScopedMap<'_, u64>, parts: &mut Vec<(String, u64)>) {
    for st in list {
        match &st.kind {
            StepKind::Mmap(m) => {
                let size = m.size;
                regions.insert(m.region.clone(), size);
                if m.backing == Backing::Shmem || (m.backing == Backing::Anon && m.shared) {
                    parts.push((
                        format!("{}: shared anonymous mapping ({} MiB)", st.loc, size >> 20),
                        (size / PAGE).saturating_mul(PER_CACHE_PAGE),
                    ));
                }
            }
            StepKind::Touch {
                region,
                pattern: Pattern::Random { .. },
                range,
                ..
            } => {
                let len = range_len(range, regions.get(region).copied().unwrap_or(0));
                parts.push((
                    format!("{}: random touch order ({} MiB)", st.loc, len >> 20),
                    (len / PAGE).saturating_mul(PER_RANDOM_PAGE),
                ));
            }
            StepKind::Pagemap(p) if p.raw => {
                let len = range_len(&p.range, regions.get(&p.region).copied().unwrap_or(0));
                parts.push((
                    format!("{}: raw pagemap entries ({} MiB range)", st.loc, len >> 20),
                    (len / PAGE).saturating_mul(PER_RAW_ENTRY),
                ));
            }
            StepKind::Mremap(m) => regions.insert(m.region.clone(), m.size),
            StepKind::Fork { child } => steps(child, &mut regions.child(), parts),
            StepKind::Threads { threads, .. } => {
                for t in threads {
                    steps(t, regions, parts);
                }
            }
            _ => {}
        }
    }
}

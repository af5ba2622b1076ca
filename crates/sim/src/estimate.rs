//! How much memory a simulation will need, known before it starts.
//!
//! The model's state grows with the simulated machine, not with the work:
//! `struct page` arrays for every page frame of `memory`, a page-cache
//! index for every page of every file, a swap map for every slot of every
//! swap area, page-table pages for what is touched, and the per-step
//! arrays the run keeps (random touch orders, raw pagemap entries). The
//! estimate sums these per-unit costs of the data layout (ARCHITECTURE.md
//! "The kernel model"), so a scenario that cannot fit is refused with the
//! part that costs most named, instead of failing an allocation midway.

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
    parts.retain(|(_, b)| *b > 0);
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    let total = parts.iter().fold(BASE, |t, (_, b)| t.saturating_add(*b));
    Estimate { total, parts }
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

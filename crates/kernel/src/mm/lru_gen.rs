//! The multi-gen LRU, MGLRU (mm/vmscan.c under CONFIG_LRU_GEN and
//! CONFIG_LRU_GEN_WALKS_MMU; include/linux/mm_inline.h:
//! `lru_gen_add_folio()`, `lru_gen_del_folio()`, `lru_gen_folio_seq()`;
//! mm/workingset.c: `lru_gen_eviction()`, `lru_gen_refault()`; mm/swap.c:
//! `lru_gen_inc_refs()`, `lru_gen_clear_refs()`), Linux 6.18, switched on by
//! the `lru_gen.enabled` knob (/sys/kernel/mm/lru_gen/enabled = y: every
//! capability, the page-table walk and the non-leaf PMD accessed bit
//! included) before the first folio exists.
//!
//! Every lruvec keeps up to four generations per type (anon, file), from
//! `min_seq[type]` to `max_seq`. A folio's generation lives in its flags
//! (here a byte per page frame, [`GenFlags`]); the list it sits on may be an
//! older one, as in the kernel: the page-table walk only rewrites the
//! generation and eviction sorts the folio when it meets it. The aging
//! (`try_to_inc_max_seq()`) walks the page tables of every mm of the
//! cgroup (`walk_mm()`), moving folios found young into the youngest
//! generation; eviction (`evict_folios()`) takes the oldest generation
//! tier by tier, as the refault feedback (`get_tier_idx()`,
//! `get_type_to_scan()`: the PID controller over refaulted / evicted +
//! protected) decides, and `lru_gen_look_around()` promotes the
//! neighbours of a young PTE the rmap walk meets.
//!
//! Approximated, see docs/fidelity.md: one zone (the kernel keeps a list
//! per zone and scans the highest eligible first); the Bloom filters of
//! the page-table walk are exact sets (the kernel's have false positives,
//! ~1/5 at 10,000 PTE tables); the memcg LRU's random bins are drawn
//! from `machine.random_seed` (mm/memcg_lru.rs); generation timestamps
//! (for `min_ttl_ms`) are kept only while it is set, in jiffies since
//! boot: `machine.uptime_ms` when the run starts, then the running task's
//! modelled clock; an mm is walked again once its task ran since the last
//! walk (`lru_gen_use_mm()` at a context switch): the model marks it at
//! every step of its process and every major fault; CONFIG_LRU_GEN_STATS is off
//! (one history slot, `NR_HIST_GENS` = 1), as in the reference kernels.

use std::collections::HashSet;

use crate::arch::Arch;
use crate::include::linux::mm_inline::{
    ListHead, LRU_ACTIVE, LRU_INACTIVE_ANON, LRU_INACTIVE_FILE,
};
use crate::include::linux::mm_types::{
    PG_ACTIVE, PG_ANON, PG_DIRTY, PG_LRU, PG_READAHEAD, PG_REFERENCED, PG_SWAPBACKED, PG_SWAPCACHE,
    PG_WORKINGSET,
};
use crate::include::linux::pgtable::{pte_index, Pfn, PAGE_SIZE, PMD_SIZE};

/// `PMD_MASK`
const PMD_MASK: u64 = !(PMD_SIZE - 1);
use crate::mm::memcontrol::{MemcgId, ROOT_MEM_CGROUP};
use crate::mm::mmap::{Vma, VmaKind, VM_EXEC, VM_READ, VM_WRITE};
use crate::mm::pgtable_generic::{PmdSlot, TableId};
use crate::mm::swap::vma_has_recency;
use crate::mm::vmscan::{ScanControl, DEF_PRIORITY, MAX_SWAPPINESS, SWAPPINESS_ANON_ONLY};
use crate::mm::vmstat::{MemcgEvent, VmEvent};
use crate::mm::workingset::{workingset_events, Shadow};
use crate::{Kernel, MmId};

/// `MIN_NR_GENS`
pub(crate) const MIN_NR_GENS: u64 = 2;

/// `MAX_NR_GENS`
pub(crate) const MAX_NR_GENS: u64 = 4;
const NR_GENS: usize = MAX_NR_GENS as usize;
/// `HZ`: CONFIG_HZ of the reference kernels.
pub(crate) const HZ: u64 = 250;
/// A jiffy at [`HZ`], in ps.
pub(crate) const PS_PER_JIFFY: u64 = 1_000_000_000_000 / HZ;

/// `msecs_to_jiffies()` at [`HZ`]: rounded up.
fn msecs_to_jiffies(ms: u64) -> u64 {
    ms.div_ceil(1000 / HZ)
}

/// `MAX_NR_TIERS`
pub(crate) const MAX_NR_TIERS: usize = 4;
/// `LRU_REFS_WIDTH` (`MAX_NR_TIERS - 2`: the reference kernels have the
/// page-flag bits to spare).
const LRU_REFS_WIDTH: u32 = 2;
/// `MIN_LRU_BATCH` (`BITS_PER_LONG`)
const MIN_LRU_BATCH: u64 = 64;
/// `MAX_LRU_BATCH`
const MAX_LRU_BATCH: u64 = MIN_LRU_BATCH * 64;
/// `LRU_GEN_ANON`, `LRU_GEN_FILE`
const ANON: usize = 0;
const FILE: usize = 1;

/// `lru_gen_from_seq()`
#[inline]
fn gen_of(seq: u64) -> usize {
    (seq % MAX_NR_GENS) as usize
}

/// `lru_tier_from_refs()`: the last tier for PG_workingset, else
/// `order_base_2(refs)`.
#[inline]
fn tier_of(refs: u64, workingset: bool) -> usize {
    if workingset {
        return MAX_NR_TIERS - 1;
    }
    match refs {
        0 | 1 => 0,
        r => (64 - (r - 1).leading_zeros()) as usize,
    }
}

/// The state of `try_to_shrink_lruvec()`'s loop, which kswapd takes a
/// batch at a time (mm/vmscan.rs).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TryShrink {
    /// Pages scanned so far.
    pub(crate) scanned: u64,
    /// The last `get_nr_to_scan()`.
    pub(crate) nr_to_scan: i64,
    /// `get_swappiness()` as the loop began: the kernel reads it once per
    /// `try_to_shrink_lruvec()`, so a cgroup that reaches its
    /// memory.swap.max in the loop keeps evicting anonymous folios.
    pub(crate) swappiness: Option<u64>,
}

impl TryShrink {
    /// Whether the loop stopped because the lruvec aged instead (or is
    /// within memory.min): `nr_to_scan < 0`.
    pub(crate) fn rotate(&self) -> bool {
        self.nr_to_scan < 0
    }
}

/// The MGLRU bits of every page frame's flags (used on folio heads): the
/// generation + 1 (`LRU_GEN_MASK`, 0 = not on a generation list), the
/// `LRU_REFS_MASK` counter, and — the model's own — the generation of the
/// list the folio sits on + 1, which the kernel's intrusive list does not
/// need to remember.
#[derive(Debug, Default)]
pub(crate) struct GenFlags {
    v: Vec<u8>,
}

const GEN_MASK: u8 = 0x7;
const REFS_SHIFT: u32 = 3;
const REFS_MASK: u8 = ((1 << LRU_REFS_WIDTH) - 1) << REFS_SHIFT;
const LIST_SHIFT: u32 = 5;

impl GenFlags {
    fn enable(&mut self, nr_pages: u64) {
        if self.v.is_empty() {
            self.v = vec![0; nr_pages as usize];
        }
    }
    /// `folio_lru_gen()`
    #[inline]
    pub(crate) fn gen(&self, f: Pfn) -> Option<usize> {
        let g = self.v[f.idx()] & GEN_MASK;
        (g != 0).then(|| g as usize - 1)
    }
    #[inline]
    fn set_gen(&mut self, f: Pfn, gen: Option<usize>) {
        let b = &mut self.v[f.idx()];
        *b = (*b & !GEN_MASK) | gen.map_or(0, |g| g as u8 + 1);
    }
    /// The `LRU_REFS_MASK` field.
    #[inline]
    fn refs_field(&self, f: Pfn) -> u64 {
        ((self.v[f.idx()] & REFS_MASK) >> REFS_SHIFT) as u64
    }
    #[inline]
    fn set_refs_field(&mut self, f: Pfn, r: u64) {
        let b = &mut self.v[f.idx()];
        *b = (*b & !REFS_MASK) | ((r as u8) << REFS_SHIFT & REFS_MASK);
    }
    /// The generation of the list the folio is on.
    #[inline]
    pub(crate) fn list(&self, f: Pfn) -> Option<usize> {
        let g = self.v[f.idx()] >> LIST_SHIFT;
        (g != 0).then(|| g as usize - 1)
    }
    #[inline]
    fn set_list(&mut self, f: Pfn, gen: Option<usize>) {
        let b = &mut self.v[f.idx()];
        *b = (*b & !(0x7 << LIST_SHIFT)) | (gen.map_or(0, |g| g as u8 + 1) << LIST_SHIFT);
    }
    /// A split's new folio inherits the generation and references
    /// (`__split_folio_to_order()` copies `LRU_GEN_MASK | LRU_REFS_MASK`).
    pub(crate) fn copy_to_tail(&mut self, head: Pfn, tail: Pfn) {
        self.v[tail.idx()] = self.v[head.idx()];
    }
}

/// Where an mm-list cursor points (`mm_state->head` / `->tail`): the list's
/// own head (`&mm_list->fifo`) or an mm on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MmPos {
    Fifo,
    Mm(MmId),
}

/// `struct lru_gen_folio` + `struct lru_gen_mm_state` + the cgroup's
/// `lru_gen_mm_list` (one node).
#[derive(Clone, Debug)]
pub(crate) struct LruGenFolio {
    pub max_seq: u64,
    pub min_seq: [u64; 2],
    /// `folios[gen][type]`
    pub folios: [[ListHead; 2]; NR_GENS],
    /// `nr_pages[gen][type]` (eventually consistent with the lists).
    pub nr_pages: [[i64; 2]; NR_GENS],
    avg_refaulted: [[u64; MAX_NR_TIERS]; 2],
    avg_total: [[u64; MAX_NR_TIERS]; 2],
    protected: [[u64; MAX_NR_TIERS]; 2],
    evicted: [[u64; MAX_NR_TIERS]; 2],
    refaulted: [[u64; MAX_NR_TIERS]; 2],
    /// `mm_list->fifo`: the cgroup's mms, oldest first.
    mm_list: Vec<MmId>,
    /// `mm_state->seq`, `->head`, `->tail`.
    mm_seq: u64,
    mm_head: Option<MmPos>,
    mm_tail: Option<MmPos>,
    /// `timestamps[gen]`: the jiffy (since boot) each generation was made
    /// in, kept only while `min_ttl_ms` is set; the root's first ones at
    /// boot (0).
    timestamps: [u64; NR_GENS],
    /// `mm_state->filters[]`: PMD entries whose PTE tables are worth a
    /// walk, as (table, index); None until first reset.
    /// Looked up only, never iterated: a fast fixed hasher.
    filters: [Option<HashSet<(TableId, u16), foldhash::fast::FixedState>>; 2],
}

impl Default for LruGenFolio {
    /// `lru_gen_init_lruvec()`
    fn default() -> Self {
        LruGenFolio {
            max_seq: MIN_NR_GENS + 1,
            min_seq: [0; 2],
            folios: Default::default(),
            nr_pages: [[0; 2]; NR_GENS],
            avg_refaulted: [[0; MAX_NR_TIERS]; 2],
            avg_total: [[0; MAX_NR_TIERS]; 2],
            protected: [[0; MAX_NR_TIERS]; 2],
            evicted: [[0; MAX_NR_TIERS]; 2],
            refaulted: [[0; MAX_NR_TIERS]; 2],
            mm_list: Vec::new(),
            mm_seq: MIN_NR_GENS,
            mm_head: None,
            mm_tail: None,
            timestamps: [0; NR_GENS],
            filters: [None, None],
        }
    }
}

impl LruGenFolio {
    /// `lru_gen_is_active()`: the two youngest generations.
    #[inline]
    pub(crate) fn is_active(&self, gen: usize) -> bool {
        gen == gen_of(self.max_seq) || gen == gen_of(self.max_seq.wrapping_sub(1))
    }

    /// `get_nr_gens()`
    fn nr_gens(&self, ty: usize) -> u64 {
        self.max_seq - self.min_seq[ty] + 1
    }

    /// The position after `p` on the mm list.
    fn mm_next(&self, p: MmPos) -> MmPos {
        let i = match p {
            MmPos::Fifo => 0,
            MmPos::Mm(m) => self.mm_list.iter().position(|&x| x == m).expect("listed") + 1,
        };
        self.mm_list.get(i).map_or(MmPos::Fifo, |&m| MmPos::Mm(m))
    }

    /// The position before `p` on the mm list.
    fn mm_prev(&self, p: MmPos) -> MmPos {
        let i = match p {
            MmPos::Fifo => self.mm_list.len(),
            MmPos::Mm(m) => self.mm_list.iter().position(|&x| x == m).expect("listed"),
        };
        match i {
            0 => MmPos::Fifo,
            i => MmPos::Mm(self.mm_list[i - 1]),
        }
    }

    /// `read_ctrl_pos()`: the refaults and the total of tier `tier` of
    /// `ty` (all tiers for `MAX_NR_TIERS`), weighted by `gain`.
    fn ctrl_pos(&self, ty: usize, tier: usize, gain: u64) -> CtrlPos {
        let mut p = CtrlPos {
            refaulted: 0,
            total: 0,
            gain,
        };
        for i in tier % MAX_NR_TIERS..=tier.min(MAX_NR_TIERS - 1) {
            p.refaulted += self.avg_refaulted[ty][i] + self.refaulted[ty][i];
            p.total += self.avg_total[ty][i] + self.protected[ty][i] + self.evicted[ty][i];
        }
        p
    }

    /// `reset_ctrl_pos()` with `carryover` (the only case that acts with
    /// one history slot): fold this generation's counts into the moving
    /// averages, halving, and clear them.
    fn reset_ctrl_pos(&mut self, ty: usize) {
        for t in 0..MAX_NR_TIERS {
            self.avg_refaulted[ty][t] = (self.avg_refaulted[ty][t] + self.refaulted[ty][t]) / 2;
            self.avg_total[ty][t] =
                (self.avg_total[ty][t] + self.protected[ty][t] + self.evicted[ty][t]) / 2;
            self.refaulted[ty][t] = 0;
            self.evicted[ty][t] = 0;
            self.protected[ty][t] = 0;
        }
    }
}

/// `struct ctrl_pos`
#[derive(Clone, Copy, Debug)]
struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

/// `positive_ctrl_err()`: the process variable has few refaults, or a
/// refault rate no higher than the setpoint's.
fn positive_ctrl_err(sp: CtrlPos, pv: CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted * (sp.total + MIN_LRU_BATCH) * sp.gain
            <= (sp.refaulted + 1) * pv.total * pv.gain
}

/// `min_type()`, `max_type()`: the evictable types for a swappiness.
fn evictable_types(swappiness: u64) -> std::ops::RangeInclusive<usize> {
    let min = (swappiness == 0) as usize;
    let max = (swappiness < SWAPPINESS_ANON_ONLY) as usize;
    min..=max
}

/// `suitable_to_scan()`: at least one young PTE per cache line of PTEs
/// on average (64-byte lines: 8 PTEs).
fn suitable_to_scan(total: u64, young: u64) -> bool {
    young * 8 >= total
}

/// `fls_long()`
fn fls_long(x: u64) -> i64 {
    64 - x.leading_zeros() as i64
}

/// The per-task MGLRU state the model keeps on the kernel: whether the
/// running task is in a fault of a VMA with recency (`in_lru_fault`), is
/// reclaiming (`PF_MEMALLOC`), and has a page-table walk in its reclaim
/// state (`current->reclaim_state->mm_walk`).
#[derive(Debug, Default)]
pub(crate) struct LruGenTask {
    pub(crate) in_fault: bool,
    pub(crate) memalloc: bool,
    pub(crate) walk: bool,
}

/// `PAGEVEC_SIZE`: a per-CPU folio batch applies when it holds this many.
const FOLIO_BATCH_SIZE: usize = 31;

/// Folios whose reclaim write is in flight, in submission order, and then
/// waiting in the per-CPU `lru_move_tail` batch for their rotation
/// (`folio_end_writeback()` → `folio_rotate_reclaimable()`): with MGLRU a
/// folio under writeback goes back to a young generation and only the
/// rotation moves it to the oldest one's tail, when the batch fills or at
/// the next `lru_add_drain()` (the start of the next reclaim pass).
#[derive(Debug, Default)]
pub(crate) struct RotatePending {
    folios: Vec<Pfn>,
}

/// What one page-table walk (`struct lru_gen_mm_walk`) carries.
struct MmWalk {
    memcg: MemcgId,
    seq: u64,
    swappiness: u64,
    force_scan: bool,
}

/// One mm's part of the kernel state (`mm->lru_gen`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MmLruGen {
    /// The cgroup whose list holds this mm.
    memcg: Option<MemcgId>,
    /// `mm->lru_gen.bitmap` for the one node: the task ran since the
    /// last walk.
    pub(crate) used: bool,
}

impl<A: Arch> Kernel<A> {
    /// MGLRU is on.
    #[inline]
    pub(crate) fn lru_gen_enabled(&self) -> bool {
        self.cfg.lru_gen
    }

    /// Boot with MGLRU on: the generation bytes and ordered lists for every
    /// cgroup, the root's included.
    pub(crate) fn lru_gen_init(&mut self) {
        let n = self.mem.nr_pages();
        self.gen_flags.enable(n);
        self.lru.enable(n);
        self.lru.root = true;
    }

    fn lrugen(&self, memcg: MemcgId) -> &LruGenFolio {
        &self.memcg.memcgs[memcg.idx()].lruvec.lrugen
    }

    fn lrugen_mut(&mut self, memcg: MemcgId) -> &mut LruGenFolio {
        &mut self.memcg.memcgs[memcg.idx()].lruvec.lrugen
    }

    /// `folio_is_file_lru()` as the type index.
    #[inline]
    fn folio_type(&self, folio: Pfn) -> usize {
        (!self.mem.test(folio, PG_SWAPBACKED)) as usize
    }

    /// `folio_lru_refs()`: accesses through file descriptors, PG_referenced
    /// included (0 without it).
    fn folio_lru_refs(&self, folio: Pfn) -> u64 {
        if !self.mem.test(folio, PG_REFERENCED) {
            return 0;
        }
        self.gen_flags.refs_field(folio) + 1
    }

    /// `set_mask_bits(LRU_REFS_FLAGS, 0)`: clear the counter and
    /// PG_referenced.
    fn clear_refs_flags(&mut self, folio: Pfn) {
        self.gen_flags.set_refs_field(folio, 0);
        self.mem.clear(folio, PG_REFERENCED);
    }

    /// `lru_gen_update_size()`: the generation's pages and the
    /// active/inactive sizes kept for compatibility.
    fn lru_gen_update_size(
        &mut self,
        folio: Pfn,
        memcg: MemcgId,
        old: Option<usize>,
        new: Option<usize>,
    ) {
        let ty = self.folio_type(folio);
        let delta = self.mem.folio_nr_pages(folio) as i64;
        let lru = if ty == FILE {
            LRU_INACTIVE_FILE
        } else {
            LRU_INACTIVE_ANON
        };
        let g = self.lrugen_mut(memcg);
        if let Some(o) = old {
            g.nr_pages[o][ty] -= delta;
        }
        if let Some(n) = new {
            g.nr_pages[n][ty] += delta;
        }
        let act = |gen: Option<usize>| gen.map(|x| g.is_active(x) as usize * LRU_ACTIVE);
        match (act(old), act(new)) {
            (None, Some(n)) => self.update_lru_size(memcg, lru + n, delta),
            (Some(o), None) => self.update_lru_size(memcg, lru + o, -delta),
            (Some(0), Some(n)) if n != 0 => {
                self.update_lru_size(memcg, lru, -delta);
                self.update_lru_size(memcg, lru + LRU_ACTIVE, delta);
            }
            _ => {}
        }
    }

    /// Link `folio` into list `gen` of its type, at the head or the tail.
    fn gen_list_add(&mut self, folio: Pfn, memcg: MemcgId, gen: usize, tail: bool) {
        let ty = self.folio_type(folio);
        let list = &mut self.memcg.memcgs[memcg.idx()].lruvec.lrugen.folios[gen][ty];
        if tail {
            self.lru.add_tail(list, folio);
        } else {
            self.lru.add_head(list, folio);
        }
        self.gen_flags.set_list(folio, Some(gen));
    }

    /// Unlink `folio` from the generation list it is on.
    fn gen_list_del(&mut self, folio: Pfn, memcg: MemcgId) {
        let ty = self.folio_type(folio);
        let gen = self.gen_flags.list(folio).expect("on a generation list");
        let list = &mut self.memcg.memcgs[memcg.idx()].lruvec.lrugen.folios[gen][ty];
        self.lru.del(list, folio);
        self.gen_flags.set_list(folio, None);
    }

    /// `list_move()` / `list_move_tail()` to list `gen`.
    fn gen_list_move(&mut self, folio: Pfn, memcg: MemcgId, gen: usize, tail: bool) {
        self.gen_list_del(folio, memcg);
        self.gen_list_add(folio, memcg, gen, tail);
    }

    /// `lru_gen_folio_seq()`: the generation a folio joins: an active one
    /// the youngest (or the second youngest without PG_workingset), one
    /// being rotated by reclaim the oldest, an anon folio outside the swap
    /// cache (or one waiting for its write) the second youngest, any other
    /// the oldest or the one after.
    fn lru_gen_folio_seq(&self, folio: Pfn, memcg: MemcgId, reclaiming: bool) -> u64 {
        let ty = self.folio_type(folio);
        let f = self.mem.flags(folio);
        let ws = (f & PG_WORKINGSET != 0) as u64;
        // Asked last: the write queues are searched.
        let writeback =
            || self.folio_test_writeback(folio) || self.rotate_pending.folios.contains(&folio);
        let gen = if f & PG_ACTIVE != 0 {
            MIN_NR_GENS - ws
        } else if reclaiming {
            MAX_NR_GENS
        } else if (ty == ANON && f & PG_SWAPCACHE == 0)
            || (f & PG_READAHEAD != 0 && (f & PG_DIRTY != 0 || writeback()))
        {
            MIN_NR_GENS
        } else {
            MAX_NR_GENS - ws
        };
        let g = self.lrugen(memcg);
        (g.max_seq + 1 - gen).max(g.min_seq[ty])
    }

    /// `lru_gen_add_folio()`: the folio joins the generation its flags say
    /// (PG_active is cleared: the generation says it), at the head, or at
    /// the tail when reclaim rotates it.
    pub(crate) fn lru_gen_add_folio(&mut self, folio: Pfn, reclaiming: bool) {
        debug_assert!(
            self.gen_flags.gen(folio).is_none(),
            "pfn {} has a generation",
            folio.0
        );
        let memcg = self.folio_memcg(folio);
        let gen = gen_of(self.lru_gen_folio_seq(folio, memcg, reclaiming));
        self.gen_flags.set_gen(folio, Some(gen));
        self.mem.clear(folio, PG_ACTIVE);
        self.lru_gen_update_size(folio, memcg, None, Some(gen));
        self.gen_list_add(folio, memcg, gen, reclaiming);
    }

    /// `lru_gen_del_folio()`: off its list; outside reclaim a folio of an
    /// active generation leaves with PG_active.
    pub(crate) fn lru_gen_del_folio(&mut self, folio: Pfn, reclaiming: bool) {
        let memcg = self.folio_memcg(folio);
        let Some(gen) = self.gen_flags.gen(folio) else {
            return;
        };
        if !reclaiming && self.lrugen(memcg).is_active(gen) {
            self.mem.set(folio, PG_ACTIVE);
        }
        self.gen_flags.set_gen(folio, None);
        self.lru_gen_update_size(folio, memcg, Some(gen), None);
        self.gen_list_del(folio, memcg);
    }

    /// A split's new order-0 folio joins its head's list right before the
    /// head, with the head's generation and references
    /// (`lru_add_split_folio()`).
    pub(crate) fn lru_gen_add_split_folio(&mut self, head: Pfn, tail: Pfn) {
        self.gen_flags.copy_to_tail(head, tail);
        let memcg = self.folio_memcg(head);
        let ty = self.folio_type(head);
        let gen = self.gen_flags.list(head).expect("on a generation list");
        let list = &mut self.memcg.memcgs[memcg.idx()].lruvec.lrugen.folios[gen][ty];
        self.lru.add_before(list, tail, head);
    }

    /// `lru_gen_inc_refs()` (`folio_mark_accessed()`): PG_referenced, then
    /// the counter, then PG_workingset.
    pub(crate) fn lru_gen_inc_refs(&mut self, folio: Pfn) {
        if !self.mem.test(folio, PG_REFERENCED) {
            self.gen_flags.set_refs_field(folio, 0);
            self.mem.set(folio, PG_REFERENCED);
            return;
        }
        let r = self.gen_flags.refs_field(folio);
        if r == (1 << LRU_REFS_WIDTH) - 1 {
            self.mem.set(folio, PG_WORKINGSET);
            return;
        }
        self.gen_flags.set_refs_field(folio, r + 1);
    }

    /// `lru_gen_clear_refs()`: forget the references and PG_workingset;
    /// whether the folio is in the oldest generation already (then a
    /// deactivation has nothing to move).
    pub(crate) fn lru_gen_clear_refs(&mut self, folio: Pfn) -> bool {
        let Some(gen) = self.gen_flags.gen(folio) else {
            return true;
        };
        self.clear_refs_flags(folio);
        self.mem.clear(folio, PG_WORKINGSET);
        let ty = self.folio_type(folio);
        let memcg = self.folio_memcg(folio);
        gen == gen_of(self.lrugen(memcg).min_seq[ty])
    }

    /// `lru_gen_set_refs()` (a young mapping found by the rmap walk): the
    /// first time PG_referenced, after that PG_workingset and true (the
    /// folio is to be promoted).
    pub(crate) fn lru_gen_set_refs(&mut self, folio: Pfn) -> bool {
        let f = self.mem.flags(folio);
        if f & PG_REFERENCED == 0 && f & PG_WORKINGSET == 0 {
            self.gen_flags.set_refs_field(folio, 0);
            self.mem.set(folio, PG_REFERENCED);
            return false;
        }
        self.clear_refs_flags(folio);
        self.mem.set(folio, PG_WORKINGSET);
        true
    }

    /// `folio_update_gen()` (page-table walk): the first young sighting
    /// sets PG_referenced; later ones move the folio to `gen` with
    /// PG_workingset. Returns the old generation, None if not moved.
    fn folio_update_gen(&mut self, folio: Pfn, gen: usize) -> Option<usize> {
        let f = self.mem.flags(folio);
        if f & PG_REFERENCED == 0 && f & PG_WORKINGSET == 0 {
            self.gen_flags.set_refs_field(folio, 0);
            self.mem.set(folio, PG_REFERENCED);
            return None;
        }
        let old = self.gen_flags.gen(folio)?;
        self.clear_refs_flags(folio);
        self.gen_flags.set_gen(folio, Some(gen));
        self.mem.set(folio, PG_WORKINGSET);
        Some(old)
    }

    /// `folio_inc_gen()`: a folio of the oldest generation moves to the
    /// next one, losing its references (with PG_reclaim when reclaim
    /// waits for its write); one the walk promoted keeps its generation.
    fn folio_inc_gen(&mut self, folio: Pfn, memcg: MemcgId, reclaiming: bool) -> usize {
        let ty = self.folio_type(folio);
        let old = gen_of(self.lrugen(memcg).min_seq[ty]);
        let cur = self.gen_flags.gen(folio).expect("on a generation");
        if cur != old {
            return cur;
        }
        let new = (old + 1) % NR_GENS;
        self.clear_refs_flags(folio);
        self.gen_flags.set_gen(folio, Some(new));
        if reclaiming {
            self.mem.set(folio, PG_READAHEAD);
        }
        self.lru_gen_update_size(folio, memcg, Some(old), Some(new));
        new
    }

    /// `walk_update_folio()`: a young folio found by a page-table or
    /// look-around walk: dirty from its PTEs, then promoted to `gen` (by
    /// generation during a walk, else by activation).
    fn walk_update_folio(&mut self, folio: Pfn, memcg: MemcgId, gen: usize, dirty: bool) {
        let f = self.mem.flags(folio);
        let anon_unswapped = f & PG_ANON != 0 && f & PG_SWAPBACKED != 0 && f & PG_SWAPCACHE == 0;
        if dirty && f & PG_DIRTY == 0 && !anon_unswapped {
            self.mem.set(folio, PG_DIRTY); // folio_mark_dirty()
        }
        if self.lru_gen_task.walk {
            if let Some(old) = self.folio_update_gen(folio, gen) {
                if old != gen {
                    // update_batch_size() + reset_batch_size(), at once:
                    // nothing reads the sizes before the batch's flush. The
                    // pages leave one generation's sizes and join another's.
                    self.lru_gen_update_size(folio, memcg, Some(old), None);
                    self.lru_gen_update_size(folio, memcg, None, Some(gen));
                }
            }
        } else if self.lru_gen_set_refs(folio)
            && self.gen_flags.gen(folio).is_some_and(|old| old != gen)
        {
            self.folio_activate(folio);
        }
    }

    /// `get_pfn_folio()` of a present entry's page: the folio, if it is on
    /// a generation list of `memcg`.
    fn gen_folio_of(&self, page: Pfn, memcg: MemcgId) -> Option<Pfn> {
        let folio = self.mem.page_folio(page);
        (self.gen_flags.gen(folio).is_some() && self.folio_memcg(folio) == memcg).then_some(folio)
    }

    /// Test and clear the accessed bit of PTEs `range` of table `tid`
    /// (`get_pte_pfn()`, `get_pfn_folio()`, `ptep_clear_young_notify()`),
    /// promoting the young folios of `memcg` to `gen` in runs of one folio
    /// (`walk_pte_range()`, `lru_gen_look_around()`). Returns the young
    /// entries found.
    fn young_ptes(
        &mut self,
        tid: TableId,
        range: std::ops::Range<usize>,
        memcg: MemcgId,
        gen: usize,
    ) -> u64 {
        let mut young = 0;
        let mut last: Option<(Pfn, bool)> = None;
        for idx in range {
            let pte = A::ptep_get(self.pt.table(tid), idx, &mut self.vmstat.sim);
            if !A::pte_present(pte) || A::pte_special(pte) || !A::pte_young(pte) {
                continue;
            }
            let page = A::pte_pfn(pte);
            if page == self.zero_pfn {
                continue;
            }
            let Some(folio) = self.gen_folio_of(page, memcg) else {
                continue;
            };
            if !A::test_and_clear_young_ptes(self.pt.table_mut(tid), idx, 1, &mut self.vmstat) {
                continue;
            }
            match last {
                Some((f, d)) if f == folio => last = Some((f, d || A::pte_dirty(pte))),
                prev => {
                    if let Some((f, d)) = prev {
                        self.walk_update_folio(f, memcg, gen, d);
                    }
                    last = Some((folio, A::pte_dirty(pte)));
                }
            }
            young += 1;
        }
        if let Some((f, d)) = last {
            self.walk_update_folio(f, memcg, gen, d);
        }
        young
    }

    /// `lru_gen_look_around()` from `folio_referenced_one()`: clear the
    /// accessed bit of the `nr` PTEs mapping the folio from `addr` (one
    /// before seed 002's batching); if one was young, also promote the young folios
    /// mapped by up to 64 PTEs around it in the same table and VMA, and
    /// when enough of those were young, mark the PTE table for the next
    /// walk (the PMD entry of `mm` at `addr`). Returns whether the PTE
    /// was young.
    pub(crate) fn lru_gen_look_around(
        &mut self,
        folio: Pfn,
        mm: MmId,
        vma: &Vma,
        tid: TableId,
        addr: u64,
        nr: usize,
    ) -> bool {
        self.vmstat.sim.lru_gen_look_around += 1;
        let idx = pte_index(addr);
        if !A::test_and_clear_young_ptes(self.pt.table_mut(tid), idx, nr, &mut self.vmstat) {
            return false;
        }
        self.vmstat.sim.lru_gen_look_around_young += 1;
        let mut start = (addr & PMD_MASK).max(vma.vm_start);
        let mut end = (addr | !PMD_MASK).min(vma.vm_end - 1) + 1;
        if end - start == PAGE_SIZE {
            return true;
        }
        let win = MIN_LRU_BATCH * PAGE_SIZE;
        if end - start > win {
            if addr - start < win / 2 {
                end = start + win;
            } else if end - addr < win / 2 {
                start = end - win;
            } else {
                start = addr - win / 2;
                end = addr + win / 2;
            }
        }
        let memcg = self.folio_memcg(folio);
        let max_seq = self.lrugen(memcg).max_seq;
        let first = pte_index(start);
        let n = ((end - start) / PAGE_SIZE) as usize;
        let young = 1 + self.young_ptes(tid, first..first + n, memcg, gen_of(max_seq));
        if suitable_to_scan(n as u64, young) {
            let pmd = self.walk_to_pmd(mm, addr).expect("a mapped PTE's PMD");
            self.update_bloom_filter(memcg, max_seq, pmd);
        }
        true
    }

    /// `update_bloom_filter()`
    fn update_bloom_filter(&mut self, memcg: MemcgId, seq: u64, pmd: PmdSlot) {
        let g = self.lrugen_mut(memcg);
        if let Some(f) = &mut g.filters[(seq % 2) as usize] {
            f.insert((pmd.table, pmd.idx as u16));
        }
    }

    /// `test_bloom_filter()`: an unallocated filter passes everything.
    fn test_bloom_filter(&self, memcg: MemcgId, seq: u64, pmd: PmdSlot) -> bool {
        match &self.lrugen(memcg).filters[(seq % 2) as usize] {
            Some(f) => f.contains(&(pmd.table, pmd.idx as u16)),
            None => true,
        }
    }

    // ------------------------------------------------------------------
    // The mm list (`lru_gen_add_mm()`, `lru_gen_del_mm()`,
    // `lru_gen_migrate_mm()`, `iterate_mm_list()`).

    /// `lru_gen_add_mm()`: the mm joins its cgroup's list.
    pub(crate) fn lru_gen_add_mm(&mut self, mm: MmId) {
        let memcg = self.mm_memcg(mm);
        self.mm_mut(mm).lru_gen = MmLruGen {
            memcg: Some(memcg),
            used: true,
        };
        let g = self.lrugen_mut(memcg);
        if g.mm_tail == Some(MmPos::Fifo) {
            g.mm_tail = Some(MmPos::Mm(mm));
        }
        g.mm_list.push(mm);
    }

    /// `lru_gen_del_mm()`
    pub(crate) fn lru_gen_del_mm(&mut self, mm: MmId) {
        let Some(memcg) = self.mm(mm).lru_gen.memcg else {
            return;
        };
        self.mm_mut(mm).lru_gen.memcg = None;
        let g = self.lrugen_mut(memcg);
        let at = MmPos::Mm(mm);
        if g.mm_head == Some(at) {
            g.mm_head = Some(g.mm_prev(at));
        }
        if g.mm_tail == Some(at) {
            g.mm_tail = Some(g.mm_next(at));
        }
        g.mm_list.retain(|&m| m != mm);
    }

    /// `lru_gen_migrate_mm()`: the task moved to another cgroup.
    pub(crate) fn lru_gen_migrate_mm(&mut self, mm: MmId) {
        let Some(old) = self
            .mms
            .get(mm.0 as usize)
            .and_then(|m| m.as_ref())
            .and_then(|m| m.lru_gen.memcg)
        else {
            return;
        };
        if old != self.mm_memcg(mm) {
            self.lru_gen_del_mm(mm);
            self.lru_gen_add_mm(mm);
        }
    }

    /// `lru_gen_use_mm()`: the mm's task ran (a context switch into it).
    pub fn lru_gen_use_mm(&mut self, mm: MmId) {
        if self.mm_alive(mm) {
            self.mm_mut(mm).lru_gen.used = true;
        }
    }

    /// `iterate_mm_list()`: the next mm of this aging's walk over the
    /// cgroup's list, and whether the walk is complete (the list's `seq`
    /// advanced). An mm whose task has not run since its last walk is
    /// passed over unless it joined after the previous walk.
    fn iterate_mm_list(&mut self, walk: &mut MmWalk) -> (Option<MmId>, bool) {
        let memcg = walk.memcg;
        let (mut mm, mut last, mut first) = (None, false, false);
        if walk.seq > self.lrugen(memcg).mm_seq {
            let g = self.lrugen(memcg);
            let mut head = g.mm_head.unwrap_or(MmPos::Fifo);
            let mut tail = g.mm_tail;
            first = head == MmPos::Fifo;
            loop {
                head = self.lrugen(memcg).mm_next(head);
                let MmPos::Mm(m) = head else {
                    last = true;
                    break;
                };
                if tail.is_none() || tail == Some(head) {
                    tail = Some(self.lrugen(memcg).mm_next(head));
                    walk.force_scan = true;
                }
                // get_next_mm()
                let lg = &mut self.mm_mut(m).lru_gen;
                if !walk.force_scan && !lg.used {
                    continue;
                }
                lg.used = false;
                mm = Some(m);
                break;
            }
            let g = self.lrugen_mut(memcg);
            g.mm_head = Some(head);
            g.mm_tail = tail;
            if last {
                g.mm_seq += 1;
            }
        }
        if mm.is_some() && first {
            // reset_bloom_filter() for the next generation's walk.
            let slot = &mut self.lrugen_mut(memcg).filters[((walk.seq + 1) % 2) as usize];
            match slot {
                Some(f) => f.clear(),
                None => *slot = Some(HashSet::default()),
            }
        }
        (mm, last)
    }

    // ------------------------------------------------------------------
    // The aging.

    /// `should_skip_vma()`
    fn should_skip_vma(&self, vma: &Vma, swappiness: u64) -> bool {
        if vma.vm_flags & (VM_READ | VM_WRITE | VM_EXEC) == 0 || !vma_has_recency(vma) {
            return true;
        }
        match vma.kind {
            VmaKind::Anon | VmaKind::Shmem => swappiness == 0,
            VmaKind::File => swappiness > MAX_SWAPPINESS,
        }
    }

    /// `walk_mm()` (MGLRU's): every PMD of every VMA worth walking, once; each
    /// PMD-mapped THP found young is promoted, each PTE table is walked
    /// when its PMD entry is young (x86: the non-leaf accessed bit, cleared
    /// here) and the filter lists it; a table with enough young entries is
    /// listed for the next walk.
    fn lru_gen_walk_mm(&mut self, mm: MmId, walk: &MmWalk) {
        let gen = gen_of(self.lrugen(walk.memcg).max_seq);
        let vmas: Vec<Vma> = self
            .mm(mm)
            .vmas
            .values()
            .filter(|v| !self.should_skip_vma(v, walk.swappiness))
            .copied()
            .collect();
        let mut done = 0u64;
        for (i, vma) in vmas.iter().enumerate() {
            let mut addr = vma.vm_start.max(done);
            while addr < vma.vm_end {
                let (slot, next) = self.pmd_range_step(mm, addr, vma.vm_end);
                let region_end = (addr & PMD_MASK) + PMD_SIZE;
                if let Some(pmd) = slot {
                    self.walk_pmd(pmd, walk, gen, &vmas[i..], addr, region_end);
                    addr = region_end;
                } else {
                    addr = next;
                }
                done = addr;
            }
        }
    }

    /// One PMD entry of `walk_pmd_range()` (with `walk_pmd_range_locked()`
    /// and `walk_pte_range()`), from `addr` to `region_end`; `vmas` are the
    /// walked VMAs from the one holding `addr` on.
    fn walk_pmd(
        &mut self,
        pmd: PmdSlot,
        walk: &MmWalk,
        gen: usize,
        vmas: &[Vma],
        addr: u64,
        region_end: u64,
    ) {
        let val = self.pmdp_get(pmd);
        if val == 0 {
            return;
        }
        if A::pmd_trans_huge(val) {
            let page = A::pte_pfn(val);
            if Some(page) == self.huge_zero_folio || !A::pte_young(val) {
                return;
            }
            let Some(folio) = self.gen_folio_of(page, walk.memcg) else {
                return;
            };
            self.pt.set(pmd.table, pmd.idx, A::pte_mkold(val));
            self.vmstat.sim.pte_modify += 1;
            self.walk_update_folio(folio, walk.memcg, gen, A::pte_dirty(val));
            return;
        }
        let Some(tid) = self.entry_table(val) else {
            return;
        };
        if !walk.force_scan && A::HW_NONLEAF_PMD_YOUNG {
            if !A::pte_young(val) {
                return;
            }
            // walk_pmd_range_locked(): pmdp_test_and_clear_young().
            self.pt.set(pmd.table, pmd.idx, A::pte_mkold(val));
        }
        if !walk.force_scan && !self.test_bloom_filter(walk.memcg, walk.seq, pmd) {
            return;
        }
        let mut total = 0;
        let mut young = 0;
        for v in vmas {
            if v.vm_start >= region_end {
                break;
            }
            let s = v.vm_start.max(addr);
            let e = v.vm_end.min(region_end);
            if s >= e {
                continue;
            }
            let (a, b) = (pte_index(s), pte_index(e - 1) + 1);
            total += (b - a) as u64;
            young += self.young_ptes(tid, a..b, walk.memcg, gen);
        }
        if suitable_to_scan(total, young) {
            self.update_bloom_filter(walk.memcg, walk.seq + 1, pmd);
        }
    }

    /// `inc_min_seq()`: retire the oldest generation of `ty`: its folios
    /// move to the next one (to its tail), counted as protected per tier
    /// unless fully referenced with PG_workingset; a type not evictable at
    /// this swappiness keeps its folios where they are.
    fn inc_min_seq(&mut self, memcg: MemcgId, ty: usize, swappiness: u64) {
        let skip =
            (ty == FILE && swappiness == SWAPPINESS_ANON_ONLY) || (ty == ANON && swappiness == 0);
        if !skip {
            let old = gen_of(self.lrugen(memcg).min_seq[ty]);
            while let Some(folio) = self.lru.tail(&self.lrugen(memcg).folios[old][ty]) {
                let refs = self.folio_lru_refs(folio);
                let ws = self.mem.test(folio, PG_WORKINGSET);
                let new = self.folio_inc_gen(folio, memcg, false);
                self.gen_list_move(folio, memcg, new, true);
                if refs + ws as u64 != (1 << LRU_REFS_WIDTH) + 1 {
                    let nr = self.mem.folio_nr_pages(folio);
                    self.lrugen_mut(memcg).protected[ty][tier_of(refs, ws)] += nr;
                }
            }
        }
        let g = self.lrugen_mut(memcg);
        g.reset_ctrl_pos(ty);
        g.min_seq[ty] += 1;
    }

    /// `try_to_inc_min_seq()`: step `min_seq` over empty generations
    /// (keeping the two types within one generation of `max_seq -
    /// MIN_NR_GENS` of each other while both are evictable).
    fn try_to_inc_min_seq(&mut self, memcg: MemcgId, swappiness: u64) -> bool {
        let g = self.lrugen(memcg);
        let mut min_seq = g.min_seq;
        let mut moved = false;
        for ty in evictable_types(swappiness) {
            while min_seq[ty] + MIN_NR_GENS <= g.max_seq {
                if g.folios[gen_of(min_seq[ty])][ty].len != 0 {
                    break;
                }
                min_seq[ty] += 1;
                moved = true;
            }
        }
        if !moved {
            return false;
        }
        if swappiness != 0 && swappiness <= MAX_SWAPPINESS {
            let seq = g.max_seq - MIN_NR_GENS;
            if min_seq[ANON] > seq && min_seq[FILE] < seq {
                min_seq[ANON] = seq;
            } else if min_seq[FILE] > seq && min_seq[ANON] < seq {
                min_seq[FILE] = seq;
            }
        }
        let mut success = false;
        for ty in evictable_types(swappiness) {
            let g = self.lrugen_mut(memcg);
            if min_seq[ty] <= g.min_seq[ty] {
                continue;
            }
            g.reset_ctrl_pos(ty);
            g.min_seq[ty] = min_seq[ty];
            success = true;
        }
        success
    }

    /// `inc_max_seq()`: a new youngest generation (retiring the oldest of a
    /// type that has four); the compatibility sizes move with the window.
    fn inc_max_seq(&mut self, memcg: MemcgId, seq: u64, swappiness: u64) -> bool {
        self.vmstat.sim.lru_gen_inc_max_seq += 1;
        if seq != self.lrugen(memcg).max_seq {
            return false;
        }
        for ty in [ANON, FILE] {
            if self.lrugen(memcg).nr_gens(ty) == MAX_NR_GENS {
                self.inc_min_seq(memcg, ty, swappiness);
            }
        }
        let g = self.lrugen(memcg);
        let prev = gen_of(g.max_seq - 1);
        let next = gen_of(g.max_seq + 1);
        for (ty, lru) in [(ANON, LRU_INACTIVE_ANON), (FILE, LRU_INACTIVE_FILE)] {
            let g = self.lrugen(memcg);
            let delta = g.nr_pages[prev][ty] - g.nr_pages[next][ty];
            if delta != 0 {
                self.update_lru_size(memcg, lru, delta);
                self.update_lru_size(memcg, lru + LRU_ACTIVE, -delta);
            }
        }
        if self.cfg.lru_gen_min_ttl_ms != 0 {
            let now = self.jiffies();
            self.lrugen_mut(memcg).timestamps[next] = now;
        }
        self.lrugen_mut(memcg).max_seq += 1;
        true
    }

    /// `jiffies` since boot (HZ 250, as the reference kernels are built):
    /// the machine's uptime when the run started, then the running task's
    /// modelled clock.
    fn jiffies(&self) -> u64 {
        msecs_to_jiffies(self.cfg.machine_uptime_ms) + self.io_now() / PS_PER_JIFFY
    }

    /// `lru_gen_init_lruvec()` of a cgroup made during the run: its
    /// generations are born now.
    pub(crate) fn lru_gen_init_timestamps(&mut self, memcg: MemcgId) {
        if self.cfg.lru_gen_min_ttl_ms != 0 {
            let now = self.jiffies();
            self.lrugen_mut(memcg).timestamps = [now; NR_GENS];
        }
    }

    /// The pages of the evictable types from each one's oldest generation
    /// to the youngest (the sum `should_run_aging()` and
    /// `lruvec_is_sizable()` make).
    fn evictable_pages(&self, memcg: MemcgId, swappiness: u64) -> u64 {
        let g = self.lrugen(memcg);
        let mut total = 0;
        for ty in evictable_types(swappiness) {
            for seq in g.min_seq[ty]..=g.max_seq {
                total += g.nr_pages[gen_of(seq)][ty].max(0) as u64;
            }
        }
        total
    }

    /// `lruvec_is_reclaimable()` at jiffy `now`: its oldest evictable
    /// generation older than `min_ttl` jiffies, sizable, and not within
    /// memory.min.
    fn lruvec_is_reclaimable(
        &self,
        memcg: MemcgId,
        sc: &ScanControl,
        min_ttl: u64,
        now: u64,
    ) -> bool {
        let swappiness = self.get_swappiness(memcg, sc);
        let gen = gen_of(self.evictable_min_seq(memcg, swappiness));
        // time_is_before_jiffies(birth + min_ttl)
        now > self.lrugen(memcg).timestamps[gen] + min_ttl
            && self.lruvec_is_sizable(memcg, sc)
            && !self.mem_cgroup_below_min(None, memcg)
    }

    /// `lruvec_is_sizable()`: whether the evictable pages shifted by the
    /// priority leave any (every cgroup of the model is online).
    pub(crate) fn lruvec_is_sizable(&self, memcg: MemcgId, sc: &ScanControl) -> bool {
        let swappiness = self.get_swappiness(memcg, sc);
        self.evictable_pages(memcg, swappiness) >> sc.priority != 0
    }

    /// `try_to_inc_max_seq()`: walk the cgroup's mms (unless this
    /// generation's walk is done already) and start a new generation.
    fn try_to_inc_max_seq(
        &mut self,
        memcg: MemcgId,
        seq: u64,
        swappiness: u64,
        force_scan: bool,
    ) -> bool {
        self.vmstat.sim.lru_gen_try_inc_max_seq += 1;
        if seq <= self.lrugen(memcg).mm_seq {
            return false;
        }
        // set_mm_walk(NULL, true): the walk stays with the reclaimer.
        self.lru_gen_task.walk = true;
        let mut walk = MmWalk {
            memcg,
            seq,
            swappiness,
            force_scan,
        };
        let success = loop {
            match self.iterate_mm_list(&mut walk) {
                (Some(m), _) => self.lru_gen_walk_mm(m, &walk),
                (None, last) => break last,
            }
        };
        if success {
            let ok = self.inc_max_seq(memcg, seq, swappiness);
            debug_assert!(ok);
        }
        success
    }

    // ------------------------------------------------------------------
    // The eviction.

    /// `sort_folio()`: a folio of the oldest generation that must not be
    /// evicted now moves on: one the walk promoted to its generation, one
    /// protected by its tier (or fully referenced) and one waiting for its
    /// write to the next generation. True if it was sorted.
    fn sort_folio(&mut self, folio: Pfn, memcg: MemcgId, tier_idx: usize) -> bool {
        let gen = self.gen_flags.gen(folio).expect("on a generation");
        let ty = self.folio_type(folio);
        let nr = self.mem.folio_nr_pages(folio);
        let refs = self.folio_lru_refs(folio);
        let ws = self.mem.test(folio, PG_WORKINGSET);
        let tier = tier_of(refs, ws);
        if gen != gen_of(self.lrugen(memcg).min_seq[ty]) {
            self.gen_list_move(folio, memcg, gen, false);
            return true;
        }
        let full = refs + ws as u64 == (1 << LRU_REFS_WIDTH) + 1;
        if tier > tier_idx || full {
            let new = self.folio_inc_gen(folio, memcg, false);
            self.gen_list_move(folio, memcg, new, false);
            if !full {
                self.lrugen_mut(memcg).protected[ty][tier] += nr;
            }
            return true;
        }
        // Waiting for writeback: a swap write in flight (mm/page_io.rs),
        // or a dirty file folio the flusher has yet to write.
        if self.folio_test_writeback(folio) || (ty == FILE && self.mem.test(folio, PG_DIRTY)) {
            let new = self.folio_inc_gen(folio, memcg, true);
            self.gen_list_move(folio, memcg, new, false);
            return true;
        }
        false
    }

    /// `isolate_folio()`
    fn isolate_gen_folio(&mut self, folio: Pfn) {
        self.mem.clear(folio, PG_LRU);
        if !self.mem.test(folio, PG_REFERENCED) {
            self.gen_flags.set_refs_field(folio, 0);
        }
        self.mem.clear(folio, PG_READAHEAD); // folio_clear_reclaim()
        self.lru_gen_del_folio(folio, true);
        self.vmstat.sim.lru_isolate += 1;
    }

    /// `scan_folios()`: sort or isolate folios from the tail of the oldest
    /// generation of `ty` until 64 pages are isolated or the batch ends.
    /// Returns the pages scanned (0 if nothing could be isolated).
    fn scan_folios(
        &mut self,
        nr_to_scan: u64,
        memcg: MemcgId,
        sc: &ScanControl,
        ty: usize,
        tier: usize,
        list: &mut Vec<Pfn>,
    ) -> u64 {
        if self.lrugen(memcg).nr_gens(ty) == MIN_NR_GENS {
            return 0;
        }
        let gen = gen_of(self.lrugen(memcg).min_seq[ty]);
        let mut remaining = nr_to_scan.min(MAX_LRU_BATCH);
        let (mut scanned, mut sorted, mut isolated) = (0, 0, 0);
        while let Some(folio) = self.lru.tail(&self.lrugen(memcg).folios[gen][ty]) {
            let nr = self.mem.folio_nr_pages(folio);
            scanned += nr;
            if self.sort_folio(folio, memcg, tier) {
                sorted += nr;
            } else {
                self.isolate_gen_folio(folio);
                list.push(folio);
                isolated += nr;
            }
            remaining -= 1;
            if remaining == 0 || isolated >= MIN_LRU_BATCH {
                break;
            }
        }
        let (m_scan, _, g_scan, _) = Self::reclaim_events(sc);
        if self.reclaim_counts_globally(sc) {
            self.vmstat.count_vm_events(g_scan, isolated);
            self.vmstat.count_vm_events(VmEvent::PgRefill, sorted);
        }
        self.vmstat.count_memcg_events(memcg, m_scan, isolated);
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgRefill, sorted);
        let by_type = if ty == FILE {
            VmEvent::PgScanFile
        } else {
            VmEvent::PgScanAnon
        };
        self.vmstat.count_vm_events(by_type, isolated);
        if isolated != 0 || remaining == 0 {
            scanned
        } else {
            0
        }
    }

    /// `get_tier_idx()`: the tiers up to which eviction goes: those whose
    /// refault rate is within 3:2 of the first tier's.
    fn get_tier_idx(&self, memcg: MemcgId, ty: usize) -> usize {
        let g = self.lrugen(memcg);
        let sp = g.ctrl_pos(ty, 0, 2);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            if !positive_ctrl_err(sp, g.ctrl_pos(ty, tier, 3)) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    /// `get_type_to_scan()`: anon or file, by their refault rates weighted
    /// by swappiness.
    fn get_type_to_scan(&self, memcg: MemcgId, swappiness: u64) -> usize {
        if swappiness <= 1 {
            return FILE;
        }
        if swappiness >= MAX_SWAPPINESS {
            return ANON;
        }
        let g = self.lrugen(memcg);
        let sp = g.ctrl_pos(ANON, MAX_NR_TIERS, swappiness);
        let pv = g.ctrl_pos(FILE, MAX_NR_TIERS, MAX_SWAPPINESS - swappiness);
        positive_ctrl_err(sp, pv) as usize
    }

    /// `isolate_folios()`: the chosen type first, the other if it yields
    /// nothing. Returns (pages scanned, the type scanned).
    fn isolate_gen_folios(
        &mut self,
        nr_to_scan: u64,
        memcg: MemcgId,
        sc: &ScanControl,
        swappiness: u64,
        list: &mut Vec<Pfn>,
    ) -> (u64, usize) {
        let mut ty = self.get_type_to_scan(memcg, swappiness);
        let mut scanned_type = ty;
        for _ in evictable_types(swappiness) {
            let tier = self.get_tier_idx(memcg, ty);
            scanned_type = ty;
            let scanned = self.scan_folios(nr_to_scan, memcg, sc, ty, tier, list);
            if scanned != 0 {
                return (scanned, ty);
            }
            ty = 1 - ty;
        }
        (0, scanned_type)
    }

    /// `evictable_min_seq()`
    fn evictable_min_seq(&self, memcg: MemcgId, swappiness: u64) -> u64 {
        let g = self.lrugen(memcg);
        let r = evictable_types(swappiness);
        g.min_seq[*r.start()].min(g.min_seq[*r.end()])
    }

    /// `evict_folios()`: isolate a batch from the oldest generation and
    /// `shrink_folio_list()` it; clean unmapped folios it kept get one more
    /// try; the rest go back (not into the oldest generation). Returns the
    /// pages scanned.
    fn evict_folios(
        &mut self,
        nr_to_scan: u64,
        memcg: MemcgId,
        sc: &mut ScanControl,
        swappiness: u64,
    ) -> u64 {
        self.vmstat.sim.lru_gen_evict_folios += 1;
        let mut list = Vec::new();
        let (mut scanned, ty) =
            self.isolate_gen_folios(nr_to_scan, memcg, sc, swappiness, &mut list);
        scanned += self.try_to_inc_min_seq(memcg, swappiness) as u64;
        if self.evictable_min_seq(memcg, swappiness) + MIN_NR_GENS > self.lrugen(memcg).max_seq {
            scanned = 0;
        }
        if list.is_empty() {
            return scanned;
        }
        let (m_steal, g_steal) = {
            let (_, m, _, g) = Self::reclaim_events(sc);
            (m, g)
        };
        let global = self.reclaim_counts_globally(sc);
        let mut skip_retry = false;
        loop {
            list.reverse();
            // Folios whose writes ended while isolated (shrink_folio_list()
            // ends those due) are retried below.
            let (stat, kept) = self.shrink_folio_list(std::mem::take(&mut list), sc, false);
            let reclaimed = stat.nr_reclaimed;
            sc.nr_reclaimed += reclaimed;
            let min_seq = self.lrugen(memcg).min_seq;
            self.rotate_pending.folios.extend_from_slice(&kept.written);
            let mut back = Vec::new();
            // `kept.written` lists some of `kept.folios`, in the same order.
            let mut written = kept.written.iter().peekable();
            for &f in &kept.folios {
                let writeback = written.next_if_eq(&&f).is_some() || self.folio_test_writeback(f);
                if !skip_retry
                    && !self.mem.test(f, PG_ACTIVE)
                    && !self.mem.folio_mapped(f)
                    && !self.mem.test(f, PG_DIRTY)
                    && !writeback
                {
                    list.push(f);
                    continue;
                }
                let fm = self.folio_memcg(f);
                let fty = self.folio_type(f);
                if self.lru_gen_folio_seq(f, fm, false) == min_seq[fty] {
                    self.clear_refs_flags(f);
                    self.mem.set(f, PG_ACTIVE);
                }
                back.push(f);
            }
            self.move_folios_to_lru(&back);
            if self.rotate_pending.folios.len() >= FOLIO_BATCH_SIZE {
                self.lru_add_drain_rotations();
            }
            if global {
                self.vmstat.count_vm_events(g_steal, reclaimed);
            }
            self.vmstat.count_memcg_events(memcg, m_steal, reclaimed);
            let by_type = if ty == FILE {
                VmEvent::PgStealFile
            } else {
                VmEvent::PgStealAnon
            };
            self.vmstat.count_vm_events(by_type, reclaimed);
            if list.is_empty() || skip_retry {
                break;
            }
            skip_retry = true;
        }
        scanned
    }

    /// `should_run_aging()`: (whether to age, pages in the evictable
    /// generations).
    fn should_run_aging(&self, memcg: MemcgId, swappiness: u64) -> (bool, u64) {
        let g = self.lrugen(memcg);
        let min = self.evictable_min_seq(memcg, swappiness);
        if min + MIN_NR_GENS > g.max_seq {
            return (true, 0);
        }
        (
            min + MIN_NR_GENS == g.max_seq,
            self.evictable_pages(memcg, swappiness),
        )
    }

    /// `get_nr_to_scan()`: the evictable pages, less a protected cgroup's
    /// share (`apply_proportional_protection()`), shifted by the priority;
    /// below DEF_PRIORITY a lruvec short of old generations ages instead
    /// (-1: aged or within memory.min, move on; 0: nothing to do).
    fn get_nr_to_scan(&mut self, memcg: MemcgId, sc: &mut ScanControl, swappiness: u64) -> i64 {
        if self.mem_cgroup_below_min(sc.target, memcg) {
            return -1;
        }
        let max_seq = self.lrugen(memcg).max_seq;
        let (age, nr) = self.should_run_aging(memcg, swappiness);
        let nr = self.apply_proportional_protection(memcg, sc, nr);
        if !age || sc.priority == DEF_PRIORITY {
            return (nr >> sc.priority) as i64;
        }
        if self.try_to_inc_max_seq(memcg, max_seq, swappiness, false) {
            -1
        } else {
            0
        }
    }

    /// `get_swappiness()` of the lruvec of `memcg`: 0 once the cgroup can
    /// swap fewer than a batch of pages.
    fn get_swappiness(&self, memcg: MemcgId, sc: &ScanControl) -> u64 {
        if !sc.may_swap || self.mem_cgroup_get_nr_swap_pages(memcg) < MIN_LRU_BATCH {
            return 0;
        }
        self.sc_swappiness(sc)
    }

    /// `should_abort_scan()`: global reclaim stops once it has reclaimed
    /// its target, kswapd also once the zone is above its high watermark
    /// with a batch to spare; a memory cgroup's reclaim never stops early
    /// on 6.18, and like global reclaim with `series.mglru_memcg_abort`.
    pub(crate) fn should_abort_scan(&self, sc: &ScanControl) -> bool {
        let memcg = sc.target.is_some_and(|m| m != ROOT_MEM_CGROUP);
        if memcg && !self.cfg.series.mglru_memcg_abort {
            return false;
        }
        if sc.nr_reclaimed >= sc.nr_to_reclaim.max(2) {
            return true;
        }
        if !sc.kswapd {
            return false;
        }
        self.buddy
            .watermark_ok(0, self.buddy.marks().high + MIN_LRU_BATCH, false)
    }

    /// `try_to_shrink_lruvec()`: evict until this priority's share is
    /// scanned. True if it stopped because the lruvec aged instead (or is
    /// within memory.min): the memcg LRU rotates it.
    fn try_to_shrink_lruvec(&mut self, memcg: MemcgId, sc: &mut ScanControl) -> bool {
        let mut st = TryShrink::default();
        while self.lru_gen_shrink_step(memcg, sc, &mut st) {}
        st.rotate()
    }

    /// One `evict_folios()` batch of `try_to_shrink_lruvec()`'s loop
    /// (`st`: the loop's state so far); false once the lruvec is done
    /// (its share scanned, nothing to evict, or it aged instead).
    pub(crate) fn lru_gen_shrink_step(
        &mut self,
        memcg: MemcgId,
        sc: &mut ScanControl,
        st: &mut TryShrink,
    ) -> bool {
        let swappiness = *st
            .swappiness
            .get_or_insert_with(|| self.get_swappiness(memcg, sc));
        st.nr_to_scan = self.get_nr_to_scan(memcg, sc, swappiness);
        if st.nr_to_scan <= 0 {
            return false;
        }
        let delta = self.evict_folios(st.nr_to_scan as u64, memcg, sc, swappiness);
        if delta == 0 {
            return false;
        }
        st.scanned += delta;
        st.scanned < st.nr_to_scan as u64 && !self.should_abort_scan(sc)
    }

    /// `set_initial_priority()`: a large reclaim at DEF_PRIORITY starts
    /// where the inactive pages shifted by the priority would cover it
    /// (from 6 to 12).
    fn set_initial_priority(&self, sc: &mut ScanControl) {
        if sc.priority != DEF_PRIORITY || sc.nr_to_reclaim < MIN_LRU_BATCH {
            return;
        }
        let lru = self.node_lru_state();
        let mut reclaimable = lru[LRU_INACTIVE_FILE];
        if self.can_reclaim_anon_pages(None) {
            reclaimable += lru[LRU_INACTIVE_ANON];
        }
        let priority = fls_long(reclaimable) - 1 - fls_long(sc.nr_to_reclaim - 1);
        sc.priority = priority.clamp(DEF_PRIORITY as i64 / 2, DEF_PRIORITY as i64) as i32;
    }

    /// `lru_add_drain()` of the pending rotations: each written folio is
    /// rotated to the tail of the oldest generation (`lru_move_tail()`).
    pub(crate) fn lru_add_drain_rotations(&mut self) {
        for f in std::mem::take(&mut self.rotate_pending.folios) {
            self.folio_end_writeback_reclaim(f);
        }
    }

    /// `lru_gen_age_node()` (kswapd): the initial priority; with
    /// `min_ttl_ms` set, when no cgroup (root first, then in id order) has
    /// a generation old enough to evict, `out_of_memory()`: the OOM killer
    /// kills a process, which ends the run (see [`Kernel::take_oom_kill`]).
    pub(crate) fn lru_gen_age_node(&mut self, sc: &mut ScanControl) {
        self.set_initial_priority(sc);
        let min_ttl = msecs_to_jiffies(self.cfg.lru_gen_min_ttl_ms as u64);
        if min_ttl == 0 {
            return;
        }
        let now = self.jiffies();
        let reclaimable = (0..self.memcg.memcgs.len())
            .any(|m| self.lruvec_is_reclaimable(MemcgId(m as u16), sc, min_ttl, now));
        if !reclaimable {
            self.oom_kill = true;
        }
    }

    /// `lru_gen_shrink_node()` (global reclaim: kswapd and direct): the
    /// cgroups' lruvecs in the memcg LRU's order (`shrink_many()`,
    /// mm/memcg_lru.rs), each through `shrink_one()`, until the target is
    /// met.
    pub(crate) fn lru_gen_shrink_node(&mut self, sc: &mut ScanControl) {
        let before = self.lru_gen_shrink_node_begin(sc);
        // set_mm_walk(pgdat, proactive) (kswapd, which has its own walk,
        // shrinks the node a step at a time: mm/vmscan.rs kswapd_step()).
        let saved = std::mem::replace(&mut self.lru_gen_task.walk, sc.proactive);
        let mut walk = self.memcg.lru.shrink_many_begin();
        while let Some(memcg) = self.memcg.lru.shrink_many_next(&mut walk) {
            // shrink_one(): passed over, or shrunk.
            walk.op = match self.lru_gen_shrink_one_begin(memcg) {
                skip @ Some(_) => skip,
                None => {
                    let rotate = self.try_to_shrink_lruvec(memcg, sc);
                    self.lru_gen_shrink_one_end(memcg, sc, rotate)
                }
            };
            if self.should_abort_scan(sc) {
                break;
            }
        }
        self.memcg.lru.shrink_many_end(&mut walk);
        self.lru_gen_task.walk = saved;
        self.lru_gen_shrink_node_end(sc, before);
    }

    /// The start of `lru_gen_shrink_node()`: the pending rotations, the
    /// initial priority; kswapd counts this pass's reclaim from zero.
    /// Returns what `sc` had reclaimed before.
    pub(crate) fn lru_gen_shrink_node_begin(&mut self, sc: &mut ScanControl) -> u64 {
        let before = sc.nr_reclaimed;
        self.lru_add_drain_rotations();
        self.set_initial_priority(sc);
        if sc.kswapd {
            sc.nr_reclaimed = 0;
        }
        before
    }

    /// The end of `lru_gen_shrink_node()`: progress revives a failing
    /// kswapd.
    pub(crate) fn lru_gen_shrink_node_end(&mut self, sc: &mut ScanControl, before: u64) {
        if sc.kswapd {
            sc.nr_reclaimed += before;
        }
        if sc.nr_reclaimed > before {
            self.kswapd.failures = 0;
        }
    }

    /// `lru_gen_shrink_lruvec()` (cgroup reclaim).
    pub(crate) fn lru_gen_shrink_lruvec(&mut self, memcg: MemcgId, sc: &mut ScanControl) {
        self.lru_add_drain_rotations();
        let saved = std::mem::replace(&mut self.lru_gen_task.walk, sc.proactive);
        self.try_to_shrink_lruvec(memcg, sc);
        self.lru_gen_task.walk = saved;
    }

    // ------------------------------------------------------------------
    // Workingset.

    /// `lru_gen_eviction()`: the shadow of an evicted folio: its cgroup,
    /// the type's `min_seq` and its references, and PG_workingset; counted
    /// as evicted from its tier.
    pub(crate) fn lru_gen_eviction(&mut self, folio: Pfn) -> Shadow {
        let ty = self.folio_type(folio);
        let nr = self.mem.folio_nr_pages(folio);
        let refs = self.folio_lru_refs(folio);
        let ws = self.mem.test(folio, PG_WORKINGSET);
        let memcg = self.folio_memcg(folio);
        let g = self.lrugen_mut(memcg);
        let token = (g.min_seq[ty] << LRU_REFS_WIDTH) | refs.saturating_sub(1);
        g.evicted[ty][tier_of(refs, ws)] += nr;
        Shadow::pack(memcg, token, ws)
    }

    /// `lru_gen_test_recent()`: (the eviction cgroup, the token, whether
    /// its generation is within the last four, PG_workingset).
    fn lru_gen_test_recent(&self, shadow: Shadow) -> (MemcgId, u64, bool, bool) {
        let (memcg, token, ws) = shadow.unpack();
        let memcg = if memcg.idx() < self.memcg.memcgs.len() {
            memcg
        } else {
            ROOT_MEM_CGROUP
        };
        let mask = crate::mm::workingset::EVICTION_MASK >> LRU_REFS_WIDTH;
        let max_seq = self.lrugen(memcg).max_seq & mask;
        let recent = max_seq.abs_diff(token >> LRU_REFS_WIDTH) < MAX_NR_GENS;
        (memcg, token, recent, ws)
    }

    /// Whether a shadow is of a recent eviction (`workingset_test_recent()`
    /// under MGLRU).
    pub(crate) fn lru_gen_shadow_recent(&self, shadow: Shadow) -> (bool, bool) {
        let (_, _, recent, ws) = self.lru_gen_test_recent(shadow);
        (recent, ws)
    }

    /// `lru_gen_refault()`: a folio read back in over its shadow: counted
    /// as a refault of its cgroup, and if recent, of its tier, with its
    /// references or PG_workingset restored.
    pub(crate) fn lru_gen_refault(&mut self, folio: Pfn, shadow: Shadow) {
        let (memcg, token, recent, ws) = self.lru_gen_test_recent(shadow);
        if memcg != self.folio_memcg(folio) {
            return;
        }
        let ty = self.folio_type(folio);
        let nr = self.mem.folio_nr_pages(folio);
        let [refault, activate, restore] = workingset_events(ty == FILE);
        self.mod_lruvec_state(memcg, refault, nr);
        if !recent {
            return;
        }
        let refs = (token & ((1 << LRU_REFS_WIDTH) - 1)) + 1;
        self.lrugen_mut(memcg).refaulted[ty][tier_of(refs, ws)] += nr;
        if self.lru_gen_task.in_fault {
            self.mod_lruvec_state(memcg, activate, nr);
        }
        if ws {
            self.mem.set(folio, PG_WORKINGSET);
            self.mod_lruvec_state(memcg, restore, nr);
        } else {
            self.gen_flags.set_refs_field(folio, refs - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_msecs_to_jiffies()` where HZ divides 1000 (HZ 250: 4 ms a jiffy):
    /// `(m + 1000 / HZ - 1) / (1000 / HZ)`, rounding up.
    #[test]
    fn msecs_round_up_to_whole_jiffies() {
        for (ms, jiffies) in [
            (0, 0),
            (1, 1),
            (4, 1),
            (5, 2),
            (1000, 250),
            (600_000, 150_000),
        ] {
            assert_eq!(msecs_to_jiffies(ms), jiffies, "{ms} ms");
        }
    }
}

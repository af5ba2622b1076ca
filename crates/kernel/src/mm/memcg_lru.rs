//! MGLRU's memcg LRU (mm/vmscan.c: `lru_gen_online_memcg()`,
//! `lru_gen_rotate_memcg()`, `shrink_many()`, `shrink_one()`;
//! include/linux/mmzone.h: `struct lru_gen_memcg`), Linux 6.18: the order
//! in which global reclaim with the multi-gen LRU visits the cgroups.
//!
//! The node keeps every cgroup's lruvec in one of `MEMCG_NR_GENS`
//! generations of `MEMCG_NR_BINS` FIFO lists each. A global reclaim
//! (`lru_gen_shrink_node()` → `shrink_many()`) walks the oldest
//! generation (`memcg_lru.seq` mod 3), starting at a random bin and going
//! through all eight, and each lruvec's outcome (`shrink_one()`) rotates
//! it: a cgroup within memory.min, or one whose lruvec had to age, goes to
//! the young generation; one within memory.low is first sent to the tail
//! (and reclaimed, counting a `low` event, the next time it comes up);
//! one too small to help gets one retry at the tail. The oldest generation
//! becomes the next once it is empty.
//!
//! The kernel draws each bin with `get_random_u32_below()`; the model
//! draws them from [`SplitMix64`] seeded by `machine.random_seed`, so a
//! run repeats itself where the kernel's order of visits varies from boot
//! to boot (a sweep over seeds shows how much that order matters).
//! Not modelled: soft limits (`lru_gen_soft_reclaim()`, cgroup v1) and
//! cgroup removal (`lru_gen_offline_memcg()`, `lru_gen_release_memcg()`):
//! the model's cgroups live as long as the run.

use foliosim_uapi::rng::SplitMix64;

use crate::arch::Arch;
use crate::mm::memcontrol::{MemcgId, ROOT_MEM_CGROUP};
use crate::mm::vmscan::ScanControl;
use crate::mm::vmstat::MemcgEvent;
use crate::Kernel;

/// `MEMCG_NR_GENS`
const MEMCG_NR_GENS: usize = 3;
/// `MEMCG_NR_BINS`
const MEMCG_NR_BINS: usize = 8;
/// The seed of the model's bin draws (`get_random_u32_below()`), mixed
/// with `machine.random_seed`.
const BIN_SEED: u64 = 0x6d65_6d63_675f_6c72;

/// `get_memcg_gen()`
fn get_memcg_gen(seq: u64) -> usize {
    (seq % MEMCG_NR_GENS as u64) as usize
}

/// What `shrink_one()` asks `lru_gen_rotate_memcg()` to do with a lruvec
/// (`MEMCG_LRU_*`; `MEMCG_LRU_OLD` is only for a cgroup going offline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemcgLruOp {
    /// To the tail of a random bin of its generation, marked.
    Tail,
    /// To the tail of a random bin of the young generation.
    Young,
}

/// `lrugen->seg`: whether the lruvec was last moved to a tail
/// (`MEMCG_LRU_TAIL`), which ends its retries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Seg {
    #[default]
    None,
    Tail,
}

/// `pgdat->memcg_lru` and each lruvec's place in it (`lrugen->gen`,
/// `lrugen->seg`).
#[derive(Debug)]
pub(crate) struct MemcgLru {
    /// `memcg_lru.seq`: the oldest generation is `seq` mod 3.
    seq: u64,
    /// `memcg_lru.fifo[gen][bin]`, head first.
    fifo: [[Vec<MemcgId>; MEMCG_NR_BINS]; MEMCG_NR_GENS],
    /// By cgroup: its generation and its list (gen, bin) and mark.
    place: Vec<(usize, usize, Seg)>,
    rng: SplitMix64,
}

impl MemcgLru {
    /// The root's lruvec online, as at boot; the bins drawn from `seed`
    /// (`machine.random_seed`).
    pub(crate) fn new(seed: u64) -> Self {
        let mut lru = MemcgLru {
            seq: 0,
            fifo: Default::default(),
            place: Vec::new(),
            rng: SplitMix64::new(BIN_SEED ^ seed),
        };
        lru.online(ROOT_MEM_CGROUP);
        lru
    }

    /// `get_random_u32_below(MEMCG_NR_BINS)`
    fn random_bin(&mut self) -> usize {
        self.rng.below(MEMCG_NR_BINS as u32) as usize
    }

    /// `lru_gen_online_memcg()`: a new cgroup's lruvec joins the tail of a
    /// random bin of the oldest generation.
    pub(crate) fn online(&mut self, memcg: MemcgId) {
        debug_assert_eq!(memcg.idx(), self.place.len());
        let bin = self.random_bin();
        let gen = get_memcg_gen(self.seq);
        self.fifo[gen][bin].push(memcg);
        self.place.push((gen, bin, Seg::None));
    }

    /// `lru_gen_rotate_memcg()`
    fn rotate(&mut self, memcg: MemcgId, op: MemcgLruOp) {
        let bin = self.random_bin();
        let (old, old_bin, _) = self.place[memcg.idx()];
        let (new, seg) = match op {
            MemcgLruOp::Tail => (old, Seg::Tail),
            MemcgLruOp::Young => (get_memcg_gen(self.seq + 1), Seg::None),
        };
        let list = &mut self.fifo[old][old_bin];
        let at = list.iter().position(|&m| m == memcg);
        list.remove(at.expect("a cgroup's lruvec is on its memcg LRU list"));
        self.fifo[new][bin].push(memcg);
        self.place[memcg.idx()] = (new, bin, seg);
        if self.nr_memcgs(old) == 0 && old == get_memcg_gen(self.seq) {
            self.seq += 1;
        }
    }

    /// `memcg_lru.nr_memcgs[gen]`: the lruvecs in the generation's bins.
    fn nr_memcgs(&self, gen: usize) -> usize {
        self.fifo[gen].iter().map(Vec::len).sum()
    }

    /// Whether the lruvec's last move was to a tail (`lrugen->seg ==
    /// MEMCG_LRU_TAIL`).
    fn at_tail(&self, memcg: MemcgId) -> bool {
        self.place[memcg.idx()].2 == Seg::Tail
    }
}

/// Where a `shrink_many()` walk is: the generation it walks, the bin it
/// began at and the one it is in, the lruvec it is at, and that lruvec's
/// rotation, which the kernel makes once it has stepped past it.
#[derive(Debug)]
pub(crate) struct ShrinkMany {
    gen: usize,
    first_bin: usize,
    bin: usize,
    at: Option<MemcgId>,
    /// `shrink_one()`'s answer for `at` (None: stay).
    pub(crate) op: Option<MemcgLruOp>,
}

impl MemcgLru {
    /// The start of `shrink_many()`: the oldest generation, a random bin.
    pub(crate) fn shrink_many_begin(&mut self) -> ShrinkMany {
        let bin = self.random_bin();
        ShrinkMany {
            gen: get_memcg_gen(self.seq),
            first_bin: bin,
            bin,
            at: None,
            op: None,
        }
    }

    /// The walk's next lruvec: the one after the current in its list (the
    /// current one's rotation made once the walk has its successor, as
    /// `hlist_nulls_for_each_entry_rcu()` reads it first), or the head of
    /// the next bin's list; None once the walk is back at its first bin.
    pub(crate) fn shrink_many_next(&mut self, w: &mut ShrinkMany) -> Option<MemcgId> {
        loop {
            let list = &self.fifo[w.gen][w.bin];
            let next = match w.at {
                None => list.first().copied(),
                Some(at) => {
                    let i = list.iter().position(|&m| m == at);
                    i.and_then(|i| list.get(i + 1).copied())
                }
            };
            self.shrink_many_end(w);
            if let Some(m) = next {
                w.at = Some(m);
                return Some(m);
            }
            // Try the rest of the bins of the generation.
            w.at = None;
            w.bin = (w.bin + 1) % MEMCG_NR_BINS;
            if w.bin == w.first_bin {
                return None;
            }
        }
    }

    /// The end of the walk (it stopped early, or ran out): the last
    /// lruvec's rotation.
    pub(crate) fn shrink_many_end(&mut self, w: &mut ShrinkMany) {
        if let (Some(op), Some(at)) = (w.op.take(), w.at) {
            self.rotate(at, op);
        }
    }
}

impl<A: Arch> Kernel<A> {
    /// The start of `shrink_one()`: a cgroup within its memory.min is sent
    /// to the young generation unreclaimed; one within memory.low to the
    /// tail of its generation, unless it was last sent there, when it is
    /// reclaimed and counts a `low` event. `Some(op)`: passed over.
    pub(crate) fn lru_gen_shrink_one_begin(&mut self, memcg: MemcgId) -> Option<MemcgLruOp> {
        // Global reclaim: no target (lru_gen_age_node() has calculated
        // the protection; the model's cgroups are the root's children).
        if self.mem_cgroup_below_min(None, memcg) {
            return Some(MemcgLruOp::Young);
        }
        if self.mem_cgroup_below_low(None, memcg) {
            if !self.memcg.lru.at_tail(memcg) {
                return Some(MemcgLruOp::Tail);
            }
            self.vmstat
                .count_memcg_events(memcg, MemcgEvent::EventsLow, 1);
        }
        None
    }

    /// The end of `shrink_one()` after `try_to_shrink_lruvec()` (`rotate`:
    /// it stopped because the lruvec had to age): the slab shrinkers, then
    /// the rotation: to the young generation after aging, none while the
    /// lruvec is big enough to help at this priority, else one retry at
    /// the tail.
    pub(crate) fn lru_gen_shrink_one_end(
        &mut self,
        memcg: MemcgId,
        sc: &ScanControl,
        rotate: bool,
    ) -> Option<MemcgLruOp> {
        self.shrink_slab(memcg, sc.priority as u32);
        if rotate {
            return Some(MemcgLruOp::Young);
        }
        if self.lruvec_is_sizable(memcg, sc) {
            return None;
        }
        Some(if self.memcg.lru.at_tail(memcg) {
            MemcgLruOp::Young
        } else {
            MemcgLruOp::Tail
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cgroup is on exactly one list, the one its place names.
    fn check(lru: &MemcgLru) {
        for (i, &(gen, bin, _)) in lru.place.iter().enumerate() {
            let on = lru.fifo.iter().flatten().flatten().filter(|m| m.idx() == i);
            assert_eq!(on.count(), 1);
            assert!(lru.fifo[gen][bin].contains(&MemcgId(i as u16)));
        }
    }

    /// A walk visits every cgroup of the oldest generation once when none
    /// moves, whatever bin it starts at.
    #[test]
    fn a_walk_visits_each_cgroup_of_the_oldest_generation() {
        let mut lru = MemcgLru::new(0);
        for m in 1..6 {
            lru.online(MemcgId(m));
        }
        check(&lru);
        for _ in 0..8 {
            let mut w = lru.shrink_many_begin();
            let mut seen = Vec::new();
            while let Some(m) = lru.shrink_many_next(&mut w) {
                seen.push(m.idx());
            }
            seen.sort();
            assert_eq!(seen, [0, 1, 2, 3, 4, 5]);
        }
    }

    /// A cgroup sent young leaves the walk's generation; once the oldest
    /// generation is empty the next one is the oldest (`seq` advances).
    #[test]
    fn young_rotations_empty_the_oldest_generation() {
        let mut lru = MemcgLru::new(0);
        lru.online(MemcgId(1));
        let mut w = lru.shrink_many_begin();
        let mut visits = 0;
        while lru.shrink_many_next(&mut w).is_some() {
            visits += 1;
            w.op = Some(MemcgLruOp::Young);
        }
        lru.shrink_many_end(&mut w);
        check(&lru);
        assert_eq!(visits, 2);
        assert_eq!(lru.seq, 1);
        assert_eq!([0, 1, 2].map(|g| lru.nr_memcgs(g)), [0, 2, 0]);
    }

    /// A cgroup sent to the tail stays in the walk's generation, marked,
    /// and comes up again in a later bin or walk; its next move clears
    /// the mark.
    #[test]
    fn a_tail_rotation_keeps_the_generation_and_marks_it() {
        let mut lru = MemcgLru::new(0);
        lru.online(MemcgId(1));
        let gen = get_memcg_gen(lru.seq);
        let mut w = lru.shrink_many_begin();
        let mut visits = Vec::new();
        while let Some(m) = lru.shrink_many_next(&mut w) {
            visits.push(m.idx());
            w.op = (m.idx() == 1 && !lru.at_tail(m)).then_some(MemcgLruOp::Tail);
        }
        lru.shrink_many_end(&mut w);
        check(&lru);
        // Sent to the tail once (at its first visit), it stays marked in
        // the same generation whether or not the walk met it again.
        assert_eq!(lru.place[1].0, gen);
        assert!(lru.at_tail(MemcgId(1)));
        let again = visits.iter().filter(|&&m| m == 1).count();
        assert!((1..=2).contains(&again), "{visits:?}");
        lru.rotate(MemcgId(1), MemcgLruOp::Young);
        assert!(!lru.at_tail(MemcgId(1)));
        check(&lru);
    }
}

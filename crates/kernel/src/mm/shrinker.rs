//! Shrinkers driven by reclaim (mm/shrinker.c: shrink_slab(),
//! shrink_slab_memcg(), do_shrink_slab(), xchg_nr_deferred_memcg(),
//! add_nr_deferred_memcg()), Linux 6.18.
//!
//! Two shrinkers are modelled, both NUMA- and memcg-aware with
//! DEFAULT_SEEKS and the default batch, called in the order they register
//! (their shrinker ids): `thp-deferred_split` (mm/huge_memory.c:
//! thp_shrinker_init(), callbacks in mm/huge_memory.rs) and `mm-zswap`
//! (mm/zswap.c: zswap_alloc_shrinker(), callbacks in mm/zswap.rs, which do
//! nothing unless `zswap.shrinker_enabled`). Every cgroup keeps its own
//! `nr_deferred` for each (the root's too: the global walk passes the root
//! cgroup). The scan work of a call follows do_shrink_slab()'s arithmetic
//! exactly.
//! Not modelled: slab caches and their shrinkers (dentries, inodes, ...),
//! the huge-zero-folio shrinker, `slabs_scanned` (other shrinkers move it),
//! drop_caches.

use crate::arch::Arch;
use crate::mm::memcontrol::MemcgId;
use crate::Kernel;

/// `DEFAULT_SEEKS`
pub(crate) const DEFAULT_SEEKS: u64 = 2;
/// `SHRINK_BATCH`: the scan batch of a shrinker that sets none.
pub(crate) const SHRINK_BATCH: u64 = 128;

/// The modelled shrinkers, in registration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shrinker {
    DeferredSplit,
    Zswap,
}

pub(crate) const NR_SHRINKERS: usize = 2;

impl<A: Arch> Kernel<A> {
    /// `shrink_slab()` for one cgroup at `priority` (shrink_node_memcgs()
    /// calls it right after the cgroup's `shrink_lruvec()`): a non-root
    /// cgroup goes through `shrink_slab_memcg()`, the root through the
    /// global shrinker list; both reach every shrinker with `sc->memcg`
    /// set. Returns the objects freed (folios split, entries written
    /// back), which reclaim does not count as reclaimed pages.
    pub(crate) fn shrink_slab(&mut self, memcg: MemcgId, priority: u32) -> u64 {
        self.do_shrink_slab(memcg, priority, Shrinker::DeferredSplit)
            + self.do_shrink_slab(memcg, priority, Shrinker::Zswap)
    }

    /// `do_shrink_slab()`: `freeable` from the count callback; new work
    /// `delta` = (freeable >> priority) * 4 / seeks; the scan target is the
    /// carried `nr_deferred >> priority` plus delta, at most twice
    /// freeable; scans go in batches while the target is at least a batch
    /// or at least freeable (a small count at low priority is scanned
    /// whole) until a scan says SHRINK_STOP; the work not done is carried,
    /// at most twice freeable.
    fn do_shrink_slab(&mut self, memcg: MemcgId, priority: u32, s: Shrinker) -> u64 {
        let freeable = match s {
            Shrinker::DeferredSplit => self.deferred_split_count(memcg),
            Shrinker::Zswap => self.zswap_shrinker_count(memcg),
        };
        if freeable == 0 {
            return 0;
        }
        // xchg_nr_deferred()
        let nr =
            std::mem::take(&mut self.memcg.memcgs[memcg.idx()].shrinker_nr_deferred[s as usize]);
        let delta = (freeable >> priority) * 4 / DEFAULT_SEEKS;
        let mut total_scan = ((nr >> priority) + delta).min(2 * freeable);
        let (mut freed, mut scanned) = (0, 0);
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let nr_to_scan = SHRINK_BATCH.min(total_scan);
            let ret = match s {
                Shrinker::DeferredSplit => self.deferred_split_scan(memcg, nr_to_scan),
                Shrinker::Zswap => self.zswap_shrinker_scan(memcg, nr_to_scan),
            };
            let Some(ret) = ret else {
                break; // SHRINK_STOP
            };
            freed += ret;
            total_scan -= nr_to_scan;
            scanned += nr_to_scan;
        }
        let next_deferred = (nr + delta).saturating_sub(scanned).min(2 * freeable);
        // add_nr_deferred()
        self.memcg.memcgs[memcg.idx()].shrinker_nr_deferred[s as usize] += next_deferred;
        freed
    }
}

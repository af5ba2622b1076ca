//! Workingset refault detection with the classic two-list LRU
//! (mm/workingset.c: pack_shadow(), unpack_shadow(),
//! workingset_age_nonresident(), workingset_eviction(),
//! workingset_test_recent(), workingset_refault(), workingset_activation();
//! mm/swap.c: lru_note_cost_refault(); mm/vmscan.c: snapshot_refaults()),
//! Linux 6.18 without MGLRU (the reference host has no CONFIG_LRU_GEN; with
//! `lru_gen.enabled` the entry points hand over to mm/lru_gen.rs).
//!
//! Each memory cgroup's lruvec keeps `nonresident_age`, advanced by every
//! eviction and every activation in it and in its descendants. A folio
//! that reclaim frees from the page cache or the swap cache leaves a shadow
//! entry in its slots: the reclaim target's cgroup, the target's age at
//! eviction and whether the folio was PG_workingset. When the same index
//! is read in again (`filemap_add_folio()`, a swap-in), the refault
//! distance — how much the age moved since — is compared with the
//! eviction cgroup's workingset: its active file pages, plus its
//! inactive file pages for an anon refault, plus its anon pages (active,
//! and inactive for a file refault) while free swap exists. A refault
//! within it is activated at once and counted as an activation (and as a
//! restore if the folio was PG_workingset at eviction).
//!
//! The kernel packs a shadow into an xarray value entry, 63 bits on a
//! 64-bit machine: 1 workingset bit, NODES_SHIFT node bits (10 on the
//! reference host), 16 memcg-id bits, which leaves 36 bits of timestamp
//! (`EVICTION_MASK`). `bucket_order` shaves low timestamp bits only when
//! memory has more than 2^36 pages (256 TiB), so every simulated machine
//! keeps exact timestamps; the model packs and masks the same way.
//!
//! Not modelled: the shadow-node shrinker (`workingset_nodereclaim`: it runs
//! with the slab shrinkers, which the model does not have), so shadows live
//! until a refault replaces them or their swap slot is freed; the
//! rate-limited memcg statistics flush (sizes are read exact); PSI memstall
//! accounting of refaulting readahead (`ractl->_workingset`), which counts
//! nothing in vmstat.

use crate::arch::Arch;
use crate::include::linux::mm_inline::{
    LRU_ACTIVE_ANON, LRU_ACTIVE_FILE, LRU_INACTIVE_ANON, LRU_INACTIVE_FILE,
};
use crate::include::linux::mm_types::{PG_ACTIVE, PG_WORKINGSET};
use crate::include::linux::pgtable::Pfn;
use crate::mm::memcontrol::{MemcgId, ROOT_MEM_CGROUP};
use crate::mm::vmstat::{MemcgEvent, VmEvent};
use crate::Kernel;

/// `BITS_PER_LONG`
const BITS_PER_LONG: u32 = 64;
/// `BITS_PER_XA_VALUE`
const BITS_PER_XA_VALUE: u32 = BITS_PER_LONG - 1;
/// `WORKINGSET_SHIFT`
const WORKINGSET_SHIFT: u32 = 1;
/// `NODES_SHIFT` (CONFIG_NODES_SHIFT of the reference x86_64 host).
const NODES_SHIFT: u32 = 10;
/// `MEM_CGROUP_ID_SHIFT`
const MEM_CGROUP_ID_SHIFT: u32 = 16;
/// `EVICTION_SHIFT`
const EVICTION_SHIFT: u32 =
    (BITS_PER_LONG - BITS_PER_XA_VALUE) + WORKINGSET_SHIFT + NODES_SHIFT + MEM_CGROUP_ID_SHIFT;
/// `EVICTION_MASK`
pub(crate) const EVICTION_MASK: u64 = !0u64 >> EVICTION_SHIFT;

/// A shadow entry: the xarray value entry `pack_shadow()` builds
/// (`xa_mk_value()`: shifted left once with bit 0 set, so never 0). 0 in a
/// shadow table means "no shadow".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shadow(pub u64);

impl Shadow {
    /// `pack_shadow()` for node 0.
    pub(crate) fn pack(memcg: MemcgId, eviction: u64, workingset: bool) -> Shadow {
        let mut e = eviction & EVICTION_MASK;
        e = (e << MEM_CGROUP_ID_SHIFT) | memcg.0 as u64;
        e <<= NODES_SHIFT;
        e = (e << WORKINGSET_SHIFT) | workingset as u64;
        Shadow((e << 1) | 1)
    }

    /// `unpack_shadow()`: (memcg, eviction, workingset).
    pub(crate) fn unpack(self) -> (MemcgId, u64, bool) {
        let mut e = self.0 >> 1;
        let workingset = e & ((1 << WORKINGSET_SHIFT) - 1) != 0;
        e >>= WORKINGSET_SHIFT + NODES_SHIFT;
        let memcg = MemcgId((e & ((1 << MEM_CGROUP_ID_SHIFT) - 1)) as u16);
        e >>= MEM_CGROUP_ID_SHIFT;
        (memcg, e, workingset)
    }
}

/// `workingset_init()`: the timestamp bits shaved so that the longest
/// actionable refault distance (all of memory) fits the eviction field.
pub(crate) fn bucket_order(totalram_pages: u64) -> u32 {
    let timestamp_bits = BITS_PER_LONG - EVICTION_SHIFT;
    let max_order = BITS_PER_LONG - totalram_pages.saturating_sub(1).leading_zeros();
    max_order.saturating_sub(timestamp_bits)
}

/// `WORKINGSET_REFAULT_BASE`, `WORKINGSET_ACTIVATE_BASE` and
/// `WORKINGSET_RESTORE_BASE` of the anon or file type, as (/proc/vmstat,
/// memory.stat) events.
pub(crate) fn workingset_events(file: bool) -> [(VmEvent, MemcgEvent); 3] {
    use MemcgEvent as M;
    use VmEvent as V;
    if file {
        [
            (V::WorkingsetRefaultFile, M::WorkingsetRefaultFile),
            (V::WorkingsetActivateFile, M::WorkingsetActivateFile),
            (V::WorkingsetRestoreFile, M::WorkingsetRestoreFile),
        ]
    } else {
        [
            (V::WorkingsetRefaultAnon, M::WorkingsetRefaultAnon),
            (V::WorkingsetActivateAnon, M::WorkingsetActivateAnon),
            (V::WorkingsetRestoreAnon, M::WorkingsetRestoreAnon),
        ]
    }
}

impl<A: Arch> Kernel<A> {
    /// `workingset_age_nonresident()`: age `memcg`'s lruvec and every
    /// ancestor's by `nr_pages`.
    pub(crate) fn workingset_age_nonresident(&mut self, memcg: MemcgId, nr_pages: u64) {
        let mut m = memcg;
        loop {
            let l = &mut self.memcg.memcgs[m.idx()].lruvec;
            l.nonresident_age = l.nonresident_age.wrapping_add(nr_pages);
            if m == ROOT_MEM_CGROUP {
                break;
            }
            m = self.memcg.memcgs[m.idx()].parent;
        }
    }

    /// `workingset_eviction()`: the shadow a reclaimed `folio` leaves, taken
    /// from the reclaim target's lruvec (the root's for global reclaim and
    /// MADV_PAGEOUT), which then ages by the folio's pages.
    pub(crate) fn workingset_eviction(&mut self, folio: Pfn, target: Option<MemcgId>) -> Shadow {
        if self.lru_gen_enabled() {
            return self.lru_gen_eviction(folio);
        }
        let memcg = target.unwrap_or(ROOT_MEM_CGROUP);
        let order = bucket_order(self.mem.nr_pages());
        let eviction = self.memcg.memcgs[memcg.idx()].lruvec.nonresident_age >> order;
        let nr = self.mem.folio_nr_pages(folio);
        self.workingset_age_nonresident(memcg, nr);
        Shadow::pack(memcg, eviction, self.mem.test(folio, PG_WORKINGSET))
    }

    /// `workingset_test_recent()`: whether the refault distance of `shadow`
    /// fits the eviction cgroup's workingset. Returns (recent, workingset).
    pub(crate) fn workingset_test_recent(&self, shadow: Shadow, file: bool) -> (bool, bool) {
        if self.lru_gen_enabled() {
            return self.lru_gen_shadow_recent(shadow);
        }
        let (memcg, eviction, workingset) = shadow.unpack();
        if memcg.idx() >= self.memcg.memcgs.len() {
            return (false, workingset); // mem_cgroup_tryget() failed
        }
        let eviction = eviction << bucket_order(self.mem.nr_pages());
        let refault = self.memcg.memcgs[memcg.idx()].lruvec.nonresident_age;
        let refault_distance = refault.wrapping_sub(eviction) & EVICTION_MASK;
        let lru = self.lru_state(memcg);
        let mut workingset_size = lru[LRU_ACTIVE_FILE];
        if !file {
            workingset_size += lru[LRU_INACTIVE_FILE];
        }
        if self.mem_cgroup_get_nr_swap_pages(memcg) > 0 {
            workingset_size += lru[LRU_ACTIVE_ANON];
            if file {
                workingset_size += lru[LRU_INACTIVE_ANON];
            }
        }
        (refault_distance <= workingset_size, workingset)
    }

    /// `get_nr_swap_pages()`: the free slots of every swap area.
    pub(crate) fn get_nr_swap_pages(&self) -> u64 {
        self.swap
            .iter()
            .map(|s| s.nr_slots - 1 - s.inuse_pages)
            .sum()
    }

    /// `workingset_refault()`: a new, charged, not yet LRU folio replaces a
    /// shadow. Counts the refault in the folio's cgroup; a recent one is
    /// activated (PG_active, the age advances) and, if it was PG_workingset
    /// at eviction, restored (PG_workingset, `lru_note_cost_refault()`).
    pub(crate) fn workingset_refault(&mut self, folio: Pfn, shadow: Shadow) {
        if self.lru_gen_enabled() {
            self.lru_gen_refault(folio, shadow);
            return;
        }
        let file = !self
            .mem
            .test(folio, crate::include::linux::mm_types::PG_SWAPBACKED);
        let nr = self.mem.folio_nr_pages(folio);
        let memcg = self.folio_memcg(folio);
        let [refault, activate, restore] = workingset_events(file);
        self.mod_lruvec_state(memcg, refault, nr);
        let (recent, workingset) = self.workingset_test_recent(shadow, file);
        if !recent {
            return;
        }
        self.mem.set(folio, PG_ACTIVE);
        self.workingset_age_nonresident(memcg, nr);
        self.mod_lruvec_state(memcg, activate, nr);
        if workingset {
            self.mem.set(folio, PG_WORKINGSET);
            self.lru_note_cost(memcg, file, nr, 0); // lru_note_cost_refault()
            self.mod_lruvec_state(memcg, restore, nr);
        }
    }

    /// `mod_lruvec_state()` of a counter that only grows: the node's
    /// (/proc/vmstat) and the cgroup's (memory.stat).
    pub(crate) fn mod_lruvec_state(
        &mut self,
        memcg: MemcgId,
        (node, m): (VmEvent, MemcgEvent),
        nr: u64,
    ) {
        self.vmstat.count_vm_events(node, nr);
        self.vmstat.count_memcg_events(memcg, m, nr);
    }

    /// `workingset_activation()`: an activation outside reclaim
    /// (`folio_mark_accessed()`) ages the folio's lruvec.
    pub(crate) fn workingset_activation(&mut self, folio: Pfn) {
        let memcg = self.folio_memcg(folio);
        let nr = self.mem.folio_nr_pages(folio);
        self.workingset_age_nonresident(memcg, nr);
    }

    /// `snapshot_refaults()`: remember the target's activations, so the
    /// next reclaim deactivates only if refaults came in since.
    pub(crate) fn snapshot_refaults(&mut self, target: Option<MemcgId>) {
        if self.lru_gen_enabled() {
            return;
        }
        let memcg = target.unwrap_or(ROOT_MEM_CGROUP);
        let r = self.workingset_activations(memcg);
        self.memcg.memcgs[memcg.idx()].lruvec.refaults = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadows_round_trip_and_keep_36_timestamp_bits() {
        assert_eq!(EVICTION_SHIFT, 28);
        assert_eq!(EVICTION_MASK, (1 << 36) - 1);
        let s = Shadow::pack(MemcgId(3), 123_456_789, true);
        assert_ne!(s.0, 0);
        assert_eq!(s.unpack(), (MemcgId(3), 123_456_789, true));
        let s = Shadow::pack(MemcgId(0), (1 << 36) + 5, false);
        assert_eq!(s.unpack(), (MemcgId(0), 5, false));
    }

    #[test]
    fn bucket_order_is_zero_below_256_tib() {
        assert_eq!(bucket_order(24 << 18), 0); // 24 GiB of 4 KiB pages
        assert_eq!(bucket_order(1 << 36), 0);
        assert_eq!(bucket_order((1 << 36) + 1), 1);
    }
}

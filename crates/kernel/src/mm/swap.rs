//! LRU maintenance outside reclaim (mm/swap.c: folio_add_lru(), lru_add(),
//! folio_mark_accessed(), folio_activate(), lru_activate(), folio_deactivate(),
//! lru_deactivate(), folio_mark_lazyfree(), lru_lazyfree(),
//! folio_rotate_reclaimable(), lru_move_tail(), lru_note_cost_unlock_irq();
//! mm/internal.h: vma_has_recency()), Linux 6.18, classic LRU.
//!
//! The kernel queues these operations in per-CPU folio batches (15 folios)
//! and applies them when a batch fills or before reclaim isolates
//! (`lru_add_drain()`); the model applies each at once. The resulting order
//! differs only where batched additions and activations of the same
//! moment would interleave. Not modelled: the unevictable list (mlock),
//! page_idle. With MGLRU on, the references go to mm/lru_gen.rs.
//! `folio_mark_accessed()` ages the non-resident pages
//! (`workingset_activation()`, mm/workingset.rs).

use crate::arch::Arch;
use crate::include::linux::mm_inline::LRU_FILE;
use crate::include::linux::mm_types::{
    PG_ACTIVE, PG_ANON, PG_DIRTY, PG_LRU, PG_READAHEAD, PG_REFERENCED, PG_SWAPBACKED, PG_SWAPCACHE,
};
use crate::include::linux::pgtable::Pfn;
use crate::mm::memcontrol::MemcgId;
use crate::mm::memcontrol::ROOT_MEM_CGROUP;
use crate::mm::mmap::{Vma, VM_RAND_READ, VM_SEQ_READ};
use crate::mm::vmstat::{MemcgEvent, VmEvent};
use crate::Kernel;

/// `SWAP_CLUSTER_MAX`
pub(crate) const SWAP_CLUSTER_MAX: u64 = 32;

/// `vma_has_recency()`: MADV_SEQUENTIAL / MADV_RANDOM mappings give no
/// recency information (FMODE_NOREUSE files are not modelled).
#[inline]
pub(crate) fn vma_has_recency(vma: &Vma) -> bool {
    vma.vm_flags & (VM_SEQ_READ | VM_RAND_READ) == 0
}

impl<A: Arch> Kernel<A> {
    /// `folio_add_lru()` + `lru_add()`: a new folio joins the head of its
    /// inactive (or, with PG_active, active) list.
    #[inline]
    pub(crate) fn folio_add_lru(&mut self, folio: Pfn) {
        debug_assert!(
            !self.mem.test(folio, PG_LRU),
            "pfn {} already on the LRU",
            folio.0
        );
        // MGLRU: a fault's new folio starts in the youngest generations.
        let t = &self.lru_gen_task;
        if self.lru_gen_enabled() && t.in_fault && !t.memalloc {
            self.mem.set(folio, PG_ACTIVE);
        }
        self.mem.set(folio, PG_LRU);
        self.lruvec_add_folio(folio);
    }

    /// `folio_putback_lru()`: an isolated folio goes back (at the head of
    /// the list its flags say).
    pub(crate) fn folio_putback_lru(&mut self, folio: Pfn) {
        // The isolation held the last reference of an anon folio that
        // nothing maps and the swap cache does not hold (a zero-filled page
        // a split mapped to the zero page): `folio_put()` frees it.
        if self.anon_folio_unreferenced(folio) {
            self.folio_free(folio);
            return;
        }
        self.folio_add_lru(folio);
    }

    /// `folio_mark_accessed()`: the first access sets PG_referenced, a
    /// second one activates an inactive folio (and clears PG_referenced).
    pub(crate) fn folio_mark_accessed(&mut self, folio: Pfn) {
        if self.lru_gen_enabled() {
            self.lru_gen_inc_refs(folio);
            return;
        }
        if !self.mem.test(folio, PG_REFERENCED) {
            self.mem.set(folio, PG_REFERENCED);
        } else if !self.mem.test(folio, PG_ACTIVE) {
            // On the LRU: folio_activate(). Off it (isolated) the kernel
            // looks in the local add batch, which the model never has.
            if self.mem.test(folio, PG_LRU) {
                self.folio_activate(folio);
            }
            self.mem.clear(folio, PG_REFERENCED);
            self.workingset_activation(folio);
        }
    }

    /// `folio_activate()` / `lru_activate()`: move an inactive LRU folio to
    /// the head of its active list.
    pub(crate) fn folio_activate(&mut self, folio: Pfn) {
        if self.mem.test(folio, PG_ACTIVE) || !self.mem.test(folio, PG_LRU) {
            return;
        }
        self.lruvec_del_folio(folio);
        self.mem.set(folio, PG_ACTIVE);
        self.lruvec_add_folio(folio);
        let nr = self.mem.folio_nr_pages(folio);
        self.vmstat.count_vm_events(VmEvent::PgActivate, nr);
        let memcg = self.folio_memcg(folio);
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgActivate, nr);
    }

    /// `folio_deactivate()` / `lru_deactivate()` (MADV_COLD): an active LRU
    /// folio moves to the head of its inactive list, losing PG_referenced;
    /// an inactive one stays where it is.
    pub(crate) fn folio_deactivate(&mut self, folio: Pfn) {
        if !self.mem.test(folio, PG_LRU) {
            return;
        }
        // MGLRU: forget the references; a folio in the oldest generation
        // stays where it is, any other moves (lru_deactivate()).
        if self.lru_gen_enabled() {
            if self.lru_gen_clear_refs(folio) {
                return;
            }
        } else if !self.mem.test(folio, PG_ACTIVE) {
            return;
        }
        self.lruvec_del_folio(folio);
        self.mem.clear(folio, PG_ACTIVE | PG_REFERENCED);
        self.lruvec_add_folio(folio);
        let nr = self.mem.folio_nr_pages(folio);
        self.vmstat.count_vm_events(VmEvent::PgDeactivate, nr);
        let memcg = self.folio_memcg(folio);
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgDeactivate, nr);
    }

    /// `folio_mark_lazyfree()` / `lru_lazyfree()` (MADV_FREE): a swap-backed
    /// anon LRU folio outside the swap cache loses PG_swapbacked (which makes
    /// it lazyfree), PG_active and PG_referenced, and joins the head of the
    /// inactive file list; counts `pglazyfree`.
    pub(crate) fn folio_mark_lazyfree(&mut self, folio: Pfn) {
        let f = self.mem.flags(folio);
        if f & PG_ANON == 0 || f & PG_SWAPBACKED == 0 || f & PG_LRU == 0 || f & PG_SWAPCACHE != 0 {
            return;
        }
        self.lruvec_del_folio(folio);
        // MGLRU's lru_gen_clear_refs() finds the folio off its list and
        // keeps its references.
        let refs = if self.lru_gen_enabled() {
            0
        } else {
            PG_REFERENCED
        };
        self.mem.clear(folio, PG_ACTIVE | refs | PG_SWAPBACKED);
        self.lruvec_add_folio(folio);
        let nr = self.mem.folio_nr_pages(folio);
        self.vmstat.count_vm_events(VmEvent::PgLazyFree, nr);
        let memcg = self.folio_memcg(folio);
        self.vmstat
            .count_memcg_events(memcg, MemcgEvent::PgLazyFree, nr);
    }

    /// `folio_test_lazyfree()`: anon without PG_swapbacked.
    #[inline]
    pub(crate) fn folio_test_lazyfree(&self, folio: Pfn) -> bool {
        let f = self.mem.flags(folio);
        f & PG_ANON != 0 && f & PG_SWAPBACKED == 0
    }

    /// `folio_end_writeback()` of a folio reclaim wrote (PG_reclaim, which
    /// aliases PG_readahead): clear it and `folio_rotate_reclaimable()`,
    /// so the next scan finds the now clean folio first. The write ends
    /// right after the folio went back to the LRU, or on its device's
    /// schedule (mm/page_io.rs).
    pub(crate) fn folio_end_writeback_reclaim(&mut self, folio: Pfn) {
        if !self.mem.test(folio, PG_READAHEAD) {
            return;
        }
        self.mem.clear(folio, PG_READAHEAD);
        let locked = self.locked.contains(&folio);
        if locked || self.mem.test(folio, PG_DIRTY) || !self.mem.test(folio, PG_LRU) {
            return;
        }
        // lru_move_tail()
        self.lruvec_del_folio(folio);
        self.mem.clear(folio, PG_ACTIVE);
        self.lruvec_add_folio_tail(folio);
        let nr = self.mem.folio_nr_pages(folio);
        self.vmstat.count_vm_events(VmEvent::PgRotated, nr);
    }

    /// `lru_note_cost_unlock_irq()`: charge reclaim cost (I/O counts 32 per
    /// page, rotations 1) to the lruvec and its ancestors, halving both
    /// costs when they exceed a quarter of the lruvec's LRU pages.
    pub(crate) fn lru_note_cost(
        &mut self,
        memcg: MemcgId,
        file: bool,
        nr_io: u64,
        nr_rotated: u64,
    ) {
        let cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated;
        if cost == 0 {
            return;
        }
        let mut m = memcg;
        loop {
            // lruvec_page_state(): the flushed sizes (mm/memcg_rstat.rs).
            let lrusize: u64 = self.lru_state(m).iter().sum();
            let l = &mut self.memcg.memcgs[m.idx()].lruvec;
            if file {
                l.file_cost += cost;
            } else {
                l.anon_cost += cost;
            }
            if l.file_cost + l.anon_cost > lrusize / 4 {
                l.file_cost /= 2;
                l.anon_cost /= 2;
            }
            if m == ROOT_MEM_CGROUP {
                break;
            }
            m = self.memcg.memcgs[m.idx()].parent;
        }
    }

    /// `folio_is_file_lru()`
    #[inline]
    pub(crate) fn folio_is_file_lru(&self, folio: Pfn) -> bool {
        self.folio_lru_list(folio) >= LRU_FILE
    }
}

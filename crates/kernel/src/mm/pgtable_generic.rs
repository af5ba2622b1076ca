//! Page-table pages and the generic walk to a PMD entry
//! (mm/pgtable-generic.c, mm/memory.c: __pte_alloc(), __pmd_alloc(),
//! __pud_alloc(), pmd_install(), free_pte_range()).
//!
//! Every table is a simulated physical page taken from the buddy allocator
//! (so page tables cost memory as in the kernel) whose 512 raw entries live
//! in an arena; the page's `struct page` records the arena slot, like
//! `struct ptdesc`. Upper-level entries hold the table page's PFN in the
//! architecture's encoding. The P4D level is folded (4-level paging).

use crate::arch::Arch;
use crate::include::linux::pgtable::{pgd_index, pmd_index, pud_index, Pfn, PTRS_PER_PTE};
use crate::{Kernel, MmId};

/// One page-table page's entries.
pub type Table = [u64; PTRS_PER_PTE];

/// A page-table page: its slot in the arena of entries, which the table
/// page's `struct page` records (the model's `struct ptdesc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[doc(alias = "ptdesc")]
pub struct TableId(pub(crate) u32);

impl TableId {
    #[inline]
    fn idx(self) -> usize {
        self.0 as usize
    }
}

/// The arena of page-table pages.
#[derive(Debug, Default)]
pub(crate) struct PageTables {
    pub tables: Vec<Box<Table>>,
    free: Vec<TableId>,
    /// Bumped whenever a table is freed, so callers that cache a table id
    /// (the engine's last-table cache) can tell it may be stale.
    pub(crate) generation: u64,
    pub(crate) nr_tables: u64,
}

/// A PMD entry's location: (table id of the PMD table, index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmdSlot {
    pub table: TableId,
    pub idx: usize,
}

impl PageTables {
    #[inline]
    pub(crate) fn get(&self, tid: TableId, idx: usize) -> u64 {
        self.tables[tid.idx()][idx]
    }
    #[inline]
    pub(crate) fn set(&mut self, tid: TableId, idx: usize, v: u64) {
        self.tables[tid.idx()][idx] = v;
    }
    #[inline]
    pub(crate) fn table_mut(&mut self, tid: TableId) -> &mut Table {
        &mut self.tables[tid.idx()]
    }
    #[inline]
    pub(crate) fn table(&self, tid: TableId) -> &Table {
        &self.tables[tid.idx()]
    }
}

impl<A: Arch> Kernel<A> {
    /// `pte_alloc_one()` and friends: a zeroed table page, allocated with
    /// GFP_PGTABLE_USER, whose `__GFP_ACCOUNT` charges it to the memory
    /// cgroup of the task in the kernel (`__memcg_kmem_charge_page()`).
    /// Returns (pfn, id).
    pub(crate) fn pgtable_alloc(&mut self) -> (Pfn, TableId) {
        let pfn = self.alloc_pages(0, false).unwrap_or_else(|| {
            crate::model_limit("out of memory for a page table (the OOM killer is not modelled)")
        });
        self.memcg_kmem_charge_page(pfn);
        let id = match self.pt.free.pop() {
            Some(id) => {
                *self.pt.tables[id.idx()] = [0; PTRS_PER_PTE];
                id
            }
            None => {
                self.pt.tables.push(Box::new([0; PTRS_PER_PTE]));
                TableId((self.pt.tables.len() - 1) as u32)
            }
        };
        self.mem.set_table(pfn, id);
        self.pt.nr_tables += 1;
        self.vmstat.sim.pt_alloc += 1;
        (pfn, id)
    }

    /// `pte_free()` / `pmd_free()`: give a table page back. The entries must
    /// already be none.
    pub(crate) fn pgtable_free(&mut self, pfn: Pfn) {
        let id = self.mem.table_id(pfn);
        debug_assert!(
            self.pt.tables[id.idx()].iter().all(|&e| e == 0),
            "freeing a non-empty table"
        );
        self.mem.clear_table(pfn);
        self.memcg_kmem_uncharge_page(pfn);
        self.buddy.free_pages(&mut self.mem, pfn, 0);
        self.pt.free.push(id);
        self.pt.nr_tables -= 1;
        self.pt.generation += 1;
        self.vmstat.sim.pt_free += 1;
    }

    /// The table id an upper-level entry points at, if it is a table.
    #[inline]
    pub fn entry_table(&self, entry: u64) -> Option<TableId> {
        if A::entry_is_table(entry) {
            Some(self.mem.table_id(A::table_pfn(entry)))
        } else {
            None
        }
    }

    /// Walk pgd → pud → pmd without allocating (`pmd_off()` on existing
    /// levels).
    #[inline]
    pub fn walk_to_pmd(&self, mm: MmId, addr: u64) -> Option<PmdSlot> {
        let pgd = self.mm(mm).pgd;
        let pud = self.entry_table(self.pt.get(pgd, pgd_index(addr)))?;
        let pmd = self.entry_table(self.pt.get(pud, pud_index(addr)))?;
        Some(PmdSlot {
            table: pmd,
            idx: pmd_index(addr),
        })
    }

    /// Walk to the PMD entry of `addr`, allocating the PUD and PMD tables
    /// (`__pud_alloc()`, `__pmd_alloc()`).
    pub(crate) fn pmd_alloc(&mut self, mm: MmId, addr: u64) -> PmdSlot {
        let pgd = self.mm(mm).pgd;
        let pud = self.next_level_alloc(pgd, pgd_index(addr));
        let pmd = self.next_level_alloc(pud, pud_index(addr));
        PmdSlot {
            table: pmd,
            idx: pmd_index(addr),
        }
    }

    fn next_level_alloc(&mut self, tid: TableId, idx: usize) -> TableId {
        if let Some(t) = self.entry_table(self.pt.get(tid, idx)) {
            return t;
        }
        let (pfn, id) = self.pgtable_alloc();
        self.pt.set(tid, idx, A::mk_table(pfn));
        id
    }

    /// The PMD entry's value.
    #[inline]
    pub(crate) fn pmdp_get(&self, pmd: PmdSlot) -> u64 {
        self.pt.get(pmd.table, pmd.idx)
    }

    /// `pmd_install()` / `__pte_alloc()`: make sure the PMD points at a PTE
    /// table and return its id. Returns None if the PMD is a huge leaf.
    pub(crate) fn pte_alloc(&mut self, pmd: PmdSlot) -> Option<TableId> {
        let entry = self.pmdp_get(pmd);
        if entry == 0 {
            let (pfn, id) = self.pgtable_alloc();
            self.pt.set(pmd.table, pmd.idx, A::mk_table(pfn));
            return Some(id);
        }
        self.entry_table(entry)
    }

    /// `free_pte_range()`: clear a PMD that points at an empty PTE table and
    /// free the table.
    pub(crate) fn free_pte_table(&mut self, pmd: PmdSlot) {
        let entry = self.pmdp_get(pmd);
        if A::entry_is_table(entry) {
            self.pt.set(pmd.table, pmd.idx, 0);
            self.pgtable_free(A::table_pfn(entry));
        }
    }
}

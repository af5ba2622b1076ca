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
use crate::include::linux::pgtable::{
    pgd_addr_end, pgd_index, pmd_addr_end, pmd_index, pud_addr_end, pud_index, Pfn, PTRS_PER_PTE,
    PUD_SHIFT,
};
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
    /// Bumped whenever a table is freed or a whole PMD table moves to
    /// another PUD entry (mremap's `move_normal_pud()`), so callers that
    /// cache a table id (the engine's last-table cache, [`PmdCache`]) can
    /// tell it may be stale.
    pub(crate) generation: u64,
    pub(crate) nr_tables: u64,
    /// The PMD table the last [`Kernel::walk_to_pmd_cached`] went down to.
    pub(crate) pmd_cache: Option<PmdCache>,
}

/// The upper levels of one walk to a PMD entry: the PMD table that maps
/// the 1 GiB of `mm` from `pud_block << PUD_SHIFT`, found at
/// [`PageTables::generation`] `gen`. Valid while the generation has not
/// moved: a PGD or PUD entry that points at a table changes only when
/// that table is freed or (mremap) moved, and both bump it; entries that
/// were none and get a table do not matter, as only a walk that found
/// the tables is cached. The invariant checker compares it with a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PmdCache {
    pub(crate) mm: MmId,
    pub(crate) pud_block: u64,
    pub(crate) gen: u64,
    pub(crate) pmd_table: TableId,
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
        self.free_pages(pfn, 0);
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

    /// [`Kernel::walk_to_pmd`] through the walk cache ([`PmdCache`]): the
    /// rmap walks of reclaim and the faults of a touch go down to the same
    /// PMD table again and again.
    #[inline]
    pub(crate) fn walk_to_pmd_cached(&mut self, mm: MmId, addr: u64) -> Option<PmdSlot> {
        let pud_block = addr >> PUD_SHIFT;
        if let Some(c) = self.pt.pmd_cache {
            if c.mm == mm && c.pud_block == pud_block && c.gen == self.pt.generation {
                let slot = PmdSlot {
                    table: c.pmd_table,
                    idx: pmd_index(addr),
                };
                debug_assert_eq!(Some(slot), self.walk_to_pmd(mm, addr));
                return Some(slot);
            }
        }
        let slot = self.walk_to_pmd(mm, addr)?;
        self.pmd_cache_fill(mm, addr, slot.table);
        Some(slot)
    }

    /// Remember `pmd_table` as the PMD table of `addr`'s 1 GiB in `mm`
    /// ([`PmdCache`]).
    fn pmd_cache_fill(&mut self, mm: MmId, addr: u64, pmd_table: TableId) {
        self.pt.pmd_cache = Some(PmdCache {
            mm,
            pud_block: addr >> PUD_SHIFT,
            gen: self.pt.generation,
            pmd_table,
        });
    }

    /// The walk cache ([`PmdCache`]), if valid, agrees with a walk (for the
    /// invariant checker).
    pub(crate) fn check_pmd_cache(&self) -> Result<(), String> {
        let Some(c) = self.pt.pmd_cache else {
            return Ok(());
        };
        if c.gen != self.pt.generation {
            return Ok(());
        }
        let addr = c.pud_block << PUD_SHIFT;
        let walked = self.walk_to_pmd(c.mm, addr).map(|s| s.table);
        if walked != Some(c.pmd_table) {
            return Err(format!(
                "PMD walk cache: mm {} at {addr:#x} holds table {:?}, a walk finds {walked:?}",
                c.mm.0, c.pmd_table
            ));
        }
        Ok(())
    }

    /// One step of a walk over `[addr, end)` through the existing tables
    /// (the loops of `unmap_page_range()`, `free_pgd_range()`,
    /// `copy_page_range()`, `walk_page_range()`): the PMD entry of `addr`
    /// and the end of its block (`pmd_addr_end()`), or, where the PGD or
    /// PUD entry is none (`pgd_none_or_clear_bad()`,
    /// `pud_none_or_clear_bad()`), no entry and the end of that entry's
    /// range (`pgd_addr_end()`, `pud_addr_end()`). A walk of an unpopulated
    /// range so takes one step per upper-level entry, not one per 2 MiB.
    #[inline]
    pub(crate) fn pmd_range_step(&self, mm: MmId, addr: u64, end: u64) -> (Option<PmdSlot>, u64) {
        let pgd = self.mm(mm).pgd;
        let Some(pud) = self.entry_table(self.pt.get(pgd, pgd_index(addr))) else {
            return (None, pgd_addr_end(addr, end));
        };
        let Some(pmd) = self.entry_table(self.pt.get(pud, pud_index(addr))) else {
            return (None, pud_addr_end(addr, end));
        };
        let slot = PmdSlot {
            table: pmd,
            idx: pmd_index(addr),
        };
        (Some(slot), pmd_addr_end(addr, end))
    }

    /// Walk to the PMD entry of `addr`, allocating the PUD and PMD tables
    /// (`__pud_alloc()`, `__pmd_alloc()`).
    pub(crate) fn pmd_alloc(&mut self, mm: MmId, addr: u64) -> PmdSlot {
        if let Some(slot) = self.walk_to_pmd_cached(mm, addr) {
            return slot;
        }
        let pgd = self.mm(mm).pgd;
        let pud = self.next_level_alloc(pgd, pgd_index(addr));
        let pmd = self.next_level_alloc(pud, pud_index(addr));
        self.pmd_cache_fill(mm, addr, pmd);
        PmdSlot {
            table: pmd,
            idx: pmd_index(addr),
        }
    }

    /// The table an upper-level entry points at, allocated if the entry
    /// is none (`__pud_alloc()`, `__pmd_alloc()`).
    pub(crate) fn next_level_alloc(&mut self, tid: TableId, idx: usize) -> TableId {
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
    pub(crate) fn free_pte_table(&mut self, pmd: PmdSlot) -> bool {
        let entry = self.pmdp_get(pmd);
        if A::entry_is_table(entry) {
            self.pt.set(pmd.table, pmd.idx, 0);
            self.pgtable_free(A::table_pfn(entry));
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::fs::proc::task_mmu::TASK_SIZE;
    use crate::include::linux::pgtable::PAGE_SIZE;
    use crate::mm::mmap::{MMAP_BASE, MMAP_MIN_ADDR};
    use crate::{Config, Kernel, X86_64};
    use foliosim_uapi::mman::{MAP_ANONYMOUS, MAP_PRIVATE, PROT_READ, PROT_WRITE};

    /// The largest anonymous mapping the model places (all of
    /// `[MMAP_MIN_ADDR, MMAP_BASE)`, 96 TiB) with one page written at each
    /// end. A walk of the whole user address space steps over every none
    /// PGD and PUD entry at once: the first and the last page sit in PGD
    /// entries 0 and 191 (of the 256 below TASK_SIZE), PUD entries 0 and
    /// 511, so it takes 254 PGD steps, 2 × 511 PUD steps and 2 × 512 PMD
    /// steps = 2,300 (not 2^26 steps of 2 MiB). munmap then frees the two
    /// PTE tables, and a range past TASK_SIZE is EINVAL before any walk.
    #[test]
    fn a_walk_steps_over_none_upper_level_entries() {
        let cfg = Config {
            memory: 64 << 20,
            ..Config::default()
        };
        let mut k = Kernel::<X86_64>::new(cfg).expect("kernel");
        let mm = k.mm_alloc();
        let len = MMAP_BASE - MMAP_MIN_ADDR;
        let flags = MAP_PRIVATE | MAP_ANONYMOUS;
        let prot = PROT_READ | PROT_WRITE;
        let a = k.sys_mmap(mm, 0, len, prot, flags, None, 0).expect("mmap");
        assert_eq!(a, MMAP_MIN_ADDR);
        k.handle_mm_fault(mm, a, true);
        k.handle_mm_fault(mm, a + len - PAGE_SIZE, true);
        let (mut steps, mut pmds) = (0, 0);
        let mut addr = 0;
        while addr < TASK_SIZE {
            let (pmd, next) = k.pmd_range_step(mm, addr, TASK_SIZE);
            assert!(next > addr && next <= TASK_SIZE, "{addr:#x} → {next:#x}");
            steps += 1;
            pmds += usize::from(pmd.is_some());
            addr = next;
        }
        assert_eq!((steps, pmds), (2300, 1024));

        let freed = k.vmstat.sim.pt_free;
        match k.sys_munmap(mm, 0, 1 << 60) {
            Err(crate::KernelError::Errno(e, _)) => assert_eq!(e, "EINVAL"),
            other => panic!("{other:?}"),
        }
        assert_eq!(k.vmstat.sim.pt_free, freed);
        k.sys_munmap(mm, a, len).expect("munmap");
        assert_eq!(k.vmstat.sim.pt_free - freed, 2);
        assert!(k.mm(mm).vmas.is_empty());
        k.check_invariants().expect("consistent");
    }
}

//! The invariant checker (the model's CONFIG_DEBUG_VM): recompute from a
//! full page-table walk of every mm what the incremental bookkeeping claims,
//! and compare. Checks:
//! * per-page mapcounts, large/entire mapcounts and `_nr_pages_mapped`
//!   against the PTE and PMD mappings found;
//! * MM-owner slots: a slot's count equals that mm's mappings of the folio;
//! * every mm's rss_stat against the pages it maps;
//! * PageAnonExclusive only on pages mapped at most once; writable anon
//!   entries only on exclusive pages;
//! * every mapped PFN belongs to a live folio, every table entry to a table
//!   page; page-cache slots point at folios of that file at that index;
//! * allocator accounting: free + folio + table pages = all pages;
//! * LRU: every folio with PG_lru of a non-root cgroup is on exactly the
//!   list its flags (swap-backed, active) and cgroup say, every list entry
//!   is such a folio, and the links are consistent; between steps every
//!   folio in use (anon, page cache, swap cache) is on the LRU; every
//!   lruvec's sizes equal the pages of its PG_lru folios;
//! * memory cgroups: each one's usage equals its charged folios' and page
//!   tables' pages plus its pages in the charge stock and those charged
//!   for slab objects.
//!
//! It is O(memory) and meant for tests and small machines.

use crate::arch::Arch;
use crate::include::linux::mm_inline::{ListHead, LRU_ACTIVE, LRU_FILE, NR_LRU_LISTS};
use crate::include::linux::mm_types::{PG_ANON_EXCLUSIVE, PG_BUDDY, PG_HEAD, PG_TABLE, PG_TAIL};
use crate::include::linux::pgtable::{
    Pfn, HPAGE_PMD_NR, PAGE_SHIFT, PGDIR_SHIFT, PMD_SHIFT, PUD_SHIFT,
};
use crate::mm::memcontrol::{MemcgId, ROOT_MEM_CGROUP};
use crate::mm::mmap::{MM_ANONPAGES, NR_MM_COUNTERS};
use crate::{Kernel, MmId};

/// What the page-table walk found. Dense arrays indexed by PFN (and by swap
/// offset), not hash maps: the checker runs after every step of the
/// property tests, and hashing was most of its cost. The arrays are kept
/// per thread between checks ([`SCRATCH`]) and handed back all zero: only
/// the entries listed in `touched_*` are cleared, not the whole arrays.
struct Seen {
    /// PTE mappings per page.
    pte: Vec<u32>,
    /// PMD mappings per folio head.
    pmd: Vec<u32>,
    /// One (folio head, mm_id) per mapping (PTE or PMD) of a large folio;
    /// sorted before use, so a slot's count is the length of a run.
    per_mm: Vec<(u32, u32)>,
    /// Swap PTEs per (swap type, offset).
    swap: Vec<Vec<u32>>,
    /// The LRU list of each PFN ([`OnList`]); all zero between checks.
    lru: Vec<u32>,
    /// Indices of the nonzero entries of `pte`, `pmd` and `swap`.
    touched_pte: Vec<u32>,
    touched_pmd: Vec<u32>,
    touched_swap: Vec<(u32, u64)>,
}

thread_local! {
    /// The last check's [`Seen`], all zero, reused when the next check is of
    /// a machine of the same size (a check that fails drops it).
    static SCRATCH: std::cell::RefCell<Option<Seen>> = const { std::cell::RefCell::new(None) };
}

impl Seen {
    fn new(nr_pages: usize, swap_slots: Vec<u64>) -> Self {
        if let Some(s) = SCRATCH.with(|c| c.borrow_mut().take()) {
            if s.pte.len() == nr_pages
                && s.swap.len() == swap_slots.len()
                && s.swap
                    .iter()
                    .zip(&swap_slots)
                    .all(|(a, &n)| a.len() as u64 == n)
            {
                return s;
            }
        }
        Seen {
            pte: vec![0; nr_pages],
            pmd: vec![0; nr_pages],
            per_mm: Vec::new(),
            swap: swap_slots.iter().map(|&n| vec![0; n as usize]).collect(),
            lru: vec![0; nr_pages],
            touched_pte: Vec::new(),
            touched_pmd: Vec::new(),
            touched_swap: Vec::new(),
        }
    }

    /// Clear what this check set and keep the arrays for the next one.
    fn recycle(mut self) {
        for &p in &self.touched_pte {
            self.pte[p as usize] = 0;
        }
        for &p in &self.touched_pmd {
            self.pmd[p as usize] = 0;
        }
        for &(ty, off) in &self.touched_swap {
            self.swap[ty as usize][off as usize] = 0;
        }
        self.touched_pte.clear();
        self.touched_pmd.clear();
        self.touched_swap.clear();
        self.per_mm.clear();
        debug_assert!(self.lru.iter().all(|&v| v == 0));
        SCRATCH.with(|c| *c.borrow_mut() = Some(self));
    }

    fn add_pte(&mut self, pfn: u32) {
        let n = &mut self.pte[pfn as usize];
        if *n == 0 {
            self.touched_pte.push(pfn);
        }
        *n += 1;
    }

    fn add_pmd(&mut self, folio: u32) {
        let n = &mut self.pmd[folio as usize];
        if *n == 0 {
            self.touched_pmd.push(folio);
        }
        *n += 1;
    }

    /// Count a swap entry; an entry outside every swap area is a violation.
    fn add_swap(&mut self, ty: u32, off: u64) -> Result<(), String> {
        match self
            .swap
            .get_mut(ty as usize)
            .and_then(|a| a.get_mut(off as usize))
        {
            Some(n) => {
                if *n == 0 {
                    self.touched_swap.push((ty, off));
                }
                *n += 1;
                Ok(())
            }
            None => Err(format!("swap entry {ty}:{off} outside every swap area")),
        }
    }

    /// Mappings of large folio `folio` by the mm with `mm_id` (after
    /// `per_mm` is sorted).
    fn per_mm_count(&self, folio: u32, mm_id: u32) -> i32 {
        let lo = self.per_mm.partition_point(|&k| k < (folio, mm_id));
        let hi = self.per_mm.partition_point(|&k| k <= (folio, mm_id));
        (hi - lo) as i32
    }
}

impl<A: Arch> Kernel<A> {
    /// Run every check; Err describes the first violation found.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut seen = Seen::new(
            self.mem.nr_pages() as usize,
            self.swap.iter().map(|si| si.nr_slots).collect(),
        );
        for mm in self.live_mms() {
            let rss = self.walk_mm(mm.id, &mut seen)?;
            if rss != mm.rss {
                return Err(format!(
                    "mm {}: rss_stat {:?} but page tables map {:?}",
                    mm.id.0, mm.rss, rss
                ));
            }
        }
        seen.per_mm.sort_unstable();
        // A swapped-out shmem page's slot holds the page cache's reference.
        for e in self.shmem_swap.values() {
            seen.add_swap(e.ty, e.offset)?;
        }
        self.check_swap(&seen)?;
        self.check_page_cache()?;
        let lru = std::mem::take(&mut seen.lru);
        seen.lru = self.check_memmap(&seen, lru)?;
        seen.recycle();
        self.check_pmd_cache()?;
        Ok(())
    }

    fn walk_mm(&self, mm: MmId, seen: &mut Seen) -> Result<[i64; NR_MM_COUNTERS], String> {
        let mut rss = [0i64; NR_MM_COUNTERS];
        let m = self.mm(mm);
        // The VMAs in step with the walk, not a tree lookup per entry.
        let mut vmas = VmaCursor::new(mm, &m.vmas);
        for (g, pgd_e) in filled(self.pt.table(m.pgd), 0) {
            let Some(pud) = self.entry_table(pgd_e) else {
                continue;
            };
            for (u, pud_e) in filled(self.pt.table(pud), 0) {
                let Some(pmd) = self.entry_table(pud_e) else {
                    continue;
                };
                for (d, e) in filled(self.pt.table(pmd), 0) {
                    let addr = ((g as u64) << PGDIR_SHIFT)
                        | ((u as u64) << PUD_SHIFT)
                        | ((d as u64) << PMD_SHIFT);
                    vmas.seek(addr);
                    if A::pmd_trans_huge(e) {
                        vmas.at(addr)?;
                        self.account_pmd(mm, addr, e, seen, &mut rss)?;
                    } else {
                        let tid = self
                            .entry_table(e)
                            .ok_or_else(|| format!("mm {}: bad pmd {e:#x} at {addr:#x}", mm.0))?;
                        for (i, pte) in filled(self.pt.table(tid), 0) {
                            let at = addr + ((i as u64) << PAGE_SHIFT);
                            let v = vmas.at(at)?;
                            self.account_pte(mm, at, v, pte, seen, &mut rss)?;
                        }
                    }
                }
            }
        }
        Ok(rss)
    }

    fn account_pmd(
        &self,
        mm: MmId,
        addr: u64,
        e: u64,
        seen: &mut Seen,
        rss: &mut [i64; NR_MM_COUNTERS],
    ) -> Result<(), String> {
        if A::pte_special(e) {
            return if Some(A::pte_pfn(e)) == self.huge_zero_folio {
                Ok(())
            } else {
                Err(format!("special pmd {e:#x}"))
            };
        }
        let folio = A::pte_pfn(e);
        if !self.mem.test(folio, PG_HEAD)
            || self.mem.order(folio) != crate::include::linux::pgtable::HPAGE_PMD_ORDER
        {
            return Err(format!(
                "mm {}: pmd at {addr:#x} maps pfn {} which is not a PMD folio",
                mm.0, folio.0
            ));
        }
        seen.add_pmd(folio.0);
        seen.per_mm.push((folio.0, self.mm(mm).mm_id));
        let c = if self.mem.folio_test_anon(folio) {
            MM_ANONPAGES
        } else {
            self.mm_counter_file(folio)
        };
        rss[c] += HPAGE_PMD_NR as i64;
        if !self.mm(mm).deposited.contains_key(&addr) && self.mem.folio_test_anon(folio) {
            return Err(format!(
                "mm {}: anon pmd at {addr:#x} without a deposited table",
                mm.0
            ));
        }
        Ok(())
    }

    fn account_pte(
        &self,
        mm: MmId,
        addr: u64,
        vma: &crate::mm::mmap::Vma,
        pte: u64,
        seen: &mut Seen,
        rss: &mut [i64; NR_MM_COUNTERS],
    ) -> Result<(), String> {
        if !A::pte_present(pte) {
            // Swap PTEs come from anon folios: in anonymous VMAs, or the
            // COW copies of a private file VMA (which then has an anon_vma).
            if !vma.is_anonymous() && (vma.anon_vma.is_none() || vma.is_shared()) {
                return Err(format!(
                    "mm {}: swap pte {pte:#x} at {addr:#x} in a VMA without anon folios",
                    mm.0
                ));
            }
            let (ty, off) = A::pte_to_swp_entry(pte);
            seen.add_swap(ty, off)?;
            rss[crate::mm::mmap::MM_SWAPENTS] += 1;
            return Ok(());
        }
        let pfn = A::pte_pfn(pte);
        if A::pte_special(pte) {
            if pfn != self.zero_pfn || A::pte_write(pte) {
                return Err(format!(
                    "mm {}: bad special pte {pte:#x} at {addr:#x}",
                    mm.0
                ));
            }
            return Ok(());
        }
        if pfn.0 as u64 >= self.mem.nr_pages() || self.mem.test(pfn, PG_BUDDY | PG_TABLE) {
            return Err(format!(
                "mm {}: pte {pte:#x} at {addr:#x} maps a free or table page",
                mm.0
            ));
        }
        let folio = self.mem.page_folio(pfn);
        seen.add_pte(pfn.0);
        if self.mem.folio_test_large(folio) {
            seen.per_mm.push((folio.0, self.mm(mm).mm_id));
        }
        if self.mem.folio_test_anon(folio) {
            rss[MM_ANONPAGES] += 1;
            if A::pte_write(pte) && !self.mem.test(pfn, PG_ANON_EXCLUSIVE) {
                return Err(format!(
                    "mm {}: writable pte at {addr:#x} maps a non-exclusive anon page",
                    mm.0
                ));
            }
        } else {
            rss[self.mm_counter_file(folio)] += 1;
            if vma.is_anonymous() {
                return Err(format!(
                    "mm {}: anonymous VMA maps page-cache page at {addr:#x}",
                    mm.0
                ));
            }
        }
        Ok(())
    }

    fn check_one_folio(&self, folio: Pfn, seen: &Seen) -> Result<(), String> {
        let nr = self.mem.folio_nr_pages(folio) as u32;
        let pmd = seen.pmd[folio.0 as usize];
        let mut total = pmd;
        let mut mapped = 0;
        for i in 0..nr {
            let p = folio.plus(i as u64);
            // (This also lets check_memmap() step over a folio's pages: what
            // it counts, free and table pages, cannot be among them.)
            if i > 0 && self.mem.flags(p) & (PG_BUDDY | PG_TABLE) != 0 {
                return Err(format!(
                    "pfn {}: page {i} of folio {} is a free or table page",
                    p.0, folio.0
                ));
            }
            let want = seen.pte[p.0 as usize];
            let have = self.mem.page_mapcount(p);
            if have != want {
                return Err(format!(
                    "pfn {}: page mapcount {have}, page tables map it {want} times",
                    p.0
                ));
            }
            if self.mem.folio_test_anon(folio)
                && self.mem.test(p, PG_ANON_EXCLUSIVE)
                && want + pmd > 1
            {
                return Err(format!(
                    "pfn {}: PageAnonExclusive but mapped {} times",
                    p.0,
                    want + pmd
                ));
            }
            total += want;
            mapped += (want > 0) as i32;
        }
        if !self.mem.folio_test_large(folio) {
            return Ok(());
        }
        let l = self.mem.large(folio);
        if l.large_mapcount != total as i32
            || l.entire_mapcount != pmd as i32
            || l.nr_pages_mapped != mapped
        {
            return Err(format!(
                "folio {}: large {} entire {} nr_mapped {}, but tables give {total} / {pmd} / {mapped}",
                folio.0, l.large_mapcount, l.entire_mapcount, l.nr_pages_mapped
            ));
        }
        for s in 0..2 {
            if l.mm_id[s] != 0 {
                let want = seen.per_mm_count(folio.0, l.mm_id[s]);
                // The kernel lets a slot under-count (mappings added while no
                // slot was free, folio_sub_return_large_mapcount()), never
                // over-count.
                if l.mm_id_mapcount[s] > want {
                    return Err(format!(
                        "folio {}: mm slot {s} count {} but the mm maps it {want} times",
                        folio.0, l.mm_id_mapcount[s]
                    ));
                }
            }
        }
        Ok(())
    }

    /// Swap counts equal the swap PTEs found; SWAP_HAS_CACHE equals a swap
    /// table entry; cached folios know their slots.
    fn check_swap(&self, seen: &Seen) -> Result<(), String> {
        use crate::mm::swapfile::SWAP_HAS_CACHE;
        for (ty, si) in self.swap.iter().enumerate() {
            let n = si.nr_slots as usize;
            let (map, want_all) = (&si.swap_map[..n], &seen.swap[ty][..n]);
            let mut off = 0u64;
            while off + 1 < si.nr_slots {
                off += 1;
                let o = off as usize;
                // A chunk of free slots that nothing refers to passes every
                // check below (count 0 = 0 PTEs, no SWAP_HAS_CACHE, no
                // cached page): skip it in one vectorised test.
                if o.is_multiple_of(64) && o + 64 <= n {
                    let free = map[o..o + 64].iter().fold(0, |a, &m| a | m) == 0
                        && want_all[o..o + 64].iter().fold(0, |a, &w| a | w) == 0
                        && si.table.none_cached(o..o + 64);
                    if free {
                        off += 63;
                        continue;
                    }
                }
                let want = want_all[o];
                // Likewise one such slot (the chunk test above skips only
                // whole chunks; this is the same test for each slot).
                if want == 0 && map[o] == 0 && !si.table.cached(off) {
                    continue;
                }
                let have = si.swap_count(off) as u32;
                if want != have {
                    return Err(format!(
                        "swap {ty}:{off}: count {have} but {want} swap PTEs"
                    ));
                }
                let cached = si.table.cached(off);
                if cached != (si.swap_map[off as usize] & SWAP_HAS_CACHE != 0) {
                    return Err(format!(
                        "swap {ty}:{off}: SWAP_HAS_CACHE disagrees with the swap table"
                    ));
                }
                if cached {
                    let folio = self.mem.page_folio(Pfn(si.table.page(off)));
                    let e = self.folio_swap(folio).ok_or_else(|| {
                        format!(
                            "swap {ty}:{off}: cached folio {} has no folio->swap",
                            folio.0
                        )
                    })?;
                    let idx = si.table.page(off) - folio.0;
                    if e.ty != ty as u32 || e.offset + idx as u64 != off {
                        return Err(format!(
                            "swap {ty}:{off}: cached folio's folio->swap is {}:{}",
                            e.ty, e.offset
                        ));
                    }
                }
            }
        }
        self.swap_of.check()?;
        let mut cached = 0;
        for (p, e) in self.swap_of.iter() {
            if self.swap[e.ty as usize].table.page(e.offset) != p {
                return Err(format!(
                    "folio {p}: folio->swap {}:{} but the swap table disagrees",
                    e.ty, e.offset
                ));
            }
            cached += self.mem.folio_nr_pages(Pfn(p));
        }
        let mut mm = [0u64; 4];
        let mut pool = 0;
        for z in self.swap.iter().filter_map(|si| si.zram.as_deref()) {
            z.add_mm_stat(&mut mm);
            pool += z.pool_pages_allocated();
        }
        let [used, max] = self.vmstat.zram_mem_used;
        if used != pool || max < used {
            return Err(format!(
                "zram mem_used_total {used} and mem_used_max {max} pages, but the pools hold {pool}"
            ));
        }
        if mm != self.vmstat.zram_mm {
            return Err(format!(
                "zram mm_stat {:?}, but the slots hold {mm:?}",
                self.vmstat.zram_mm
            ));
        }
        if cached != self.vmstat.nr_swapcached {
            return Err(format!(
                "nr_swapcached is {}, but the swap cache holds {cached} pages",
                self.vmstat.nr_swapcached
            ));
        }
        Ok(())
    }

    fn check_page_cache(&self) -> Result<(), String> {
        use crate::mm::filemap::NO_PAGE;
        for a in &self.files {
            for (idx, p) in filled(&a.pages, NO_PAGE) {
                let folio = self.mem.page_folio(Pfn(p));
                let fidx = self.mem.folio_index(folio) as u64;
                let off = (p - folio.0) as u64;
                if self.mem.folio_mapping(folio) != Self::file_mapping_id(a.id)
                    || fidx + off != idx as u64
                {
                    return Err(format!(
                        "file {}: slot {idx} holds pfn {p} of another index or mapping",
                        a.name
                    ));
                }
            }
        }
        Ok(())
    }

    /// One pass over the memory map (it was three): every folio's
    /// mapcounts against the page tables ([`Self::check_one_folio`]), the
    /// LRU lists, their sizes and cgroup usage (see the file header), and
    /// the allocator's accounting (free + folio + table pages = all pages).
    /// `at` is [`OnList::at`], all zero, and handed back all zero.
    fn check_memmap(&self, seen: &Seen, at: Vec<u32>) -> Result<Vec<u32>, String> {
        let nr_memcg = self.memcg.memcgs.len();
        let mut on_list = OnList { at, left: 0 };
        let first = if self.lru.root { 0 } else { 1 };
        for (m, memcg) in self.memcg.memcgs.iter().enumerate().skip(first) {
            // MGLRU: the generation lists, as codes 4 + 2 * gen + type.
            let (base, lists): (usize, Vec<&ListHead>) = if self.lru_gen_enabled() {
                let gens = memcg.lruvec.lrugen.folios.iter().flatten();
                (NR_LRU_LISTS, gens.collect())
            } else {
                (0, memcg.lruvec.lists.iter().collect())
            };
            for (lru, list) in lists.into_iter().enumerate() {
                let lru = base + lru;
                let code = OnList::encode(MemcgId(m as u16), lru);
                self.lru
                    .walk(list, |f| {
                        let slot = on_list
                            .at
                            .get_mut(f.0 as usize)
                            .ok_or_else(|| format!("holds pfn {} beyond memory", f.0))?;
                        if *slot != 0 {
                            return Err(format!("pfn {} is on two LRU lists", f.0));
                        }
                        *slot = code;
                        on_list.left += 1;
                        Ok(())
                    })
                    .map_err(|e| format!("cgroup {m} list {lru}: {e}"))?;
            }
        }
        let mut sizes = vec![[0u64; NR_LRU_LISTS]; nr_memcg];
        let mut charged = vec![0u64; nr_memcg];
        let n = self.mem.nr_pages() as u32;
        // The never-allocated tail is free and unmarked; CMA pageblocks may
        // lie above it.
        let fresh = self.buddy.fresh_range();
        let mut free = self.buddy.nr_fresh_pages();
        let mut tables = 0;
        let zspages: std::collections::HashSet<Pfn> = self
            .zswap
            .pool_pages()
            .chain(
                self.swap
                    .iter()
                    .filter_map(|si| si.zram.as_deref())
                    .flat_map(|z| z.pool_pages()),
            )
            .collect();
        let pcp: std::collections::HashSet<Pfn> = self.buddy.pcp_pages().collect();
        // Movable ops: exactly the pages of the zsmalloc pools.
        let marked = self.mem.nr_movable_ops();
        if marked != zspages.len() as u64 || zspages.iter().any(|&p| !self.mem.has_movable_ops(p)) {
            return Err(format!(
                "{marked} pages with movable ops, zsmalloc pools hold {}",
                zspages.len()
            ));
        }
        let mut pfn = 0u32;
        while pfn < n {
            if fresh.contains(&(pfn as u64)) {
                pfn = fresh.end as u32;
                continue;
            }
            if self.buddy.boot.contains(&pfn) && !self.buddy.boot_holes {
                pfn = self.buddy.boot.end; // the kernel's own memory
                continue;
            }
            if self.buddy.is_boot_page(&self.mem, Pfn(pfn)) {
                pfn += 1; // the kernel's own page, among free blocks
                continue;
            }
            if zspages.contains(&Pfn(pfn)) || pcp.contains(&Pfn(pfn)) {
                pfn += 1; // a page of a zsmalloc pool, or on a per-CPU list
                continue;
            }
            let p = Pfn(pfn);
            let f = self.mem.flags(p);
            if f & PG_BUDDY != 0 {
                free += 1 << self.mem.order(p);
                pfn += 1 << self.mem.order(p);
                continue;
            }
            if f & PG_TABLE != 0 {
                // A page table: charged as kernel memory.
                charged[self.folio_memcg(p).idx()] += 1;
                tables += 1;
                pfn += 1;
                continue;
            }
            if f & PG_TAIL != 0 || (f & PG_HEAD == 0 && self.mem.order(p) != 0) {
                pfn += 1;
                continue;
            }
            // A folio head. Its other pages are stepped over: none is free
            // or a table page (check_one_folio() fails otherwise), so a
            // page-by-page count of those would find the same totals.
            self.check_one_folio(p, seen)?;
            let nr = self.mem.folio_nr_pages(p);
            let memcg = self.folio_memcg(p);
            charged[memcg.idx()] += nr;
            self.check_folio_lru(p, &mut on_list, &mut sizes)?;
            pfn += nr as u32;
        }
        if free != self.buddy.nr_free_pages() {
            return Err(format!(
                "allocator: {free} pages on free lists, counter says {}",
                self.buddy.nr_free_pages()
            ));
        }
        if tables != self.pt.nr_tables {
            return Err(format!(
                "{tables} table pages, arena says {}",
                self.pt.nr_tables
            ));
        }
        if on_list.left > 0 {
            let pfn = on_list.at.iter().position(|&v| v != 0).unwrap_or(0);
            let (m, lru) = OnList::decode(on_list.at[pfn]).unwrap_or((MemcgId(0), 0));
            return Err(format!(
                "cgroup {m} list {lru} holds pfn {pfn}, not an LRU folio head"
            ));
        }
        if self.lru_gen_enabled() {
            self.check_gen_sizes()?;
        }
        for (m, want) in sizes.iter().enumerate() {
            if self.vmstat.memcg[m].lru != *want {
                return Err(format!(
                    "cgroup {m}: LRU sizes {:?} but its PG_lru folios hold {want:?}",
                    self.vmstat.memcg[m].lru
                ));
            }
            let usage = self.memcg.memcgs[m].usage;
            let want = charged[m]
                + self.memcg_stock_pages(MemcgId(m as u16))
                + self.memcg.memcgs[m].obj_pages;
            if m > 0 && usage != want {
                return Err(format!(
                    "cgroup {m}: usage {usage} but {want} pages are charged"
                ));
            }
        }
        Ok(on_list.at)
    }

    /// One folio head of [`Self::check_memmap`]: its LRU state.
    fn check_folio_lru(
        &self,
        folio: Pfn,
        on_list: &mut OnList,
        sizes: &mut [[u64; crate::include::linux::mm_inline::NR_LRU_LISTS]],
    ) -> Result<(), String> {
        use crate::include::linux::mm_types::{PG_LRU, PG_SWAPCACHE};
        let memcg = self.folio_memcg(folio);
        let listed = on_list.remove(folio.0);
        if !self.mem.test(folio, PG_LRU) {
            let in_use = self.mem.folio_mapping(folio) != 0 || self.mem.test(folio, PG_SWAPCACHE);
            if listed.is_some() || in_use {
                return Err(format!(
                    "folio {}: no PG_lru but {} (flags {:#x})",
                    folio.0,
                    if listed.is_some() {
                        "on an LRU list"
                    } else {
                        "in use"
                    },
                    self.mem.flags(folio)
                ));
            }
            return Ok(());
        }
        let mut lru = self.folio_lru_list(folio);
        let mut want_list = lru;
        if self.lru_gen_enabled() {
            // The compatibility size follows the generation; the list is
            // the one the folio was last sorted onto.
            let ty = lru / LRU_FILE * LRU_FILE;
            let (Some(gen), Some(on)) = (self.gen_flags.gen(folio), self.gen_flags.list(folio))
            else {
                return Err(format!("folio {}: PG_lru without a generation", folio.0));
            };
            let g = &self.memcg.memcgs[memcg.idx()].lruvec.lrugen;
            lru = ty + g.is_active(gen) as usize * LRU_ACTIVE;
            want_list = NR_LRU_LISTS + 2 * on + ty / LRU_FILE;
        }
        // A lazyfree folio (anon without PG_swapbacked, on the file LRU)
        // never has swap: MADV_FREE freed it, and reclaim allocates none.
        let f = self.mem.flags(folio);
        if self.folio_test_lazyfree(folio) && f & PG_SWAPCACHE != 0 {
            return Err(format!(
                "lazyfree folio {} in the swap cache (flags {f:#x})",
                folio.0
            ));
        }
        sizes[memcg.idx()][lru] += self.mem.folio_nr_pages(folio);
        if (memcg != ROOT_MEM_CGROUP || self.lru.root) && listed != Some((memcg, want_list)) {
            return Err(format!(
                "folio {}: PG_lru says cgroup {memcg} list {lru}, found on {listed:?}",
                folio.0
            ));
        }
        Ok(())
    }
}

impl<A: Arch> Kernel<A> {
    /// MGLRU: each generation's page count against its folios' pages.
    fn check_gen_sizes(&self) -> Result<(), String> {
        use crate::mm::lru_gen::MAX_NR_GENS;
        let mut pages = vec![[[0i64; 2]; MAX_NR_GENS as usize]; self.memcg.memcgs.len()];
        for (m, memcg) in self.memcg.memcgs.iter().enumerate() {
            for list in memcg.lruvec.lrugen.folios.iter().flatten() {
                self.lru.walk(list, |f| {
                    let gen = self.gen_flags.gen(f).ok_or("listed without a generation")?;
                    let ty = !self
                        .mem
                        .test(f, crate::include::linux::mm_types::PG_SWAPBACKED);
                    pages[m][gen][ty as usize] += self.mem.folio_nr_pages(f) as i64;
                    Ok(())
                })?;
            }
            let g = &memcg.lruvec.lrugen;
            if g.nr_pages != pages[m] {
                return Err(format!(
                    "cgroup {m}: generation sizes {:?} but its folios hold {:?}",
                    g.nr_pages, pages[m]
                ));
            }
            let nr_gens = |ty: usize| g.max_seq - g.min_seq[ty] + 1;
            if !(2..=MAX_NR_GENS).contains(&nr_gens(0)) || !(2..=MAX_NR_GENS).contains(&nr_gens(1))
            {
                return Err(format!(
                    "cgroup {m}: generations min {:?} max {} out of the window",
                    g.min_seq, g.max_seq
                ));
            }
        }
        Ok(())
    }
}

/// Which LRU list each PFN was found on ([`Kernel::check_memmap`]): per PFN, 0
/// for none, else `(memcg << 8 | lru) + 1`; `left` counts the nonzero ones.
struct OnList {
    at: Vec<u32>,
    left: usize,
}

impl OnList {
    fn encode(m: MemcgId, lru: usize) -> u32 {
        (((m.0 as u32) << 8) | lru as u32) + 1
    }
    fn decode(v: u32) -> Option<(MemcgId, usize)> {
        let v = v.checked_sub(1)?;
        Some((MemcgId((v >> 8) as u16), (v & 0xff) as usize))
    }
    fn remove(&mut self, pfn: u32) -> Option<(MemcgId, usize)> {
        let v = std::mem::take(&mut self.at[pfn as usize]);
        let r = Self::decode(v);
        self.left -= r.is_some() as usize;
        r
    }
}

/// The entries of `s` other than `empty`, with their indices. Page
/// tables and page-cache arrays of the property tests' machines are
/// nearly empty: runs of eight empty entries are skipped with one test.
fn filled<T: Copy + PartialEq>(s: &[T], empty: T) -> impl Iterator<Item = (usize, T)> + '_ {
    s.chunks(8)
        .enumerate()
        .filter(move |(_, c)| c.iter().any(|&e| e != empty))
        .flat_map(move |(ci, c)| {
            c.iter()
                .enumerate()
                .filter(move |&(_, &e)| e != empty)
                .map(move |(j, &e)| (ci * 8 + j, e))
        })
}

type VmaRange<'a> = std::collections::btree_map::Range<'a, u64, crate::mm::mmap::Vma>;

/// The VMAs of one mm in address order, for [`Kernel::walk_mm`]: a tree
/// lookup at each PMD entry ([`Self::seek`]), then stepped forward with
/// the walk, so the steps stay within one 2 MiB table. (Mms of thousands
/// of small VMAs made both a lookup per entry and one pass over all VMAs
/// a large part of the checker's time.)
struct VmaCursor<'a> {
    mm: MmId,
    vmas: &'a std::collections::BTreeMap<u64, crate::mm::mmap::Vma>,
    /// The first VMA not yet stepped over; `rest` holds the ones after it.
    cur: Option<&'a crate::mm::mmap::Vma>,
    rest: VmaRange<'a>,
}

impl<'a> VmaCursor<'a> {
    /// A cursor that [`Self::seek`] places.
    fn new(mm: MmId, vmas: &'a std::collections::BTreeMap<u64, crate::mm::mmap::Vma>) -> Self {
        VmaCursor {
            mm,
            vmas,
            cur: None,
            rest: vmas.range(..),
        }
    }

    /// Start at the first VMA that ends above `addr` (unless the current
    /// one contains it).
    fn seek(&mut self, addr: u64) {
        if self.cur.is_some_and(|v| v.contains(addr)) {
            return;
        }
        let from = match self.vmas.range(..=addr).next_back() {
            Some((&start, v)) if v.vm_end > addr => start,
            _ => addr,
        };
        self.rest = self.vmas.range(from..);
        self.cur = self.rest.next().map(|(_, v)| v);
    }

    /// The VMA containing `addr`, which is not below the address of the
    /// last [`Self::seek`] or call.
    #[inline]
    fn at(&mut self, addr: u64) -> Result<&'a crate::mm::mmap::Vma, String> {
        match self.cur {
            Some(v) if v.contains(addr) => Ok(v),
            _ => self.step_to(addr),
        }
    }

    fn step_to(&mut self, addr: u64) -> Result<&'a crate::mm::mmap::Vma, String> {
        while self.cur.is_some_and(|v| v.vm_end <= addr) {
            self.cur = self.rest.next().map(|(_, v)| v);
        }
        match self.cur {
            Some(v) if v.contains(addr) => Ok(v),
            _ => Err(format!(
                "mm {}: entry at {addr:#x} outside every VMA",
                self.mm.0
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::arch::x86::X86_64;
    use crate::{Config, Kernel};
    use foliosim_uapi::mman::{MAP_ANONYMOUS, MAP_PRIVATE, PROT_READ, PROT_WRITE};

    const PAGE: u64 = 4096;

    /// Three adjacent anonymous VMAs of 4 pages (the middle one read-only,
    /// so none merges) and a fourth 1 MiB further on, all in one PTE table;
    /// every page is faulted (writes where allowed, zero-page reads
    /// elsewhere). The checker must pass, then name the first entry left
    /// without a VMA when one VMA is dropped from the tree behind the page
    /// tables' back: the middle one, then the last one.
    #[test]
    fn entries_outside_every_vma_are_found() {
        let cfg = Config {
            memory: 64 << 20,
            ..Config::default()
        };
        let mut k = Kernel::<X86_64>::new(cfg).expect("kernel");
        let mm = k.mm_alloc();
        let base = 0x5000_0000_0000u64; // 2 MiB aligned, below MMAP_BASE
        let vmas = [
            (base, PROT_READ | PROT_WRITE),
            (base + 4 * PAGE, PROT_READ),
            (base + 8 * PAGE, PROT_READ | PROT_WRITE),
            (base + (1 << 20), PROT_READ | PROT_WRITE),
        ];
        for &(addr, prot) in &vmas {
            let at = k
                .sys_mmap(
                    mm,
                    addr,
                    4 * PAGE,
                    prot,
                    MAP_PRIVATE | MAP_ANONYMOUS,
                    None,
                    0,
                )
                .expect("mmap");
            assert_eq!(at, addr, "the hint is free, so mmap takes it");
            for p in 0..4 {
                k.handle_mm_fault(mm, addr + p * PAGE, prot & PROT_WRITE != 0);
            }
        }
        assert_eq!(k.mm(mm).vmas.len(), 4);
        k.check_invariants().expect("a consistent machine passes");

        k.mm_mut(mm).vmas.remove(&(base + 4 * PAGE));
        let err = k.check_invariants().expect_err("orphaned entries");
        assert!(
            err.contains(&format!(
                "entry at {:#x} outside every VMA",
                base + 4 * PAGE
            )),
            "{err}"
        );

        let middle = k.mm(mm).vmas[&(base + 8 * PAGE)];
        let mut restored = middle;
        restored.vm_start = base + 4 * PAGE;
        restored.vm_end = base + 8 * PAGE;
        k.mm_mut(mm).vmas.insert(base + 4 * PAGE, restored);
        k.check_invariants()
            .expect("the PTEs are inside VMAs again");

        k.mm_mut(mm).vmas.remove(&(base + (1 << 20)));
        let err = k.check_invariants().expect_err("orphaned entries");
        assert!(
            err.contains(&format!(
                "entry at {:#x} outside every VMA",
                base + (1 << 20)
            )),
            "{err}"
        );
    }
}

//! Folio-size histograms of a mapped range from `/proc/PID/pagemap` and
//! `/proc/kpageflags`, with the buckets of the simulator
//! (crates/kernel/src/fs/proc/task_mmu.rs): `4kB` ... `2048kB` count the
//! distinct folios with a page present in the range (consecutive pages of
//! one folio count once, as the model's walk does), `zero` the present
//! entries that map the shared zero page, `huge_zero` the huge-zero PMDs.
//!
//! A folio's size comes from the compound-page flags: its head page carries
//! KPF_COMPOUND_HEAD and the following pages KPF_COMPOUND_TAIL. Folios are
//! naturally aligned and at most PMD-sized here, so the aligned block of 512
//! PFNs around a page holds the whole folio; blocks are read whole and
//! cached for one histogram.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use foliosim_uapi::foliomap::{FolioMap, PageState};
use foliosim_uapi::pagemap::{
    kpf, page_is, PM_FILE, PM_MMAP_EXCLUSIVE, PM_PFRAME_MASK, PM_PRESENT, PM_SWAP,
};
use foliosim_workload::{PAGE_SIZE, PMD_SIZE};

pub(crate) const KPF_COMPOUND_HEAD: u64 = 1 << kpf::COMPOUND_HEAD;
pub(crate) const KPF_COMPOUND_TAIL: u64 = 1 << kpf::COMPOUND_TAIL;
pub(crate) const KPF_THP: u64 = 1 << kpf::THP;
pub(crate) const KPF_ZERO_PAGE: u64 = 1 << kpf::ZERO_PAGE;

const BLOCK: u64 = 512;

/// Where page flags come from (a trait so the walk can be tested without
/// /proc/kpageflags).
pub(crate) trait FlagSource {
    /// The flags of the 512 PFNs `block * 512 ..`.
    fn block(&mut self, block: u64) -> io::Result<Vec<u64>>;
}

/// /proc/kpageflags.
pub(crate) struct KpageFlags(File);

impl KpageFlags {
    pub(crate) fn open() -> io::Result<KpageFlags> {
        Ok(KpageFlags(File::open("/proc/kpageflags")?))
    }
}

impl FlagSource for KpageFlags {
    fn block(&mut self, block: u64) -> io::Result<Vec<u64>> {
        let mut buf = vec![0u8; BLOCK as usize * 8];
        let mut got = 0;
        while got < buf.len() {
            let n = self
                .0
                .read_at(&mut buf[got..], block * BLOCK * 8 + got as u64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        Ok(buf[..got - got % 8]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }
}

/// The histogram builder: feed it pagemap entries in address order.
pub(crate) struct Walk<'a, F: FlagSource> {
    flags: &'a mut F,
    cache: HashMap<u64, Vec<u64>>,
    out: BTreeMap<String, u64>,
    /// Head PFN of the order-0 folio counted last.
    last: Option<u64>,
    /// Large folios already counted (a COW'd page can split a folio's run).
    seen_large: std::collections::HashSet<u64>,
    /// The PMD-sized VA block whose huge zero page was counted last.
    last_huge_zero: Option<u64>,
}

impl<'a, F: FlagSource> Walk<'a, F> {
    pub(crate) fn new(flags: &'a mut F) -> Self {
        Walk {
            flags,
            cache: HashMap::new(),
            out: BTreeMap::new(),
            last: None,
            seen_large: Default::default(),
            last_huge_zero: None,
        }
    }

    fn flags_of(&mut self, pfn: u64) -> io::Result<&[u64]> {
        let b = pfn / BLOCK;
        if !self.cache.contains_key(&b) {
            let v = self.flags.block(b)?;
            self.cache.insert(b, v);
        }
        Ok(&self.cache[&b])
    }

    /// (head PFN, number of pages) of the folio holding `pfn`.
    fn folio(&mut self, pfn: u64) -> io::Result<(u64, u64)> {
        let base = pfn / BLOCK * BLOCK;
        let blk = self.flags_of(pfn)?;
        let i = (pfn - base) as usize;
        let f = blk.get(i).copied().unwrap_or(0);
        if f & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL) == 0 {
            return Ok((pfn, 1));
        }
        let mut head = i;
        while head > 0 && blk[head] & KPF_COMPOUND_HEAD == 0 && blk[head] & KPF_COMPOUND_TAIL != 0 {
            head -= 1;
        }
        if blk[head] & KPF_COMPOUND_HEAD == 0 {
            // The head is outside the aligned block: a folio larger than a
            // PMD (hugetlb); count the block's part as one folio.
            return Ok((base, BLOCK));
        }
        let mut n = 1;
        while head + n < blk.len()
            && blk[head + n] & KPF_COMPOUND_TAIL != 0
            && blk[head + n] & KPF_COMPOUND_HEAD == 0
        {
            n += 1;
        }
        Ok((base + head as u64, n as u64))
    }

    /// The per-page pagemap summary: `pages_present`, `pages_swapped`,
    /// `pages_file` (PM_FILE: file, shmem, huge zero page) and
    /// `pages_exclusive` (PM_MMAP_EXCLUSIVE).
    fn page_summary(&mut self, e: u64) {
        for (bit, key) in [
            (PM_PRESENT, "pages_present"),
            (PM_SWAP, "pages_swapped"),
            (PM_FILE, "pages_file"),
            (PM_MMAP_EXCLUSIVE, "pages_exclusive"),
        ] {
            if e & bit != 0 {
                self.count(key.into());
            }
        }
    }

    fn count(&mut self, key: String) {
        *self.out.entry(key).or_insert(0) += 1;
    }

    /// One pagemap entry, for the page at virtual address `va`.
    pub(crate) fn entry(&mut self, va: u64, e: u64) -> io::Result<()> {
        self.page_summary(e);
        if e & PM_PRESENT == 0 {
            return Ok(());
        }
        let pfn = e & PM_PFRAME_MASK;
        let blk = self.flags_of(pfn)?;
        let f = blk.get((pfn % BLOCK) as usize).copied().unwrap_or(0);
        if f & KPF_ZERO_PAGE != 0 {
            self.last = None;
            if f & KPF_THP != 0 {
                let b = va / PMD_SIZE;
                if self.last_huge_zero != Some(b) {
                    self.last_huge_zero = Some(b);
                    self.count("huge_zero".into());
                }
            } else {
                self.last_huge_zero = None;
                self.count("zero".into());
            }
            return Ok(());
        }
        self.last_huge_zero = None;
        let (head, n) = self.folio(pfn)?;
        if self.last == Some(head) || (n > 1 && !self.seen_large.insert(head)) {
            return Ok(());
        }
        self.last = Some(head);
        self.count(format!("{}kB", n * PAGE_SIZE / 1024));
        Ok(())
    }

    pub(crate) fn finish(self) -> BTreeMap<String, u64> {
        self.out
    }
}

/// The histogram of `[addr, addr + len)` of process `pid`.
pub(crate) fn histogram(
    pid: i32,
    addr: u64,
    len: u64,
    flags: &mut impl FlagSource,
) -> io::Result<BTreeMap<String, u64>> {
    let pagemap = File::open(format!("/proc/{pid}/pagemap"))?;
    let mut walk = Walk::new(flags);
    const CHUNK: u64 = 65536; // entries per read (512 KiB)
    let mut buf = vec![0u8; CHUNK as usize * 8];
    let first = addr / PAGE_SIZE;
    let npages = len / PAGE_SIZE;
    let mut done = 0;
    while done < npages {
        let n = (npages - done).min(CHUNK);
        let bytes = &mut buf[..n as usize * 8];
        pagemap.read_exact_at(bytes, (first + done) * 8)?;
        for (i, c) in bytes.chunks_exact(8).enumerate() {
            let e = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            walk.entry((first + done + i as u64) * PAGE_SIZE, e)?;
        }
        done += n;
    }
    Ok(walk.finish())
}

impl<F: FlagSource> Walk<'_, F> {
    /// The folio-map state of the page at `va` with pagemap entry `e`;
    /// `pmd`: whether PAGEMAP_SCAN saw it PMD-mapped (None when the
    /// kernel has no PAGEMAP_SCAN: then a page of a PMD-sized folio whose
    /// PMD-aligned block maps the folio in order counts as PMD-mapped,
    /// which a fully PTE-mapped THP also looks like). The contiguous bit
    /// of arm64 is invisible to pagemap, so no page is ever contpte.
    pub(crate) fn state(&mut self, va: u64, e: u64, pmd: Option<bool>) -> io::Result<PageState> {
        if e & PM_PRESENT == 0 {
            return Ok(if e & PM_SWAP != 0 {
                PageState::Swap
            } else {
                PageState::None
            });
        }
        let pfn = e & PM_PFRAME_MASK;
        let f = self.flags_of(pfn)?.get((pfn % BLOCK) as usize).copied();
        let f = f.unwrap_or(0);
        if f & KPF_ZERO_PAGE != 0 {
            return Ok(PageState::Zero {
                huge: f & KPF_THP != 0,
            });
        }
        let (head, n) = self.folio(pfn)?;
        let order = n.trailing_zeros() as u8;
        let pmd = pmd.unwrap_or_else(|| n == BLOCK && pfn - head == (va % PMD_SIZE) / PAGE_SIZE);
        Ok(PageState::Present {
            order,
            pmd,
            contpte: false,
        })
    }
}

/// The folio map of `[addr, addr + len)` of process `pid` (see
/// [`Walk::state`]).
pub(crate) fn folio_map(
    pid: i32,
    addr: u64,
    len: u64,
    flags: &mut impl FlagSource,
) -> io::Result<FolioMap> {
    let pagemap = File::open(format!("/proc/{pid}/pagemap"))?;
    let huge: Option<Vec<(u64, u64)>> = crate::pagemap::pagemap_scan(&pagemap, addr, addr + len)
        .ok()
        .map(|regions| {
            regions
                .into_iter()
                .filter(|r| r.2 & page_is::HUGE != 0)
                .map(|r| (r.0, r.1))
                .collect()
        });
    let mut walk = Walk::new(flags);
    let npages = len / PAGE_SIZE;
    let mut pages = Vec::with_capacity(npages as usize);
    let mut buf = vec![0u8; 8 * 4096];
    let mut done = 0;
    while done < npages {
        let n = (npages - done).min(4096);
        let bytes = &mut buf[..n as usize * 8];
        pagemap.read_exact_at(bytes, (addr / PAGE_SIZE + done) * 8)?;
        for (i, c) in bytes.chunks_exact(8).enumerate() {
            let e = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            let va = addr + (done + i as u64) * PAGE_SIZE;
            let pmd = huge
                .as_ref()
                .map(|h| h.iter().any(|&(s, end)| (s..end).contains(&va)));
            pages.push(walk.state(va, e, pmd)?.encode());
        }
        done += n;
    }
    Ok(FolioMap {
        first_index: ((addr / PAGE_SIZE) % BLOCK) as u16,
        pages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fake physical memory: block 0 holds a 64 KiB folio at PFN 16, an
    /// order-0 page at 40, the zero page at 100; block 1 is a huge zero
    /// folio (PFNs 512..1024); block 2 is a PMD-sized THP.
    struct Fake;

    impl FlagSource for Fake {
        fn block(&mut self, block: u64) -> io::Result<Vec<u64>> {
            let mut v = vec![0u64; 512];
            match block {
                0 => {
                    v[16] = KPF_COMPOUND_HEAD | KPF_THP;
                    for f in &mut v[17..32] {
                        *f = KPF_COMPOUND_TAIL | KPF_THP;
                    }
                    v[100] = KPF_ZERO_PAGE;
                }
                1 | 2 => {
                    let z = if block == 1 { KPF_ZERO_PAGE } else { 0 };
                    v[0] = KPF_COMPOUND_HEAD | KPF_THP | z;
                    for f in &mut v[1..] {
                        *f = KPF_COMPOUND_TAIL | KPF_THP | z;
                    }
                }
                _ => {}
            }
            Ok(v)
        }
    }

    fn present(pfn: u64) -> u64 {
        PM_PRESENT | pfn
    }

    #[test]
    fn buckets_like_the_model() {
        let mut f = Fake;
        let mut w = Walk::new(&mut f);
        let mut va = 0;
        let mut feed = |w: &mut Walk<Fake>, e: u64| {
            w.entry(va, e).unwrap();
            va += PAGE_SIZE;
        };
        // 64 KiB folio mapped whole, then a hole, then order 0, zero pages.
        for p in 16..32 {
            feed(&mut w, present(p));
        }
        feed(&mut w, 0);
        feed(&mut w, present(40));
        feed(&mut w, present(100));
        feed(&mut w, present(100));
        // The same 64 KiB folio again, after other folios: a large folio
        // counts once, as in the model's walk.
        feed(&mut w, present(20));
        let h = w.finish();
        assert_eq!(h["64kB"], 1);
        assert_eq!(h["4kB"], 1);
        assert_eq!(h["zero"], 2);

        // Huge zero PMD (512 pages in one VA block) and a PMD THP.
        let mut f = Fake;
        let mut w = Walk::new(&mut f);
        for i in 0..512 {
            w.entry(PMD_SIZE + i * PAGE_SIZE, present(512 + i)).unwrap();
        }
        for i in 0..512 {
            w.entry(2 * PMD_SIZE + i * PAGE_SIZE, present(1024 + i))
                .unwrap();
        }
        let h = w.finish();
        assert_eq!(h["huge_zero"], 1);
        assert_eq!(h["2048kB"], 1);
        assert_eq!(h["pages_present"], 1024);
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn map_states_like_the_model() {
        let mut f = Fake;
        let mut w = Walk::new(&mut f);
        let st =
            |w: &mut Walk<Fake>, va: u64, e: u64, pmd: Option<bool>| w.state(va, e, pmd).unwrap();
        assert_eq!(st(&mut w, 0, 0, None), PageState::None);
        assert_eq!(st(&mut w, 0, PM_SWAP | 5, None), PageState::Swap);
        // A page of the 64 KiB folio at PFN 16: order 4, PTE-mapped.
        let p = PageState::Present {
            order: 4,
            pmd: false,
            contpte: false,
        };
        assert_eq!(st(&mut w, PAGE_SIZE, present(17), Some(false)), p);
        assert_eq!(st(&mut w, PAGE_SIZE, present(17), None), p);
        assert_eq!(
            st(&mut w, 0, present(100), None),
            PageState::Zero { huge: false }
        );
        assert_eq!(
            st(&mut w, 0, present(512 + 3), None),
            PageState::Zero { huge: true }
        );
        // The PMD-sized folio at PFN 1024: PMD-mapped when PAGEMAP_SCAN
        // says so; without it, when the VA block maps it in order.
        let thp = |pmd| PageState::Present {
            order: 9,
            pmd,
            contpte: false,
        };
        assert_eq!(
            st(&mut w, 3 * PAGE_SIZE, present(1027), Some(true)),
            thp(true)
        );
        assert_eq!(
            st(&mut w, 3 * PAGE_SIZE, present(1027), Some(false)),
            thp(false)
        );
        assert_eq!(
            st(&mut w, PMD_SIZE + 3 * PAGE_SIZE, present(1027), None),
            thp(true)
        );
        assert_eq!(st(&mut w, 4 * PAGE_SIZE, present(1027), None), thp(false));
    }
}

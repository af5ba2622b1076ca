//! The zsmalloc allocator behind zswap (mm/zsmalloc.c), Linux 6.18, 4 KiB
//! pages, `CONFIG_ZSMALLOC_CHAIN_SIZE` 8: what decides how many pages the
//! pool holds (`zs_get_total_pages()`).
//!
//! Objects are sized with the handle (`zs_malloc()` adds
//! `ZS_HANDLE_SIZE`) and served by 255 size classes 16 bytes apart from
//! 32 bytes (`get_size_class_index()`); neighbouring classes with the same
//! zspage shape share one (`zs_create_pool()`, `can_merge()`). A zspage is
//! a chain of 1 to 8 pages (`calculate_zspage_chain_size()`). Each class
//! keeps its zspages on fullness lists by use in tenths
//! (`get_fullness_group()`); an allocation takes the head of the fullest
//! non-full list (`find_get_zspage()`), a new zspage when none has room
//! (`alloc_zspage()`); a zspage moved between lists goes to the new list's
//! head (`insert_zspage()`), and one emptied by `zs_free()` gives its pages
//! back. Where inside a zspage an object lies does not change the page
//! count, so the model keeps only each zspage's count of objects.
//! Not modelled: compaction (`zs_compact()`, the pool's shrinker), page
//! migration.

use crate::include::linux::mm_types::MemMap;
use crate::include::linux::pgtable::{Pfn, PAGE_SIZE};

/// `ZS_HANDLE_SIZE`
const ZS_HANDLE_SIZE: u32 = 8;
/// `ZS_MIN_ALLOC_SIZE` on 64-bit machines.
const ZS_MIN_ALLOC_SIZE: u32 = 32;
/// `ZS_MAX_ALLOC_SIZE`
const ZS_MAX_ALLOC_SIZE: u32 = PAGE_SIZE as u32;
/// `ZS_SIZE_CLASS_DELTA` (PAGE_SIZE >> CLASS_BITS)
const ZS_SIZE_CLASS_DELTA: u32 = PAGE_SIZE as u32 >> 8;
/// `ZS_SIZE_CLASSES`
const ZS_SIZE_CLASSES: usize =
    ((ZS_MAX_ALLOC_SIZE - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) + 1) as usize;
/// `ZS_MAX_PAGES_PER_ZSPAGE` (CONFIG_ZSMALLOC_CHAIN_SIZE)
const ZS_MAX_PAGES_PER_ZSPAGE: u32 = 8;
/// `NR_FULLNESS_GROUPS`: empty, ten tenths, full.
const NR_FULLNESS_GROUPS: usize = 12;
/// `ZS_INUSE_RATIO_100`
const FULL: u8 = 11;
const NONE: u32 = u32::MAX;

/// `struct size_class`
#[derive(Debug)]
struct SizeClass {
    pages_per_zspage: u32,
    objs_per_zspage: u32,
    /// The head of each fullness list (a zspage id, or NONE).
    heads: [u32; NR_FULLNESS_GROUPS],
}

/// `struct zspage`: its class, objects in use, fullness list and place on
/// it, and its pages.
#[derive(Clone, Debug)]
struct ZsPage {
    class: u16,
    inuse: u16,
    fullness: u8,
    prev: u32,
    next: u32,
    pages: Vec<Pfn>,
}

/// `struct zs_pool`
#[derive(Debug)]
pub(crate) struct ZsPool {
    classes: Vec<SizeClass>,
    /// Size-class index → the (possibly merged) class serving it.
    class_of: [u16; ZS_SIZE_CLASSES],
    zspages: Vec<ZsPage>,
    free_ids: Vec<u32>,
    /// `pages_allocated` (`zs_get_total_pages()`).
    pub(crate) pages_allocated: u64,
    /// `zs_huge_class_size()`
    pub(crate) huge_class_size: u32,
}

/// `calculate_zspage_chain_size()`: the chain length (1 to 8 pages) that
/// wastes least, the shortest among equals; one page for a power of two.
fn chain_size(class_size: u32) -> u32 {
    if class_size.is_power_of_two() {
        return 1;
    }
    (1..=ZS_MAX_PAGES_PER_ZSPAGE)
        .min_by_key(|&i| (i * PAGE_SIZE as u32) % class_size)
        .unwrap_or(1)
}

/// `get_size_class_index()`
fn size_class_index(size: u32) -> usize {
    let idx = if size > ZS_MIN_ALLOC_SIZE {
        (size - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) as usize
    } else {
        0
    };
    idx.min(ZS_SIZE_CLASSES - 1)
}

impl ZsPool {
    /// `zs_create_pool()`: the classes from the largest down, merging a
    /// class into the larger one before it when both have the same zspage
    /// shape.
    pub(crate) fn new() -> ZsPool {
        let mut classes: Vec<SizeClass> = Vec::new();
        let mut class_of = [0u16; ZS_SIZE_CLASSES];
        let mut huge_class_size = 0;
        for i in (0..ZS_SIZE_CLASSES).rev() {
            let size = (ZS_MIN_ALLOC_SIZE + i as u32 * ZS_SIZE_CLASS_DELTA).min(ZS_MAX_ALLOC_SIZE);
            let pages = chain_size(size);
            let objs = pages * PAGE_SIZE as u32 / size;
            // The largest class whose zspages hold several objects over
            // several pages: an object this size or larger (with its
            // handle) lands in a class of single-object zspages.
            if pages != 1 && objs != 1 && huge_class_size == 0 {
                huge_class_size = size - (ZS_HANDLE_SIZE - 1);
            }
            if let Some(prev) = classes.last() {
                if prev.pages_per_zspage == pages && prev.objs_per_zspage == objs {
                    class_of[i] = (classes.len() - 1) as u16;
                    continue;
                }
            }
            classes.push(SizeClass {
                pages_per_zspage: pages,
                objs_per_zspage: objs,
                heads: [NONE; NR_FULLNESS_GROUPS],
            });
            class_of[i] = (classes.len() - 1) as u16;
        }
        ZsPool {
            classes,
            class_of,
            zspages: Vec::new(),
            free_ids: Vec::new(),
            pages_allocated: 0,
            huge_class_size,
        }
    }

    /// `get_fullness_group()`
    fn fullness(&self, z: u32) -> u8 {
        let zp = &self.zspages[z as usize];
        let objs = self.classes[zp.class as usize].objs_per_zspage;
        let inuse = u32::from(zp.inuse);
        if inuse == 0 {
            0
        } else if inuse == objs {
            FULL
        } else {
            (100 * inuse / objs / 10 + 1) as u8
        }
    }

    /// `insert_zspage()`: at the head of its fullness list.
    fn insert(&mut self, z: u32, fg: u8) {
        let class = self.zspages[z as usize].class as usize;
        let head = self.classes[class].heads[fg as usize];
        {
            let zp = &mut self.zspages[z as usize];
            zp.fullness = fg;
            zp.prev = NONE;
            zp.next = head;
        }
        if head != NONE {
            self.zspages[head as usize].prev = z;
        }
        self.classes[class].heads[fg as usize] = z;
    }

    /// `remove_zspage()`
    fn remove(&mut self, z: u32) {
        let (class, fg, prev, next) = {
            let zp = &self.zspages[z as usize];
            (zp.class as usize, zp.fullness as usize, zp.prev, zp.next)
        };
        if prev == NONE {
            self.classes[class].heads[fg] = next;
        } else {
            self.zspages[prev as usize].next = next;
        }
        if next != NONE {
            self.zspages[next as usize].prev = prev;
        }
    }

    /// `fix_fullness_group()`
    fn fix_fullness(&mut self, z: u32) -> u8 {
        let fg = self.fullness(z);
        if fg != self.zspages[z as usize].fullness {
            self.remove(z);
            self.insert(z, fg);
        }
        fg
    }

    /// `zs_malloc()` of a `size`-byte object: the zspage it went to, or,
    /// when a new zspage's pages could not all be had (`alloc_page` gives
    /// one page at a time, as `alloc_zspage()` asks), the pages it did get,
    /// for the caller to free. A new zspage's pages get movable ops once
    /// it is whole (`SetZsPageMovable()`).
    pub(crate) fn malloc(
        &mut self,
        size: u32,
        mem: &mut MemMap,
        mut alloc_page: impl FnMut(&mut MemMap) -> Option<Pfn>,
    ) -> Result<u32, Vec<Pfn>> {
        debug_assert!(size > 0 && size <= ZS_MAX_ALLOC_SIZE);
        let class = self.class_of[size_class_index(size + ZS_HANDLE_SIZE)] as usize;
        // find_get_zspage(): the fullest list that is not full.
        let found = (0..FULL as usize)
            .rev()
            .map(|fg| self.classes[class].heads[fg])
            .find(|&z| z != NONE);
        if let Some(z) = found {
            self.zspages[z as usize].inuse += 1;
            self.fix_fullness(z);
            return Ok(z);
        }
        let n = self.classes[class].pages_per_zspage;
        let mut pages = Vec::with_capacity(n as usize);
        for _ in 0..n {
            match alloc_page(mem) {
                Some(p) => pages.push(p),
                None => return Err(pages),
            }
        }
        for &p in &pages {
            mem.set_movable_ops(p, true);
        }
        let zp = ZsPage {
            class: class as u16,
            inuse: 1,
            fullness: 0,
            prev: NONE,
            next: NONE,
            pages,
        };
        let z = match self.free_ids.pop() {
            Some(z) => {
                self.zspages[z as usize] = zp;
                z
            }
            None => {
                self.zspages.push(zp);
                (self.zspages.len() - 1) as u32
            }
        };
        let fg = self.fullness(z);
        self.insert(z, fg);
        self.pages_allocated += u64::from(n);
        Ok(z)
    }

    /// `zs_free()` of an object of zspage `z`: the pages of the zspage when
    /// that emptied it (`free_zspage()`, which takes their movable ops
    /// away, `reset_zpdesc()`), for the caller to free.
    pub(crate) fn free(&mut self, z: u32, mem: &mut MemMap) -> Vec<Pfn> {
        self.zspages[z as usize].inuse -= 1;
        if self.fix_fullness(z) != 0 {
            return Vec::new();
        }
        self.remove(z);
        let pages = std::mem::take(&mut self.zspages[z as usize].pages);
        for &p in &pages {
            mem.set_movable_ops(p, false);
        }
        self.pages_allocated -= pages.len() as u64;
        self.free_ids.push(z);
        pages
    }

    /// Every page the pool holds (for the invariant checker).
    pub(crate) fn pages(&self) -> impl Iterator<Item = Pfn> + '_ {
        self.zspages.iter().flat_map(|z| z.pages.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_kernel_shapes() {
        // A 4 KiB object (an incompressible page) plus its handle is past
        // the largest size: the last class, one page per zspage.
        assert_eq!(size_class_index(4096 + 8), ZS_SIZE_CLASSES - 1);
        assert_eq!(chain_size(4096), 1);
        // 48-byte objects waste 16 bytes of one page, 32 of two, none of
        // three (12288 = 256 * 48): a chain of three.
        assert_eq!(chain_size(48), 3);
        // A 44-byte compressed page + 8 = 52 bytes: class 64 (32 + 2 * 16),
        // a power of two, one page of 64 objects.
        assert_eq!(size_class_index(52), 2);
        let mut pool = ZsPool::new();
        let mut mem = MemMap::new(256);
        let mut next = 100u32;
        let mut page = |_: &mut MemMap| {
            next += 1;
            Some(Pfn(next))
        };
        let zs: Vec<u32> = (0..65)
            .map(|_| pool.malloc(44, &mut mem, &mut page).unwrap())
            .collect();
        assert_eq!(
            pool.pages_allocated, 2,
            "64 objects fill a page, the 65th opens another"
        );
        assert_eq!(
            pool.free(zs[64], &mut mem).len(),
            1,
            "emptied zspage returns its page"
        );
        assert_eq!(pool.pages_allocated, 1);
        // Incompressible pages: one per page.
        let z = pool.malloc(4096, &mut mem, &mut page).unwrap();
        assert_eq!(pool.pages_allocated, 2);
        assert_eq!(pool.free(z, &mut mem).len(), 1);
    }
}

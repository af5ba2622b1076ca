//! madvise(2) (mm/madvise.c: madvise_vma_behavior(), madvise_dontneed_single_vma();
//! mm/khugepaged.c: hugepage_madvise()), Linux 6.18.
//!
//! Modelled: MADV_HUGEPAGE / MADV_NOHUGEPAGE (VM flags only; khugepaged is
//! not modelled), MADV_RANDOM / MADV_SEQUENTIAL / MADV_NORMAL (readahead
//! flags), MADV_DONTNEED (zap with page-table reclaim). VMAs are split at the
//! range ends and re-merged where the flags allow.
//! Unsupported (loud error): every other advice until reclaim and swap are
//! modelled.

use crate::arch::Arch;
use crate::include::linux::pgtable::PAGE_SIZE;
use crate::mm::mmap::{VM_HUGEPAGE, VM_NOHUGEPAGE, VM_RAND_READ, VM_SEQ_READ};
use crate::{Kernel, KernelError, MmId};

/// The advice values the model knows (`MADV_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Madv {
    Normal,
    Random,
    Sequential,
    Dontneed,
    Hugepage,
    Nohugepage,
}

impl<A: Arch> Kernel<A> {
    /// `do_madvise()` on `[start, start + len)`.
    pub fn do_madvise(
        &mut self,
        mm: MmId,
        start: u64,
        len: u64,
        advice: Madv,
    ) -> Result<(), KernelError> {
        if !start.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) {
            return Err(KernelError::Errno(
                "EINVAL",
                "madvise range must be page aligned".into(),
            ));
        }
        let end = start + len;
        if advice == Madv::Dontneed {
            let vmas: Vec<_> = self
                .mm(mm)
                .vmas
                .values()
                .filter(|v| v.vm_start < end && v.vm_end > start)
                .copied()
                .collect();
            for v in vmas {
                self.unmap_vma_range(mm, &v, v.vm_start.max(start), v.vm_end.min(end), true);
            }
            return Ok(());
        }
        let (set, clear) = match advice {
            Madv::Normal => (0, VM_RAND_READ | VM_SEQ_READ),
            Madv::Random => (VM_RAND_READ, VM_SEQ_READ),
            Madv::Sequential => (VM_SEQ_READ, VM_RAND_READ),
            Madv::Hugepage => (VM_HUGEPAGE, VM_NOHUGEPAGE),
            Madv::Nohugepage => (VM_NOHUGEPAGE, VM_HUGEPAGE),
            Madv::Dontneed => unreachable!(),
        };
        for mut v in self.vmas_in_range_split(mm, start, end) {
            v.vm_flags = (v.vm_flags & !clear) | set;
            self.vma_update(mm, &v);
        }
        self.vma_merge_range(mm, start, end);
        Ok(())
    }
}

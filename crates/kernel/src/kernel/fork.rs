//! fork() of an address space (kernel/fork.c: dup_mm(), dup_mmap()), Linux
//! 6.18. The child gets copies of every VMA (sharing open files and the
//! anon_vma chain: `anon_vma_fork()`) and the page tables
//! `copy_page_range()` decides to copy.
//! Not modelled: VM_DONTCOPY/VM_WIPEONFORK, MADV_DONTFORK, khugepaged and
//! KSM registration.

use crate::arch::Arch;
use crate::{KResult, Kernel, MmId};

impl<A: Arch> Kernel<A> {
    /// `dup_mm()`: returns the child's mm.
    pub fn dup_mm(&mut self, parent: MmId) -> KResult<MmId> {
        // The parent forks: the child's page tables are charged to its
        // cgroup (`current`'s).
        let memcg = self.mm_memcg(parent);
        self.with_current_memcg(memcg, |k| k.dup_mm_locked(parent))
    }

    fn dup_mm_locked(&mut self, parent: MmId) -> KResult<MmId> {
        self.vmstat.sim.dup_mm += 1;
        let child = self.mm_alloc();
        // The child task starts in its parent's memory cgroup.
        let memcg = self.mm_memcg(parent);
        if memcg != crate::mm::memcontrol::ROOT_MEM_CGROUP {
            self.set_mm_memcg(child, memcg);
        }
        let vmas: Vec<_> = self.mm(parent).vmas.values().copied().collect();
        for v in &vmas {
            // anon_vma_fork(): the child's VMA gets its own anon_vma below
            // the parent's (where its COW copies go), while staying in the
            // parent's tree for the folios they still share.
            let mut cv = *v;
            if let Some(av) = v.anon_vma {
                cv.anon_vma = Some(self.anon_vma_alloc(Some(av)));
            }
            self.mm_mut(child).vmas.insert(v.vm_start, cv);
            self.copy_page_range(child, parent, v)?;
        }
        // dup_mmap(): one flush_tlb_mm(oldmm) for the write-protection.
        self.flush_tlb_mm(parent);
        self.khugepaged_fork(child, parent);
        self.mm_mut(parent).children.push(child);
        Ok(child)
    }
}

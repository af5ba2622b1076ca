//! Shared anonymous memory (mm/shmem.c: shmem_zero_setup(), shmem_fault(),
//! shmem_get_folio_gfp()), Linux 6.18 with `shmem_enabled = never` and every
//! per-size `shmem_enabled` at `never` (the defaults): every hole is filled
//! with a zeroed order-0 folio on its first fault (read or write), and
//! `filemap_map_pages()` maps cached pages around later faults.
//! Not modelled: shmem huge pages and their knobs, swap of shmem, tmpfs
//! files, memfd, fallocate.

use crate::arch::Arch;
use crate::include::linux::mm_types::{PG_DIRTY, PG_UPTODATE};
use crate::include::linux::pgtable::{div_round_up, Pfn, PAGE_SIZE};
use crate::mm::memory::{Vmf, VM_FAULT_LOCKED, VM_FAULT_OOM, VM_FAULT_SIGBUS};
use crate::{FileId, Kernel};

impl<A: Arch> Kernel<A> {
    /// `shmem_zero_setup()` → `shmem_kernel_file_setup()`: an unlinked shmem
    /// inode of `size` bytes.
    pub fn shmem_file_setup(&mut self, size: u64) -> FileId {
        let f = self.create_file("dev/zero (deleted)", size);
        let a = &mut self.files[f.0 as usize];
        a.shmem = true;
        a.max_order = 0;
        f
    }

    /// `shmem_fault()`: the folio at `vmf.pgoff`, allocated on a hole.
    pub fn shmem_fault(&mut self, vmf: &mut Vmf) -> (u32, Option<Pfn>) {
        let file = vmf.vma.file.expect("shmem file");
        let f = self.open_files[file as usize].mapping;
        if vmf.pgoff >= div_round_up(self.files[f.0 as usize].i_size, PAGE_SIZE) {
            return (VM_FAULT_SIGBUS, None);
        }
        self.vmstat.sim.pagecache_lookup += 1;
        if let Some(p) = self.files[f.0 as usize].lookup(vmf.pgoff) {
            return (VM_FAULT_LOCKED, Some(p));
        }
        let Some(folio) = self.folio_alloc(0) else {
            return (VM_FAULT_OOM, None);
        };
        self.vmstat.sim.page_zero += 1;
        // shmem_alloc_and_add_folio(): charged to the faulting mm's cgroup
        // (the fault's `current`).
        let gfp = crate::mm::memcontrol::ChargeGfp::Kernel;
        let added = self.filemap_add_folio(f, folio, vmf.pgoff, gfp);
        if added == crate::mm::filemap::AddFolio::NoMem {
            self.folio_free(folio);
            return (VM_FAULT_OOM, None);
        }
        debug_assert_eq!(added, crate::mm::filemap::AddFolio::Added);
        self.mem.set(folio, PG_UPTODATE | PG_DIRTY);
        (VM_FAULT_LOCKED, Some(folio))
    }
}

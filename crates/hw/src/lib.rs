//! The simulated machine under the kernel model: the CPU's hardware page
//! walk, which sets accessed and dirty state in the entries it uses and
//! raises a page fault when an access is not permitted.
//!
//! The kernel model never decides what the CPU does; this crate does.
//! Not modelled yet: the TLB (every access walks the tables; a later issue
//! adds TLB contents, flush costs and IPIs), caches, and the cost model.

#![forbid(unsafe_code)]

use foliosim_kernel::include::linux::pgtable::{pte_index, PMD_SHIFT};
use foliosim_kernel::mm::memory::{FaultOutcome, VM_FAULT_ERROR, VM_FAULT_OOM, VM_FAULT_SIGBUS};
use foliosim_kernel::mm::pgtable_generic::PmdSlot;
use foliosim_kernel::mm::vmstat::Trace;
use foliosim_kernel::{Arch, Kernel, MmId};

/// Faults a process took, as the per-task counters (getrusage, perf
/// software events) report them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskFaults {
    pub min_flt: u64,
    pub maj_flt: u64,
}

/// A user access the model cannot complete: the process would be killed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessError {
    pub addr: u64,
    pub signal: &'static str,
}

/// One simulated CPU. It remembers the last PMD slot it walked through
/// (a cache of the walk, not a TLB: every access still reads the entry).
#[derive(Debug)]
pub struct Cpu {
    last: Option<(MmId, u64, u64, PmdSlot)>,
    /// Whether stores write a non-zero byte (what `is_folio_zero_filled()`
    /// later sees); true unless a workload writes zeroes.
    pub store_nonzero: bool,
    /// The simulated CPU this is (`smp_processor_id()` of its faults: the
    /// engine makes it the kernel's current CPU before each step it runs
    /// here, `Kernel::set_current_cpu`).
    pub id: usize,
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu {
            last: None,
            store_nonzero: true,
            id: 0,
        }
    }
}

impl Cpu {
    /// The PMD slot of `addr`, from the one-entry walk cache when valid.
    #[inline]
    fn pmd_slot<A: Arch>(&mut self, k: &Kernel<A>, mm: MmId, addr: u64) -> Option<PmdSlot> {
        let block = addr >> PMD_SHIFT;
        if let Some((m, b, gen, slot)) = self.last {
            if m == mm && b == block && gen == k.pt.generation {
                return Some(slot);
            }
        }
        let slot = k.walk_to_pmd(mm, addr)?;
        self.last = Some((mm, block, k.pt.generation, slot));
        Some(slot)
    }

    /// Try the access in hardware: true if the entry allowed it (and now
    /// records it), false if it must fault.
    #[inline]
    fn try_access<A: Arch>(&mut self, k: &mut Kernel<A>, mm: MmId, addr: u64, write: bool) -> bool {
        let Some(slot) = self.pmd_slot(k, mm, addr) else {
            return false;
        };
        let pmdval = k.pt.get(slot.table, slot.idx);
        if A::pmd_trans_huge(pmdval) {
            return match A::hw_access(pmdval, write) {
                Some(new) => {
                    if new != pmdval {
                        k.pt.set(slot.table, slot.idx, new);
                    }
                    if write {
                        let off = (addr >> 12) & 511;
                        k.mem
                            .set_page_nonzero(A::pte_pfn(new).plus(off), self.store_nonzero);
                    }
                    true
                }
                None => false,
            };
        }
        let Some(tid) = k.entry_table(pmdval) else {
            return false;
        };
        let idx = pte_index(addr);
        let pte = k.pt.get(tid, idx);
        match A::hw_access(pte, write) {
            Some(new) => {
                if new != pte {
                    k.pt.set(tid, idx, new);
                }
                if write {
                    k.mem.set_page_nonzero(A::pte_pfn(new), self.store_nonzero);
                }
                true
            }
            None => false,
        }
    }

    /// A user load (`write = false`) or store of one byte at `addr`,
    /// faulting as often as the hardware needs.
    pub fn access<A: Arch>(
        &mut self,
        k: &mut Kernel<A>,
        mm: MmId,
        addr: u64,
        write: bool,
        faults: &mut TaskFaults,
    ) -> Result<(), AccessError> {
        k.vmstat.sim.user_access += 1;
        for _ in 0..4 {
            if self.try_access(k, mm, addr, write) {
                return Ok(());
            }
            if A::TRACE_PAGE_FAULT_USER {
                k.vmstat.trace(Trace::PageFaultUser);
            }
            let FaultOutcome { ret, major } = k.handle_mm_fault(mm, addr, write);
            if ret & VM_FAULT_ERROR != 0 {
                let signal = match ret {
                    r if r & VM_FAULT_SIGBUS != 0 => "SIGBUS",
                    r if r & VM_FAULT_OOM != 0 => "OOM",
                    _ => "SIGSEGV",
                };
                return Err(AccessError { addr, signal });
            }
            if major {
                faults.maj_flt += 1;
            } else {
                faults.min_flt += 1;
            }
        }
        panic!("model bug: access at {addr:#x} still faults after three faults");
    }

    /// Forget the walk cache (after the mm it points into went away).
    pub fn flush(&mut self) {
        self.last = None;
    }
}

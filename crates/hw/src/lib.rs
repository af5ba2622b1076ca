//! The simulated machine under the kernel model: the CPU's hardware page
//! walk, which sets accessed and dirty state in the entries it uses and
//! raises a page fault when an access is not permitted.
//!
//! The kernel model never decides what the CPU does; this crate does.
//! Not modelled: the TLB contents (every access walks the tables; flushes
//! and IPIs are counted by the kernel model) and the caches. One piece of
//! out-of-order execution is modelled, because it costs measurable time:
//! the loads that follow a faulting load walk their entries speculatively
//! before the fault is taken ([`SpecWalk`]).

#![forbid(unsafe_code)]

use foliosim_kernel::include::linux::pgtable::{pte_index, PMD_SHIFT};
use foliosim_kernel::mm::memory::{FaultOutcome, VM_FAULT_ERROR, VM_FAULT_OOM, VM_FAULT_SIGBUS};
use foliosim_kernel::mm::pgtable_generic::PmdSlot;
use foliosim_kernel::mm::vmstat::Trace;
use foliosim_kernel::{Arch, Kernel, MmId, PageContent};

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

/// How many user accesses after a faulting load the CPU has already
/// issued, and walked, before the fault is taken. Measured on the
/// calibration host (AMD EPYC, KVM guest) with
/// tools/calibration/touch-after-fault.c: after a fault that mapped a
/// 16-page window, touching the next n pages costs about 190 ns each for
/// n <= 8 and 60 ns each for the next seven, against 15-25 ns when an
/// `lfence` after the faulting load keeps the others from issuing, or
/// when a spin of about 150 ns separates them; with whole-folio faults of
/// 32-256 entries the slow accesses come to about 15 per fault.
pub const SPEC_LOADS: u32 = 16;

/// Pages after a faulting address whose entries the speculative walks
/// are assumed to have read (same page table only).
const SPEC_SPAN: u64 = 16;

/// What the CPU saw when it walked ahead of a faulting load: the entries
/// near the fault that were not present then, of which the fault may map
/// some. The next [`SPEC_LOADS`] accesses that read such a page, now
/// present, pay a fresh page walk (`sim/user_access_rewalk`): the result
/// of the speculative one was "not present" and is not reused.
///
/// The kernel maps the pages without an invalidation (`set_pte_range()`
/// -> `update_mmu_cache_range()` is empty on x86: a not-present entry is
/// never cached), which is architecturally right; the cost is the walk
/// the CPU makes again.
///
/// Only a read fault arms it and only reads count (anonymous write faults
/// followed by writes to the rest of a new mTHP cost about 8 ns an access
/// on the calibration host). A fault in a missing page table arms
/// nothing: the speculative walks stopped at the PMD, which the fault's
/// own invalidation covers (whole-folio faults of 1 MiB folios that
/// allocate their page table are as cheap as later accesses).
#[derive(Clone, Copy, Debug)]
struct SpecWalk {
    mm: MmId,
    /// Virtual page number of bit 0 of `not_present` (the page after the
    /// fault).
    base: u64,
    /// Pages in `base..base + SPEC_SPAN` that were not present before the
    /// fault.
    not_present: u64,
    /// Loads left in the speculative window.
    left: u64,
}

/// One simulated CPU. It remembers the last PMD slot it walked through
/// (a cache of the walk, not a TLB: every access still reads the entry).
#[derive(Debug)]
pub struct Cpu {
    last: Option<(MmId, u64, u64, PmdSlot)>,
    spec: Option<SpecWalk>,
    /// Loads the running touch makes after each [`Cpu::access`]
    /// ([`Cpu::set_loads_between`]); they use up the speculative window.
    loads_between: u64,
    /// What stores leave in the page (what `is_folio_zero_filled()` and
    /// zswap's compressor later see): a one-byte store unless a workload
    /// writes zeroes or whole pages of another kind.
    pub store_content: PageContent,
    /// The simulated CPU this is (`smp_processor_id()` of its faults: the
    /// engine makes it the kernel's current CPU before each step it runs
    /// here, `Kernel::set_current_cpu`).
    pub id: usize,
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu {
            last: None,
            spec: None,
            loads_between: 0,
            store_content: PageContent::STORE,
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
            if m == mm && b == block && gen == k.pt_generation() {
                return Some(slot);
            }
        }
        let slot = k.walk_to_pmd(mm, addr)?;
        self.last = Some((mm, block, k.pt_generation(), slot));
        Some(slot)
    }

    /// Try the access in hardware: true if the entry allowed it (and now
    /// records it), false if it must fault.
    #[inline]
    fn try_access<A: Arch>(&mut self, k: &mut Kernel<A>, mm: MmId, addr: u64, write: bool) -> bool {
        let Some(slot) = self.pmd_slot(k, mm, addr) else {
            return false;
        };
        let pmdval = k.pt_entry(slot.table, slot.idx);
        if A::pmd_trans_huge(pmdval) {
            return match A::hw_access(pmdval, write) {
                Some(new) => {
                    if new != pmdval {
                        k.hw_update_entry(slot.table, slot.idx, new);
                    }
                    if write {
                        let off = (addr >> 12) & 511;
                        k.set_page_content(A::pte_pfn(new).plus(off), self.store_content);
                    }
                    true
                }
                None => false,
            };
        }
        let Some(tid) = k.entry_table(pmdval) else {
            return false;
        };
        // The walk through a non-leaf PMD entry sets its accessed bit
        // (x86), which only MGLRU's aging clears.
        if A::HW_NONLEAF_PMD_YOUNG && !A::pte_young(pmdval) {
            k.hw_update_entry(slot.table, slot.idx, A::pte_mkyoung(pmdval));
        }
        let idx = pte_index(addr);
        let pte = k.pt_entry(tid, idx);
        match A::hw_access(pte, write) {
            Some(new) => {
                if new != pte {
                    k.hw_update_entry(tid, idx, new);
                }
                if write {
                    k.set_page_content(A::pte_pfn(new), self.store_content);
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
        k.vmstat_mut().sim.user_access += 1;
        let rewalk = self.spec_consume(mm, addr, write);
        for attempt in 0..4 {
            if self.try_access(k, mm, addr, write) {
                if attempt == 0 && rewalk {
                    k.vmstat_mut().sim.user_access_rewalk += 1;
                }
                return Ok(());
            }
            if attempt == 0 {
                self.spec = if write {
                    None
                } else {
                    self.spec_walk(k, mm, addr)
                };
            }
            if A::TRACE_PAGE_FAULT_USER {
                k.vmstat_mut().trace(Trace::PageFaultUser);
            }
            let FaultOutcome { ret, major } = k.handle_mm_fault(mm, addr, write);
            // The fault returns to user space (irqentry_exit_to_user_mode()).
            k.resume_user_mode_work(mm);
            if ret & VM_FAULT_ERROR != 0 {
                let signal = match ret {
                    r if r & VM_FAULT_SIGBUS != 0 => "SIGBUS",
                    r if r & VM_FAULT_OOM != 0 => "OOM",
                    _ => "SIGSEGV",
                };
                return Err(AccessError { addr, signal });
            }
            if k.take_oom_kill() {
                return Err(AccessError {
                    addr,
                    signal: foliosim_kernel::MIN_TTL_OOM_KILL,
                });
            }
            if major {
                // The task slept on the read: switched back in, its mm is
                // marked for MGLRU's next walk.
                k.lru_gen_use_mm(mm);
                faults.maj_flt += 1;
            } else {
                faults.min_flt += 1;
            }
        }
        panic!("model bug: access at {addr:#x} still faults after three faults");
    }

    /// Declare that the running touch issues `n` further loads after each
    /// access it makes through [`Cpu::access`] (a sequential word touch:
    /// the other 511 words of the page). They use up the speculative
    /// window; with `n` at least [`SPEC_LOADS`] the faulting page's own
    /// loads fill it, and faults skip the snapshot of their neighbours.
    pub fn set_loads_between(&mut self, n: u64) {
        self.loads_between = n;
    }

    /// Take one access, and the loads the touch makes after it, out of
    /// the speculative window; true if the access reads a page that the
    /// speculative walks found not present.
    #[inline]
    fn spec_consume(&mut self, mm: MmId, addr: u64, write: bool) -> bool {
        let Some(s) = &mut self.spec else {
            return false;
        };
        let off = (addr >> 12).wrapping_sub(s.base);
        let bit = if off < SPEC_SPAN { 1 << off } else { 0 };
        let hit = !write && s.mm == mm && s.not_present & bit != 0;
        if hit {
            s.not_present &= !bit;
        }
        s.left = s.left.saturating_sub(1 + self.loads_between);
        if s.left == 0 {
            self.spec = None;
        }
        hit
    }

    /// The speculative walks ahead of a read fault at `addr`: which of
    /// the [`SPEC_SPAN`] entries after it, in its page table, are not
    /// present now (before the fault). Only the entries after it: every
    /// touch pattern of a scenario runs upwards, apart from the random one,
    /// whose next accesses rarely land near the fault. None when there is
    /// no page table to walk into, nothing after the fault is missing, or
    /// the faulting page's own further loads fill the window.
    fn spec_walk<A: Arch>(&mut self, k: &Kernel<A>, mm: MmId, addr: u64) -> Option<SpecWalk> {
        let left = u64::from(SPEC_LOADS).checked_sub(self.loads_between)?;
        if left == 0 {
            return None;
        }
        let slot = self.pmd_slot(k, mm, addr)?;
        let tid = k.entry_table(k.pt_entry(slot.table, slot.idx))?;
        let idx = pte_index(addr);
        let end = (idx + 1 + SPEC_SPAN as usize).min(512);
        // Bit i: the entry of page idx + 1 + i.
        let mut not_present = 0u64;
        for &pte in k.pt_table(tid)[idx + 1..end].iter().rev() {
            not_present = (not_present << 1) | u64::from(A::hw_access(pte, false).is_none());
        }
        (not_present != 0).then_some(SpecWalk {
            mm,
            base: (addr >> 12) + 1,
            not_present,
            left,
        })
    }

    /// Forget the walk cache (after the mm it points into went away).
    pub fn flush(&mut self) {
        self.last = None;
        self.spec = None;
    }
}

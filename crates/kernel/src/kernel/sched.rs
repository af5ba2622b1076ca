//! The simulated CPUs and the mm-level TLB-flush entry points every caller
//! in `mm/` uses (kernel/sched/core.c `context_switch()`,
//! arch/x86/mm/tlb.c `switch_mm_irqs_off()` / `enter_lazy_tlb()`,
//! arch/x86/include/asm/tlbflush.h `flush_tlb_mm()` / `flush_tlb_range()`,
//! mm/rmap.c `should_defer_flush()`, `set_tlb_ubc_flush_pending()`,
//! `try_to_unmap_flush()`, `flush_tlb_batched_pending()`), Linux 6.18.
//!
//! Per simulated CPU: the mm it has loaded (`cpu_tlbstate.loaded_mm`),
//! whether it is lazy (`cpu_tlbstate_shared.is_lazy`: a kernel thread or
//! the idle task runs on the user mm), the TLB generation it caught up to
//! per mm (`cpu_tlbstate.ctxs[].tlb_gen`; ASIDs are never recycled here),
//! and whether a task of the workload runs there (a tracepoint fired on
//! that CPU is seen by the workload's per-task perf counters). Per mm:
//! `mm_cpumask()`, `context.tlb_gen` and `tlb_flush_batched` (pending
//! versus flushed). The architecture decides what a flush costs
//! ([`Arch::flush_tlb_mm_range`]). Not modelled: ASID recycling
//! (TLB_NR_DYN_ASIDS), jiffies (`should_trim_cpumask()` never fires: a run
//! is shorter than a second), INVLPGB global ASIDs.

use crate::arch::Arch;
use crate::include::linux::pgtable::HPAGE_PMD_NR;
use crate::{Kernel, MmId};

pub use foliosim_uapi::MAX_CPUS;

/// `TLB_FLUSH_ALL` as a page count.
pub(crate) const TLB_FLUSH_ALL: u64 = u64::MAX;

/// One simulated CPU's TLB state (`struct tlb_state`, `tlb_state_shared`).
#[derive(Clone, Debug, Default)]
pub(crate) struct CpuTlb {
    /// `cpu_tlbstate.loaded_mm` (None = `init_mm`).
    pub(crate) loaded_mm: Option<MmId>,
    /// `cpu_tlbstate_shared.is_lazy`
    pub(crate) is_lazy: bool,
    /// A task of the workload runs here (not the idle task): tracepoints
    /// fired on this CPU are the workload's.
    pub(crate) ours: bool,
    /// `ctxs[asid].tlb_gen` of each mm this CPU ran, by mm id.
    pub(crate) tlb_gen: Vec<u64>,
}

/// Every simulated CPU and the per-mm TLB bookkeeping.
#[derive(Clone, Debug)]
pub struct Cpus {
    /// The CPU the current operation runs on (`smp_processor_id()`).
    pub(crate) current: usize,
    pub(crate) cpu: Vec<CpuTlb>,
    /// `mm_cpumask()` by mm id.
    pub(crate) mm_cpumask: Vec<u64>,
    /// `mm->context.tlb_gen` by mm id.
    pub(crate) mm_tlb_gen: Vec<u64>,
    /// `mm->tlb_flush_batched` has pending != flushed, by mm id.
    pub(crate) mm_batch_pending: Vec<bool>,
    /// `arch_tlbflush_unmap_batch.cpumask` (x86).
    pub(crate) batch_cpumask: u64,
    /// The mmu_gather in progress.
    pub(crate) gather: crate::mm::mmu_gather::MmuGather,
}

impl Default for Cpus {
    fn default() -> Self {
        Cpus::new(1)
    }
}

impl Cpus {
    /// `nr` CPUs, all running `init_mm`, the workload on CPU 0.
    pub fn new(nr: usize) -> Cpus {
        let nr = nr.clamp(1, MAX_CPUS);
        let mut cpu = vec![CpuTlb::default(); nr];
        cpu[0].ours = true;
        Cpus {
            current: 0,
            cpu,
            mm_cpumask: Vec::new(),
            mm_tlb_gen: Vec::new(),
            mm_batch_pending: Vec::new(),
            batch_cpumask: 0,
            gather: Default::default(),
        }
    }

    pub(crate) fn nr(&self) -> usize {
        self.cpu.len()
    }

    /// Room for `mm` in the per-mm arrays.
    #[inline]
    pub(crate) fn grow(&mut self, mm: MmId) {
        let n = mm.0 as usize + 1;
        if self.mm_cpumask.len() < n {
            self.grow_to(n);
        }
    }

    /// Room for `n` mms: the rare case of [`Cpus::grow`], out of line.
    #[cold]
    fn grow_to(&mut self, n: usize) {
        self.mm_cpumask.resize(n, 0);
        self.mm_tlb_gen.resize(n, 0);
        self.mm_batch_pending.resize(n, false);
    }

    /// `mm->context.tlb_gen` (0 for an mm never seen).
    pub(crate) fn mm_gen(&self, mm: MmId) -> u64 {
        self.mm_tlb_gen.get(mm.0 as usize).copied().unwrap_or(0)
    }

    /// `mm_cpumask(mm)`
    pub(crate) fn cpumask(&self, mm: MmId) -> u64 {
        self.mm_cpumask.get(mm.0 as usize).copied().unwrap_or(0)
    }

    /// `inc_mm_tlb_gen()`
    pub(crate) fn inc_mm_tlb_gen(&mut self, mm: MmId) -> u64 {
        self.add_mm_tlb_gen(mm, 1)
    }

    /// `inc_mm_tlb_gen()` `times` times: the generation after the last.
    pub(crate) fn add_mm_tlb_gen(&mut self, mm: MmId, times: u64) -> u64 {
        self.grow(mm);
        let gen = &mut self.mm_tlb_gen[mm.0 as usize];
        *gen += times;
        *gen
    }

    /// The generation `cpu` caught up to for `mm`.
    pub(crate) fn local_gen(&self, cpu: usize, mm: MmId) -> u64 {
        self.cpu[cpu]
            .tlb_gen
            .get(mm.0 as usize)
            .copied()
            .unwrap_or(0)
    }

    #[inline]
    pub(crate) fn set_local_gen(&mut self, cpu: usize, mm: MmId, gen: u64) {
        match self.cpu[cpu].tlb_gen.get_mut(mm.0 as usize) {
            Some(g) => *g = gen,
            None => self.set_local_gen_grow(cpu, mm, gen),
        }
    }

    /// [`Cpus::set_local_gen`] of an mm `cpu` has not seen: out of line.
    #[cold]
    fn set_local_gen_grow(&mut self, cpu: usize, mm: MmId, gen: u64) {
        let g = &mut self.cpu[cpu].tlb_gen;
        g.resize(mm.0 as usize + 1, 0);
        g[mm.0 as usize] = gen;
    }

    pub(crate) fn clear_cpumask(&mut self, mm: MmId, cpu: usize) {
        self.grow(mm);
        self.mm_cpumask[mm.0 as usize] &= !(1 << cpu);
    }
}

/// What the engine says a CPU does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuRun {
    /// A task of the workload runs `mm` in user space.
    User(MmId),
    /// The task blocks: the idle task runs on the last mm (lazy TLB).
    Idle,
    /// The task exited: as after a block, the idle task keeps its mm as
    /// the lazy `active_mm` (the mm stays in `mm_cpumask()`).
    Exited,
}

impl<A: Arch> Kernel<A> {
    /// The number of simulated CPUs (`nr_cpu_ids`); resets every CPU.
    pub fn set_nr_cpus(&mut self, nr: usize) {
        self.cpus = Cpus::new(nr);
        self.buddy.pcp_setup(&mut self.mem, self.cpus.nr());
    }

    /// Run the next operations on `cpu`.
    pub fn set_current_cpu(&mut self, cpu: usize) {
        self.cpus.current = cpu.min(self.cpus.nr() - 1);
    }

    /// The scheduler's `context_switch()` on `cpu`: a workload task of `mm`
    /// runs there (`switch_mm_irqs_off()`), or the CPU goes idle
    /// (`enter_lazy_tlb()`), or the task exits.
    pub fn sched_switch(&mut self, cpu: usize, run: CpuRun) {
        let c = &mut self.cpus;
        match run {
            CpuRun::User(mm) => {
                c.cpu[cpu].ours = true;
                if c.cpu[cpu].loaded_mm == Some(mm) && !c.cpu[cpu].is_lazy {
                    return;
                }
                c.switch_mm_irqs_off(cpu, Some(mm), &mut self.vmstat);
            }
            // Idle or exited alike: the CPU keeps the mm loaded, lazily.
            CpuRun::Idle | CpuRun::Exited => {
                c.cpu[cpu].ours = false;
                if c.cpu[cpu].loaded_mm.is_some() {
                    c.cpu[cpu].is_lazy = true;
                }
            }
        }
    }

    /// The current CPU runs `mm` (loads it the first time an mm flushes on
    /// a CPU that never ran a user task, so that callers without a
    /// scheduler behave as one CPU running that mm).
    pub(crate) fn tlb_this_cpu(&mut self, mm: MmId) {
        let cpu = self.cpus.current;
        if self.cpus.cpu[cpu].loaded_mm.is_none() && self.cpus.cpu[cpu].ours {
            self.cpus
                .switch_mm_irqs_off(cpu, Some(mm), &mut self.vmstat);
        }
    }

    /// `flush_tlb_range()` of `nr_pages` pages of `mm` (page stride, no
    /// page tables freed).
    pub fn flush_tlb_range(&mut self, mm: MmId, nr_pages: u64) {
        self.flush_tlb_mm_range(mm, nr_pages, false);
    }

    /// `flush_tlb_range()` of `nr_pages` pages of `mm` `times` times in a
    /// row, nothing else flushing in between (a walk that flushes each
    /// entry it clears, `ptep_clear_flush()`): the first a call, the rest
    /// counted at once where the arch can
    /// ([`Arch::flush_tlb_mm_range_again`]).
    pub(crate) fn flush_tlb_range_times(&mut self, mm: MmId, nr_pages: u64, times: u64) {
        if times == 0 {
            return;
        }
        self.flush_tlb_range(mm, nr_pages);
        let again = times - 1;
        if again > 0
            && !A::flush_tlb_mm_range_again(&mut self.cpus, mm, nr_pages, again, &mut self.vmstat)
        {
            for _ in 0..again {
                self.flush_tlb_range(mm, nr_pages);
            }
        }
    }

    /// `flush_tlb_mm_range()` of `nr_pages` pages ([`TLB_FLUSH_ALL`] for the
    /// whole mm); `freed_tables` when page tables were freed (IPIs go to
    /// lazy CPUs too).
    pub(crate) fn flush_tlb_mm_range(&mut self, mm: MmId, nr_pages: u64, freed_tables: bool) {
        self.tlb_this_cpu(mm);
        A::flush_tlb_mm_range(&mut self.cpus, mm, nr_pages, freed_tables, &mut self.vmstat);
    }

    /// `flush_tlb_mm()`: the whole address space of `mm`.
    pub(crate) fn flush_tlb_mm(&mut self, mm: MmId) {
        self.flush_tlb_mm_range(mm, TLB_FLUSH_ALL, true);
    }

    /// `pmdp_clear_flush_young()` of a PMD leaf of `mm`: test and clear its
    /// access flag; flush its 2 MiB (`flush_pmd_tlb_range()`, page stride)
    /// when it was young.
    pub(crate) fn pmdp_clear_flush_young(&mut self, mm: MmId, pmd: &mut u64) -> bool {
        self.vmstat.sim.young_clear += 1;
        if !A::pte_young(*pmd) {
            return false;
        }
        *pmd = A::pte_mkold(*pmd);
        self.vmstat.sim.pte_modify += 1;
        self.vmstat.sim.young_flush += 1;
        self.flush_tlb_range(mm, HPAGE_PMD_NR);
        true
    }
}

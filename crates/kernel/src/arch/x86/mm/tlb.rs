//! x86 TLB flushing across the simulated CPUs (arch/x86/mm/tlb.c:
//! switch_mm_irqs_off(), flush_tlb_mm_range(), get_flush_tlb_info(), native_flush_tlb_multi(),
//! should_flush_tlb(), flush_tlb_func(), arch_tlbbatch_flush();
//! arch/x86/include/asm/tlbflush.h: arch_tlbbatch_should_defer(),
//! arch_tlbbatch_add_pending()), Linux 6.18.
//!
//! Modelled: the 33-page `tlb_single_page_flush_ceiling` (INVLPG per page
//! up to 33, a full flush above); the local-only fast path when no other
//! CPU is in `mm_cpumask()`, and no flush at all when the mm is not loaded
//! here; otherwise `flush_tlb_multi()` with its TLB_REMOTE_SEND_IPI event,
//! an IPI to every other CPU that `should_flush_tlb()` picks (lazy CPUs are
//! skipped unless page tables were freed), the TLB-generation checks of
//! `flush_tlb_func()` (partial flush only when it brings the CPU exactly up
//! to date), the lazy CPU that switches to `init_mm` instead of flushing,
//! the wrong-CPU case that trims `mm_cpumask()`; the reclaim batch's
//! cpumask (the union of the unmapped mms' masks) and its flush with no mm
//! (reason TLB_LOCAL_SHOOTDOWN locally). INVLPG and full-flush counts
//! (`sim/invlpg`, `sim/tlb_flush_all`) add up every CPU's work.
//! `tlb:tlb_flush` counts the events the workload's per-task perf counters
//! see: those fired on a CPU where a workload task runs (never the
//! context-switch ones, which fire between the two tasks' perf contexts),
//! also split by reason (`tlb:tlb_flush/<reason>`). Not modelled: PCID
//! ASID recycling, INVLPGB and global ASIDs, paravirt (KVM) flush hints,
//! `should_trim_cpumask()` (jiffies do not advance).

use crate::kernel::sched::{Cpus, TLB_FLUSH_ALL};
use crate::mm::vmstat::{Trace, VmStat};
use crate::MmId;

/// `tlb_single_page_flush_ceiling`
pub(crate) const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

/// `TLB_GENERATION_INVALID`
const TLB_GENERATION_INVALID: u64 = 0;

/// `enum tlb_flush_reason`
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    RemoteShootdown,
    LocalShootdown,
    LocalMmShootdown,
    RemoteSendIpi,
    RemoteWrongCpu,
}

/// `struct flush_tlb_info`
#[derive(Clone, Copy, Debug)]
struct FlushInfo {
    /// None: a flush of every user mm (the reclaim batch).
    mm: Option<MmId>,
    /// Pages; [`TLB_FLUSH_ALL`] after the ceiling.
    nr: u64,
    freed_tables: bool,
    new_tlb_gen: u64,
    initiating_cpu: usize,
}

/// `trace_tlb_flush()`, counted when a workload task runs on `cpu`.
#[inline(always)]
fn trace(c: &Cpus, cpu: usize, reason: Reason, vs: &mut VmStat) {
    trace_times(c, cpu, reason, 1, vs);
}

/// `trace_tlb_flush()` fired `times` times on `cpu`.
#[inline(always)]
fn trace_times(c: &Cpus, cpu: usize, reason: Reason, times: u64, vs: &mut VmStat) {
    if !c.cpu[cpu].ours {
        return;
    }
    vs.trace_times(Trace::TlbFlush, times);
    let tp = match reason {
        Reason::RemoteShootdown => Trace::TlbFlushRemoteShootdown,
        Reason::LocalShootdown => Trace::TlbFlushLocalShootdown,
        Reason::LocalMmShootdown => Trace::TlbFlushLocalMmShootdown,
        Reason::RemoteSendIpi => Trace::TlbFlushRemoteSendIpi,
        Reason::RemoteWrongCpu => Trace::TlbFlushRemoteWrongCpu,
    };
    vs.trace_times(tp, times);
}

/// `flush_tlb_mm_range()` issued on `c.current`.
pub(crate) fn flush_tlb_mm_range(
    c: &mut Cpus,
    mm: MmId,
    nr_pages: u64,
    freed: bool,
    vs: &mut VmStat,
) {
    vs.sim.flush_tlb_range += 1;
    let new_tlb_gen = c.inc_mm_tlb_gen(mm);
    let info = FlushInfo {
        mm: Some(mm),
        nr: get_flush_nr(nr_pages),
        freed_tables: freed,
        new_tlb_gen,
        initiating_cpu: c.current,
    };
    let cpu = c.current;
    let mask = c.cpumask(mm);
    if mask & !(1 << cpu) != 0 {
        flush_tlb_multi(c, mask, &info, vs);
    } else if c.cpu[cpu].loaded_mm == Some(mm) {
        flush_tlb_func(c, cpu, &info, vs);
    }
}

/// `flush_tlb_mm_range()` of `nr_pages` pages of `mm` issued `times` more
/// times on `c.current` right after one that left this CPU running `mm`
/// (not lazily) up to date, with no other CPU in `mm_cpumask()`: each
/// takes the local-only path, bumps the generation and finds this CPU
/// exactly one behind, so `flush_tlb_func()` flushes the pages (INVLPG, or
/// everything above the ceiling) and catches up. False, with nothing done,
/// when the state is not that one.
pub(crate) fn flush_tlb_mm_range_again(
    c: &mut Cpus,
    mm: MmId,
    nr_pages: u64,
    times: u64,
    vs: &mut VmStat,
) -> bool {
    let cpu = c.current;
    let here = &c.cpu[cpu];
    if c.cpumask(mm) & !(1 << cpu) != 0
        || here.loaded_mm != Some(mm)
        || here.is_lazy
        || c.local_gen(cpu, mm) != c.mm_gen(mm)
    {
        return false;
    }
    vs.sim.flush_tlb_range += times;
    let mm_gen = c.add_mm_tlb_gen(mm, times);
    if get_flush_nr(nr_pages) == TLB_FLUSH_ALL {
        vs.sim.tlb_flush_all += times;
    } else {
        vs.sim.invlpg += nr_pages * times;
    }
    c.set_local_gen(cpu, mm, mm_gen);
    trace_times(c, cpu, Reason::LocalMmShootdown, times, vs);
    true
}

/// `get_flush_tlb_info()`'s ceiling: above 33 pages, flush everything.
fn get_flush_nr(nr_pages: u64) -> u64 {
    if nr_pages > TLB_SINGLE_PAGE_FLUSH_CEILING {
        TLB_FLUSH_ALL
    } else {
        nr_pages
    }
}

/// `native_flush_tlb_multi()` with `on_each_cpu_cond_mask()`: the local
/// CPU runs the flush directly, every other chosen CPU by IPI.
fn flush_tlb_multi(c: &mut Cpus, mask: u64, info: &FlushInfo, vs: &mut VmStat) {
    vs.sim.tlb_remote_flush += 1;
    trace(c, info.initiating_cpu, Reason::RemoteSendIpi, vs);
    for cpu in 0..c.nr() {
        if mask & (1 << cpu) == 0 {
            continue;
        }
        if !info.freed_tables && !should_flush_tlb(c, cpu, info) {
            continue;
        }
        if cpu != info.initiating_cpu {
            vs.sim.ipi += 1;
        }
        flush_tlb_func(c, cpu, info, vs);
    }
}

/// `should_flush_tlb()`
fn should_flush_tlb(c: &Cpus, cpu: usize, info: &FlushInfo) -> bool {
    if c.cpu[cpu].is_lazy {
        return false;
    }
    match info.mm {
        None => true,
        Some(mm) => c.cpu[cpu].loaded_mm == Some(mm),
    }
}

/// `flush_tlb_func()` on `cpu`.
#[inline(always)]
fn flush_tlb_func(c: &mut Cpus, cpu: usize, f: &FlushInfo, vs: &mut VmStat) {
    let local = cpu == f.initiating_cpu;
    if !local {
        vs.sim.tlb_remote_flush_received += 1;
    }
    let loaded = c.cpu[cpu].loaded_mm;
    if let Some(mm) = f.mm {
        if Some(mm) != loaded {
            c.clear_cpumask(mm, cpu);
            trace(c, cpu, Reason::RemoteWrongCpu, vs);
            return;
        }
    }
    let Some(loaded) = loaded else {
        return;
    };
    if c.cpu[cpu].is_lazy {
        c.switch_mm_irqs_off(cpu, None, vs);
        return;
    }
    let local_gen = c.local_gen(cpu, loaded);
    if f.new_tlb_gen != TLB_GENERATION_INVALID && f.new_tlb_gen <= local_gen {
        return;
    }
    let mm_gen = c.mm_gen(loaded);
    if local_gen != mm_gen {
        if f.nr != TLB_FLUSH_ALL && f.new_tlb_gen == local_gen + 1 && f.new_tlb_gen == mm_gen {
            vs.sim.invlpg += f.nr;
        } else {
            vs.sim.tlb_flush_all += 1;
        }
        c.set_local_gen(cpu, loaded, mm_gen);
    }
    let reason = if !local {
        Reason::RemoteShootdown
    } else if f.mm.is_none() {
        Reason::LocalShootdown
    } else {
        Reason::LocalMmShootdown
    };
    trace(c, cpu, reason, vs);
}

/// `arch_tlbbatch_should_defer()`: another CPU is in `mm_cpumask()`.
pub(crate) fn arch_tlbbatch_should_defer(c: &Cpus, mm: MmId) -> bool {
    c.cpumask(mm) & !(1 << c.current) != 0
}

/// `arch_tlbbatch_add_pending()`
pub(crate) fn arch_tlbbatch_add_pending(c: &mut Cpus, mm: MmId, vs: &mut VmStat) {
    vs.sim.tlbbatch_add += 1;
    c.inc_mm_tlb_gen(mm);
    c.batch_cpumask |= c.cpumask(mm);
}

/// `arch_tlbbatch_flush()`: a full flush with no mm on every CPU of the
/// batch's mask.
pub(crate) fn arch_tlbbatch_flush(c: &mut Cpus, vs: &mut VmStat) {
    vs.sim.tlbbatch_flush += 1;
    let cpu = c.current;
    let info = FlushInfo {
        mm: None,
        nr: TLB_FLUSH_ALL,
        freed_tables: false,
        new_tlb_gen: TLB_GENERATION_INVALID,
        initiating_cpu: cpu,
    };
    let mask = std::mem::take(&mut c.batch_cpumask);
    if mask & !(1 << cpu) != 0 {
        flush_tlb_multi(c, mask, &info, vs);
    } else if mask & (1 << cpu) != 0 {
        flush_tlb_func(c, cpu, &info, vs);
    }
}

impl Cpus {
    /// `switch_mm_irqs_off()` on `cpu` to `next` (None = `init_mm`):
    /// the ASID and TLB-generation bookkeeping of a context switch, which
    /// the model also uses for arm64's check_and_switch_context();
    /// returns whether the switch flushed the TLB (a `tlb:tlb_flush` event
    /// with reason TLB_FLUSH_ON_TASK_SWITCH either way).
    pub(crate) fn switch_mm_irqs_off(
        &mut self,
        cpu: usize,
        next: Option<MmId>,
        vs: &mut VmStat,
    ) -> bool {
        let prev = self.cpu[cpu].loaded_mm;
        let was_lazy = std::mem::take(&mut self.cpu[cpu].is_lazy);
        let need_flush = match next {
            Some(mm) if prev == Some(mm) => {
                // Same mm: a flush only if it went stale while lazy.
                if !was_lazy {
                    return false;
                }
                let gen = self.mm_gen(mm);
                if self.local_gen(cpu, mm) == gen {
                    false
                } else {
                    self.set_local_gen(cpu, mm, gen);
                    true
                }
            }
            Some(mm) => {
                self.grow(mm);
                self.mm_cpumask[mm.0 as usize] |= 1 << cpu;
                // choose_new_asid(): the ASID this mm had here is stale if
                // the mm was flushed since (a new one always is).
                let gen = self.mm_gen(mm);
                let stale = self.cpu[cpu].tlb_gen.get(mm.0 as usize).is_none()
                    || self.local_gen(cpu, mm) < gen;
                self.set_local_gen(cpu, mm, gen);
                stale
            }
            None => true,
        };
        self.cpu[cpu].loaded_mm = next;
        vs.sim.tlb_switch += 1;
        if need_flush {
            vs.sim.tlb_switch_flush += 1;
        }
        need_flush
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CPUs; the workload's task runs `mm` on CPU 0 (CPU 1 too when
    /// `both`), which has seen every flush of it so far.
    fn cpus(mm: MmId, both: bool) -> Cpus {
        let mut c = Cpus::new(2);
        let vs = &mut VmStat::default();
        c.switch_mm_irqs_off(0, Some(mm), vs);
        if both {
            c.cpu[1].ours = true;
            c.switch_mm_irqs_off(1, Some(mm), vs);
        }
        c
    }

    /// `flush_tlb_mm_range_again()` leaves the CPUs and the counts as the
    /// calls one by one would (INVLPG up to the ceiling, full flushes
    /// above), and declines when another CPU is in `mm_cpumask()`.
    #[test]
    fn flushes_again_count_as_the_calls() {
        let mm = MmId(1);
        for nr_pages in [1, 33, 34] {
            let (mut a, mut vs_a) = (cpus(mm, false), VmStat::default());
            let (mut b, mut vs_b) = (a.clone(), VmStat::default());
            flush_tlb_mm_range(&mut a, mm, nr_pages, false, &mut vs_a);
            assert!(flush_tlb_mm_range_again(
                &mut a, mm, nr_pages, 15, &mut vs_a
            ));
            for _ in 0..16 {
                flush_tlb_mm_range(&mut b, mm, nr_pages, false, &mut vs_b);
            }
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{nr_pages} pages");
            assert_eq!(format!("{vs_a:?}"), format!("{vs_b:?}"), "{nr_pages} pages");
        }
        let (mut c, mut vs) = (cpus(mm, true), VmStat::default());
        flush_tlb_mm_range(&mut c, mm, 1, false, &mut vs);
        let before = format!("{c:?} {vs:?}");
        assert!(!flush_tlb_mm_range_again(&mut c, mm, 1, 3, &mut vs));
        assert_eq!(format!("{c:?} {vs:?}"), before, "nothing done");
    }
}

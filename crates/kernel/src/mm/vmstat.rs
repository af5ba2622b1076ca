//! Event counters under the kernel's names: `/proc/vmstat` events
//! (include/linux/vm_event_item.h, mm/vmstat.c: vmstat_text[]), the per-size
//! mTHP statistics (mm/huge_memory.c: enum mthp_stat_item, shown as
//! `hugepages-<size>kB/<stat>`), tracepoint hit counts (`system:event`), and
//! the `sim/` counts of primitive operations only the model can see. The
//! counters and their names are defined in `foliosim_uapi::vmstat`, so
//! that layers without a model can list them; here they are counted.
//!
//! Counters only ever increase, except the gauges (the LRU sizes, the
//! per-size `nr_anon_partially_mapped`); a phase's figures are the
//! difference of two [`VmStat::snapshot`]s.

use std::collections::BTreeMap;

use crate::include::linux::pgtable::HPAGE_PMD_ORDER;
use crate::mm::memcontrol::MemcgId;
use foliosim_uapi::vmstat::{
    mthp_counter, page_alloc_counter, NR_SWAPCACHED, NR_WRITEBACK, NR_ZSPAGES, SIM_KSWAPD_CPU,
    SIM_THROTTLED, SIZE_ORDERS, ZRAM_FAILED_WRITES, ZRAM_MEM_USED, ZRAM_MM_STAT,
};
pub use foliosim_uapi::vmstat::{
    Khugepaged, MemcgEvent, MthpStat, SimStat, Trace, VmEvent, ZswapStat, NR_KHUGEPAGED,
    NR_MEMCG_EVENTS, NR_MTHP_STATS, NR_TRACES, NR_VM_EVENTS, NR_ZSWAP_STATS,
};

const _: () = assert!(*SIZE_ORDERS.end() == HPAGE_PMD_ORDER);

/// The counters of one memory cgroup (root = index 0).
#[derive(Clone, Debug)]
pub struct MemcgStat {
    pub events: [u64; NR_MEMCG_EVENTS],
    /// `lruvec_page_state(NR_LRU_BASE + lru)`: pages on each LRU list.
    pub lru: [u64; crate::include::linux::mm_inline::NR_LRU_LISTS],
    /// `MEMCG_ZSWAP_B` and `MEMCG_ZSWAPPED`: compressed bytes the cgroup's
    /// zswap entries hold, and how many entries (memory.stat `zswap`,
    /// `zswapped`).
    pub zswap_b: u64,
    pub zswapped: u64,
    /// Updates not yet flushed (`memcg_vmstats->stats_updates`): pages
    /// moved on or off the LRU lists since the last flush
    /// (mm/memcg_rstat.rs).
    pub stats_updates: u64,
}

impl Default for MemcgStat {
    fn default() -> Self {
        MemcgStat {
            events: [0; NR_MEMCG_EVENTS],
            lru: Default::default(),
            zswap_b: 0,
            zswapped: 0,
            stats_updates: 0,
        }
    }
}

/// The counts perf keeps per task (it counts a task's events in that
/// task's context): tracepoint hits, `kmem:mm_page_alloc` and the `sim/`
/// primitives (the model's own per-operation counts, priced as the
/// workload's time). A kernel thread's ([`VmStat::enter_kthread`]) are kept
/// apart from the workload's.
#[derive(Clone, Debug)]
pub struct TaskCounts {
    pub page_alloc: [u64; HPAGE_PMD_ORDER as usize + 1],
    pub trace: [u64; NR_TRACES],
    pub sim: SimStat,
    /// The machine's events counted while the thread ran (the machine's
    /// counters keep them too): what of them is the thread's time.
    pub events: [u64; NR_VM_EVENTS],
    /// The machine's events when the thread last started running.
    events_at_enter: [u64; NR_VM_EVENTS],
}

impl Default for TaskCounts {
    fn default() -> Self {
        TaskCounts {
            page_alloc: [0; HPAGE_PMD_ORDER as usize + 1],
            trace: [0; NR_TRACES],
            sim: SimStat::default(),
            events: [0; NR_VM_EVENTS],
            events_at_enter: [0; NR_VM_EVENTS],
        }
    }
}

/// Prices of the counters a task's time is made of (a cost profile's,
/// docs/cost-model.md), in picoseconds, for the model's own use: the
/// modelled CPU time of the workload's task and of kswapd decides when
/// kswapd runs (mm/vmscan.rs: `kswapd_run()`). Empty: every task's time
/// stays zero.
#[derive(Clone, Debug)]
pub struct Prices {
    events: Vec<(usize, u64)>,
    trace: Vec<(usize, u64)>,
    page_alloc: Vec<(usize, u64)>,
    /// Dense, in `SimStat` field order.
    sim: Box<[u64; SimStat::LEN]>,
}

impl Default for Prices {
    fn default() -> Self {
        Prices {
            events: Vec::new(),
            trace: Vec::new(),
            page_alloc: Vec::new(),
            sim: Box::new([0; SimStat::LEN]),
        }
    }
}

impl Prices {
    /// The prices of `costs` (counter name, ns; a counter named twice adds
    /// up, as a CPU cost and a wait). Counters outside the per-task
    /// families and the vmstat events (derived ones) are not a task's own
    /// time here and are left out.
    pub fn new<'a>(costs: impl IntoIterator<Item = (&'a str, f64)>) -> Prices {
        let mut p = Prices::default();
        for (name, ns) in costs {
            let ps = (ns.max(0.0) * 1000.0).round() as u64;
            if let Some(ev) = VmEvent::ALL.iter().find(|e| e.name() == name) {
                p.events.push((*ev as usize, ps));
            } else if let Some(tp) = Trace::ALL.iter().find(|t| t.name() == name) {
                p.trace.push((*tp as usize, ps));
            } else if let Some(i) = SimStat::DOCS.iter().position(|(n, _)| *n == name) {
                p.sim[i] += ps;
            } else if let Some(order) =
                (0..=HPAGE_PMD_ORDER).find(|&o| page_alloc_counter(o) == name)
            {
                p.page_alloc.push((order as usize, ps));
            }
        }
        p
    }
}

/// The tracepoints a kernel thread's TLB flush makes on the workload's
/// CPUs (the IPI's `flush_tlb_func()` runs there, in the workload's
/// context; arch/x86/mm/tlb.rs counts them only where a workload task
/// runs).
const WORKLOAD_CPU_TRACES: [Trace; 6] = [
    Trace::TlbFlush,
    Trace::TlbFlushRemoteShootdown,
    Trace::TlbFlushLocalShootdown,
    Trace::TlbFlushLocalMmShootdown,
    Trace::TlbFlushRemoteSendIpi,
    Trace::TlbFlushRemoteWrongCpu,
];

/// All counters of the simulated machine.
#[derive(Clone, Debug)]
pub struct VmStat {
    pub events: [u64; NR_VM_EVENTS],
    /// `kmem:mm_page_alloc` hits per order (folio allocations).
    pub page_alloc: [u64; HPAGE_PMD_ORDER as usize + 1],
    pub mthp: [[u64; NR_MTHP_STATS]; HPAGE_PMD_ORDER as usize + 1],
    pub trace: [u64; NR_TRACES],
    /// khugepaged's `pages_collapsed` and `full_scans`.
    pub khugepaged: [u64; NR_KHUGEPAGED],
    /// zswap's debugfs statistics.
    pub zswap: [u64; NR_ZSWAP_STATS],
    pub sim: SimStat,
    /// Per memory cgroup, by id (0 = root).
    pub memcg: Vec<MemcgStat>,
    /// The per-task counts of kernel threads (kswapd), not the workload's:
    /// while a kernel thread runs, they and `page_alloc`, `trace` and `sim`
    /// trade places ([`VmStat::enter_kthread`]).
    pub kthread: Box<TaskCounts>,
    /// A kernel thread's counts are in place ([`VmStat::enter_kthread`]).
    in_kthread: bool,
    /// kswapd's modelled CPU time so far, ps (`sim/kswapd_cpu_ns`).
    pub kswapd_cpu_ps: u64,
    /// The workload's time asleep in `throttle_direct_reclaim()`, in
    /// `folio_wait_writeback()` and above memory.high
    /// (`mem_cgroup_handle_over_high()`) (ps): part of its clock
    /// ([`VmStat::task_ps`]).
    pub throttled_ps: u64,
    /// Pages under writeback (`nr_writeback`, mm/page_io.rs).
    pub nr_writeback: u64,
    /// Pages of the zsmalloc pools, zswap's and zram's (`nr_zspages`).
    pub nr_zspages: u64,
    /// Pages in the swap cache (`nr_swapcached`, NR_SWAPCACHE: added in
    /// `__swap_cache_add_folio()`, dropped in `__swap_cache_del_folio()`).
    pub nr_swapcached: u64,
    /// The zram devices' `mm_stat` fields the model keeps, in the order
    /// of [`ZRAM_MM_STAT`]: pages stored, compressed bytes, same-filled
    /// pages, uncompressed pages (drivers/zram.rs).
    pub zram_mm: [u64; ZRAM_MM_STAT.len()],
    /// The pages of the zram devices' pools and the most each ever held,
    /// summed over the devices ([`ZRAM_MEM_USED`], reported in bytes).
    pub zram_mem_used: [u64; ZRAM_MEM_USED.len()],
    /// zram writes that found no page for their pool (drivers/zram.rs),
    /// machine-wide.
    pub zram_write_fail: u64,
}

impl Default for VmStat {
    fn default() -> Self {
        VmStat {
            events: [0; NR_VM_EVENTS],
            page_alloc: [0; HPAGE_PMD_ORDER as usize + 1],
            mthp: [[0; NR_MTHP_STATS]; HPAGE_PMD_ORDER as usize + 1],
            trace: [0; NR_TRACES],
            khugepaged: [0; NR_KHUGEPAGED],
            zswap: [0; NR_ZSWAP_STATS],
            sim: SimStat::default(),
            memcg: vec![MemcgStat::default()],
            kthread: Box::default(),
            in_kthread: false,
            kswapd_cpu_ps: 0,
            throttled_ps: 0,
            nr_writeback: 0,
            nr_zspages: 0,
            nr_swapcached: 0,
            zram_mm: [0; ZRAM_MM_STAT.len()],
            zram_mem_used: [0; ZRAM_MEM_USED.len()],
            zram_write_fail: 0,
        }
    }
}

impl VmStat {
    /// `count_vm_event()`
    #[inline]
    pub fn count_vm_event(&mut self, ev: VmEvent) {
        self.events[ev as usize] += 1;
    }

    /// `count_vm_events()`
    #[inline]
    pub fn count_vm_events(&mut self, ev: VmEvent, n: u64) {
        self.events[ev as usize] += n;
    }

    /// `count_mthp_stat()`: ignored for order 0 and above PMD order, like
    /// mod_mthp_stat().
    #[inline]
    pub fn count_mthp_stat(&mut self, order: u32, stat: MthpStat) {
        if order == 0 || order > HPAGE_PMD_ORDER {
            return;
        }
        self.mthp[order as usize][stat as usize] += 1;
    }

    /// `mod_mthp_stat()` of a gauge (`nr_anon_partially_mapped`): the
    /// level goes up and down; a phase shows its change.
    #[inline]
    pub fn mod_mthp_stat(&mut self, order: u32, stat: MthpStat, delta: i64) {
        if order == 0 || order > HPAGE_PMD_ORDER {
            return;
        }
        let v = &mut self.mthp[order as usize][stat as usize];
        *v = v.checked_add_signed(delta).expect("mTHP gauge below zero");
    }

    /// `count_memcg_events()`
    #[inline]
    pub fn count_memcg_events(&mut self, memcg: MemcgId, ev: MemcgEvent, n: u64) {
        self.memcg[memcg.idx()].events[ev as usize] += n;
    }

    /// A zswap statistic grew.
    #[inline]
    pub fn count_zswap(&mut self, s: ZswapStat, n: u64) {
        self.zswap[s as usize] += n;
    }

    /// A zswap gauge fell.
    #[inline]
    pub fn uncount_zswap(&mut self, s: ZswapStat, n: u64) {
        self.zswap[s as usize] -= n;
    }

    /// Count the per-task events from now on for a kernel thread (kswapd)
    /// instead of the workload, until [`VmStat::leave_kthread`].
    pub fn enter_kthread(&mut self) {
        self.swap_task_counts();
        self.kthread.events_at_enter = self.events;
        self.in_kthread = true;
    }

    /// The workload's task runs again. The TLB flushes the thread's IPIs
    /// made on the workload's CPUs (traced there, in the workload's
    /// context, and done on its time) go to the workload.
    pub fn leave_kthread(&mut self) {
        self.swap_task_counts();
        self.in_kthread = false;
        let k = &mut *self.kthread;
        for ((ran, now), then) in k.events.iter_mut().zip(self.events).zip(k.events_at_enter) {
            *ran += now - then;
        }
        for tp in WORKLOAD_CPU_TRACES {
            self.trace[tp as usize] += std::mem::take(&mut k.trace[tp as usize]);
        }
        self.sim.tlb_remote_flush_received += std::mem::take(&mut k.sim.tlb_remote_flush_received);
        self.sim.invlpg += std::mem::take(&mut k.sim.invlpg);
        self.sim.tlb_flush_all += std::mem::take(&mut k.sim.tlb_flush_all);
    }

    /// Whether a kernel thread's counts are in place.
    pub fn in_kthread(&self) -> bool {
        self.in_kthread
    }

    /// The modelled CPU time (ps, at `p`'s prices) of the task running
    /// now: the workload's, or between [`VmStat::enter_kthread`] and
    /// [`VmStat::leave_kthread`] the kernel thread's. Its own per-task
    /// counts and its share of the machine's events.
    pub fn task_ps(&self, p: &Prices) -> u64 {
        let k = &*self.kthread;
        let mut ps = self.sim.dot(&p.sim);
        // The task's share of each event, with the branch on whose task
        // runs taken once rather than per event.
        if self.in_kthread {
            for &(i, c) in &p.events {
                let n = k.events[i] + self.events[i] - k.events_at_enter[i];
                ps = ps.wrapping_add(n.wrapping_mul(c));
            }
        } else {
            ps = ps.wrapping_add(self.throttled_ps);
            for &(i, c) in &p.events {
                ps = ps.wrapping_add((self.events[i] - k.events[i]).wrapping_mul(c));
            }
        }
        for &(i, c) in &p.trace {
            ps = ps.wrapping_add(self.trace[i].wrapping_mul(c));
        }
        for &(i, c) in &p.page_alloc {
            ps = ps.wrapping_add(self.page_alloc[i].wrapping_mul(c));
        }
        ps
    }

    fn swap_task_counts(&mut self) {
        let k = &mut *self.kthread;
        std::mem::swap(&mut self.page_alloc, &mut k.page_alloc);
        std::mem::swap(&mut self.trace, &mut k.trace);
        std::mem::swap(&mut self.sim, &mut k.sim);
    }

    /// A tracepoint fired.
    #[inline]
    pub fn trace(&mut self, tp: Trace) {
        self.trace_times(tp, 1);
    }

    /// A tracepoint fired `times` times.
    #[inline]
    pub fn trace_times(&mut self, tp: Trace, times: u64) {
        self.trace[tp as usize] += times;
    }

    /// Every counter under its output name, in a stable order.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for ev in VmEvent::ALL {
            out.insert(ev.name().to_string(), self.events[ev as usize]);
        }
        for order in SIZE_ORDERS {
            for st in MthpStat::ALL {
                let key = mthp_counter(order, st);
                out.insert(key, self.mthp[order as usize][st as usize]);
            }
        }
        for order in SIZE_ORDERS {
            out.insert(page_alloc_counter(order), self.page_alloc[order as usize]);
        }
        for tp in Trace::ALL {
            out.insert(tp.name().to_string(), self.trace[tp as usize]);
        }
        for k in Khugepaged::ALL {
            out.insert(k.name().to_string(), self.khugepaged[k as usize]);
        }
        for z in ZswapStat::ALL {
            out.insert(z.name().to_string(), self.zswap[z as usize]);
        }
        self.sim.for_each(|k, v| {
            out.insert(k.to_string(), v);
        });
        // kswapd's own counts of the functions a guest probes in its
        // kswapd threads (`kswapd/kfunc/...`).
        debug_assert!(
            !self.in_kthread,
            "a snapshot is taken in the workload's context"
        );
        let kswapd = foliosim_uapi::counters::kswapd_model_counters();
        self.kthread.sim.for_each(|k, v| {
            if kswapd.contains(&k) {
                out.insert(format!("{}{k}", foliosim_uapi::counters::KSWAPD_PREFIX), v);
            }
        });
        out.insert(
            SIM_KSWAPD_CPU.0.to_string(),
            (self.kswapd_cpu_ps + 500) / 1000,
        );
        out.insert(
            SIM_THROTTLED.0.to_string(),
            (self.throttled_ps + 500) / 1000,
        );
        self.snapshot_lru(&mut out);
        out.insert(NR_WRITEBACK.to_string(), self.nr_writeback);
        out.insert(NR_ZSPAGES.to_string(), self.nr_zspages);
        out.insert(NR_SWAPCACHED.to_string(), self.nr_swapcached);
        out.insert(ZRAM_FAILED_WRITES.0.to_string(), self.zram_write_fail);
        for ((name, _), v) in ZRAM_MM_STAT.iter().zip(self.zram_mm) {
            out.insert(name.to_string(), v);
        }
        for ((name, _), v) in ZRAM_MEM_USED.iter().zip(self.zram_mem_used) {
            out.insert(
                name.to_string(),
                v * crate::include::linux::pgtable::PAGE_SIZE,
            );
        }
        out
    }

    /// The node's LRU sizes (`nr_inactive_anon` ... in /proc/vmstat, pages)
    /// and, per non-root cgroup `n` (0 = the first `memcg` step's),
    /// `memcg/<n>/<field>` as memory.stat shows them (LRU sizes in bytes).
    fn snapshot_lru(&self, out: &mut BTreeMap<String, u64>) {
        use crate::include::linux::mm_inline::LRU_NAMES;
        for (lru, name) in LRU_NAMES.iter().enumerate() {
            let total = self.memcg.iter().map(|m| m.lru[lru]).sum();
            out.insert(format!("nr_{name}"), total);
        }
        for (id, m) in self.memcg.iter().enumerate().skip(1) {
            let pre = format!("memcg/{}/", id - 1);
            for ev in MemcgEvent::ALL {
                out.insert(format!("{pre}{}", ev.name()), m.events[ev as usize]);
            }
            let sum = |r: std::ops::Range<usize>| r.map(|i| m.events[i]).sum::<u64>();
            out.insert(format!("{pre}pgscan"), sum(0..4));
            out.insert(format!("{pre}pgsteal"), sum(4..8));
            for (name, pages) in LRU_NAMES.iter().zip(m.lru) {
                let bytes = pages * crate::include::linux::pgtable::PAGE_SIZE;
                out.insert(format!("{pre}{name}"), bytes);
            }
            out.insert(format!("{pre}zswap"), m.zswap_b);
            // memory.stat shows MEMCG_ZSWAPPED in bytes, as it shows pages
            // (memcg_page_state_output_unit()).
            let page = crate::include::linux::pgtable::PAGE_SIZE;
            out.insert(format!("{pre}zswapped"), m.zswapped * page);
        }
    }
}

#[cfg(test)]
mod registry {
    use super::{Trace, VmStat};
    use foliosim_uapi::counters::{self, CounterKind, MM_PAGE_ALLOC, TLB_FLUSH, TLB_FLUSH_REASONS};

    /// The model's tracepoint counters carry the names of the counter
    /// registry, so the engines' reports line up.
    #[test]
    fn tracepoint_names_are_the_registrys() {
        for tp in counters::TRACEPOINTS {
            if tp != MM_PAGE_ALLOC {
                assert!(
                    Trace::ALL.iter().any(|t| t.name() == tp),
                    "the model does not count {tp}"
                );
            }
        }
        for t in Trace::ALL {
            let name = t.name();
            assert_eq!(counters::kind(name), CounterKind::PerProcess, "{name}");
            if let Some(reason) = name
                .strip_prefix(TLB_FLUSH)
                .and_then(|r| r.strip_prefix('/'))
            {
                assert!(
                    TLB_FLUSH_REASONS.iter().any(|(_, r)| *r == reason),
                    "{name} is not a tlb_flush_reason"
                );
            }
        }
    }

    /// The names listed without a model are exactly those the model's
    /// counter snapshot carries.
    #[test]
    fn listed_names_are_the_snapshots() {
        let snapshot: Vec<String> = VmStat::default().snapshot().into_keys().collect();
        assert_eq!(foliosim_uapi::vmstat::model_counter_names(), snapshot);
    }
}

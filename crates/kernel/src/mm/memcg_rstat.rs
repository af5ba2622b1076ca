//! The flushed statistics of memory cgroups (mm/memcontrol.c:
//! `memcg_rstat_updated()`, `mem_cgroup_flush_stats()`,
//! `mem_cgroup_flush_stats_ratelimited()`, `flush_memcg_stats_dwork()`,
//! `lruvec_page_state()`), Linux 6.18.
//!
//! A cgroup's statistics are kept per CPU and summed into the cgroup
//! (rstat) only when they are flushed. What reclaim reads of a cgroup's
//! lruvec through `lruvec_page_state()` is therefore the sum at the last
//! flush: the LRU sizes of `inactive_is_low()`, `lru_note_cost()`'s decay
//! threshold, `prepare_scan_control()`'s inactive-file and refault checks,
//! and the workingset size a refault is measured against. The root's
//! lruvec is read the same way in the kernel, but there the root holds the
//! whole machine, whose other pages (a host's page cache of gigabytes) the
//! model does not have: the model reads the root's sizes exact, which
//! stands closer to a machine the workload does not fill than a flushed
//! copy of the model's pages alone would. What reclaim scans
//! (`lruvec_lru_size()`, from the per-zone LRU sizes) and the node's own
//! counters (`node_page_state()`) are always exact.
//!
//! Flushes happen:
//! * every `FLUSH_TIME` (2 s) for the whole tree, by a periodic worker
//!   (`flush_memcg_stats_dwork()`). The model flushes when the running
//!   task's modelled clock has passed the next period, checked where
//!   reclaim starts a pass (`prepare_scan_control()`). The run begins
//!   flushed; the worker first runs `machine.memcg_flush_ms` into it (by
//!   default a full period), since where it falls on a real machine is
//!   chance;
//! * when a cgroup's `memory.stat` is read and more than
//!   `MEMCG_CHARGE_BATCH` updates per online CPU are pending
//!   (`mem_cgroup_flush_stats()`). The native and guest engines read it at
//!   every phase boundary, so the model does there too
//!   ([`Kernel::memcg_read_stats`]);
//! * at each zswap store of a cgroup with a `memory.zswap.max`, forced
//!   (`obj_cgroup_may_zswap()`), and when the zswap shrinker counts a
//!   cgroup's entries with enough updates pending (`zswap_shrinker_count()`).
//!
//! Approximated: the pending updates are the pages moved on and off the
//! cgroup's LRU lists (the kernel counts every statistic's update, events
//! included, and keeps up to 63 per CPU uncounted); where the periodic
//! worker runs relative to the workload is unknown on a real machine, and
//! the model's clock is the cost profile's, not a TCG guest's, whose
//! seconds hold far less work.

use crate::arch::Arch;
use crate::include::linux::mm_inline::NR_LRU_LISTS;
use crate::mm::lru_gen::{HZ, PS_PER_JIFFY};
use crate::mm::memcontrol::{MemcgId, MEMCG_CHARGE_BATCH, ROOT_MEM_CGROUP};
use crate::mm::vmstat::MemcgEvent;
use crate::Kernel;

/// `FLUSH_TIME`: the periodic worker's interval, in picoseconds.
const FLUSH_TIME_PS: u64 = 2 * HZ * PS_PER_JIFFY;

/// What `lruvec_page_state()` reads of one cgroup's lruvec: its own and
/// its descendants' statistics as of the last flush that reached it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FlushedStats {
    /// `NR_LRU_BASE + lru`: pages on each LRU list.
    pub(crate) lru: [u64; NR_LRU_LISTS],
    /// `WORKINGSET_ACTIVATE_ANON`, `WORKINGSET_ACTIVATE_FILE`.
    pub(crate) workingset_activate: [u64; 2],
}

/// The periodic flusher's state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StatsFlush {
    /// The modelled time (ps) at which the periodic worker runs next.
    next_ps: u64,
}

impl<A: Arch> Kernel<A> {
    /// The statistics of a cgroup's lruvec now. The model's cgroups are
    /// children of the root, so a cgroup's own are its hierarchical ones.
    fn memcg_current_stats(&self, memcg: MemcgId) -> FlushedStats {
        let m = &self.vmstat.memcg[memcg.idx()];
        FlushedStats {
            lru: m.lru,
            workingset_activate: [
                m.events[MemcgEvent::WorkingsetActivateAnon as usize],
                m.events[MemcgEvent::WorkingsetActivateFile as usize],
            ],
        }
    }

    /// The statistics of the root's lruvec now: every cgroup's summed, as
    /// `node_page_state()` has them for the one node.
    fn root_current_stats(&self) -> FlushedStats {
        let mut sum = FlushedStats::default();
        for i in 0..self.vmstat.memcg.len() {
            let s = self.memcg_current_stats(MemcgId(i as u16));
            for (a, b) in sum.lru.iter_mut().zip(s.lru) {
                *a += b;
            }
            for (a, b) in sum
                .workingset_activate
                .iter_mut()
                .zip(s.workingset_activate)
            {
                *a += b;
            }
        }
        sum
    }

    /// `css_rstat_flush()` of `memcg`'s subtree: the root's flush reaches
    /// every cgroup, a child's only itself. (The root's own flushed copy is
    /// never read: see the module documentation.)
    fn memcg_rstat_flush(&mut self, memcg: MemcgId) {
        let cgroups = if memcg == ROOT_MEM_CGROUP {
            1..self.memcg.memcgs.len()
        } else {
            memcg.idx()..memcg.idx() + 1
        };
        for i in cgroups {
            let stats = self.memcg_current_stats(MemcgId(i as u16));
            self.memcg.memcgs[i].lruvec.flushed = stats;
            self.vmstat.memcg[i].stats_updates = 0;
        }
        if memcg == ROOT_MEM_CGROUP {
            self.vmstat.memcg[0].stats_updates = 0;
        }
    }

    /// `__mem_cgroup_flush_stats()`: flush `memcg`'s subtree if forced or
    /// if more than `MEMCG_CHARGE_BATCH` updates per online CPU are pending
    /// (`memcg_vmstats_needs_flush()`).
    pub(crate) fn mem_cgroup_flush_stats(&mut self, memcg: MemcgId, force: bool) {
        let pending = if memcg == ROOT_MEM_CGROUP {
            self.vmstat.memcg.iter().map(|m| m.stats_updates).sum()
        } else {
            self.vmstat.memcg[memcg.idx()].stats_updates
        };
        if force || pending > MEMCG_CHARGE_BATCH * self.cpus.nr() as u64 {
            self.memcg_rstat_flush(memcg);
        }
    }

    /// `flush_memcg_stats_dwork()`, when its period has passed by the
    /// running task's clock: the whole tree is flushed, and the next run is
    /// `FLUSH_TIME` later. Reclaim looks before it reads the flushed
    /// sizes (`prepare_scan_control()`).
    pub(crate) fn flush_memcg_stats_dwork_due(&mut self) {
        // Without a cgroup no flushed copy is read (the root's is exact):
        // the clock need not be priced.
        if self.memcg.memcgs.len() == 1 {
            return;
        }
        let now = self.io_now();
        if now < self.memcg.stats_flush.next_ps {
            return;
        }
        self.memcg_rstat_flush(ROOT_MEM_CGROUP);
        let periods = (now - self.memcg.stats_flush.next_ps) / FLUSH_TIME_PS + 1;
        self.memcg.stats_flush.next_ps += periods * FLUSH_TIME_PS;
    }

    /// The run starts flushed, and the periodic worker runs next
    /// `machine.memcg_flush_ms` of the workload's time later (by default
    /// `FLUSH_TIME`: the run starts just after the worker ran).
    pub fn memcg_stats_start(&mut self) {
        self.memcg_rstat_flush(ROOT_MEM_CGROUP);
        let first = self.cfg.machine_memcg_flush_ms * (PS_PER_JIFFY * HZ / 1000);
        self.memcg.stats_flush.next_ps = self.io_now() + first;
    }

    /// A read of every cgroup's `memory.stat` (not the root's), as the
    /// native and guest engines make at each phase boundary
    /// (`memory_stat_show()` → `mem_cgroup_flush_stats()`).
    pub fn memcg_read_stats(&mut self) {
        for i in 1..self.memcg.memcgs.len() {
            self.mem_cgroup_flush_stats(MemcgId(i as u16), false);
        }
    }

    /// `lruvec_page_state(NR_LRU_BASE + lru)` for every list of `memcg`'s
    /// lruvec: a cgroup's flushed sizes; the root's exact (see the module
    /// documentation).
    #[inline]
    pub(crate) fn lru_state(&self, memcg: MemcgId) -> [u64; NR_LRU_LISTS] {
        if memcg == ROOT_MEM_CGROUP {
            return self.node_lru_state();
        }
        self.memcg.memcgs[memcg.idx()].lruvec.flushed.lru
    }

    /// `lruvec_page_state(WORKINGSET_ACTIVATE_ANON / _FILE)` of `memcg`'s
    /// lruvec: a cgroup's flushed counts; the root's exact.
    #[inline]
    pub(crate) fn workingset_activations(&self, memcg: MemcgId) -> [u64; 2] {
        if memcg == ROOT_MEM_CGROUP {
            return self.root_current_stats().workingset_activate;
        }
        self.memcg.memcgs[memcg.idx()]
            .lruvec
            .flushed
            .workingset_activate
    }

    /// `node_page_state(NR_LRU_BASE + lru)` for every list: the node's
    /// exact LRU sizes.
    pub(crate) fn node_lru_state(&self) -> [u64; NR_LRU_LISTS] {
        self.root_current_stats().lru
    }
}

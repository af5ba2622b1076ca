//! Swap writes in flight (mm/page_io.c): `__swap_writepage()` submits a
//! folio's write to an asynchronous device (a swap file or a block
//! device; zram writes synchronously) and returns with the folio under
//! writeback; `end_swap_bio_write()` → `folio_end_writeback()` ends it when
//! the device has written it, rotating a folio reclaim wrote (PG_reclaim)
//! to its list's tail (`folio_rotate_reclaimable()`, mm/swap.rs).
//!
//! The device: with `machine.swap_write_rate` set, each asynchronous swap
//! device writes that many bytes per second of modelled time, one write
//! after another in submission order; with `machine.swap_write_latency_ns`
//! set, each write takes that long on top, overlapping the next ones (the
//! device's service time, which occupies no bandwidth). A write submitted
//! at time t starts at s = max(t, the end of the transfer of the device's
//! previous write), occupies the device until s + its bytes / rate, and
//! ends at s + its bytes / rate + the latency. Writes end when a clock
//! passes their time: the workload's before each of its allocations
//! (`kswapd_run()`), kswapd's before each of its steps, and the reclaiming
//! task's before it puts an isolated batch back on the LRU: a write that
//! ends while its folio is off the LRU clears PG_reclaim without the
//! rotation (`folio_rotate_reclaimable()` needs PG_lru). A task that must
//! wait for a write (`folio_wait_writeback()`) ends it and sleeps until
//! its time. With the rate and the latency at 0 (the default) there is no
//! device queue: a write ends as soon as reclaim has put its folio back on
//! the LRU (mm/vmscan.rs).
//!
//! Not modelled: request merging and queue depth (the rate is the
//! device's throughput at any depth), write errors, and reclaim's
//! writeback throttling (`reclaim_throttle()`: kswapd's `nr_immediate`
//! stall and `LRUVEC_CONGESTED`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::arch::Arch;
use crate::include::linux::pgtable::{Pfn, PAGE_SIZE};
use crate::Kernel;

/// Picoseconds in a second.
const PS_PER_S: u128 = 1_000_000_000_000;

/// The asynchronous swap devices' queues and the folios under writeback.
#[derive(Debug, Default)]
pub(crate) struct SwapIo {
    /// Modelled time to transfer one page (ps).
    page_ps: u64,
    /// Each write's latency beyond its transfer (ps).
    latency_ps: u64,
    /// Per swap device: when the transfer of its last queued write ends
    /// (ps).
    busy_until: Vec<u64>,
    /// Writes in flight, earliest end first: (end ps, folio).
    inflight: BinaryHeap<Reverse<(u64, u32)>>,
    /// Folios under writeback (`PG_writeback`): a set, as the model's page
    /// flags have no bit left for it.
    writeback: std::collections::HashSet<Pfn, foldhash::fast::FixedState>,
}

impl SwapIo {
    /// The queues of `devices` swap devices writing `rate` bytes per second
    /// (0: no limit), each write ending `latency_ns` after its transfer.
    pub(crate) fn new(rate: u64, latency_ns: u64, devices: usize) -> Self {
        let page_ps = if rate == 0 {
            0
        } else {
            (PAGE_SIZE as u128 * PS_PER_S / rate as u128).clamp(1, u64::MAX as u128) as u64
        };
        SwapIo {
            page_ps,
            latency_ps: latency_ns.saturating_mul(1000),
            busy_until: vec![0; devices],
            ..Default::default()
        }
    }

    /// Whether writes queue on their device (a rate or a latency is set).
    pub(crate) fn queued(&self) -> bool {
        self.page_ps != 0 || self.latency_ps != 0
    }

    /// Whether a write is in flight.
    pub(crate) fn in_flight(&self) -> bool {
        !self.inflight.is_empty()
    }
}

impl<A: Arch> Kernel<A> {
    /// `folio_test_writeback()`
    #[inline]
    pub(crate) fn folio_test_writeback(&self, folio: Pfn) -> bool {
        !self.swap_io.writeback.is_empty() && self.swap_io.writeback.contains(&folio)
    }

    /// The clock of the running task: kswapd's while it runs, else the
    /// workload's.
    pub(crate) fn io_now(&self) -> u64 {
        if self.vmstat.in_kthread() {
            self.kswapd_clock()
        } else {
            self.vmstat.task_ps(&self.cfg.prices)
        }
    }

    /// `swap_writepage_bdev_async()`: queue the write of `folio` to swap
    /// device `ty` and set PG_writeback. Only with a rate or a latency set.
    pub(crate) fn swap_io_submit(&mut self, folio: Pfn, ty: usize) {
        debug_assert!(self.swap_io.queued());
        let now = self.io_now();
        let nr = self.mem.folio_nr_pages(folio);
        let io = &mut self.swap_io;
        let start = io.busy_until[ty].max(now);
        io.busy_until[ty] = start + nr * io.page_ps;
        let end = io.busy_until[ty] + io.latency_ps;
        io.inflight.push(Reverse((end, folio.0)));
        io.writeback.insert(folio);
        self.vmstat.nr_writeback += nr;
    }

    /// `end_swap_bio_write()` of every write that has ended by the running
    /// task's clock.
    pub(crate) fn swap_io_complete(&mut self) {
        if self.swap_io.in_flight() {
            let now = self.io_now();
            self.swap_io_complete_at(now);
        }
    }

    /// `end_swap_bio_write()` of every write that has ended by `now` (ps).
    /// True if one did.
    pub(crate) fn swap_io_complete_at(&mut self, now: u64) -> bool {
        let mut ended = false;
        while let Some(&Reverse((end, pfn))) = self.swap_io.inflight.peek() {
            if end > now {
                break;
            }
            self.swap_io.inflight.pop();
            self.folio_end_writeback(Pfn(pfn));
            ended = true;
        }
        ended
    }

    /// `folio_wait_writeback()`: the task sleeps until the folio's write
    /// has ended (ending it now, and every write before it on the device).
    pub(crate) fn folio_wait_writeback(&mut self, folio: Pfn) {
        if !self.folio_test_writeback(folio) {
            return;
        }
        let now = self.io_now();
        let end = self
            .swap_io
            .inflight
            .iter()
            .find(|Reverse((_, p))| *p == folio.0)
            .map(|Reverse((end, _))| *end)
            .expect("a folio under writeback has a write in flight");
        while let Some(Reverse((e, pfn))) = self.swap_io.inflight.pop() {
            self.folio_end_writeback(Pfn(pfn));
            if pfn == folio.0 {
                debug_assert_eq!(e, end);
                break;
            }
        }
        if !self.vmstat.in_kthread() {
            self.vmstat.throttled_ps += end.saturating_sub(now);
        }
    }

    /// `folio_end_writeback()`: clear PG_writeback, then rotate a folio
    /// reclaim wrote.
    fn folio_end_writeback(&mut self, folio: Pfn) {
        let removed = self.swap_io.writeback.remove(&folio);
        debug_assert!(removed, "pfn {} was not under writeback", folio.0);
        self.vmstat.nr_writeback -= self.mem.folio_nr_pages(folio);
        self.folio_end_writeback_reclaim(folio);
    }
}

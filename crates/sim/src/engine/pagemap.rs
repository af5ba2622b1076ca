//! The `op = "pagemap"` step: read(2) loops over `/proc/self/pagemap`
//! (fs/proc/task_mmu.rs), the decoded summary, PAGEMAP_SCAN and
//! kpageflags counts, reported in the open phase.

use foliosim_kernel::fs::proc::task_mmu::{pagemap_step_counters, PM_PFRAME_MASK, PM_PRESENT};
use foliosim_kernel::include::linux::pgtable::{Pfn, PAGE_SIZE};
use foliosim_kernel::{Arch, MmId};

use super::{kerr, Engine};
use crate::SimError;

impl<A: Arch> Engine<'_, A> {
    /// Run pagemap step `idx` in `mm` and record its results in the open
    /// phase (outside a phase they are not reported, like any counter).
    pub(super) fn pagemap(&mut self, mm: MmId, idx: u32, at: &str) -> Result<(), SimError> {
        let wl = self.wl;
        let decl = &wl.pagemaps[idx as usize];
        let p = &decl.step;
        let (start, len) = self.range(decl.region, decl.offset, decl.len);
        let mut entries = Vec::with_capacity((len / PAGE_SIZE) as usize);
        self.k
            .pagemap_read_range(mm, start, len, p.read_size, p.privileged, &mut entries)
            .map_err(|e| kerr(at, e))?;
        let scan: Option<Vec<(u64, u64, u64)>> = p.scan.then(|| {
            self.k
                .pagemap_scan(mm, start, start + len)
                .into_iter()
                .map(|r| (r.start, r.end, r.categories))
                .collect()
        });
        let flags: Option<Vec<u64>> = p.kpageflags.then(|| {
            entries
                .iter()
                .filter(|&&e| e & PM_PRESENT != 0)
                .map(|&e| self.k.stable_page_flags(Pfn((e & PM_PFRAME_MASK) as u32)))
                .collect()
        });
        let counters =
            pagemap_step_counters(p.read_size, &entries, scan.as_deref(), flags.as_deref());
        if let Some(open) = self.phase.as_mut() {
            for (k, v) in counters {
                open.pagemap
                    .insert(format!("pagemap/{}/{k}", p.name), v as i64);
            }
            if p.raw {
                open.pagemap_raw.insert(p.name.clone(), entries);
            }
        }
        Ok(())
    }
}

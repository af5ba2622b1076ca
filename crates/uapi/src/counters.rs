//! Counter names and who can observe them.
//!
//! Every counter a report carries is named as the kernel's own tools name
//! it, so that the engines' reports line up:
//! * `/proc/vmstat` fields (`pgfault`, `pswpout`, ...) and the per-size
//!   mTHP stats (`hugepages-64kB/anon_fault_alloc`): system-wide;
//! * `minor-faults` / `major-faults` (getrusage of the workload's
//!   processes), tracepoints counted for the workload (`tlb:tlb_flush`,
//!   with per-reason and per-order parts after a `/`), pagemap step
//!   results (`pagemap/<step>/...`) and folio histograms
//!   (`folios/<region>/<size>`): per process;
//! * `kfunc/<function>`: calls of a kernel function by the workload's
//!   processes, counted with kprobe events in a `foliosim vm` guest
//!   ([`KFUNCS`]): per process;
//! * `sim/...`: operations only the model can count.

/// Who can observe a counter, which decides how a native measurement of
/// it is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterKind {
    /// Counted for the workload's own processes: a native run measures
    /// exactly the scenario's events.
    PerProcess,
    /// Counted for the whole machine: other processes move it too.
    SystemWide,
    /// Only the model can count it.
    ModelOnly,
}

/// `exceptions:page_fault_user` (x86 only).
pub const PAGE_FAULT_USER: &str = "exceptions:page_fault_user";
/// `filemap:mm_filemap_map_pages`
pub const FILEMAP_MAP_PAGES: &str = "filemap:mm_filemap_map_pages";
/// `filemap:mm_filemap_fault`
pub const FILEMAP_FAULT: &str = "filemap:mm_filemap_fault";
/// `filemap:mm_filemap_add_to_page_cache`
pub const FILEMAP_ADD_TO_PAGE_CACHE: &str = "filemap:mm_filemap_add_to_page_cache";
/// `tlb:tlb_flush` (x86 only), with a part per reason.
pub const TLB_FLUSH: &str = "tlb:tlb_flush";
/// `vmscan:mm_vmscan_reclaim_pages`
pub const VMSCAN_RECLAIM_PAGES: &str = "vmscan:mm_vmscan_reclaim_pages";
/// `vmscan:mm_vmscan_write_folio`
pub const VMSCAN_WRITE_FOLIO: &str = "vmscan:mm_vmscan_write_folio";
/// `kmem:mm_page_alloc`, counted per order (`kmem:mm_page_alloc/order=N`).
pub const MM_PAGE_ALLOC: &str = "kmem:mm_page_alloc";
/// `kmem:mm_page_alloc_extfrag`: an allocation served from a pageblock of
/// another migratetype (`__rmqueue_claim()`, `__rmqueue_steal()`).
pub const MM_PAGE_ALLOC_EXTFRAG: &str = "kmem:mm_page_alloc_extfrag";
/// `huge_memory:mm_khugepaged_scan_pmd`: one per PMD range
/// `hpage_collapse_scan_pmd()` looked at (khugepaged's hits are in its own
/// thread, not the workload's).
pub const KHUGEPAGED_SCAN_PMD: &str = "huge_memory:mm_khugepaged_scan_pmd";
/// `huge_memory:mm_collapse_huge_page`: one per `collapse_huge_page()`.
pub const COLLAPSE_HUGE_PAGE: &str = "huge_memory:mm_collapse_huge_page";
/// `huge_memory:mm_khugepaged_scan_file`: one per PMD range of a file or
/// shmem mapping `hpage_collapse_scan_file()` looked at.
pub const KHUGEPAGED_SCAN_FILE: &str = "huge_memory:mm_khugepaged_scan_file";
/// `huge_memory:mm_khugepaged_collapse_file`: one per `collapse_file()`.
pub const KHUGEPAGED_COLLAPSE_FILE: &str = "huge_memory:mm_khugepaged_collapse_file";

/// The tracepoints the native engine counts for the workload, in the order
/// it opens them.
pub const TRACEPOINTS: [&str; 13] = [
    PAGE_FAULT_USER,
    FILEMAP_MAP_PAGES,
    FILEMAP_FAULT,
    FILEMAP_ADD_TO_PAGE_CACHE,
    TLB_FLUSH,
    VMSCAN_RECLAIM_PAGES,
    VMSCAN_WRITE_FOLIO,
    MM_PAGE_ALLOC,
    MM_PAGE_ALLOC_EXTFRAG,
    KHUGEPAGED_SCAN_PMD,
    COLLAPSE_HUGE_PAGE,
    KHUGEPAGED_SCAN_FILE,
    KHUGEPAGED_COLLAPSE_FILE,
];

/// The tracepoints only x86 has: on arm64 they are absent, never 0.
pub const X86_ONLY: [&str; 2] = [PAGE_FAULT_USER, TLB_FLUSH];

/// `enum tlb_flush_reason` (include/linux/mm_types.h) with the part names
/// `tlb:tlb_flush/<name>`.
pub const TLB_FLUSH_REASONS: [(u32, &str); 6] = [
    (0, "task_switch"),
    (1, "remote_shootdown"),
    (2, "local_shootdown"),
    (3, "local_mm_shootdown"),
    (4, "remote_ipi_send"),
    (5, "remote_wrong_cpu"),
];

/// A kernel function a `foliosim vm` guest counts: a kprobe event on
/// `function` (in the event group `foliosim_kfunc`, named `event`),
/// counted with perf for the workload's processes like the tracepoints,
/// and reported as `kfunc/<name>`.
#[derive(Clone, Copy, Debug)]
pub struct Kfunc {
    /// The counter's name after `kfunc/`.
    pub name: &'static str,
    /// The kprobe event's name (an identifier).
    pub event: &'static str,
    /// The probed function.
    pub function: &'static str,
    /// Fetch arguments of the probe (`name=$argN:type`), for `filter`.
    pub fetch: &'static str,
    /// A perf filter on the fetched arguments ("" for every call).
    pub filter: &'static str,
    /// The model counters whose sum is the number of counted calls
    /// (empty: reported, not compared).
    pub model: &'static [&'static str],
}

const fn kf(name: &'static str, model: &'static [&'static str]) -> Kfunc {
    Kfunc {
        name,
        event: name,
        function: name,
        fetch: "",
        filter: "",
        model,
    }
}

/// The kernel functions a guest counts. A function the guest kernel cannot
/// probe (another architecture's, or inlined everywhere) is reported
/// missing. Only functions whose every call the probe sees are compared:
/// a function also inlined into callers of its own file
/// (`__contpte_try_unfold()` into `contpte_ptep_set_access_flags()`) is
/// counted from a function it always calls instead.
pub const KFUNCS: &[Kfunc] = &[
    // arm64 contpte (arch/arm64/mm/contpte.c): every fold and every unfold
    // repaints the block through contpte_convert(), once; its `pte`
    // argument carries PTE_CONT when it folds.
    kf(
        "contpte_convert",
        &["sim/contpte_fold", "sim/contpte_unfold"],
    ),
    Kfunc {
        name: "contpte_convert/fold",
        event: "contpte_convert_fold",
        function: "contpte_convert",
        fetch: "pte=$arg4:u64",
        filter: FOLD_FILTER,
        model: &["sim/contpte_fold"],
    },
    kf("__contpte_try_fold", &[]),
    // The rmap walks of reclaim (mm/rmap.c): one rmap_one call per VMA
    // the walk lets through.
    kf("folio_referenced_one", &["sim/folio_referenced_one"]),
    kf("try_to_unmap_one", &["sim/try_to_unmap_one"]),
    kf("folio_referenced", &[]),
    // Swap slots (mm/swapfile.c).
    kf("folio_alloc_swap", &["sim/swap_alloc"]),
    // Its failures: the return probe sees an error.
    Kfunc {
        name: "folio_alloc_swap/failed",
        event: "folio_alloc_swap_failed",
        function: "folio_alloc_swap%return",
        fetch: "ret=$retval:s32",
        filter: "ret != 0",
        model: &["sim/swap_alloc_fail"],
    },
    // A cluster's swap table (swap_cluster_alloc_table(), 6.18), and the
    // allocations of one the page allocator refused (a NULL return).
    kf("swap_table_alloc", &[]),
    Kfunc {
        name: "swap_table_alloc/failed",
        event: "swap_table_alloc_failed",
        function: "swap_table_alloc%return",
        fetch: "ret=$retval:u64",
        filter: "ret == 0",
        model: &[],
    },
    // Reclaim (mm/vmscan.c): cgroup reclaims and the batches they free.
    kf(
        "try_to_free_mem_cgroup_pages",
        &["vmscan:mm_vmscan_memcg_reclaim_begin"],
    ),
    kf("shrink_folio_list", &["sim/shrink_folio_list"]),
    // MGLRU (mm/vmscan.c): agings wanted and made, evictions, and the
    // rmap walk's look-arounds.
    kf("try_to_inc_max_seq", &["sim/lru_gen_try_inc_max_seq"]),
    kf("inc_max_seq", &["sim/lru_gen_inc_max_seq"]),
    kf("evict_folios", &["sim/lru_gen_evict_folios"]),
    kf("lru_gen_look_around", &["sim/lru_gen_look_around"]),
    // The look-arounds that found the PTE young (a return probe): how
    // much of the rmap walk's work meets referenced folios.
    Kfunc {
        name: "lru_gen_look_around/young",
        event: "lru_gen_look_around_young",
        function: "lru_gen_look_around%return",
        fetch: "ret=$retval:u8",
        filter: "ret != 0",
        model: &["sim/lru_gen_look_around_young"],
    },
    // PTE tables (mm/memory.c); upper levels and THP deposits are not in
    // it, so it is not compared with sim/pgtable_alloc.
    kf("__pte_alloc", &[]),
];

/// The filter of `contpte_convert/fold`: "pte & PTE_CONT", PTE_CONT being
/// bit 52 of an arm64 PTE (arch/arm64/include/asm/pgtable-hwdef.h).
const FOLD_FILTER: &str = "pte & 4503599627370496";

/// getrusage(2) fault counts of the workload's processes.
pub const MINOR_FAULTS: &str = "minor-faults";
pub const MAJOR_FAULTS: &str = "major-faults";
/// The model's forks of a phase (`dup_mm()` calls; vmstat.rs `dup_mm`).
pub const SIM_DUP_MM: &str = "sim/dup_mm";

/// Prefixes of the counter families.
pub const SIM_PREFIX: &str = "sim/";
pub const KFUNC_PREFIX: &str = "kfunc/";
/// Prefix of the counts of the machine's kswapd threads: a guest's
/// kernel-function counts (`kswapd/kfunc/...`) and the model's own counts
/// of its kswapd for the same functions (`kswapd/sim/...`, see
/// [`kswapd_model_counters`]).
pub const KSWAPD_PREFIX: &str = "kswapd/";

/// The `sim/` counters a kernel function is compared with
/// ([`Kfunc::model`]), which the model also reports as its kswapd's own
/// (`kswapd/sim/...`), in name order. (The one function compared with a
/// tracepoint, `try_to_free_mem_cgroup_pages()`, kswapd never calls.)
pub fn kswapd_model_counters() -> Vec<&'static str> {
    let set: std::collections::BTreeSet<&'static str> = KFUNCS
        .iter()
        .flat_map(|k| k.model.iter().copied())
        .filter(|c| c.starts_with(SIM_PREFIX))
        .collect();
    set.into_iter().collect()
}

pub const PAGEMAP_PREFIX: &str = "pagemap/";
pub const FOLIOS_PREFIX: &str = "folios/";
pub const MTHP_PREFIX: &str = "hugepages-";

/// Who can observe counter `name`.
pub fn kind(name: &str) -> CounterKind {
    let family = name.split('/').next().unwrap_or(name);
    let kswapd_sim = name
        .strip_prefix(KSWAPD_PREFIX)
        .is_some_and(|rest| rest.starts_with(SIM_PREFIX));
    if name.starts_with(SIM_PREFIX) || kswapd_sim {
        CounterKind::ModelOnly
    } else if name.starts_with(MTHP_PREFIX) {
        CounterKind::SystemWide
    } else if name == MINOR_FAULTS
        || name.starts_with(KFUNC_PREFIX)
        || name == MAJOR_FAULTS
        || family.contains(':')
        || name.starts_with(PAGEMAP_PREFIX)
        || name.starts_with(FOLIOS_PREFIX)
    {
        CounterKind::PerProcess
    } else {
        CounterKind::SystemWide
    }
}

/// Prefix of the counters the native engine adds about its own
/// measurement.
pub const NATIVE_PREFIX: &str = "native/";

/// The machine's kswapd threads' CPU time over a phase, as the native
/// engine measures it (the one `native/` counter about the machine rather
/// than the workload).
pub const NATIVE_KSWAPD_CPU: &str = "native/kswapd_cpu_ns";

/// The counters the native engine (also inside a `foliosim vm` guest) adds
/// about its own measurement, with what each is: `<step>` is a pagemap
/// step's name.
pub const NATIVE_COUNTERS: &[(&str, &str)] = &[
    ("native/wall_ns", "wall-clock time of the phase, ns"),
    (
        "native/thread_cpu_ns",
        "CPU time of the workload's measuring thread over the phase, ns",
    ),
    (
        "native/kswapd_cpu_ns",
        "CPU time of the machine's kswapd threads over the phase (schedstat), ns",
    ),
    (
        "native/overhead_faults",
        "faults the engine's own bookkeeping took in the workload process (already subtracted from minor-faults / major-faults)",
    ),
    (
        "native/thread_preemptions",
        "involuntary context switches of the scenario's threads (threads steps only)",
    ),
    (
        "native/repopulated",
        "page-cache pages the engine read again to keep a warm file warm (scenarios with warm files)",
    ),
    (
        "native/pagemap_ns/<step>",
        "wall time of the pagemap step's read loop, ns",
    ),
    (
        "native/pagemap_cpu_ns/<step>",
        "CPU time of the thread reading pagemap for the step, ns",
    ),
    (
        "native/missing_counters",
        "how many expected counters the host could not provide (listed on stderr)",
    ),
    (
        "native/not_warm",
        "1 when the page cache was still not warm after the engine's attempts",
    ),
];

/// Counter families a report names by pattern (`<...>` is a name or a
/// number the scenario decides), with the engines that report them and
/// what they are. The names of `pagemap/<step>/...` values are listed in
/// docs/scenarios.md (the pagemap step).
pub const FAMILIES: &[(&str, &[&str], &str)] = &[
    (
        "pagemap/<step>/<value>",
        &["sim", "native", "vm"],
        "values of a pagemap step's read (entries, read_calls, pages_present, ...), not deltas",
    ),
    (
        "memcg/<n>/<field>",
        &["sim", "native", "vm"],
        "memory.stat of the scenario's n-th memory cgroup (events, and LRU sizes in bytes), its failcnt, limit_write_ebusy: memcg_limit writes that failed with EBUSY, events_max, events_high and events_low: the max, high and low events of cgroup v2 memory.events, swap_events_max, swap_events_fail and swap_events_high: the max, fail and high events of cgroup v2 memory.swap.events, and three values read at the phase end (not deltas): usage_bytes (v1 memory.usage_in_bytes, v2 memory.current), peak_bytes, the highest usage during the phase (v1 memory.max_usage_in_bytes, v2 memory.peak, reset at the phase start), swap_bytes (cgroup v2 memory.swap.current), and for a cgroup with a memsw_limit memsw_usage_bytes and memsw_peak_bytes (cgroup v1 memory.memsw.usage_in_bytes and max_usage_in_bytes)",
    ),
];

/// The memory cgroup values a phase reports as read at its end rather
/// than as its change: `memcg/<n>/usage_bytes`, `memcg/<n>/peak_bytes`
/// `memcg/<n>/swap_bytes`, `memcg/<n>/memsw_usage_bytes` and
/// `memcg/<n>/memsw_peak_bytes`.
pub const MEMCG_LEVELS: [&str; 5] = [
    "usage_bytes",
    "peak_bytes",
    "swap_bytes",
    "memsw_usage_bytes",
    "memsw_peak_bytes",
];

/// The machine's memory at a phase end, in pages, summed over the
/// populated zones: what the page allocator manages, what is free, and the
/// watermarks (`zone->_watermark[]` with any boost, `min_wmark_pages()`
/// ...). Levels, not deltas. Each with its /proc/zoneinfo field (`pages
/// free` is read as `free`) and what it is; the model reports them in
/// this order (`Kernel::machine_levels`).
pub const MACHINE_LEVELS: [(&str, &str, &str); 7] = [
    (
        "machine/managed_pages",
        "managed",
        "pages the page allocator manages (zone managed_pages)",
    ),
    (
        "machine/free_pages",
        "free",
        "free pages (zone NR_FREE_PAGES)",
    ),
    ("machine/wmark_min", "min", "the min watermark (pages)"),
    (
        "machine/wmark_low",
        "low",
        "the low watermark: below it the allocator wakes kswapd",
    ),
    (
        "machine/wmark_high",
        "high",
        "the high watermark: kswapd reclaims up to it",
    ),
    (
        "machine/wmark_boost",
        "boost",
        "the watermark boost (zone watermark_boost), included in the watermarks: raised when a movable allocation takes a block of an unmovable or reclaimable pageblock, taken off by kswapd's next pass",
    ),
    (
        "machine/pcp_pages",
        "count",
        "pages on the per-CPU page lists, every CPU's (zoneinfo pagesets' count): neither free nor in use",
    ),
];

/// Whether a phase reports counter `name` as its value at the phase end
/// (a level) rather than its change over the phase.
pub fn is_level(name: &str) -> bool {
    is_memcg_level(name) || MACHINE_LEVELS.iter().any(|(n, _, _)| *n == name)
}

/// Whether `name` is a memory cgroup's usage or peak.
pub fn is_memcg_level(name: &str) -> bool {
    name.strip_prefix("memcg/")
        .and_then(|r| r.split_once('/'))
        .is_some_and(|(_, field)| MEMCG_LEVELS.contains(&field))
}

/// What `foliosim counters` shows as a counter's kind: [`kind`], with
/// the kernel-function counts (`kfunc/...`, per process) and the native
/// engine's measurements of its own run (`native/...`, per process) told
/// apart.
pub fn class(name: &str) -> &'static str {
    if name.starts_with(KFUNC_PREFIX) {
        return "kernel-function";
    }
    if name == NATIVE_KSWAPD_CPU {
        return "system-wide";
    }
    if name.starts_with(NATIVE_PREFIX) {
        return "per-process";
    }
    match kind(name) {
        CounterKind::PerProcess => "per-process",
        CounterKind::SystemWide => "system-wide",
        CounterKind::ModelOnly => "model-only",
    }
}

/// The counter names of the catalogue (`foliosim counters`) that are
/// fixed names rather than families: the model's counters, the fault
/// counts, the counted kernel functions and the native engine's
/// measurements. Sorted; built once.
pub fn fixed_counter_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(build_fixed_counter_names)
}

fn build_fixed_counter_names() -> Vec<String> {
    let mut names = crate::vmstat::model_counter_names();
    names.extend([MINOR_FAULTS, MAJOR_FAULTS].map(String::from));
    names.extend(TRACEPOINTS.iter().map(|t| t.to_string()));
    names.extend(KFUNCS.iter().map(|k| format!("{KFUNC_PREFIX}{}", k.name)));
    names.extend(
        NATIVE_COUNTERS
            .iter()
            .filter(|(n, _)| !n.contains('<'))
            .map(|(n, _)| n.to_string()),
    );
    names.extend(MACHINE_LEVELS.iter().map(|(n, _, _)| n.to_string()));
    names.sort();
    names.dedup();
    names
}

/// Whether `name` can be a counter of a report: one of
/// [`fixed_counter_names`], or a member of a family whose `<...>` parts a
/// scenario or host decides: `folios/<region>/...`, `pagemap/<step>/...`,
/// `memcg/<n>/...`, `native/pagemap_ns/<step>`, a tracepoint's
/// `<tracepoint>/<detail>`, `hugepages-<size>kB/<stat>` of any size.
pub fn is_counter_name(name: &str, fixed: &[String]) -> bool {
    if fixed.binary_search_by(|n| n.as_str().cmp(name)).is_ok() {
        return true;
    }
    let family = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty())
    };
    if [
        FOLIOS_PREFIX,
        PAGEMAP_PREFIX,
        "memcg/",
        "native/pagemap_ns/",
        "native/pagemap_cpu_ns/",
    ]
    .into_iter()
    .any(family)
    {
        return true;
    }
    if let Some((size, stat)) = name
        .strip_prefix(MTHP_PREFIX)
        .and_then(|r| r.split_once("kB/"))
    {
        return size.parse::<u64>().is_ok()
            && crate::vmstat::MthpStat::ALL
                .iter()
                .any(|s| s.name() == stat);
    }
    let base = name.split('/').next().unwrap_or(name);
    base != name && base.contains(':') && fixed.iter().any(|n| n == base)
}

/// Whether `name` is a tracepoint counter only x86 kernels have.
pub fn x86_only(name: &str) -> bool {
    let base = name.split('/').next().unwrap_or(name);
    X86_ONLY.contains(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a cgroup's usage and peak are levels; its memory.stat fields
    /// (LRU sizes included) are reported as changes.
    #[test]
    fn levels_are_usage_and_peak() {
        assert!(is_level("memcg/0/usage_bytes"));
        assert!(is_level("memcg/12/peak_bytes"));
        assert!(!is_level("memcg/0/inactive_file"));
        assert!(!is_level("memcg/usage_bytes"));
        assert!(!is_level("usage_bytes"));
        assert!(is_counter_name("memcg/0/peak_bytes", &[]));
        assert!(is_level("machine/free_pages"));
        assert!(!is_memcg_level("machine/free_pages"));
        assert!(!is_level("machine/free"));
    }

    #[test]
    fn the_fold_filter_tests_pte_cont() {
        assert_eq!(FOLD_FILTER, format!("pte & {}", 1u64 << 52));
        for k in KFUNCS {
            assert!(
                k.event
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{}",
                k.event
            );
        }
    }

    #[test]
    fn kinds_follow_how_each_family_is_counted() {
        assert_eq!(kind("minor-faults"), CounterKind::PerProcess);
        assert_eq!(
            kind("tlb:tlb_flush/remote_ipi_send"),
            CounterKind::PerProcess
        );
        assert_eq!(kind("kmem:mm_page_alloc/order=9"), CounterKind::PerProcess);
        assert_eq!(kind("folios/heap/64K"), CounterKind::PerProcess);
        assert_eq!(kind("pagemap/a/present"), CounterKind::PerProcess);
        assert_eq!(kind("pgfault"), CounterKind::SystemWide);
        assert_eq!(
            kind("hugepages-64kB/anon_fault_alloc"),
            CounterKind::SystemWide
        );
        assert_eq!(kind("kfunc/try_to_unmap_one"), CounterKind::PerProcess);
        assert_eq!(kind("sim/ptep_get"), CounterKind::ModelOnly);
        assert!(x86_only("tlb:tlb_flush/local_shootdown"));
        assert!(!x86_only("filemap:mm_filemap_fault"));
        assert_eq!(class("kfunc/try_to_unmap_one"), "kernel-function");
        assert_eq!(class("native/wall_ns"), "per-process");
        assert_eq!(class("pgfault"), "system-wide");
        assert_eq!(class("sim/ptep_get"), "model-only");
    }

    #[test]
    fn counter_names_and_families() {
        let fixed = super::fixed_counter_names();
        assert!(fixed.windows(2).all(|w| w[0] < w[1]));
        let ok = |n: &str| super::is_counter_name(n, fixed);
        for n in [
            "pgfault",
            "minor-faults",
            "sim/ptep_get",
            "kfunc/try_to_unmap_one",
            "native/wall_ns",
            "folios/heap/64kB",
            "pagemap/a/kpf/compound_head",
            "memcg/0/inactive_file",
            "hugepages-64kB/anon_fault_alloc",
            "hugepages-32kB/swpout",
            "kmem:mm_page_alloc/order=2",
            "tlb:tlb_flush/remote_shootdown",
            "machine/free_pages",
            "machine/wmark_high",
        ] {
            assert!(ok(n), "{n}");
        }
        for n in [
            "pgfualt",
            "modeled_ns",
            "folios/",
            "hugepages-64kB/anon_fault_aloc",
            "nosuch:tp/x",
            "pgfault/x",
            "machine/free",
        ] {
            assert!(!ok(n), "{n}");
        }
    }
}

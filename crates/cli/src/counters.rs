//! `foliosim counters`: every counter a report can carry, from the
//! registries that name them: the model's counter tables
//! (`crates/uapi/src/vmstat.rs`: vmstat events, mTHP stats,
//! tracepoints, `sim/` primitives with their documentation) and the
//! counter registry (`crates/uapi/src/counters.rs`: kinds, the tracepoints
//! the native engine opens, the counted kernel functions, the native
//! engine's own measurements, x86-only tracepoints).

use foliosim_report::Format;
use foliosim_uapi::counters::{
    self, FAMILIES, KFUNCS, KFUNC_PREFIX, KSWAPD_PREFIX, MACHINE_LEVELS, MAJOR_FAULTS,
    MINOR_FAULTS, MM_PAGE_ALLOC, NATIVE_COUNTERS, TRACEPOINTS,
};
use foliosim_uapi::vmstat::{
    model_counter_names, Khugepaged, MthpStat, SimStat, Trace, VmEvent, ZswapStat, NR_SWAPCACHED,
    NR_WRITEBACK, NR_ZSPAGES, SIM_KSWAPD_CPU, SIM_THROTTLED, ZRAM_FAILED_WRITES, ZRAM_MEM_USED,
    ZRAM_MM_STAT, ZRAM_PAGES_COMPACTED,
};
use serde_json::json;

/// One line of the list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The name, or a pattern with `<...>` parts.
    pub name: String,
    /// per-process, system-wide, model-only or kernel-function.
    pub kind: &'static str,
    /// The engines whose reports carry it.
    pub engines: Vec<&'static str>,
    /// Only x86 kernels have it (absent on arm64, never 0).
    pub x86_only: bool,
    pub doc: String,
}

const ALL: &[&str] = &["sim", "native", "vm"];
const HOST: &[&str] = &["native", "vm"];

fn entry(name: String, engines: &[&'static str], doc: impl Into<String>) -> Entry {
    Entry {
        kind: counters::class(&name),
        x86_only: counters::x86_only(&name),
        engines: engines.to_vec(),
        name,
        doc: doc.into(),
    }
}

/// The catalogue, in a stable order: fault counts, vmstat, mTHP stats,
/// tracepoints, kernel functions, the model's primitives, the native
/// engine's measurements, families.
pub(crate) fn catalogue() -> Vec<Entry> {
    let mut out = vec![
        entry(
            MINOR_FAULTS.into(),
            ALL,
            "minor faults of the workload's processes (getrusage; the model counts its own)",
        ),
        entry(
            MAJOR_FAULTS.into(),
            ALL,
            "major faults of the workload's processes (getrusage; the model counts its own)",
        ),
    ];
    // Groups every engine reports, one description a group.
    let groups: [(Vec<String>, &str); 8] = [
        (
            VmEvent::ALL.iter().map(|ev| ev.name().into()).collect(),
            "/proc/vmstat event (natively every other /proc/vmstat field is reported too)",
        ),
        (
            model_counter_names()
                .into_iter()
                .filter(|k| {
                    k.starts_with("nr_") && ![NR_WRITEBACK, NR_ZSPAGES, NR_SWAPCACHED].contains(&&**k)
                })
                .collect(),
            "/proc/vmstat LRU size, pages (its change over the phase)",
        ),
        (
            vec![NR_WRITEBACK.to_string()],
            "/proc/vmstat pages under writeback (its change over the phase); in the model \
             only swap writes held by machine.swap_write_rate or \
             machine.swap_write_latency_ns",
        ),
        (
            vec![NR_SWAPCACHED.to_string()],
            "/proc/vmstat pages in the swap cache (its change over the phase): written, \
             being written, or swapped in and still holding their slots",
        ),
        (
            vec![NR_ZSPAGES.to_string()],
            "/proc/vmstat pages of the zsmalloc pools, zswap's and zram's (its change over \
             the phase); natively a per-CPU counter that may lag by a few dozen pages",
        ),
        (
            MthpStat::ALL
                .iter()
                .map(|st| format!("hugepages-<size>kB/{}", st.name()))
                .collect(),
            "per-size mTHP statistic (/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats)",
        ),
        (
            Khugepaged::ALL.iter().map(|k| k.name().into()).collect(),
            "khugepaged counter (/sys/kernel/mm/transparent_hugepage/khugepaged/), system-wide",
        ),
        (
            ZswapStat::ALL.iter().map(|k| k.name().into()).collect(),
            "zswap statistic (/sys/kernel/debug/zswap/; pool gauges show their change), \
             system-wide; guests and the model only",
        ),
    ];
    for (names, doc) in groups {
        out.extend(names.into_iter().map(|name| entry(name, ALL, doc)));
    }
    out.push(entry(
        ZRAM_FAILED_WRITES.0.into(),
        ALL,
        ZRAM_FAILED_WRITES.1,
    ));
    for (name, doc) in ZRAM_MM_STAT.iter().chain(&ZRAM_MEM_USED) {
        out.push(entry((*name).into(), ALL, *doc));
    }
    out.push(entry(
        ZRAM_PAGES_COMPACTED.0.into(),
        HOST,
        ZRAM_PAGES_COMPACTED.1,
    ));
    for t in Trace::ALL {
        let base = t.name().split('/').next().unwrap_or(t.name());
        let engines: &[&str] = if TRACEPOINTS.contains(&base) {
            ALL
        } else {
            &["sim"]
        };
        out.push(entry(
            t.name().into(),
            engines,
            "tracepoint hits of the workload's processes (perf)",
        ));
    }
    out.push(entry(
        format!("{MM_PAGE_ALLOC}/order=<n>"),
        ALL,
        "kmem:mm_page_alloc tracepoint hits per allocation order",
    ));
    for k in KFUNCS {
        let what = match k.function.strip_suffix("%return") {
            Some(f) => format!("returns of {f}() with {}", k.filter),
            None => format!("calls of {}()", k.function),
        };
        let doc = if k.model.is_empty() {
            format!("{what} by the workload (kprobe; reported, not compared)")
        } else {
            format!(
                "{what} by the workload (kprobe); compared with {}",
                k.model.join(" + ")
            )
        };
        out.push(entry(format!("{KFUNC_PREFIX}{}", k.name), &["vm"], doc));
        let kswapd_doc = if k.model.is_empty() {
            format!("{what} by the machine's kswapd threads (kprobe; reported, not compared)")
        } else {
            let model: Vec<String> = k
                .model
                .iter()
                .map(|c| format!("{KSWAPD_PREFIX}{c}"))
                .collect();
            format!(
                "{what} by the machine's kswapd threads (kprobe); compared with {}",
                model.join(" + ")
            )
        };
        out.push(entry(
            format!("{KSWAPD_PREFIX}{KFUNC_PREFIX}{}", k.name),
            &["vm"],
            kswapd_doc,
        ));
    }
    for c in foliosim_uapi::counters::kswapd_model_counters() {
        out.push(entry(
            format!("{KSWAPD_PREFIX}{c}"),
            &["sim"],
            format!("{c} counted by the model's kswapd alone, not the workload"),
        ));
    }
    for (name, doc) in SimStat::DOCS
        .iter()
        .chain([&SIM_KSWAPD_CPU, &SIM_THROTTLED])
    {
        out.push(entry((*name).into(), &["sim"], doc.trim()));
    }
    for (name, doc) in NATIVE_COUNTERS {
        out.push(entry((*name).into(), HOST, *doc));
    }
    for (name, engines, doc) in FAMILIES {
        out.push(entry((*name).into(), engines, *doc));
    }
    for (name, _, doc) in MACHINE_LEVELS {
        let doc = format!("{doc}, at the phase end (a level, not a delta)");
        out.push(entry((*name).into(), ALL, doc));
    }
    out
}

/// The catalogue as a table or a JSON document
/// (`{"foliosim": VERSION, "counters": [...]}`); CSV is refused.
pub(crate) fn render(format: Format) -> Result<String, String> {
    let list = catalogue();
    match format {
        Format::Json => {
            let items: Vec<serde_json::Value> = list
                .iter()
                .map(|e| {
                    json!({"name": e.name, "kind": e.kind, "engines": e.engines,
                           "x86_only": e.x86_only, "doc": e.doc})
                })
                .collect();
            let v = json!({"foliosim": foliosim_report::VERSION, "counters": items});
            Ok(serde_json::to_string_pretty(&v).expect("serialisable") + "\n")
        }
        Format::Table => {
            let w = list.iter().map(|e| e.name.len()).max().unwrap_or(0);
            let mut s = format!(
                "{:<w$}  {:<15}  {:<15}  {:<3}  what\n",
                "name", "kind", "engines", "x86"
            );
            for e in &list {
                s.push_str(&format!(
                    "{:<w$}  {:<15}  {:<15}  {:<3}  {}\n",
                    e.name,
                    e.kind,
                    e.engines.join(","),
                    if e.x86_only { "yes" } else { "" },
                    e.doc
                ));
            }
            Ok(s)
        }
        Format::Csv => Err("foliosim counters: --format is table or json".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim_kernel::mm::vmstat::VmStat;

    #[test]
    fn every_model_counter_is_listed() {
        // Every name the model's counter snapshot produces is in the list,
        // as itself or through its pattern.
        let list = catalogue();
        let listed = |n: &str| {
            list.iter().any(|e| {
                e.name == n
                    || e.name.split_once('<').is_some_and(|(pre, _)| {
                        n.starts_with(pre)
                            && e.name
                                .rsplit_once('>')
                                .is_some_and(|(_, post)| n.ends_with(post))
                    })
            })
        };
        for n in VmStat::default().snapshot().keys() {
            assert!(listed(n), "{n} is not in `foliosim counters`");
        }
        let names: std::collections::BTreeSet<&str> =
            list.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names.len(), list.len(), "duplicate names");
    }

    #[test]
    fn kinds_engines_and_x86_come_from_the_registry() {
        let list = catalogue();
        let get = |n: &str| list.iter().find(|e| e.name == n).unwrap();
        assert_eq!(get("pgfault").kind, "system-wide");
        assert_eq!(get("sim/ptep_get").kind, "model-only");
        assert_eq!(get("sim/ptep_get").engines, ["sim"]);
        assert!(get("sim/ptep_get").doc.contains("ptep_get()"));
        let tlb = get("tlb:tlb_flush");
        assert!(tlb.x86_only && tlb.kind == "per-process" && tlb.engines == ALL);
        assert!(!get("filemap:mm_filemap_fault").x86_only);
        // Counted by the model only: the native engine does not open it.
        assert_eq!(get("vmscan:mm_vmscan_lru_isolate").engines, ["sim"]);
        let k = get("kfunc/try_to_unmap_one");
        assert_eq!(
            (k.kind, k.engines.as_slice()),
            ("kernel-function", &["vm"][..])
        );
        assert!(k.doc.contains("sim/try_to_unmap_one"));
        assert_eq!(get("native/wall_ns").engines, HOST);
    }
}

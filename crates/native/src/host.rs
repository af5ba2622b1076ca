//! Reading the host: sysfs knobs, /proc/vmstat, the per-size mTHP stats,
//! per-process fault counts, the read-ahead of a file's device.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub(crate) const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// The current value of a sysfs knob: the bracketed word of a
/// "always [madvise] never" file, else the trimmed contents.
pub(crate) fn knob_value(text: &str) -> String {
    let t = text.trim();
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        if a < b {
            return t[a + 1..b].to_string();
        }
    }
    t.to_string()
}

pub(crate) fn read_knob(path: &Path) -> io::Result<String> {
    Ok(knob_value(&fs::read_to_string(path)?))
}

/// `name value` lines (vmstat format).
pub(crate) fn parse_name_values(text: &str) -> BTreeMap<String, i64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// Every /proc/vmstat field.
pub(crate) fn vmstat() -> io::Result<BTreeMap<String, i64>> {
    Ok(parse_name_values(&fs::read_to_string("/proc/vmstat")?))
}

/// The machine's managed and free pages and watermarks, summed over the
/// populated zones of /proc/zoneinfo, as `machine/...` levels.
pub(crate) fn zone_levels() -> io::Result<BTreeMap<String, i64>> {
    Ok(parse_zoneinfo(&fs::read_to_string("/proc/zoneinfo")?))
}

/// The CPU time (ns) the kernel's kswapd threads (`kswapdN`, one per
/// node) have run since boot, as `native/kswapd_cpu_ns` (a phase shows its
/// change): the first field of each thread's `/proc/PID/schedstat`. None
/// if no kswapd thread can be read. The threads are found once.
pub(crate) fn kswapd_cpu_ns() -> Option<BTreeMap<String, i64>> {
    let pids = kswapd_pids();
    let mut total = 0u64;
    for pid in pids {
        total += match fs::read_to_string(format!("/proc/{pid}/schedstat")) {
            Ok(text) => text.split_whitespace().next()?.parse::<u64>().ok()?,
            // Without CONFIG_SCHED_INFO: utime + stime in clock ticks.
            Err(_) => stat_cpu_ns(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?,
        };
    }
    (!pids.is_empty()).then(|| {
        BTreeMap::from([(
            foliosim_uapi::counters::NATIVE_KSWAPD_CPU.to_string(),
            total as i64,
        )])
    })
}

/// The kernel's kswapd threads (`kswapdN`, one per node), found once.
pub(crate) fn kswapd_pids() -> &'static [u32] {
    static PIDS: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    PIDS.get_or_init(|| {
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| parse_kswapd_comm(c.trim()))
            })
            .collect()
    })
}

/// The CPU time (ns) in a `/proc/PID/stat` line: utime + stime (fields
/// 14 and 15, after the parenthesised comm) in `USER_HZ` ticks of 10 ms.
fn stat_cpu_ns(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((utime + stime) * 10_000_000)
}

/// Whether a thread's `comm` names a kswapd thread (`kswapd0`, ...).
fn parse_kswapd_comm(comm: &str) -> bool {
    comm.strip_prefix("kswapd")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The machine's own memory now, as the `machine.*` knobs of a machine
/// of `memory` bytes: what the page allocator does not manage (`memory`
/// less the zones' managed pages), the managed pages in use, the pages on
/// `cpu`'s per-CPU lists, the lower zones' free pages a movable
/// allocation may not take, vm.min_free_kbytes and the uptime. Empty
/// where /proc cannot say.
pub(crate) fn machine_knobs(memory: u64, cpu: usize) -> Vec<(String, String)> {
    use foliosim_uapi::knobs::{
        MACHINE_BOOT_USED, MACHINE_KSWAPD_PCP_HIGH, MACHINE_KSWAPD_PCP_LIST,
        MACHINE_LOWMEM_RESERVE, MACHINE_MIN_FREE_KBYTES, MACHINE_PCP_HIGH, MACHINE_PCP_LIST,
        MACHINE_UNMANAGED,
    };
    let page = foliosim_uapi::knobs::PAGE_SIZE;
    let Ok(text) = fs::read_to_string("/proc/zoneinfo") else {
        return Vec::new();
    };
    let levels = parse_zoneinfo(&text);
    let level = |name: &str| levels.get(name).map(|&v| v.max(0) as u64);
    let (Some(managed), Some(free)) = (level("machine/managed_pages"), level("machine/free_pages"))
    else {
        return Vec::new();
    };
    let mut out = vec![
        (
            MACHINE_UNMANAGED.key.to_string(),
            memory.saturating_sub(managed * page).to_string(),
        ),
        (
            MACHINE_BOOT_USED.key.to_string(),
            (managed.saturating_sub(free) * page).to_string(),
        ),
        (
            MACHINE_PCP_LIST.key.to_string(),
            (pcp_count(&text, cpu) * page).to_string(),
        ),
        // kswapd runs beside the workload: on the next CPU, as in the model.
        (
            MACHINE_KSWAPD_PCP_LIST.key.to_string(),
            (pcp_count(&text, next_cpu(cpu)) * page).to_string(),
        ),
        (
            MACHINE_PCP_HIGH.key.to_string(),
            pcp_high(&text, cpu).to_string(),
        ),
        (
            MACHINE_KSWAPD_PCP_HIGH.key.to_string(),
            pcp_high(&text, next_cpu(cpu)).to_string(),
        ),
        (
            MACHINE_LOWMEM_RESERVE.key.to_string(),
            (lowmem_reserve(&text) * page).to_string(),
        ),
    ];
    if let Some(blocks) = fs::read_to_string("/proc/pagetypeinfo")
        .ok()
        .and_then(|t| pagetypeinfo(&t))
    {
        use foliosim_uapi::knobs::{
            MACHINE_CMA_BLOCKS, MACHINE_FREE_RECLAIMABLE, MACHINE_FREE_UNMOVABLE,
            MACHINE_RECLAIMABLE_BLOCKS, MACHINE_UNMOVABLE_BLOCKS,
        };
        out.extend([
            (MACHINE_CMA_BLOCKS.key.to_string(), blocks.cma.to_string()),
            (
                MACHINE_UNMOVABLE_BLOCKS.key.to_string(),
                blocks.unmovable.to_string(),
            ),
            (
                MACHINE_RECLAIMABLE_BLOCKS.key.to_string(),
                blocks.reclaimable.to_string(),
            ),
            (
                MACHINE_FREE_UNMOVABLE.key.to_string(),
                blocks.free_unmovable.to_string(),
            ),
            (
                MACHINE_FREE_RECLAIMABLE.key.to_string(),
                blocks.free_reclaimable.to_string(),
            ),
        ]);
    }
    // /proc/uptime: seconds, to the hundredth.
    if let Some(secs) = fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
    {
        out.push((
            foliosim_uapi::knobs::MACHINE_UPTIME_MS.key.to_string(),
            ((secs * 1000.0) as u64).to_string(),
        ));
    }
    if let Ok(kb) = fs::read_to_string("/proc/sys/vm/min_free_kbytes") {
        out.push((
            MACHINE_MIN_FREE_KBYTES.key.to_string(),
            kb.trim().to_string(),
        ));
    }
    out
}

/// The workload's zone in /proc/pagetypeinfo: its pageblocks of the
/// unmovable and reclaimable migratetypes and their free blocks per
/// order.
#[derive(Debug, PartialEq, Eq)]
struct PageTypes {
    unmovable: u64,
    reclaimable: u64,
    /// CMA pageblocks (a column only kernels with CONFIG_CMA print).
    cma: u64,
    free_unmovable: foliosim_uapi::knobs::FreeCounts,
    free_reclaimable: foliosim_uapi::knobs::FreeCounts,
}

/// Read /proc/pagetypeinfo (`text`) for the last zone of its "Number of
/// blocks type" table (the highest populated zone, the one the model's
/// single zone stands for); None if it cannot say.
fn pagetypeinfo(text: &str) -> Option<PageTypes> {
    use foliosim_uapi::knobs::FreeCounts;
    let (free_part, blocks_part) = text.split_once("Number of blocks type")?;
    let mut lines = blocks_part.lines();
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    // "Node 0, zone   DMA32   1   1528   0 ...": the counts follow the name.
    let last = lines.rfind(|l| l.starts_with("Node"))?;
    let words: Vec<&str> = last.split_whitespace().collect();
    let zone = *words.get(3)?;
    let counts: Vec<u64> = words[4..].iter().filter_map(|w| w.parse().ok()).collect();
    let count_of = |name: &str| -> Option<u64> {
        let i = header.iter().position(|h| *h == name)?;
        counts.get(i).copied()
    };
    let free_of = |name: &str| -> Option<FreeCounts> {
        let row = free_part.lines().find(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() > 6 && w[3].trim_end_matches(',') == zone && w[5] == name
        })?;
        let nums: Vec<&str> = row.split_whitespace().skip(6).collect();
        FreeCounts::parse(&nums.join(" "))
    };
    Some(PageTypes {
        unmovable: count_of("Unmovable")?,
        reclaimable: count_of("Reclaimable")?,
        cma: count_of("CMA").unwrap_or(0),
        free_unmovable: free_of("Unmovable")?,
        free_reclaimable: free_of("Reclaimable")?,
    })
}

/// The online CPU after `cpu` (wrapping; `cpu` itself on a one-CPU
/// machine).
fn next_cpu(cpu: usize) -> usize {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpu + 1) % n.max(1)
}

/// One field of `cpu`'s pageset in each zone of /proc/zoneinfo (`text`):
/// the `field` line (`count:`, `high:`) after its `cpu: N` line.
fn pcp_field(text: &str, cpu: usize, field: &str) -> Vec<u64> {
    let mut this = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some("cpu:"), Some(c)) => this = c.parse::<usize>().ok() == Some(cpu),
            (Some(f), Some(v)) if this && f == field => out.push(v.parse::<u64>().unwrap_or(0)),
            (Some("Node"), _) => this = false,
            _ => {}
        }
    }
    out
}

/// The pages on `cpu`'s per-CPU lists, over the zones of /proc/zoneinfo
/// (`text`): each pageset's `count:`.
fn pcp_count(text: &str, cpu: usize) -> u64 {
    pcp_field(text, cpu, "count:").iter().sum()
}

/// `pcp->high` of `cpu`'s list in the zone that allows it most (the
/// largest zone's, which the model's one zone stands for).
fn pcp_high(text: &str, cpu: usize) -> u64 {
    pcp_field(text, cpu, "high:").into_iter().max().unwrap_or(0)
}

/// The free pages of the populated zones below the highest populated one
/// that a movable allocation may not take, over /proc/zoneinfo (`text`):
/// for each such zone, its low watermark plus its `protection:` against
/// the highest zone index (`lowmem_reserve[]`, which
/// `__zone_watermark_ok()` adds for an allocation whose highest zone is
/// above it), at most its free pages.
fn lowmem_reserve(text: &str) -> u64 {
    let mut zones = populated_zones(text);
    zones.pop();
    let get = |z: &BTreeMap<&str, i64>, k: &str| z.get(k).copied().unwrap_or(0).max(0) as u64;
    zones
        .iter()
        .map(|z| get(z, "free").min(get(z, "low") + get(z, PROTECTION)))
        .sum()
}

/// The largest entry of a zone's `protection: (...)` line, under this key.
const PROTECTION: &str = "protection";

/// The zones of /proc/zoneinfo (`text`) that have managed pages, in
/// order, each with the fields the machine levels read
/// (`MACHINE_LEVELS`: "pages free N", "min N", "low N", "high N",
/// "managed N", and each CPU's pageset "count: N", summed) and the largest
/// entry of its `protection:` line.
fn populated_zones(text: &str) -> Vec<BTreeMap<&'static str, i64>> {
    let fields = foliosim_uapi::counters::MACHINE_LEVELS;
    let mut zones = Vec::new();
    let mut zone: BTreeMap<&'static str, i64> = BTreeMap::new();
    let mut end = |zone: &mut BTreeMap<&'static str, i64>| {
        if zone.get("managed").is_some_and(|&m| m > 0) {
            zones.push(std::mem::take(zone));
        }
        zone.clear();
    };
    for line in text.lines() {
        if line.starts_with("Node ") {
            end(&mut zone);
            continue;
        }
        if let Some(list) = line.trim_start().strip_prefix("protection: (") {
            let max = list
                .trim_end_matches(')')
                .split(',')
                .filter_map(|v| v.trim().parse::<i64>().ok())
                .max()
                .unwrap_or(0);
            zone.insert(PROTECTION, max);
            continue;
        }
        let mut w = line.split_whitespace();
        let (Some(a), Some(b)) = (w.next(), w.next()) else {
            continue;
        };
        let (key, value) = if a == "pages" && b == "free" {
            ("free", w.next())
        } else if a == "count:" {
            ("count", Some(b))
        } else {
            (a, Some(b))
        };
        let Some(&(_, key, _)) = fields.iter().find(|(_, f, _)| *f == key) else {
            continue;
        };
        if let Some(v) = value.and_then(|v| v.parse::<i64>().ok()) {
            if key == "count" {
                // One per CPU of the zone's pagesets.
                *zone.entry(key).or_insert(0) += v;
            } else {
                zone.entry(key).or_insert(v);
            }
        }
    }
    end(&mut zone);
    zones
}

/// The machine levels (`MACHINE_LEVELS`) summed over the populated zones
/// of /proc/zoneinfo (`text`).
fn parse_zoneinfo(text: &str) -> BTreeMap<String, i64> {
    let mut sum: BTreeMap<String, i64> = BTreeMap::new();
    for zone in populated_zones(text) {
        for (name, field, _) in foliosim_uapi::counters::MACHINE_LEVELS {
            *sum.entry(name.to_string()).or_insert(0) += zone.get(field).copied().unwrap_or(0);
        }
    }
    sum
}

/// The `hugepages-<N>kB` directories of the THP sysfs directory.
pub(crate) fn mthp_dirs() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir(THP_DIR) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("hugepages-") && name.ends_with("kB") {
                out.push((name, e.path()));
            }
        }
    }
    out.sort();
    out
}

/// Every per-size mTHP stat file, as `hugepages-64kB/anon_fault_alloc`,
/// khugepaged's counters (`khugepaged/full_scans`,
/// `khugepaged/pages_collapsed`), zswap's debugfs statistics
/// (`zswap/stored_pages`, ...) where debugfs is readable, and the zram
/// devices' `zram/failed_writes` where there are any.
pub(crate) fn mthp_stats() -> io::Result<BTreeMap<String, i64>> {
    let mut out = BTreeMap::new();
    for k in foliosim_uapi::vmstat::Khugepaged::ALL {
        let path = Path::new(THP_DIR).join(k.name());
        if let Ok(v) = read_knob(&path) {
            if let Ok(v) = v.parse() {
                out.insert(k.name().to_string(), v);
            }
        }
    }
    // zswap's debugfs statistics, where debugfs can be read (a guest's).
    for z in foliosim_uapi::vmstat::ZswapStat::ALL {
        let file = z.name().trim_start_matches("zswap/");
        let path = Path::new("/sys/kernel/debug/zswap").join(file);
        if let Ok(v) = read_knob(&path) {
            if let Ok(v) = v.parse() {
                out.insert(z.name().to_string(), v);
            }
        }
    }
    if let Some(n) = zram_failed_writes() {
        out.insert(foliosim_uapi::vmstat::ZRAM_FAILED_WRITES.0.to_string(), n);
    }
    if let Some(fields) = zram_mm_stat() {
        use foliosim_uapi::vmstat::{ZRAM_MEM_USED, ZRAM_MM_STAT, ZRAM_PAGES_COMPACTED};
        let names = ZRAM_MM_STAT
            .iter()
            .chain([&ZRAM_PAGES_COMPACTED])
            .chain(&ZRAM_MEM_USED);
        for ((name, _), v) in names.zip(fields) {
            out.insert(name.to_string(), v);
        }
    }
    for (name, dir) in mthp_dirs() {
        let Ok(rd) = fs::read_dir(dir.join("stats")) else {
            continue;
        };
        for e in rd.flatten() {
            let stat = e.file_name().to_string_lossy().into_owned();
            if let Ok(v) = fs::read_to_string(e.path()) {
                if let Ok(v) = v.trim().parse() {
                    out.insert(format!("{name}/{stat}"), v);
                }
            }
        }
    }
    Ok(out)
}

/// The whitespace-separated numbers of `file` (`io_stat`, `mm_stat`) of
/// each zram device of the machine, at least `min` of them; None without
/// any such device.
fn zram_device_fields(file: &str, min: usize) -> Option<Vec<Vec<i64>>> {
    let devices: Vec<Vec<i64>> = fs::read_dir("/sys/block")
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("zram"))
        .filter_map(|e| fs::read_to_string(e.path().join(file)).ok())
        .map(|s| {
            s.split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect()
        })
        .filter(|f: &Vec<i64>| f.len() >= min)
        .collect();
    (!devices.is_empty()).then_some(devices)
}

/// The `mm_stat` fields of [`foliosim_uapi::vmstat::ZRAM_MM_STAT`], then
/// `pages_compacted`, then those of
/// [`foliosim_uapi::vmstat::ZRAM_MEM_USED`], summed over the machine's
/// zram devices (`orig_data_size` in pages); None without any.
fn zram_mm_stat() -> Option<[i64; 7]> {
    let page = foliosim_uapi::knobs::PAGE_SIZE as i64;
    let mut sum = [0i64; 7];
    for f in zram_device_fields("mm_stat", 8)? {
        let fields = [f[0] / page, f[1], f[5], f[7], f[6], f[2], f[4]];
        for (a, v) in sum.iter_mut().zip(fields) {
            *a += v;
        }
    }
    Some(sum)
}

/// `failed_writes` (the second field of /sys/block/zramN/io_stat) summed
/// over the machine's zram devices; None without any.
fn zram_failed_writes() -> Option<i64> {
    Some(zram_device_fields("io_stat", 2)?.iter().map(|f| f[1]).sum())
}

/// Everything the run depends on that someone else could change while it
/// runs (docs/fidelity.md, "Host behaviours"): every THP knob (not the
/// statistics) and the swap list.
pub(crate) fn settings_snapshot() -> BTreeMap<String, String> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let relname = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if name != "stats" {
                    walk(&e.path(), &relname, out);
                }
            } else if !matches!(name.as_str(), "full_scans" | "pages_collapsed") {
                if let Ok(v) = read_knob(&e.path()) {
                    out.insert(format!("transparent_hugepage/{relname}"), v);
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(Path::new(THP_DIR), "", &mut out);
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    let swaps: Vec<&str> = swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    out.insert("swap devices".into(), swaps.join(" "));
    out
}

/// What changed between two settings snapshots.
pub(crate) fn settings_diff(
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            Some(w) if w == v => {}
            Some(w) => out.push(format!("{k}: {v} -> {w}")),
            None => out.push(format!("{k}: {v} -> (gone)")),
        }
    }
    for (k, w) in b {
        if !a.contains_key(k) {
            out.push(format!("{k}: (absent) -> {w}"));
        }
    }
    out
}

/// (minflt, cminflt, majflt, cmajflt) from a /proc/PID/stat line.
pub(crate) fn parse_stat_faults(stat: &str) -> Option<[u64; 4]> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); minflt is field 10.
    let g = |i: usize| f.get(i - 3)?.parse::<u64>().ok();
    Some([g(10)?, g(11)?, g(12)?, g(13)?])
}

/// Minor and major faults of a process tree: every live process's own
/// faults plus those of its reaped children (every workload process reaps
/// its children, so nothing is lost or counted twice).
pub(crate) fn tree_faults(pid: i32) -> io::Result<(u64, u64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let [min, cmin, maj, cmaj] = parse_stat_faults(&stat)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("/proc/{pid}/stat")))?;
    let (mut min, mut maj) = (min + cmin, maj + cmaj);
    for c in children(pid)? {
        if let Ok((a, b)) = tree_faults(c) {
            min += a;
            maj += b;
        }
    }
    Ok((min, maj))
}

/// The live children of `pid`: its `children` file, or on kernels without
/// PROC_CHILDREN (small guest kernels) the processes whose parent it is.
fn children(pid: i32) -> io::Result<Vec<i32>> {
    match fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
        Ok(text) => Ok(text
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut out = Vec::new();
            for e in fs::read_dir("/proc")?.flatten() {
                let Some(c) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                    continue;
                };
                let Ok(stat) = fs::read_to_string(format!("/proc/{c}/stat")) else {
                    continue;
                };
                // Field 4, after the command in parentheses, is the parent.
                let ppid = stat
                    .rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse::<i32>().ok());
                if ppid == Some(pid) {
                    out.push(c);
                }
            }
            out.sort_unstable();
            Ok(out)
        }
        Err(e) => Err(e),
    }
}

/// The block device holding `path` and its read_ahead_kb.
pub(crate) fn device_read_ahead_kb(path: &Path) -> Option<(String, u64)> {
    device_queue_attr(path, "read_ahead_kb").map(|(name, _, v)| (name, v))
}

/// The block device holding `path`, the file of its request queue's
/// attribute `attr` (the disk's for a partition; read_ahead_kb also from
/// the bdi) and its value.
pub(crate) fn device_queue_attr(path: &Path, attr: &str) -> Option<(String, PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    let dev = fs::metadata(path).ok()?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let base = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    let name = fs::canonicalize(&base)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{maj}:{min}"));
    for p in [
        base.join("queue").join(attr),
        base.join("../queue").join(attr),
        PathBuf::from(format!("/sys/class/bdi/{maj}:{min}/{attr}")),
    ] {
        if let Ok(v) = fs::read_to_string(&p) {
            if let Ok(v) = v.trim().parse() {
                return Some((name, p, v));
            }
        }
    }
    None
}

/// The writable read_ahead_kb of the filesystem holding `path` (its
/// backing device's bdi).
pub(crate) fn bdi_read_ahead_path(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = fs::metadata(path).ok()?.dev();
    let p = PathBuf::from(format!(
        "/sys/class/bdi/{}:{}/read_ahead_kb",
        libc::major(dev),
        libc::minor(dev)
    ));
    p.exists().then_some(p)
}

/// MemTotal and MemAvailable in bytes (0 where /proc/meminfo cannot say).
pub(crate) fn meminfo() -> (u64, u64) {
    let m = foliosim_uapi::meminfo::meminfo();
    (m.total.unwrap_or(0), m.available.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kswapd threads are `kswapd` and a node number; other kernel
    /// threads with a similar name are not.
    #[test]
    fn kswapd_threads_by_name() {
        assert!(parse_kswapd_comm("kswapd0"));
        assert!(parse_kswapd_comm("kswapd12"));
        assert!(!parse_kswapd_comm("kswapd"));
        assert!(!parse_kswapd_comm("kswapd0:1"));
        assert!(!parse_kswapd_comm("kcompactd0"));
    }

    /// utime and stime are the 14th and 15th fields of /proc/PID/stat,
    /// counted after the comm, which may hold spaces and parentheses.
    /// Line of this host's kswapd0 (Linux 6.18.44), utime 0, stime 21.
    #[test]
    fn stat_cpu_time_is_utime_plus_stime() {
        let line = "45 (kswapd0) S 2 0 0 0 -1 2230336 0 0 0 0 0 21 0 0 20 0 1 0 41 0 0 \
                    18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 0 0 0 0";
        assert_eq!(stat_cpu_ns(line), Some(210_000_000));
        let odd = "7 (a) b (c) S 2 0 0 0 -1 0 0 0 0 0 3 4 0 0";
        assert_eq!(stat_cpu_ns(odd), Some(70_000_000));
    }

    /// Zones with managed pages are summed; empty zones (whose watermarks
    /// read 32 on 6.18) and the pagesets' `high:` lines are not counted.
    /// Excerpt of this host's /proc/zoneinfo (Linux 6.18.44).
    #[test]
    fn zoneinfo_sums_populated_zones() {
        let text = "Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 196364
  pages free     3840
        min      10
        low      13
        high     16
        spanned  4095
        present  3998
        managed  3840
  pagesets
    cpu: 0
              count: 33
              high:  100
Node 0, zone    DMA32
  pages free     772740
        min      2116
        low      2888
        high     3660
        managed  772917
Node 0, zone  Movable
  pages free     0
        min      32
        low      32
        high     32
        managed  0
";
        let m = parse_zoneinfo(text);
        assert_eq!(m["machine/managed_pages"], 3840 + 772917);
        assert_eq!(m["machine/free_pages"], 3840 + 772740);
        assert_eq!(m["machine/wmark_min"], 10 + 2116);
        assert_eq!(m["machine/wmark_low"], 13 + 2888);
        assert_eq!(m["machine/wmark_high"], 16 + 3660);
        // Only the DMA zone's CPU 0 shows its list here.
        assert_eq!(m["machine/pcp_pages"], 33);
    }

    /// The lower zones' protected free pages, from this host's
    /// /proc/zoneinfo (Linux 6.18.44, excerpt): DMA holds back
    /// min(3840 free, 13 low + 24090) = 3840, DMA32 min(772221, 2888 +
    /// 21071) = 23959; Normal is the highest populated zone (Movable is
    /// empty), which movable allocations take from first.
    #[test]
    fn lowmem_reserve_sums_the_lower_zones_protection() {
        let text = "Node 0, zone      DMA
  pages free     3840
        min      10
        low      13
        high     16
        managed  3840
        protection: (0, 3019, 24090, 24090, 24090)
Node 0, zone    DMA32
  pages free     772221
        low      2888
        managed  772917
        protection: (0, 0, 21071, 21071, 21071)
Node 0, zone   Normal
  pages free     3976807
        low      20163
        managed  5394266
        protection: (0, 0, 0, 0, 0)
Node 0, zone  Movable
  pages free     0
        low      32
        managed  0
        protection: (0, 0, 0, 0, 0)
";
        assert_eq!(lowmem_reserve(text), 3840 + 23959);
        // One populated zone (an arm64 guest's DMA): nothing below it.
        let one = "Node 0, zone      DMA
  pages free     200000
        low      800
        managed  250000
        protection: (0, 0, 0, 0)
";
        assert_eq!(lowmem_reserve(one), 0);
    }

    /// The last zone's rows: its free unmovable and reclaimable blocks
    /// per order and its pageblocks of those types (a 6.18 host's file).
    #[test]
    fn pagetypeinfo_reads_the_highest_zone() {
        let text = "Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 
Node    0, zone      DMA, type    Unmovable      0      0      0      0      0      0      0      0      1      0      0 
Node    0, zone      DMA, type      Movable      0      0      0      0      0      0      0      0      0      1      3 
Node    0, zone    DMA32, type    Unmovable      5      0      0      0      0      0      0      0      0      0      0 
Node    0, zone    DMA32, type      Movable      2      3      0      2      3      2      1      4      4      2    752 
Node    0, zone   Normal, type    Unmovable    691    736    424    290    179     91     41     36     23      0      0 
Node    0, zone   Normal, type      Movable  14528   8573   8784   3714   2822   1608    602    170     57     26     91 
Node    0, zone   Normal, type  Reclaimable   1311     62     11      6      4      3      0      0      2      0      0 
Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0 

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate 
Node 0, zone      DMA            1            7            0            0            0 
Node 0, zone    DMA32            0         1528            0            0            0 
Node 0, zone   Normal           75         1218          115            0            0 
";
        let p = pagetypeinfo(text).expect("parsed");
        assert_eq!((p.unmovable, p.reclaimable), (75, 115));
        assert_eq!(
            p.free_unmovable.0,
            [691, 736, 424, 290, 179, 91, 41, 36, 23, 0, 0]
        );
        assert_eq!(p.free_reclaimable.0, [1311, 62, 11, 6, 4, 3, 0, 0, 2, 0, 0]);
        assert_eq!(pagetypeinfo("Page block order: 9\n"), None);
        assert_eq!(p.cma, 0, "no CMA column without CONFIG_CMA");
    }

    /// A kernel with CONFIG_CMA prints a CMA column after HighAtomic
    /// (`migratetype_names[]`); an arm64 guest with the default 32 MiB area
    /// has 16 CMA pageblocks in its one zone.
    #[test]
    fn pagetypeinfo_reads_the_cma_pageblocks() {
        let text = "Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 
Node    0, zone      DMA, type    Unmovable      1      1      1      1      1      0      1      1      1      0      0 
Node    0, zone      DMA, type      Movable      3      2      2      1      2      1      1      1      2      1    219 
Node    0, zone      DMA, type  Reclaimable      0      2      0      2      1      3      2      2      0      1      1 
Node    0, zone      DMA, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0 
Node    0, zone      DMA, type          CMA      0      0      0      0      0      0      0      0      0      0      8 
Node    0, zone      DMA, type      Isolate      0      0      0      0      0      0      0      0      0      0      0 

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic          CMA      Isolate 
Node 0, zone      DMA           12          476            8            0           16            0 
";
        let p = pagetypeinfo(text).expect("parsed");
        assert_eq!((p.unmovable, p.reclaimable, p.cma), (12, 8, 16));
        assert_eq!(p.free_unmovable.0, [1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 0]);
    }

    /// One CPU's lists: its pageset's `count:` in every zone (here CPU 1:
    /// 7 in DMA, 250 in DMA32), not the other CPU's, nor `high:` or
    /// `batch:` lines; its `high:` the largest of its zones' (CPU 1: 100
    /// in DMA, 4,000 in DMA32; CPU 0 has no `high:` in DMA32).
    #[test]
    fn pcp_count_sums_one_cpus_pagesets() {
        let text = "Node 0, zone      DMA
  pagesets
    cpu: 0
              count: 33
              high:  100
              batch: 1
    cpu: 1
              count: 7
              high:  100
Node 0, zone    DMA32
  pagesets
    cpu: 0
              count: 1000
    cpu: 1
              count: 250
              high:  4000
";
        assert_eq!(pcp_count(text, 1), 7 + 250);
        assert_eq!(pcp_count(text, 0), 33 + 1000);
        assert_eq!(pcp_count(text, 2), 0);
        assert_eq!(pcp_high(text, 1), 4000);
        assert_eq!(pcp_high(text, 0), 100);
        assert_eq!(pcp_high(text, 2), 0);
    }

    #[test]
    fn knob_values() {
        assert_eq!(knob_value("always [madvise] never\n"), "madvise");
        assert_eq!(knob_value("1\n"), "1");
    }

    #[test]
    fn stat_faults() {
        let s = "123 (a b) c) S 1 2 3 4 5 6 70 71 72 73 0 0";
        assert_eq!(parse_stat_faults(s), Some([70, 71, 72, 73]));
    }

    #[test]
    fn own_faults_are_readable() {
        let (min, _) = tree_faults(std::process::id() as i32).unwrap();
        assert!(min > 0);
    }
}

//! The `[system]` table.

use std::collections::{BTreeMap, BTreeSet};

use crate::ast::{Arch, MthpMode, SwapDevice, SwapKind, System, ThpMode};
use crate::check::{Fields, PAGE_SIZE};
use crate::error::{Ctx, Result};
use crate::tree::{join, Data, Node, Origin};
use foliosim_uapi::knobs::{self, FieldMut, Kind, Knob, Setting, Value, KNOBS};
use foliosim_uapi::names::did_you_mean;
use foliosim_uapi::series::SWITCHES;
use foliosim_uapi::thp::MTHP_SIZES_KB;

/// What the list of valid keys says after the knobs.
const SWAP_KEY: &str = "swap (an array of tables, [[system.swap]])";

/// The keys of a `[[system.swap]]` table.
const SWAP_KEYS: &[&str] = &["kind", "size", "rotational"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum SwapKindName {
    File,
    Block,
    Zram,
}

const SWAP_KINDS: &[(&str, SwapKindName)] = &[
    ("file", SwapKindName::File),
    ("block", SwapKindName::Block),
    ("zram", SwapKindName::Zram),
];

/// The prefix of the knobs of the simulated machine's own memory.
const MACHINE_PREFIX: &str = "machine.";

/// The smallest swap device: 1 MiB.
pub(crate) const MIN_SWAP: u64 = 1 << 20;

const MIB: u64 = 1 << 20;

impl Default for System {
    /// The defaults of every knob ([`knobs::KNOBS`]), with `knobs` filled
    /// in.
    fn default() -> Self {
        let mthp_enabled = MTHP_SIZES_KB
            .iter()
            .map(|&kb| (kb * 1024, knobs::mthp_default(kb)))
            .collect();
        let mut system = System {
            arch: knobs::ARCH.default.arch(),
            memory: knobs::MEMORY.default.int(),
            cpus: knobs::CPUS.default.int() as u32,
            thp_enabled: knobs::THP_ENABLED.default.thp(),
            thp_use_zero_page: knobs::THP_USE_ZERO_PAGE.default.flag(),
            thp_shrink_underused: knobs::THP_SHRINK_UNDERUSED.default.flag(),
            khugepaged_max_ptes_none: knobs::KHUGEPAGED_MAX_PTES_NONE.default.int() as u32,
            khugepaged_max_ptes_swap: knobs::KHUGEPAGED_MAX_PTES_SWAP.default.int() as u32,
            khugepaged_max_ptes_shared: knobs::KHUGEPAGED_MAX_PTES_SHARED.default.int() as u32,
            khugepaged_pages_to_scan: knobs::KHUGEPAGED_PAGES_TO_SCAN.default.int() as u32,
            khugepaged_scan_sleep_millisecs: knobs::KHUGEPAGED_SCAN_SLEEP_MILLISECS.default.int()
                as u32,
            mthp_enabled,
            fault_around_bytes: knobs::FAULT_AROUND_BYTES.default.int(),
            read_ahead_kb: knobs::READ_AHEAD_KB.default.int(),
            max_sectors_kb: knobs::MAX_SECTORS_KB.default.int(),
            page_cluster: knobs::PAGE_CLUSTER.default.int() as u32,
            vma_ra_enabled: knobs::VMA_RA_ENABLED.default.flag(),
            lru_gen_enabled: knobs::LRU_GEN_ENABLED.default.flag(),
            lru_gen_min_ttl_ms: knobs::LRU_GEN_MIN_TTL_MS.default.int() as u32,
            zswap: Default::default(),
            machine_unmanaged: knobs::MACHINE_UNMANAGED.default.int(),
            machine_boot_used: knobs::MACHINE_BOOT_USED.default.int(),
            machine_pcp_list: knobs::MACHINE_PCP_LIST.default.int(),
            machine_kswapd_pcp_list: knobs::MACHINE_KSWAPD_PCP_LIST.default.int(),
            machine_pcp_high: knobs::MACHINE_PCP_HIGH.default.int(),
            machine_kswapd_pcp_high: knobs::MACHINE_KSWAPD_PCP_HIGH.default.int(),
            machine_lowmem_reserve: knobs::MACHINE_LOWMEM_RESERVE.default.int(),
            machine_min_free_kbytes: knobs::MACHINE_MIN_FREE_KBYTES.default.int(),
            machine_unmovable_blocks: knobs::MACHINE_UNMOVABLE_BLOCKS.default.int(),
            machine_reclaimable_blocks: knobs::MACHINE_RECLAIMABLE_BLOCKS.default.int(),
            machine_cma_blocks: knobs::MACHINE_CMA_BLOCKS.default.int(),
            machine_free_unmovable: knobs::MACHINE_FREE_UNMOVABLE.default.free_counts(),
            machine_free_reclaimable: knobs::MACHINE_FREE_RECLAIMABLE.default.free_counts(),
            watermark_boost_factor: knobs::WATERMARK_BOOST_FACTOR.default.int(),
            swappiness: knobs::SWAPPINESS.default.int(),
            machine_swap_write_rate: knobs::MACHINE_SWAP_WRITE_RATE.default.int(),
            machine_swap_write_latency_ns: knobs::MACHINE_SWAP_WRITE_LATENCY_NS.default.int(),
            machine_uptime_ms: knobs::MACHINE_UPTIME_MS.default.int(),
            machine_random_seed: knobs::MACHINE_RANDOM_SEED.default.int(),
            machine_memcg_flush_ms: knobs::MACHINE_MEMCG_FLUSH_MS.default.int(),
            swap: Vec::new(),
            series: Default::default(),
            explicit: Default::default(),
            knobs: BTreeMap::new(),
        };
        system.knobs = knobs(&mut system);
        system
    }
}

impl System {
    /// The field that holds `knob` (of size `kb` KiB for a per-size knob);
    /// None for a knob of another table or a size without a field.
    pub fn knob_mut(&mut self, knob: &Knob, kb: Option<u64>) -> Option<FieldMut<'_>> {
        Some(match *knob {
            knobs::ARCH => FieldMut::Arch(&mut self.arch),
            knobs::MEMORY => FieldMut::U64(&mut self.memory),
            knobs::CPUS => FieldMut::U32(&mut self.cpus),
            knobs::THP_ENABLED => FieldMut::Thp(&mut self.thp_enabled),
            knobs::THP_USE_ZERO_PAGE => FieldMut::Flag(&mut self.thp_use_zero_page),
            knobs::THP_SHRINK_UNDERUSED => FieldMut::Flag(&mut self.thp_shrink_underused),
            knobs::KHUGEPAGED_MAX_PTES_NONE => FieldMut::U32(&mut self.khugepaged_max_ptes_none),
            knobs::KHUGEPAGED_MAX_PTES_SWAP => FieldMut::U32(&mut self.khugepaged_max_ptes_swap),
            knobs::KHUGEPAGED_MAX_PTES_SHARED => {
                FieldMut::U32(&mut self.khugepaged_max_ptes_shared)
            }
            knobs::KHUGEPAGED_PAGES_TO_SCAN => FieldMut::U32(&mut self.khugepaged_pages_to_scan),
            knobs::KHUGEPAGED_SCAN_SLEEP_MILLISECS => {
                FieldMut::U32(&mut self.khugepaged_scan_sleep_millisecs)
            }
            knobs::MTHP_ENABLED => FieldMut::Mthp(self.mthp_enabled.get_mut(&(kb? * 1024))?),
            knobs::FAULT_AROUND_BYTES => FieldMut::U64(&mut self.fault_around_bytes),
            knobs::READ_AHEAD_KB => FieldMut::U64(&mut self.read_ahead_kb),
            knobs::MAX_SECTORS_KB => FieldMut::U64(&mut self.max_sectors_kb),
            knobs::PAGE_CLUSTER => FieldMut::U32(&mut self.page_cluster),
            knobs::VMA_RA_ENABLED => FieldMut::Flag(&mut self.vma_ra_enabled),
            knobs::LRU_GEN_ENABLED => FieldMut::Flag(&mut self.lru_gen_enabled),
            knobs::LRU_GEN_MIN_TTL_MS => FieldMut::U32(&mut self.lru_gen_min_ttl_ms),
            knobs::MACHINE_UNMANAGED => FieldMut::U64(&mut self.machine_unmanaged),
            knobs::MACHINE_BOOT_USED => FieldMut::U64(&mut self.machine_boot_used),
            knobs::MACHINE_PCP_LIST => FieldMut::U64(&mut self.machine_pcp_list),
            knobs::MACHINE_KSWAPD_PCP_LIST => FieldMut::U64(&mut self.machine_kswapd_pcp_list),
            knobs::MACHINE_PCP_HIGH => FieldMut::U64(&mut self.machine_pcp_high),
            knobs::MACHINE_KSWAPD_PCP_HIGH => FieldMut::U64(&mut self.machine_kswapd_pcp_high),
            knobs::MACHINE_LOWMEM_RESERVE => FieldMut::U64(&mut self.machine_lowmem_reserve),
            knobs::MACHINE_MIN_FREE_KBYTES => FieldMut::U64(&mut self.machine_min_free_kbytes),
            knobs::MACHINE_UNMOVABLE_BLOCKS => FieldMut::U64(&mut self.machine_unmovable_blocks),
            knobs::MACHINE_RECLAIMABLE_BLOCKS => {
                FieldMut::U64(&mut self.machine_reclaimable_blocks)
            }
            knobs::MACHINE_CMA_BLOCKS => FieldMut::U64(&mut self.machine_cma_blocks),
            knobs::MACHINE_FREE_UNMOVABLE => FieldMut::FreeCounts(&mut self.machine_free_unmovable),
            knobs::MACHINE_FREE_RECLAIMABLE => {
                FieldMut::FreeCounts(&mut self.machine_free_reclaimable)
            }
            knobs::WATERMARK_BOOST_FACTOR => FieldMut::U64(&mut self.watermark_boost_factor),
            knobs::SWAPPINESS => FieldMut::U64(&mut self.swappiness),
            knobs::MACHINE_SWAP_WRITE_RATE => FieldMut::U64(&mut self.machine_swap_write_rate),
            knobs::MACHINE_SWAP_WRITE_LATENCY_NS => {
                FieldMut::U64(&mut self.machine_swap_write_latency_ns)
            }
            knobs::MACHINE_UPTIME_MS => FieldMut::U64(&mut self.machine_uptime_ms),
            knobs::MACHINE_RANDOM_SEED => FieldMut::U64(&mut self.machine_random_seed),
            knobs::MACHINE_MEMCG_FLUSH_MS => FieldMut::U64(&mut self.machine_memcg_flush_ms),
            _ => return self.zswap.knob_mut(knob),
        })
    }
}

impl System {
    /// Set the knob or series switch `key` (canonical spelling, without
    /// `system.`) to `value` as if the file had said so: it becomes
    /// explicit and `knobs` shows it. For settings an engine derives, such
    /// as a guest's memory, on a scenario already parsed; ranges are not
    /// checked. False, and nothing changed, if `key` names neither or
    /// `value` is not of its kind.
    pub fn set(&mut self, key: &str, value: Value) -> bool {
        let stored = match (knobs::lookup(key), value) {
            (Some(Setting::Switch(switch)), Value::Flag(on)) => {
                self.series.set(switch.name, on);
                true
            }
            (Some(Setting::Knob { knob, kb }), value) => {
                self.knob_mut(knob, kb).is_some_and(|f| f.set(value))
            }
            _ => false,
        };
        if stored {
            self.explicit.insert(key.to_owned());
            self.knobs = knobs(self);
        }
        stored
    }
}

/// Every knob in the kernel's spelling.
fn knobs(system: &mut System) -> BTreeMap<String, String> {
    let mut knobs = BTreeMap::new();
    for inst in knobs::instances() {
        // The machine's own memory is listed only where set (by the
        // scenario, or from a guest): a default says nothing of a host.
        if inst.key.starts_with(MACHINE_PREFIX) && !system.explicit.contains(&inst.key) {
            continue;
        }
        if let Some(f) = system.knob_mut(inst.knob, inst.kb) {
            knobs.insert(inst.key, f.get().to_string());
        }
    }
    let mut put = |key: &str, value: String| knobs.insert(key.to_owned(), value);
    put("swap", system.swap.len().to_string());
    for (i, dev) in system.swap.iter().enumerate() {
        put(&format!("swap.{i}.kind"), dev.kind.name().to_owned());
        put(&format!("swap.{i}.size"), dev.size.to_string());
        if let SwapKind::Block { rotational } = dev.kind {
            put(&format!("swap.{i}.rotational"), bit(rotational));
        }
    }
    for (switch, on) in system.series.iter() {
        put(&format!("series.{}", switch.name), bit(on));
    }
    knobs
}

fn bit(b: bool) -> String {
    if b { "1" } else { "0" }.to_owned()
}

/// `transparent_hugepage.hugepages-`: what precedes `<N>` in the per-size
/// key.
fn mthp_prefix() -> &'static str {
    knobs::MTHP_ENABLED
        .key
        .split_once("<N>")
        .map_or("", |(prefix, _)| prefix)
}

/// The per-size key of `kb`: `transparent_hugepage.hugepages-64kB.enabled`.
fn mthp_key(kb: u64) -> String {
    knobs::MTHP_ENABLED.key.replace("<N>", &kb.to_string())
}

/// A value of `[system]` under its dotted path.
struct Leaf<'a> {
    path: String,
    /// Where each key of the path was written.
    key_origins: Vec<&'a Origin>,
    node: &'a Node,
}

impl Leaf<'_> {
    /// The origin of the last key of the path.
    fn last_key_origin(&self) -> &Origin {
        self.key_origins
            .last()
            .copied()
            .unwrap_or(&self.node.origin)
    }

    /// The origin of the `i`-th key of the path (else the last one).
    fn key_origin(&self, i: usize) -> &Origin {
        self.key_origins
            .get(i)
            .copied()
            .unwrap_or(self.last_key_origin())
    }
}

/// Validate `[system]` (absent: every default).
pub(crate) fn system(ctx: &Ctx, node: Option<&Node>) -> Result<System> {
    let mut system = System::default();
    if let Some(node) = node {
        if !matches!(node.data, Data::Table(_)) {
            let msg = format!("expected a table, found {}", node.describe());
            return Err(ctx.err(&node.origin, "system", msg));
        }
        let mut leaves = Vec::new();
        flatten(node, "", &mut Vec::new(), &mut leaves);
        for leaf in &leaves {
            let key = set_knob(ctx, &mut system, leaf)?;
            system.explicit.insert(key);
        }
        if let Some(swap) = node.get("swap") {
            system.swap = swap_devices(ctx, swap, &mut system.explicit)?;
        }
    }
    system.knobs = knobs(&mut system);
    debug_assert!(system.explicit.iter().all(|k| system.knobs.contains_key(k)));
    Ok(system)
}

/// `[[system.swap]]`: the swap devices, highest priority first. Their knob
/// keys (`swap`, `swap.<i>.kind`, ...) are added to `explicit`.
fn swap_devices(
    ctx: &Ctx,
    node: &Node,
    explicit: &mut BTreeSet<String>,
) -> Result<Vec<SwapDevice>> {
    let tables = ctx.array(
        node,
        "system.swap",
        "an array of tables ([[system.swap]] or swap = [{ kind = ..., size = ... }])",
    )?;
    explicit.insert("swap".to_owned());
    let mut out = Vec::with_capacity(tables.len());
    for (i, table) in tables.iter().enumerate() {
        let path = format!("system.swap[{}]", i + 1);
        let f = Fields::new(ctx, table, &path, format!("in {path}"))?;
        f.check_allowed(SWAP_KEYS)?;
        let kind = f.req("kind", |c, n, p| c.choice(n, p, SWAP_KINDS))?;
        let size = f.req("size", swap_size)?;
        let kind = match kind {
            SwapKindName::Block => SwapKind::Block {
                rotational: f.opt("rotational", Ctx::boolean)?.unwrap_or(false),
            },
            SwapKindName::File | SwapKindName::Zram => {
                f.forbid("rotational", "with kind = \"block\"")?;
                if kind == SwapKindName::File {
                    SwapKind::File
                } else {
                    SwapKind::Zram
                }
            }
        };
        for key in SWAP_KEYS {
            if f.get(key).is_some() {
                explicit.insert(format!("swap.{i}.{key}"));
            }
        }
        out.push(SwapDevice { kind, size });
    }
    Ok(out)
}

/// A swap device's size: a multiple of the page size, at least 1 MiB.
fn swap_size(ctx: &Ctx, node: &Node, field: &str) -> Result<u64> {
    let bytes = ctx.size(node, field)?;
    if bytes % PAGE_SIZE != 0 || bytes < MIN_SWAP {
        let msg = format!(
            "expected a multiple of the page size ({PAGE_SIZE}) of at least 1 MiB, found {bytes} bytes"
        );
        return Err(ctx.err(&node.origin, field, msg));
    }
    Ok(bytes)
}

/// Collect the non-table values under `node` with their dotted paths.
fn flatten<'a>(
    node: &'a Node,
    path: &str,
    key_origins: &mut Vec<&'a Origin>,
    out: &mut Vec<Leaf<'a>>,
) {
    match &node.data {
        Data::Table(entries) => {
            for entry in entries {
                if path.is_empty() && entry.key == "swap" {
                    continue; // validated by swap_devices()
                }
                key_origins.push(&entry.key_origin);
                flatten(&entry.node, &join(path, &entry.key), key_origins, out);
                key_origins.pop();
            }
        }
        _ => out.push(Leaf {
            path: path.to_owned(),
            key_origins: key_origins.clone(),
            node,
        }),
    }
}

/// Validate one leaf into `system`; returns its knob key.
fn set_knob(ctx: &Ctx, system: &mut System, leaf: &Leaf<'_>) -> Result<String> {
    let field = format!("system.{}", leaf.path);
    let node = leaf.node;
    let path = leaf.path.as_str();
    let (knob, kb) = match knobs::lookup(path) {
        Some(Setting::Switch(switch)) => {
            let on = flag(ctx, node, &field)?;
            system.series.set(switch.name, on);
            return Ok(leaf.path.clone());
        }
        Some(Setting::Knob { knob, kb }) => (knob, kb),
        None if path.starts_with("series.") || path == "series" => {
            let valid: Vec<String> = SWITCHES
                .iter()
                .map(|s| format!("series.{}", s.name))
                .collect();
            let msg = format!(
                "unknown patch-series switch `{path}`{}; expected one of: {}",
                did_you_mean(path, valid.iter().map(String::as_str)),
                valid.join(", ")
            );
            return Err(ctx.err(leaf.last_key_origin(), &field, msg));
        }
        None => match path.strip_prefix(mthp_prefix()) {
            // Another spelling of a size (`hugepages-064kB`), or an error.
            Some(rest) => (
                &knobs::MTHP_ENABLED,
                Some(mthp_size(ctx, leaf, rest, &field)?),
            ),
            None => {
                let keys = KNOBS.iter().map(|k| k.key.to_owned());
                let series = SWITCHES.iter().map(|s| format!("series.{}", s.name));
                let keys: Vec<String> = keys.chain([SWAP_KEY.to_owned()]).chain(series).collect();
                let msg = format!(
                    "unknown key `{path}` in [system]{}; expected one of: {}",
                    did_you_mean(path, keys.iter().map(String::as_str)),
                    keys.join(", ")
                );
                return Err(ctx.err(leaf.last_key_origin(), &field, msg));
            }
        },
    };
    let value = knob_value(ctx, node, &field, knob)?;
    let stored = system.knob_mut(knob, kb).is_some_and(|f| f.set(value));
    debug_assert!(stored, "{path}: no field holds this knob");
    Ok(kb.map_or_else(|| knob.key.to_owned(), mthp_key))
}

/// A value of `knob`, of its kind and in its range.
fn knob_value(ctx: &Ctx, node: &Node, field: &str, knob: &Knob) -> Result<Value> {
    let out_of_range = |msg: String| Err(ctx.err(&node.origin, field, msg));
    Ok(match knob.kind {
        Kind::Arch => {
            let alias = match &node.data {
                Data::Str(s) => Arch::from_name(s),
                _ => None,
            };
            match alias {
                Some(arch) => Value::Arch(arch),
                None => {
                    Value::Arch(ctx.choice(node, field, &Arch::ALL.map(|a| (a.as_str(), a)))?)
                }
            }
        }
        Kind::Bytes { align: 1, min: 1 } => Value::Int(ctx.nonzero_size(node, field)?),
        Kind::Bytes { align, min } => {
            let bytes = ctx.size(node, field)?;
            if bytes % align != 0 || bytes < min {
                return out_of_range(format!(
                    "expected a multiple of {} of at least {}, found {bytes} bytes",
                    human(align),
                    human(min)
                ));
            }
            Value::Int(bytes)
        }
        Kind::Int { min, max, what } => {
            let n = ctx.uint(node, field)?;
            if !(min..=max).contains(&n) {
                return out_of_range(format!("expected {what} from {min} to {max}, found {n}"));
            }
            Value::Int(n)
        }
        Kind::Flag => Value::Flag(flag(ctx, node, field)?),
        Kind::Thp => Value::Thp(ctx.choice(node, field, &ThpMode::ALL.map(|m| (m.as_str(), m)))?),
        Kind::Mthp => {
            Value::Mthp(ctx.choice(node, field, &MthpMode::ALL.map(|m| (m.as_str(), m)))?)
        }
        Kind::FreeCounts => {
            let parsed = match &node.data {
                Data::Str(s) => knobs::FreeCounts::parse(s),
                _ => None,
            };
            match parsed {
                Some(c) => Value::FreeCounts(c),
                None => {
                    return out_of_range(format!(
                        "expected up to {} counts of free blocks, order 0 first, separated \
                         by spaces (\"0 0 0 0 12 3 1\"), found {}",
                        knobs::NR_PAGE_ORDERS,
                        node.describe()
                    ))
                }
            }
        }
    })
}

/// A size in messages: `4 MiB`, else bytes.
fn human(bytes: u64) -> String {
    if bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// `rest` follows `transparent_hugepage.hugepages-`: `<N>kB.enabled`; the
/// size in KiB.
fn mthp_size(ctx: &Ctx, leaf: &Leaf<'_>, rest: &str, field: &str) -> Result<u64> {
    let (size, key) = rest.split_once('.').unwrap_or((rest, ""));
    let kb = size
        .strip_suffix("kB")
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|kb| MTHP_SIZES_KB.contains(kb));
    let Some(kb) = kb else {
        let valid: Vec<String> = MTHP_SIZES_KB
            .iter()
            .map(|kb| format!("hugepages-{kb}kB"))
            .collect();
        let msg = format!(
            "unknown hugepage size `hugepages-{size}`; expected one of: {}",
            valid.join(", ")
        );
        return Err(ctx.err(leaf.key_origin(1), field, msg));
    };
    if key != "enabled" {
        let msg = format!(
            "unknown key `{}` in [system]; expected `{}`",
            leaf.path,
            mthp_key(kb)
        );
        return Err(ctx.err(leaf.key_origin(2), field, msg));
    }
    Ok(kb)
}

/// `0`/`1`, `"0"`/`"1"` or a boolean.
fn flag(ctx: &Ctx, node: &Node, field: &str) -> Result<bool> {
    match &node.data {
        Data::Bool(b) => Ok(*b),
        Data::Int(0) => Ok(false),
        Data::Int(1) => Ok(true),
        Data::Str(s) if s == "0" => Ok(false),
        Data::Str(s) if s == "1" => Ok(true),
        _ => {
            let msg = format!("expected 0, 1, true or false, found {}", node.describe());
            Err(ctx.err(&node.origin, field, msg))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every knob of the table has a field in `System`, which holds the
    /// table's default, and a `knobs` entry in the kernel's spelling (the
    /// machine's own memory only once set).
    #[test]
    fn every_knob_has_a_field_with_its_default() {
        let mut system = System::default();
        for inst in knobs::instances() {
            let field = system.knob_mut(inst.knob, inst.kb);
            let value = field.map(|f| f.get());
            assert_eq!(value, Some(inst.default), "{}", inst.key);
            if inst.key.starts_with(MACHINE_PREFIX) {
                assert!(!system.knobs.contains_key(&inst.key), "{}", inst.key);
                continue;
            }
            assert_eq!(system.knobs[&inst.key], inst.default.to_string());
        }
        assert!(system.set("machine.boot_used", Value::Int(8192)));
        assert_eq!(system.knobs["machine.boot_used"], "8192");
    }

    #[test]
    fn arch_takes_the_uname_spelling() {
        let sc = crate::parse_str("t.toml", "[system]\narch = \"aarch64\"\n", &[]).unwrap();
        assert_eq!(sc.system.arch, Arch::Arm64);
        assert_eq!(sc.system.knobs["arch"], "arm64");
        let e = crate::parse_str("t.toml", "[system]\narch = \"riscv\"\n", &[]).unwrap_err();
        assert!(
            e.message.contains("one of \"x86_64\", \"arm64\""),
            "{}",
            e.message
        );
    }
}

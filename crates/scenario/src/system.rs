//! The `[system]` table.

use std::collections::{BTreeMap, BTreeSet};

use crate::ast::{Arch, MthpMode, SwapDevice, SwapKind, System, ThpMode};
use crate::check::{Fields, PAGE_SIZE};
use crate::error::{Ctx, Result};
use crate::tree::{join, Data, Node, Origin};
use foliosim_uapi::series::SWITCHES;

/// The mTHP sizes in KiB that `hugepages-<N>kB` may name.
pub(crate) use foliosim_uapi::thp::MTHP_SIZES_KB;

const KEYS: &[&str] = &[
    "arch",
    "memory",
    "cpus",
    "transparent_hugepage.enabled",
    "transparent_hugepage.use_zero_page",
    "transparent_hugepage.shrink_underused",
    "transparent_hugepage.khugepaged.max_ptes_none",
    "transparent_hugepage.hugepages-<N>kB.enabled",
    "fault_around_bytes",
    "read_ahead_kb",
    "vm.page_cluster",
    "vma_ra_enabled",
    "swap (an array of tables, [[system.swap]])",
];

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

/// The smallest swap device: 1 MiB.
pub(crate) const MIN_SWAP: u64 = 1 << 20;

const ARCHES: &[(&str, Arch)] = &[("x86_64", Arch::X86_64), ("arm64", Arch::Arm64)];

const THP: &[(&str, ThpMode)] = &[
    ("always", ThpMode::Always),
    ("madvise", ThpMode::Madvise),
    ("never", ThpMode::Never),
];

const MTHP: &[(&str, MthpMode)] = &[
    ("always", MthpMode::Always),
    ("inherit", MthpMode::Inherit),
    ("madvise", MthpMode::Madvise),
    ("never", MthpMode::Never),
];

const MIB: u64 = 1 << 20;
const THP_PREFIX: &str = "transparent_hugepage.hugepages-";

impl Default for System {
    /// The defaults of every knob, with `knobs` filled in.
    fn default() -> Self {
        let mthp_enabled = MTHP_SIZES_KB
            .iter()
            .map(|&kb| {
                let mode = if kb == 2048 {
                    MthpMode::Inherit
                } else {
                    MthpMode::Never
                };
                (kb * 1024, mode)
            })
            .collect();
        let mut system = System {
            arch: Arch::X86_64,
            memory: 24 << 30,
            cpus: 2,
            thp_enabled: ThpMode::Madvise,
            thp_use_zero_page: true,
            thp_shrink_underused: true,
            khugepaged_max_ptes_none: 511,
            mthp_enabled,
            fault_around_bytes: 65536,
            read_ahead_kb: 128,
            page_cluster: 3,
            vma_ra_enabled: true,
            swap: Vec::new(),
            series: Default::default(),
            explicit: Default::default(),
            knobs: BTreeMap::new(),
        };
        system.knobs = knobs(&system);
        system
    }
}

/// Every knob in the kernel's spelling.
fn knobs(system: &System) -> BTreeMap<String, String> {
    let mut knobs = BTreeMap::new();
    let mut put = |key: &str, value: String| knobs.insert(key.to_owned(), value);
    put("arch", system.arch.as_str().to_owned());
    put("memory", system.memory.to_string());
    put("cpus", system.cpus.to_string());
    put(
        "transparent_hugepage.enabled",
        word(THP, system.thp_enabled),
    );
    let zero_page = if system.thp_use_zero_page { "1" } else { "0" };
    put("transparent_hugepage.use_zero_page", zero_page.to_owned());
    put(
        "transparent_hugepage.shrink_underused",
        bit(system.thp_shrink_underused),
    );
    put(
        "transparent_hugepage.khugepaged.max_ptes_none",
        system.khugepaged_max_ptes_none.to_string(),
    );
    for (&bytes, &mode) in &system.mthp_enabled {
        let key = format!("{THP_PREFIX}{}kB.enabled", bytes / 1024);
        put(&key, word(MTHP, mode));
    }
    put("fault_around_bytes", system.fault_around_bytes.to_string());
    put("read_ahead_kb", system.read_ahead_kb.to_string());
    put("vm.page_cluster", system.page_cluster.to_string());
    put("vma_ra_enabled", bit(system.vma_ra_enabled));
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

fn word<T: Copy + PartialEq>(choices: &[(&str, T)], value: T) -> String {
    choices
        .iter()
        .find(|(_, v)| *v == value)
        .map_or_else(String::new, |(w, _)| (*w).to_owned())
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
    system.knobs = knobs(&system);
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
    match leaf.path.as_str() {
        "arch" => system.arch = ctx.choice(node, &field, ARCHES)?,
        "memory" => system.memory = memory(ctx, node, &field)?,
        "cpus" => system.cpus = cpus(ctx, node, &field)?,
        "transparent_hugepage.enabled" => system.thp_enabled = ctx.choice(node, &field, THP)?,
        "transparent_hugepage.use_zero_page" => {
            system.thp_use_zero_page = flag(ctx, node, &field)?;
        }
        "transparent_hugepage.shrink_underused" => {
            system.thp_shrink_underused = flag(ctx, node, &field)?;
        }
        "transparent_hugepage.khugepaged.max_ptes_none" => {
            let v = ctx.uint(node, &field)?;
            if v > 511 {
                let msg = format!("{v} is above 511 (HPAGE_PMD_NR - 1)");
                return Err(ctx.err(&node.origin, &field, msg));
            }
            system.khugepaged_max_ptes_none = v as u32;
        }
        "fault_around_bytes" => system.fault_around_bytes = ctx.nonzero_size(node, &field)?,
        "read_ahead_kb" => system.read_ahead_kb = ctx.uint(node, &field)?,
        "vm.page_cluster" => system.page_cluster = page_cluster(ctx, node, &field)?,
        "vma_ra_enabled" => system.vma_ra_enabled = flag(ctx, node, &field)?,
        path if path.starts_with("series.") || path == "series" => {
            let name = path.strip_prefix("series.").unwrap_or("");
            if system.series.get(name).is_some() {
                let on = flag(ctx, node, &field)?;
                system.series.set(name, on);
                return Ok(leaf.path.clone());
            }
            let valid: Vec<String> = SWITCHES
                .iter()
                .map(|s| format!("series.{}", s.name))
                .collect();
            let msg = format!(
                "unknown patch-series switch `{path}`; expected one of: {}",
                valid.join(", ")
            );
            return Err(ctx.err(leaf.last_key_origin(), &field, msg));
        }
        path => match path.strip_prefix(THP_PREFIX) {
            Some(rest) => {
                let bytes = mthp_size(ctx, leaf, rest, &field)?;
                let mode = ctx.choice(node, &field, MTHP)?;
                system.mthp_enabled.insert(bytes, mode);
                return Ok(format!("{THP_PREFIX}{}kB.enabled", bytes / 1024));
            }
            None => {
                let series = SWITCHES.iter().map(|s| format!("series.{}", s.name));
                let keys: Vec<String> = KEYS.iter().map(|k| k.to_string()).chain(series).collect();
                let msg = format!(
                    "unknown key `{path}` in [system]; expected one of: {}",
                    keys.join(", ")
                );
                return Err(ctx.err(leaf.last_key_origin(), &field, msg));
            }
        },
    }
    Ok(leaf.path.clone())
}

/// `rest` follows `transparent_hugepage.hugepages-`: `<N>kB.enabled`.
/// `vm.page_cluster`: 0 to 31, as the sysctl accepts (mm/swap.c:
/// page_cluster_max).
fn page_cluster(ctx: &Ctx, node: &Node, field: &str) -> Result<u32> {
    let n = ctx.uint(node, field)?;
    if n > 31 {
        let msg = format!("expected a page-cluster from 0 to 31, found {n}");
        return Err(ctx.err(&node.origin, field, msg));
    }
    Ok(n as u32)
}

/// `cpus`: 1 to 64 simulated CPUs.
fn cpus(ctx: &Ctx, node: &Node, field: &str) -> Result<u32> {
    let n = ctx.uint(node, field)?;
    if !(1..=64).contains(&n) {
        let msg = format!("expected a number of CPUs from 1 to 64, found {n}");
        return Err(ctx.err(&node.origin, field, msg));
    }
    Ok(n as u32)
}

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
            "unknown key `{}` in [system]; expected `{THP_PREFIX}{kb}kB.enabled`",
            leaf.path
        );
        return Err(ctx.err(leaf.key_origin(2), field, msg));
    }
    Ok(kb * 1024)
}

fn memory(ctx: &Ctx, node: &Node, field: &str) -> Result<u64> {
    let bytes = ctx.size(node, field)?;
    if bytes % (4 * MIB) != 0 || bytes < 64 * MIB {
        let msg = format!("expected a multiple of 4 MiB of at least 64 MiB, found {bytes} bytes");
        return Err(ctx.err(&node.origin, field, msg));
    }
    Ok(bytes)
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

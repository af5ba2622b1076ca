//! Grid dimensions: a key with its list of values, where it was written,
//! and the value syntax of `--grid KEY=SPEC`.
//!
//! SPEC is a comma-separated list of items; an item is a plain value
//! (passed to the scenario as `--set KEY=VALUE` would pass it, so sizes
//! like `64K` stay strings) or a range:
//!
//! * `[A..B]`: the integers A, A+1, ..., B (both ends included);
//! * `BASE<<[A..B]`: BASE shifted left by A, ..., B, written in decimal
//!   (`4096<<[0..9]` is 4096, 8192, ..., 2097152); BASE is a size
//!   (`4096`, `4K`).

use std::fmt;
use std::path::PathBuf;

/// Where a grid key or a base override was written, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A `--grid KEY=SPEC` argument (the whole argument).
    GridArg(String),
    /// A `--set KEY=VALUE` argument.
    SetArg(String),
    /// The `--arch` option.
    ArchArg,
    /// A `foliosim run --ab KEY[=BASE,PATCHED]` argument.
    AbArg(String),
    /// A line of a sweep file (1-based).
    File { path: PathBuf, line: u32 },
    /// `foliosim sweep --repeat N`.
    RepeatArg(usize),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::GridArg(a) => write!(f, "--grid {a}"),
            Source::SetArg(a) => write!(f, "--set {a}"),
            Source::ArchArg => write!(f, "--arch"),
            Source::AbArg(a) => write!(f, "--ab {a}"),
            Source::File { path, line } => write!(f, "{}:{line}", path.display()),
            Source::RepeatArg(n) => write!(f, "--repeat {n}"),
        }
    }
}

/// One dimension of a grid: a key and the values it takes, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dim {
    /// A scenario key as `--set` takes it (`fault_around_bytes`,
    /// `series.batch_anon_unmap`, `step.2.len`, `swap.0.kind`, `arch`) or
    /// a helper key ([`HELPER_KEYS`]).
    pub key: String,
    /// The values, as `--set` would take them.
    pub values: Vec<String>,
    /// Where the key was written.
    pub source: Source,
}

/// A set of dimensions that advance together: one dimension is an
/// ordinary axis of the Cartesian product; several are a zipped group
/// (equal lengths; the i-th point of the group takes every dimension's
/// i-th value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    pub dims: Vec<Dim>,
}

impl Axis {
    /// Number of positions along the axis (the common length).
    pub fn len(&self) -> usize {
        self.dims.first().map_or(0, |d| d.values.len())
    }

    /// Whether the axis has no position (an empty value list).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A grid: the Cartesian product of its axes, the last varying fastest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grid {
    pub axes: Vec<Axis>,
}

impl Grid {
    /// Add `dims` as independent axes (Cartesian product) or, with `zip`,
    /// as one zipped group.
    pub fn add(&mut self, dims: Vec<Dim>, zip: bool) {
        if zip && !dims.is_empty() {
            self.axes.push(Axis { dims });
        } else {
            self.axes
                .extend(dims.into_iter().map(|d| Axis { dims: vec![d] }));
        }
    }

    /// Every dimension, in axis order.
    pub fn dims(&self) -> impl Iterator<Item = &Dim> {
        self.axes.iter().flat_map(|a| a.dims.iter())
    }

    /// The grid's keys, in axis order.
    pub fn keys(&self) -> Vec<String> {
        self.dims().map(|d| d.key.clone()).collect()
    }

    /// The number of grid points (saturating), or an error naming a
    /// zipped group whose lists differ in length.
    pub fn count(&self) -> Result<usize, String> {
        let mut n: usize = 1;
        for a in &self.axes {
            let len = a.len();
            if let Some(d) = a.dims.iter().find(|d| d.values.len() != len) {
                let first = &a.dims[0];
                return Err(format!(
                    "{}: zipped keys need lists of one length: `{}` has {} values, `{}` has {}",
                    d.source,
                    first.key,
                    first.values.len(),
                    d.key,
                    d.values.len()
                ));
            }
            n = n.saturating_mul(len);
        }
        Ok(n)
    }
}

/// Parse one `--grid KEY=SPEC` argument (see the module documentation).
pub fn parse_grid_arg(arg: &str) -> Result<Dim, String> {
    let source = Source::GridArg(arg.to_string());
    let (key, spec) = arg
        .split_once('=')
        .ok_or_else(|| format!("--grid {arg}: expected KEY=V1,V2,... or KEY=[A..B]"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("--grid {arg}: the key is empty"));
    }
    let values = parse_values(spec).map_err(|e| format!("--grid {arg}: {key}: {e}"))?;
    Ok(Dim {
        key: key.to_string(),
        values,
        source,
    })
}

/// The two-value dimension of `foliosim run --ab KEY[=BASE,PATCHED]`: a
/// bare KEY is a switch compared off (`0`) and on (`1`).
pub fn parse_ab_arg(arg: &str) -> Result<Dim, String> {
    let source = Source::AbArg(arg.to_string());
    let (key, values) = match arg.split_once('=') {
        None => (arg.trim(), vec!["0".to_string(), "1".to_string()]),
        Some((k, spec)) => (
            k.trim(),
            parse_values(spec).map_err(|e| format!("--ab {arg}: {e}"))?,
        ),
    };
    if key.is_empty() {
        return Err(format!("--ab {arg}: the key is empty"));
    }
    if values.len() != 2 || values[0] == values[1] {
        return Err(format!(
            "--ab {arg}: expected two different values, BASE,PATCHED (--ab {key}=4096,65536)"
        ));
    }
    Ok(Dim {
        key: key.to_string(),
        values,
        source,
    })
}

/// Expand a value list in the `--grid` syntax (without the key).
pub fn parse_values(spec: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in spec.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("empty value in {spec:?}"));
        }
        out.extend(parse_item(item)?);
    }
    Ok(out)
}

/// One item: a plain value, `[A..B]` or `BASE<<[A..B]` (commas are not
/// special here: a sweep file's list elements are single items).
pub fn parse_item(item: &str) -> Result<Vec<String>, String> {
    let Some(open) = item.find('[') else {
        return Ok(vec![item.to_string()]);
    };
    let inner = item[open + 1..]
        .strip_suffix(']')
        .ok_or_else(|| format!("{item:?}: a range is written [A..B], at the end of the value"))?;
    let (a, b) = inner
        .split_once("..")
        .ok_or_else(|| format!("{item:?}: a range is written [A..B]"))?;
    let num = |s: &str| -> Result<u64, String> {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("{item:?}: range bound {:?} is not an integer ≥ 0", s.trim()))
    };
    let (a, b) = (num(a)?, num(b)?);
    if a > b {
        return Err(format!("{item:?}: empty range ({a} > {b})"));
    }
    if b - a >= 1_000_000 {
        return Err(format!("{item:?}: more than 1,000,000 values"));
    }
    let prefix = item[..open].trim();
    if prefix.is_empty() {
        return Ok((a..=b).map(|n| n.to_string()).collect());
    }
    let base = prefix
        .strip_suffix("<<")
        .ok_or_else(|| format!("{item:?}: before a range only BASE<< may stand (4096<<[0..9])"))?
        .trim();
    let base = foliosim_scenario::parse_size(base).map_err(|e| format!("{item:?}: {e}"))?;
    (a..=b)
        .map(|n| {
            u32::try_from(n)
                .ok()
                .and_then(|n| base.checked_shl(n))
                .filter(|v| v >> n == base)
                .map(|v| v.to_string())
                .ok_or_else(|| format!("{item:?}: {base}<<{n} does not fit in 64 bits"))
        })
        .collect()
}

/// Sweep-level keys that set several scenario keys together.
///
/// * `folio_size` = `4K` | `16K` | `32K` | `64K` | `128K` | `256K` | `512K`
///   | `1M` | `2M`: the size of the anonymous folios a fault allocates.
///   `4K` turns every THP size off; `16K` .. `1M` set that size's
///   `transparent_hugepage.hugepages-<N>kB.enabled=always` and every
///   other size `never`; `2M` is PMD THP:
///   `transparent_hugepage.enabled=always` with the PMD size `inherit`
///   and the others `never`. Without `always` at the top level PMD THP
///   is off (`transparent_hugepage.enabled=never`).
/// * `repeat` = 1, 2, ...: the run's number, setting nothing: the point
///   runs once per value. `foliosim sweep --repeat N` sweeps it over 1 to
///   N as the innermost axis. Host and guest runs only (the simulator
///   gives every run of a point the same report: [`check_engine`]).
pub const HELPER_KEYS: &[&str] = &["folio_size", crate::nway::REPEAT_KEY];

/// The `repeat` axis of `foliosim sweep --repeat n`: 1 to `n`.
pub fn repeat_dim(n: usize) -> Dim {
    Dim {
        key: crate::nway::REPEAT_KEY.to_string(),
        values: (1..=n).map(|i| i.to_string()).collect(),
        source: Source::RepeatArg(n),
    }
}

/// Refuse a grid that repeats points on the simulator, which is
/// deterministic: every run of a point gives the same report.
pub fn check_engine(grid: &Grid, engine: &foliosim_run::Engine) -> Result<(), String> {
    if !matches!(engine, foliosim_run::Engine::Sim(_)) {
        return Ok(());
    }
    match grid
        .dims()
        .find(|d| d.key == crate::nway::REPEAT_KEY && d.values.len() > 1)
    {
        Some(d) => Err(format!(
            "{}: the simulator is deterministic, so every run of a point gives the same \
             report; repeat host or guest runs (`foliosim sweep --engine native|vm`)",
            d.source
        )),
        None => Ok(()),
    }
}

/// The mTHP sizes below the PMD size, in KiB.
const MTHP_KB: [u64; 7] = [16, 32, 64, 128, 256, 512, 1024];

/// The scenario overrides of helper key `key` at `value`, or None if `key`
/// is not a helper key.
pub fn expand_helper(key: &str, value: &str) -> Option<Result<Vec<(String, String)>, String>> {
    match key {
        "folio_size" => Some(folio_size(value)),
        crate::nway::REPEAT_KEY => Some(match value.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(Vec::new()),
            _ => Err(format!(
                "repeat {value:?}: expected a run number, 1 or more"
            )),
        }),
        _ => None,
    }
}

fn folio_size(value: &str) -> Result<Vec<(String, String)>, String> {
    let bytes = foliosim_scenario::parse_size(value).map_err(|e| e.to_string())?;
    let kb = bytes / 1024;
    let valid = bytes % 1024 == 0 && (kb == 4 || kb == 2048 || MTHP_KB.contains(&kb));
    if !valid {
        return Err(format!(
            "folio_size {value:?} is not a folio size the model has; expected one of \
             4K, 16K, 32K, 64K, 128K, 256K, 512K, 1M, 2M"
        ));
    }
    let thp = |n: u64| format!("transparent_hugepage.hugepages-{n}kB.enabled");
    let mut out = vec![(
        "transparent_hugepage.enabled".to_string(),
        if kb == 2048 { "always" } else { "never" }.to_string(),
    )];
    for n in MTHP_KB {
        let mode = if n == kb { "always" } else { "never" };
        out.push((thp(n), mode.to_string()));
    }
    out.push((thp(2048), "inherit".to_string()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_include_both_ends() {
        assert_eq!(parse_values("[1..4]").unwrap(), ["1", "2", "3", "4"]);
        let v = parse_values("4096<<[0..9]").unwrap();
        assert_eq!(v.len(), 10);
        assert_eq!(v[0], "4096");
        assert_eq!(v[9], (4096u64 << 9).to_string());
        assert_eq!(parse_values("4K<<[1..2]").unwrap(), ["8192", "16384"]);
    }

    #[test]
    fn plain_values_pass_through() {
        assert_eq!(
            parse_values("64K, 2M ,always").unwrap(),
            ["64K", "2M", "always"]
        );
    }

    #[test]
    fn folio_size_sets_one_size() {
        let ov = expand_helper("folio_size", "64K").unwrap().unwrap();
        let on: Vec<_> = ov.iter().filter(|(_, v)| v == "always").collect();
        assert_eq!(on.len(), 1);
        assert_eq!(on[0].0, "transparent_hugepage.hugepages-64kB.enabled");
        let ov = expand_helper("folio_size", "2M").unwrap().unwrap();
        assert!(ov.contains(&("transparent_hugepage.enabled".into(), "always".into())));
        assert!(expand_helper("folio_size", "8K").unwrap().is_err());
        assert!(expand_helper("fault_around_bytes", "8K").is_none());
    }
}

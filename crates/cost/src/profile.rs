//! Cost profiles: the price in nanoseconds of each counted primitive on one
//! CPU, read from a TOML file (`profiles/*.toml`, docs/cost-model.md).
//!
//! ```toml
//! name = "x86_64-kvm-host"
//! arch = "x86_64"
//! cpu = "AMD EPYC, 2-vCPU KVM guest"
//! description = "..."
//!
//! [cost]
//! "pgfault"       = { ns = 420.0, group = "fault", source = "fitted ..." }
//! "sim/page_zero" = { ns = 180.0, group = "bytes", source = "..." }
//! ```
//!
//! A counter's cost is one line of `[cost]`, keyed by the counter's output
//! name exactly as reports print it; `ns` is per event (per page for the
//! per-page counters such as `sim/page_zero`: 4096 bytes). `group` names the
//! scale factor `foliosim calibrate` fits for it (costs in one group keep
//! their ratios); a cost without a group is fixed. `source` says where the
//! number comes from and is required.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

use toml_edit::{Document, Item, Table, Value};

/// A profile error: where, which field, what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostError {
    pub file: String,
    /// 1-based; 0 when the error is not about a place in the file.
    pub line: u32,
    pub col: u32,
    pub field: String,
    pub message: String,
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.field.is_empty()) {
            (0, true) => write!(f, "{}: {}", self.file, self.message),
            (0, false) => write!(f, "{}: {}: {}", self.file, self.field, self.message),
            (_, true) => write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            ),
            (_, false) => write!(
                f,
                "{}:{}:{}: {}: {}",
                self.file, self.line, self.col, self.field, self.message
            ),
        }
    }
}

impl std::error::Error for CostError {}

/// The cost of one counter.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    /// Nanoseconds per counted event.
    pub ns: f64,
    /// The calibration group (None: fixed).
    pub group: Option<String>,
    /// Where the number comes from.
    pub source: String,
}

/// A whole profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: String,
    /// "x86_64" or "arm64".
    pub arch: String,
    pub cpu: String,
    pub description: String,
    /// By counter name.
    pub costs: BTreeMap<String, Cost>,
    /// Time the task waits per counted event, off the CPU (a read's I/O),
    /// by counter name (`[wait]`). Not in the modelled time (CPU time);
    /// it is the task's time against kswapd's, which runs meanwhile.
    pub waits: BTreeMap<String, Cost>,
}

/// Profiles shipped inside the binary, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "x86_64-kvm-host",
        include_str!("../../../profiles/x86_64-kvm-host.toml"),
    ),
    (
        "arm64-neoverse",
        include_str!("../../../profiles/arm64-neoverse.toml"),
    ),
];

/// The profile `foliosim run` uses for an architecture when no `--profile`
/// is given.
pub fn default_profile_name(arch: &str) -> Option<&'static str> {
    match arch {
        "x86_64" => Some("x86_64-kvm-host"),
        "arm64" => Some("arm64-neoverse"),
        _ => None,
    }
}

/// Every counter name a report of the model can contain (and so a profile
/// may price): the names of a fresh counter snapshot.
pub fn known_counters() -> Vec<String> {
    foliosim_uapi::vmstat::model_counter_names()
}

/// Byte offset → 1-based line and column.
fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |s| s.chars().count()) + 1;
    (line as u32, col as u32)
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Option<std::ops::Range<usize>>, field: &str, msg: String) -> CostError {
        let (line, col) = span.map_or((0, 0), |s| line_col(self.text, s.start));
        CostError {
            file: self.file.to_string(),
            line,
            col,
            field: field.to_string(),
            message: msg,
        }
    }

    fn string(&self, t: &Table, key: &str, required: bool) -> Result<String, CostError> {
        match t.get(key) {
            None if required => {
                Err(self.err(t.span(), key, format!("missing required key `{key}`")))
            }
            None => Ok(String::new()),
            Some(Item::Value(Value::String(s))) => Ok(s.value().clone()),
            Some(item) => Err(self.err(item.span(), key, "expected a string".into())),
        }
    }

    /// Every key of `t` is one of `allowed`; `field` is the key's field
    /// name, `span` its place.
    fn known_keys(
        &self,
        t: &Table,
        allowed: &[&str],
        field: impl Fn(&str) -> String,
        span: impl Fn(&str, &Item) -> Option<std::ops::Range<usize>>,
    ) -> Result<(), CostError> {
        for (k, item) in t.iter() {
            if !allowed.contains(&k) {
                return Err(self.err(
                    span(k, item),
                    &field(k),
                    format!("unknown key; expected one of: {}", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The `arch` key: a name foliosim knows, spelt as it spells it.
    fn arch(&self, root: &Table) -> Result<String, CostError> {
        let arch = self.string(root, "arch", true)?;
        if foliosim_uapi::Arch::from_name(&arch).is_none_or(|a| a.as_str() != arch) {
            let span = root.get("arch").and_then(Item::span);
            return Err(self.err(
                span,
                "arch",
                format!("`{arch}`: expected \"x86_64\" or \"arm64\""),
            ));
        }
        Ok(arch)
    }

    /// The `[cost]` table.
    fn cost_table<'t>(&self, root: &'t Table) -> Result<&'t Table, CostError> {
        match root.get("cost") {
            Some(Item::Table(t)) => Ok(t),
            Some(item) => Err(self.err(item.span(), "cost", "expected a table `[cost]`".into())),
            None => Err(self.err(Some(0..0), "cost", "missing the `[cost]` table".into())),
        }
    }

    /// The optional `[wait]` table.
    fn wait_table<'t>(&self, root: &'t Table) -> Result<Option<&'t Table>, CostError> {
        match root.get("wait") {
            Some(Item::Table(t)) => Ok(Some(t)),
            Some(item) => Err(self.err(item.span(), "wait", "expected a table `[wait]`".into())),
            None => Ok(None),
        }
    }

    /// The cost of `counter` (one of `known`, sorted), from its line
    /// `item` of the table `[section]` (`cost` or `wait`).
    fn cost(
        &self,
        section: &str,
        table: &Table,
        known: &[String],
        counter: &str,
        item: &Item,
    ) -> Result<Cost, CostError> {
        let field = format!("{section}.\"{counter}\"");
        let key_span = table.key(counter).and_then(|k| k.span());
        if known.binary_search(&counter.to_string()).is_err() {
            return Err(self.err(
                key_span,
                &field,
                format!(
                    "unknown counter `{counter}` (a profile prices counters under the names \
                     reports print, such as `pgfault` or `sim/ptep_get`)"
                ),
            ));
        }
        let entry: Table = match item {
            Item::Value(Value::InlineTable(t)) => t.clone().into_table(),
            Item::Table(t) => t.clone(),
            _ => {
                return Err(self.err(
                    item.span().or(key_span),
                    &field,
                    "expected { ns = NUMBER, source = \"...\" }".into(),
                ))
            }
        };
        // Spans of an inline table converted to a table are kept on its
        // values; fall back to the key's place.
        let here = |v: &Item| v.span().or(key_span.clone());
        self.known_keys(
            &entry,
            COST_KEYS,
            |k| format!("{field}.{k}"),
            |_, v| here(v),
        )?;
        let ns = self.cost_ns(&entry, &field, key_span.clone())?;
        let text_of = |k: &str| -> Result<Option<String>, CostError> {
            match entry.get(k) {
                None => Ok(None),
                Some(Item::Value(Value::String(s))) => Ok(Some(s.value().clone())),
                Some(v) => {
                    Err(self.err(here(v), &format!("{field}.{k}"), "expected a string".into()))
                }
            }
        };
        let source = text_of("source")?.filter(|s| !s.trim().is_empty());
        let Some(source) = source else {
            return Err(self.err(
                key_span,
                &format!("{field}.source"),
                "every cost needs a non-empty `source` (where the number comes from)".into(),
            ));
        };
        let group = text_of("group")?;
        Ok(Cost { ns, group, source })
    }

    /// The `ns` of a cost line: a finite number ≥ 0.
    fn cost_ns(
        &self,
        entry: &Table,
        field: &str,
        key_span: Option<std::ops::Range<usize>>,
    ) -> Result<f64, CostError> {
        let ns = match entry.get("ns") {
            Some(Item::Value(Value::Float(f))) => *f.value(),
            Some(Item::Value(Value::Integer(i))) => *i.value() as f64,
            Some(v) => {
                return Err(self.err(
                    v.span().or(key_span),
                    &format!("{field}.ns"),
                    "expected a number of nanoseconds".into(),
                ))
            }
            None => {
                return Err(self.err(
                    key_span,
                    &format!("{field}.ns"),
                    "missing required key `ns`".into(),
                ))
            }
        };
        if !ns.is_finite() || ns < 0.0 {
            return Err(self.err(
                entry.get("ns").and_then(Item::span).or(key_span),
                &format!("{field}.ns"),
                format!("{ns}: a cost must be a finite number ≥ 0"),
            ));
        }
        Ok(ns)
    }
}

const TOP_KEYS: &[&str] = &["name", "arch", "cpu", "description", "cost", "wait"];
const COST_KEYS: &[&str] = &["ns", "group", "source"];

impl Profile {
    /// Parse profile text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Profile, CostError> {
        let cx = Ctx { file, text };
        let doc = Document::parse(text).map_err(|e| {
            cx.err(
                e.span(),
                "",
                format!("TOML syntax error: {}", e.message().trim()),
            )
        })?;
        let root = doc.as_table();
        cx.known_keys(root, TOP_KEYS, str::to_string, |k, item| {
            root.key(k).and_then(|k| k.span()).or(item.span())
        })?;
        let name = cx.string(root, "name", true)?;
        let arch = cx.arch(root)?;
        let cpu = cx.string(root, "cpu", true)?;
        let description = cx.string(root, "description", false)?;
        let table = cx.cost_table(root)?;
        let known = known_counters();
        let mut costs = BTreeMap::new();
        for (counter, item) in table.iter() {
            costs.insert(
                counter.to_string(),
                cx.cost("cost", table, &known, counter, item)?,
            );
        }
        let mut waits = BTreeMap::new();
        if let Some(table) = cx.wait_table(root)? {
            for (counter, item) in table.iter() {
                waits.insert(
                    counter.to_string(),
                    cx.cost("wait", table, &known, counter, item)?,
                );
            }
        }
        Ok(Profile {
            name,
            arch,
            cpu,
            description,
            costs,
            waits,
        })
    }

    /// The profile as TOML text (the format `parse` reads), costs grouped
    /// by calibration group, each group sorted by counter name.
    pub fn to_toml(&self, header_comment: &str) -> String {
        let mut out = String::new();
        for line in header_comment.lines() {
            let _ = writeln!(out, "# {line}");
        }
        let q = |s: &str| toml_edit::Value::from(s).to_string().trim().to_string();
        let _ = writeln!(out, "name = {}", q(&self.name));
        let _ = writeln!(out, "arch = {}", q(&self.arch));
        let _ = writeln!(out, "cpu = {}", q(&self.cpu));
        let _ = writeln!(out, "description = {}", q(&self.description));
        let _ = writeln!(out, "\n[cost]");
        let mut groups: BTreeMap<&str, Vec<(&String, &Cost)>> = BTreeMap::new();
        for (k, c) in &self.costs {
            groups
                .entry(c.group.as_deref().unwrap_or("~fixed"))
                .or_default()
                .push((k, c));
        }
        for (g, list) in groups {
            let title = if g == "~fixed" {
                "fixed (not fitted)".to_string()
            } else {
                format!("group {g}")
            };
            let _ = writeln!(out, "\n# {title}");
            for (k, c) in list {
                let group = c
                    .group
                    .as_deref()
                    .map(|g| format!(", group = {}", q(g)))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{} = {{ ns = {}{group}, source = {} }}",
                    q(k),
                    fmt_ns(c.ns),
                    q(&c.source)
                );
            }
        }
        if !self.waits.is_empty() {
            let _ = writeln!(out, "\n[wait]");
            for (k, c) in &self.waits {
                let _ = writeln!(
                    out,
                    "{} = {{ ns = {}, source = {} }}",
                    q(k),
                    fmt_ns(c.ns),
                    q(&c.source)
                );
            }
        }
        out
    }
}

/// A cost as TOML writes it: a float with enough digits, always with a
/// decimal point.
pub fn fmt_ns(ns: f64) -> String {
    let s = if ns >= 100.0 {
        format!("{ns:.1}")
    } else if ns >= 1.0 {
        format!("{ns:.2}")
    } else {
        format!("{ns:.4}")
    };
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"name = "t"
arch = "x86_64"
cpu = "test cpu"

[cost]
"pgfault" = { ns = 400, group = "fault", source = "a guess" }
"sim/page_zero" = { ns = 150.5, source = "memset bandwidth" }
"#;

    #[test]
    fn parses_a_profile() {
        let p = Profile::parse("t.toml", GOOD).unwrap();
        assert_eq!(p.costs["pgfault"].ns, 400.0);
        assert_eq!(p.costs["pgfault"].group.as_deref(), Some("fault"));
        assert_eq!(p.costs["sim/page_zero"].ns, 150.5);
        assert_eq!(p.costs["sim/page_zero"].group, None);
    }

    #[test]
    fn round_trips_through_to_toml() {
        let p = Profile::parse("t.toml", GOOD).unwrap();
        let q = Profile::parse("u.toml", &p.to_toml("written by a test")).unwrap();
        assert_eq!(p, q);
    }

    fn err_of(text: &str) -> CostError {
        Profile::parse("p.toml", text).unwrap_err()
    }

    #[test]
    fn unknown_counter_names_file_line_and_field() {
        let e = err_of(&GOOD.replace("\"sim/page_zero\"", "\"sim/page_zeroes\""));
        assert_eq!((e.file.as_str(), e.line, e.col), ("p.toml", 7, 1));
        assert_eq!(e.field, "cost.\"sim/page_zeroes\"");
        assert!(e.message.contains("unknown counter"), "{e}");
        assert!(e
            .to_string()
            .starts_with("p.toml:7:1: cost.\"sim/page_zeroes\": "));
    }

    #[test]
    fn negative_cost_is_refused_at_its_value() {
        let e = err_of(&GOOD.replace("ns = 150.5", "ns = -1.0"));
        assert_eq!(e.line, 7);
        assert_eq!(e.field, "cost.\"sim/page_zero\".ns");
        assert!(e.message.contains("≥ 0"), "{e}");
    }

    #[test]
    fn missing_source_is_refused() {
        let e = err_of(&GOOD.replace(", source = \"a guess\"", ""));
        assert_eq!(e.line, 6);
        assert_eq!(e.field, "cost.\"pgfault\".source");
    }

    #[test]
    fn wrong_type_and_unknown_keys() {
        let e = err_of(&GOOD.replace("ns = 400", "ns = \"fast\""));
        assert_eq!((e.line, e.field.as_str()), (6, "cost.\"pgfault\".ns"));
        let e = err_of(&GOOD.replace("group = \"fault\"", "grp = \"fault\""));
        assert_eq!((e.line, e.field.as_str()), (6, "cost.\"pgfault\".grp"));
        let e = err_of(&GOOD.replace("cpu = ", "processor = "));
        assert_eq!((e.line, e.field.as_str()), (3, "processor"));
        let e = err_of(&GOOD.replace("arch = \"x86_64\"", "arch = \"riscv\""));
        assert_eq!((e.line, e.field.as_str()), (2, "arch"));
    }

    #[test]
    fn syntax_error_has_a_line() {
        let e = err_of("name = \"t\"\narch = \n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("TOML syntax error"), "{e}");
    }

    /// `[wait]` prices a task's time off the CPU per event: parsed like
    /// `[cost]`, written back by `to_toml`, and left out of the modelled
    /// (CPU) time; a bad line is named under `wait.`.
    #[test]
    fn waits_are_apart_from_costs() {
        let text = "name = \"w\"\narch = \"x86_64\"\ncpu = \"c\"\n[cost]\n\
                    \"pgfault\" = { ns = 100, source = \"s\" }\n[wait]\n\
                    \"sim/pages_read_io\" = { ns = 2000, source = \"measured\" }\n";
        let p = Profile::parse("w.toml", text).unwrap();
        assert_eq!(p.waits["sim/pages_read_io"].ns, 2000.0);
        assert!(!p.costs.contains_key("sim/pages_read_io"));
        let again = Profile::parse("again.toml", &p.to_toml("")).unwrap();
        assert_eq!(again, p);
        let counters = BTreeMap::from([
            ("pgfault".to_string(), 3),
            ("sim/pages_read_io".to_string(), 10),
        ]);
        assert_eq!(crate::phase_time(&p, &counters).modelled_ns, 300);
        let bad = text.replace("ns = 2000", "ns = -1");
        let e = Profile::parse("w.toml", &bad).unwrap_err();
        assert_eq!(e.field, "wait.\"sim/pages_read_io\".ns", "{e}");
    }

    #[test]
    fn shipped_profiles_parse_and_defaults_exist() {
        for (name, _) in BUILTIN {
            let p = Profile::resolve(name).unwrap();
            assert_eq!(&p.name, name);
        }
        for arch in ["x86_64", "arm64"] {
            let p = Profile::resolve(default_profile_name(arch).unwrap()).unwrap();
            assert_eq!(p.arch, arch);
        }
    }
}

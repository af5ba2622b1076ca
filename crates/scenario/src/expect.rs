//! `[[expect]]` tables.

use std::collections::HashSet;

use crate::ast::{Expect, Tolerance};
use crate::check::Fields;
use crate::error::{Ctx, Result};
use crate::tree::{Data, Node};
use foliosim_uapi::{counters, names};

const KEYS: &[&str] = &["phase", "counter", "value", "tolerance"];

/// Validate the `[[expect]]` array; `phases` are the declared phase names.
pub(crate) fn expects(ctx: &Ctx, node: Option<&Node>, phases: &[String]) -> Result<Vec<Expect>> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    let tables = ctx.array(node, "expect", "an array of tables ([[expect]])")?;
    let mut expects = Vec::with_capacity(tables.len());
    let known: HashSet<&str> = phases.iter().map(String::as_str).collect();
    for (i, table) in tables.iter().enumerate() {
        let path = format!("expect[{}]", i + 1);
        let fields = Fields::new(ctx, table, &path, format!("in {path}"))?;
        expects.push(expect(&fields, phases, &known)?);
    }
    Ok(expects)
}

fn expect(f: &Fields<'_>, phases: &[String], known: &HashSet<&str>) -> Result<Expect> {
    f.check_allowed(KEYS)?;
    let phase = f.req("phase", Ctx::name)?;
    if !known.contains(phase.as_str()) {
        let declared = if phases.is_empty() {
            "no step declares a phase".to_owned()
        } else {
            format!("declared phases: {}", phases.join(", "))
        };
        return Err(f.err_at("phase", format!("unknown phase {phase:?}; {declared}")));
    }
    let value = f.req("value", Ctx::number)?;
    let tolerance = f
        .opt("tolerance", tolerance)?
        .unwrap_or(Tolerance::Abs(0.0));
    let counter: String = f.req("counter", Ctx::name)?;
    let fixed = counters::fixed_counter_names();
    if !counters::is_counter_name(&counter, fixed) {
        let msg = format!(
            "unknown counter {counter:?}{}; `foliosim counters` lists them",
            names::did_you_mean(&counter, fixed.iter().map(String::as_str))
        );
        return Err(f.err_at("counter", msg));
    }
    Ok(Expect {
        loc: f.ctx().loc(&f.table().origin),
        phase,
        counter,
        value,
        tolerance,
    })
}

/// A number >= 0 (absolute) or a string `"<number>%"` (relative).
fn tolerance(ctx: &Ctx, node: &Node, field: &str) -> Result<Tolerance> {
    let (value, relative) = match &node.data {
        Data::Int(_) | Data::Float(_) => (ctx.number(node, field).ok(), false),
        Data::Str(s) => {
            let number = s
                .trim()
                .strip_suffix('%')
                .and_then(|n| n.trim().parse().ok());
            (number, true)
        }
        _ => (None, false),
    };
    match value {
        Some(v) if v >= 0.0 && f64::is_finite(v) => Ok(if relative {
            Tolerance::Rel(v)
        } else {
            Tolerance::Abs(v)
        }),
        _ => {
            let msg = format!(
                "expected a number >= 0 or a percentage like \"5%\", found {}",
                node.describe()
            );
            Err(ctx.err(&node.origin, field, msg))
        }
    }
}

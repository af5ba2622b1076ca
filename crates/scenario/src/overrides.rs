//! `--set KEY=VALUE` overrides, applied to the tree before validation.

use toml_edit::Value;

use crate::error::{Ctx, Result};
use crate::tree::{from_override_value, Data, Entry, Node, Origin};

/// More dots than any key of the language has (bounds the tree's depth).
const MAX_SEGMENTS: usize = 16;

/// Apply every override in order (a later one wins).
pub(crate) fn apply(ctx: &Ctx, root: &mut Node, overrides: &[(String, String)]) -> Result<()> {
    for (key, value) in overrides {
        apply_one(ctx, root, key, value)?;
    }
    Ok(())
}

fn apply_one(ctx: &Ctx, root: &mut Node, key: &str, value: &str) -> Result<()> {
    let origin = Origin::Set {
        key: key.to_owned(),
        value: value.to_owned(),
    };
    let node = override_value(ctx, value, &origin);
    let segments: Vec<&str> = key.split('.').collect();
    if segments.len() > MAX_SEGMENTS || segments.iter().any(|s| s.is_empty()) {
        let msg = "expected KEY like `seed`, `system.memory`, `fault_around_bytes`, \
                   `file.<name>.<field>` or `step.<N>.<field>`";
        return Err(ctx.err(&origin, "", msg));
    }
    match segments.as_slice() {
        ["name" | "description" | "seed"] => set_in(root, &segments, node, &origin),
        ["system"] | ["file"] | ["file", _] | ["step"] | ["step", _] => {
            let msg = "expected `system.<key>`, `file.<name>.<field>` or `step.<N>.<field>`";
            return Err(ctx.err(&origin, "", msg));
        }
        ["system", "swap", i, rest @ ..] if is_index(i) => {
            set_swap(ctx, root, i, rest, node, &origin)?;
        }
        ["swap", i, rest @ ..] if is_index(i) => set_swap(ctx, root, i, rest, node, &origin)?,
        ["system", ..] => set_in(root, &segments, node, &origin),
        ["file", ..] => {
            let (name, field) = key
                .strip_prefix("file.")
                .and_then(|k| k.rsplit_once('.'))
                .unwrap_or_default();
            let file = element_mut(ctx, root, Element::File(name), &origin)?;
            set_in(file, &[field], node, &origin);
        }
        ["step", n, rest @ ..] => {
            let step = element_mut(ctx, root, Element::Step(n), &origin)?;
            set_in(step, rest, node, &origin);
        }
        _ => {
            let path: Vec<&str> = std::iter::once("system").chain(segments).collect();
            set_in(root, &path, node, &origin);
        }
    }
    Ok(())
}

/// The value of an override: TOML if it parses as a TOML value (and holds
/// no date-time), the text itself as a string otherwise.
fn override_value(ctx: &Ctx, value: &str, origin: &Origin) -> Node {
    value
        .parse::<Value>()
        .ok()
        .and_then(|v| from_override_value(ctx, &v, origin))
        .unwrap_or_else(|| Node::new(Data::Str(value.to_owned()), origin.clone()))
}

fn is_index(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `swap.<i>.<field>`: `<field>` of the i-th (0-based, as in the knob keys)
/// `[[system.swap]]` table; `i` = the number of tables adds one.
fn set_swap(
    ctx: &Ctx,
    root: &mut Node,
    index: &str,
    rest: &[&str],
    value: Node,
    origin: &Origin,
) -> Result<()> {
    let system = child_table(root, "system", origin);
    let swap = child_table_or(system, "swap", origin, Data::Array(Vec::new()));
    let Data::Array(devices) = &mut swap.data else {
        // Not an array: replace it as any other path would (validation
        // then says what is expected).
        set_in(swap, &[index], value, origin);
        return Ok(());
    };
    let count = devices.len();
    match index.parse::<usize>() {
        Ok(i) if i < count => set_in(&mut devices[i], rest, value, origin),
        Ok(i) if i == count => {
            let mut table = Node::new(Data::Table(Vec::new()), origin.clone());
            set_in(&mut table, rest, value, origin);
            devices.push(table);
        }
        _ => {
            let msg = format!(
                "no swap device {index}: the scenario has {count} ([[system.swap]] tables, \
                 numbered from 0 as in the knob keys); swap.{count}.<field> adds one"
            );
            return Err(ctx.err(origin, "", msg));
        }
    }
    Ok(())
}

/// The value of `key` in table `node`, created as an empty table if absent
/// (a non-table `node` becomes a table first).
fn child_table<'a>(node: &'a mut Node, key: &str, origin: &Origin) -> &'a mut Node {
    child_table_or(node, key, origin, Data::Table(Vec::new()))
}

/// The value of `key` in table `node`, created as `empty` if absent.
fn child_table_or<'a>(node: &'a mut Node, key: &str, origin: &Origin, empty: Data) -> &'a mut Node {
    if !matches!(node.data, Data::Table(_)) {
        *node = Node::new(Data::Table(Vec::new()), origin.clone());
    }
    let Data::Table(entries) = &mut node.data else {
        unreachable!("made a table above");
    };
    let i = match entries.iter().position(|e| e.key == key) {
        Some(i) => i,
        None => {
            entries.push(leaf(key, Node::new(empty, origin.clone()), origin));
            entries.len() - 1
        }
    };
    &mut entries[i].node
}

/// Set `path` under `node` to `value`, creating (or replacing non-table
/// values by) tables on the way.
fn set_in(node: &mut Node, path: &[&str], value: Node, origin: &Origin) {
    let Some((first, rest)) = path.split_first() else {
        *node = value;
        return;
    };
    if let Data::Table(entries) = &mut node.data {
        if let Some(entry) = entries.iter_mut().find(|e| e.key == *first) {
            set_in(&mut entry.node, rest, value, origin);
        } else {
            entries.push(nested(first, rest, value, origin));
        }
    } else {
        let entries = vec![nested(first, rest, value, origin)];
        *node = Node::new(Data::Table(entries), origin.clone());
    }
}

/// `key = { rest... = value }` as a new entry.
fn nested(key: &str, rest: &[&str], value: Node, origin: &Origin) -> Entry {
    let node = rest.iter().rev().fold(value, |inner, k| {
        Node::new(Data::Table(vec![leaf(k, inner, origin)]), origin.clone())
    });
    leaf(key, node, origin)
}

fn leaf(key: &str, node: Node, origin: &Origin) -> Entry {
    Entry {
        key: key.to_owned(),
        key_origin: origin.clone(),
        node,
    }
}

/// An element of a top-level array that a `--set` key names.
enum Element<'k> {
    /// `step.<n>`: the n-th (1-based) top-level step.
    Step(&'k str),
    /// `file.<name>`: the `[[file]]` table whose `name` is this.
    File(&'k str),
}

/// The element `which` of `root`.
fn element_mut<'a>(
    ctx: &Ctx,
    root: &'a mut Node,
    which: Element<'_>,
    origin: &Origin,
) -> Result<&'a mut Node> {
    match which {
        Element::Step(n) => {
            let count = array_mut(root, "step").map_or(0, |steps| steps.len());
            let index = n.parse::<usize>().ok().filter(|i| (1..=count).contains(i));
            let step = index.and_then(|i| array_mut(root, "step")?.get_mut(i - 1));
            step.ok_or_else(|| {
                let msg = format!(
                    "no step {n}: the scenario has {count} top-level steps, numbered from 1"
                );
                ctx.err(origin, "", msg)
            })
        }
        Element::File(name) => {
            let named = |file: &&mut Node| file.get_str("name") == Some(name);
            let file = array_mut(root, "file").and_then(|files| files.iter_mut().find(named));
            file.ok_or_else(|| ctx.err(origin, "", format!("no [[file]] has name = {name:?}")))
        }
    }
}

/// The elements of the top-level array `key`.
fn array_mut<'a>(root: &'a mut Node, key: &str) -> Option<&'a mut Vec<Node>> {
    let Data::Table(entries) = &mut root.data else {
        return None;
    };
    match &mut entries.iter_mut().find(|e| e.key == key)?.node.data {
        Data::Array(nodes) => Some(nodes),
        _ => None,
    }
}

//! Typed reading of tree nodes: conversions that say what they expected and
//! what they found, and [`Fields`], a table reader that knows its path.

use crate::error::{Ctx, Result, ScenarioError};
use crate::size::parse_size;
use crate::tree::{join, Data, Entry, Node};

pub(crate) use foliosim_uapi::PAGE_SIZE;

impl Ctx {
    pub(crate) fn expected(&self, node: &Node, field: &str, what: &str) -> ScenarioError {
        let msg = format!("expected {what}, found {}", node.describe());
        self.err(&node.origin, field, msg)
    }

    pub fn string<'n>(&self, node: &'n Node, field: &str) -> Result<&'n str> {
        match &node.data {
            Data::Str(s) => Ok(s),
            _ => Err(self.expected(node, field, "a string")),
        }
    }

    /// A non-empty string (names of regions, files, phases, counters).
    pub fn name(&self, node: &Node, field: &str) -> Result<String> {
        match &node.data {
            Data::Str(s) if !s.is_empty() => Ok(s.clone()),
            _ => Err(self.expected(node, field, "a non-empty string")),
        }
    }

    pub fn boolean(&self, node: &Node, field: &str) -> Result<bool> {
        match node.data {
            Data::Bool(b) => Ok(b),
            _ => Err(self.expected(node, field, "a boolean (true or false)")),
        }
    }

    /// A non-negative integer.
    pub fn uint(&self, node: &Node, field: &str) -> Result<u64> {
        match node.data {
            Data::Int(i) if i >= 0 => Ok(i.unsigned_abs()),
            _ => Err(self.expected(node, field, "a non-negative integer")),
        }
    }

    /// A seed: a non-negative integer, or a string of decimal digits for
    /// values beyond TOML's signed 64-bit integers.
    pub fn seed(&self, node: &Node, field: &str) -> Result<u64> {
        match &node.data {
            Data::Str(s) => s
                .parse()
                .map_err(|_| self.expected(node, field, "a non-negative integer below 2^64")),
            _ => self.uint(node, field),
        }
    }

    /// A number (integer or float) that is finite.
    pub fn number(&self, node: &Node, field: &str) -> Result<f64> {
        match node.data {
            // Counter values are far below 2^53; rounding beyond is accepted.
            Data::Int(i) => Ok(i as f64),
            Data::Float(x) if x.is_finite() => Ok(x),
            _ => Err(self.expected(node, field, "a finite number")),
        }
    }

    /// A size in bytes: a non-negative integer or a string per `parse_size`.
    pub fn size(&self, node: &Node, field: &str) -> Result<u64> {
        match &node.data {
            Data::Int(i) if *i >= 0 => Ok(i.unsigned_abs()),
            Data::Str(s) => parse_size(s).map_err(|e| self.err(&node.origin, field, e)),
            _ => Err(self.expected(
                node,
                field,
                "a size (a non-negative integer or a string like \"64K\")",
            )),
        }
    }

    /// A size of at least one byte.
    pub fn nonzero_size(&self, node: &Node, field: &str) -> Result<u64> {
        let size = self.size(node, field)?;
        if size == 0 {
            return Err(self.err(&node.origin, field, "expected a size above 0, found 0"));
        }
        Ok(size)
    }

    /// A size that is a multiple of the 4 KiB page size (0 allowed).
    pub fn page_offset(&self, node: &Node, field: &str) -> Result<u64> {
        let size = self.size(node, field)?;
        if size % PAGE_SIZE != 0 {
            let msg = format!("expected a multiple of the page size ({PAGE_SIZE}), found {size}");
            return Err(self.err(&node.origin, field, msg));
        }
        Ok(size)
    }

    /// A non-zero multiple of the page size.
    pub fn page_size(&self, node: &Node, field: &str) -> Result<u64> {
        let size = self.page_offset(node, field)?;
        if size == 0 {
            let msg =
                format!("expected a positive multiple of the page size ({PAGE_SIZE}), found 0");
            return Err(self.err(&node.origin, field, msg));
        }
        Ok(size)
    }

    /// One of the words of `choices`.
    pub fn choice<T: Copy>(&self, node: &Node, field: &str, choices: &[(&str, T)]) -> Result<T> {
        let found = match &node.data {
            Data::Str(s) => choices.iter().find(|(word, _)| word == s),
            _ => None,
        };
        found.map(|&(_, value)| value).ok_or_else(|| {
            let words: Vec<String> = choices.iter().map(|(w, _)| format!("{w:?}")).collect();
            let what = format!("one of {}", words.join(", "));
            self.expected(node, field, &what)
        })
    }

    /// The elements of an array.
    pub fn array<'n>(&self, node: &'n Node, field: &str, what: &str) -> Result<&'n [Node]> {
        match &node.data {
            Data::Array(nodes) => Ok(nodes),
            _ => Err(self.expected(node, field, what)),
        }
    }
}

/// A table being validated: its path (`step[2]`), a phrase naming it for
/// messages (`in step[2] (op = "touch")`) and typed access to its keys.
pub(crate) struct Fields<'a> {
    ctx: &'a Ctx,
    table: &'a Node,
    entries: &'a [Entry],
    path: String,
    place: String,
}

impl<'a> Fields<'a> {
    pub fn new(ctx: &'a Ctx, table: &'a Node, path: &str, place: String) -> Result<Self> {
        let Data::Table(entries) = &table.data else {
            return Err(ctx.expected(table, path, "a table"));
        };
        Ok(Fields {
            ctx,
            table,
            entries,
            path: path.to_owned(),
            place,
        })
    }

    pub fn ctx(&self) -> &'a Ctx {
        self.ctx
    }

    pub fn table(&self) -> &'a Node {
        self.table
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn set_place(&mut self, place: String) {
        self.place = place;
    }

    /// The full field name of `key`.
    pub fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.entries.iter().find(|e| e.key == key).map(|e| &e.node)
    }

    /// Every key must be one of `allowed`.
    pub fn check_allowed(&self, allowed: &[&str]) -> Result<()> {
        match self
            .entries
            .iter()
            .find(|e| !allowed.contains(&e.key.as_str()))
        {
            Some(entry) => {
                let msg = format!(
                    "unknown key `{}` {}{}; expected one of: {}",
                    entry.key,
                    self.place,
                    foliosim_uapi::names::did_you_mean(&entry.key, allowed.iter().copied()),
                    allowed.join(", ")
                );
                Err(self
                    .ctx
                    .err(&entry.key_origin, &self.field(&entry.key), msg))
            }
            None => Ok(()),
        }
    }

    /// The converted value of `key`, if present.
    pub fn opt<T>(
        &self,
        key: &str,
        convert: impl FnOnce(&'a Ctx, &'a Node, &str) -> Result<T>,
    ) -> Result<Option<T>> {
        self.get(key)
            .map(|node| convert(self.ctx, node, &self.field(key)))
            .transpose()
    }

    /// The converted value of `key`, which must be present.
    pub fn req<T>(
        &self,
        key: &str,
        convert: impl FnOnce(&'a Ctx, &'a Node, &str) -> Result<T>,
    ) -> Result<T> {
        match self.get(key) {
            Some(node) => convert(self.ctx, node, &self.field(key)),
            None => {
                let msg = format!("missing required key `{key}` {}", self.place);
                Err(self.ctx.err(&self.table.origin, &self.field(key), msg))
            }
        }
    }

    /// An error about `key`, at its value if present, else at the table.
    pub fn err_at(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        let origin = self.get(key).map_or(&self.table.origin, |n| &n.origin);
        self.ctx.err(origin, &self.field(key), message)
    }

    /// `key` must be absent; `reason` completes "`key` is only allowed ...".
    pub fn forbid(&self, key: &str, reason: &str) -> Result<()> {
        match self.get(key) {
            Some(_) => Err(self.err_at(key, format!("`{key}` is only allowed {reason}"))),
            None => Ok(()),
        }
    }
}

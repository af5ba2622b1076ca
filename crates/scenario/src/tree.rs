//! The intermediate tree: the TOML document as plain data, every value
//! remembering where it came from (a place in the file or a `--set`).

use std::ops::Range;

use toml_edit::{Document, Item, TableLike, Value};

use crate::error::{Ctx, Result};

/// Where a value (or key) was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// In the scenario file, 1-based.
    File { line: u32, col: u32 },
    /// By a `--set KEY=VALUE` override.
    Set { key: String, value: String },
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub data: Data,
    pub origin: Origin,
}

/// A key of a table with its value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    pub key_origin: Origin,
    pub node: Node,
}

impl Node {
    pub fn new(data: Data, origin: Origin) -> Self {
        Node { data, origin }
    }

    /// The value of `key` if this is a table that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.data {
            Data::Table(entries) => entries.iter().find(|e| e.key == key).map(|e| &e.node),
            _ => None,
        }
    }

    /// The string value of `key` if this is a table that has one.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        match &self.get(key)?.data {
            Data::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A short description of the value for error messages.
    pub fn describe(&self) -> String {
        match &self.data {
            Data::Str(s) => format!("string {s:?}"),
            Data::Int(i) => format!("integer {i}"),
            Data::Float(x) => format!("float {x}"),
            Data::Bool(b) => format!("boolean {b}"),
            Data::Array(_) => "an array".to_owned(),
            Data::Table(_) => "a table".to_owned(),
        }
    }
}

/// Byte offset to 1-based line and column (columns count characters).
/// Linear in the text: the line starts are found once, and on a line of
/// ASCII text (the usual case) a column is a subtraction; only a line with
/// other characters is counted from its start.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// Whether each line is all ASCII.
    ascii: Vec<bool>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> Self {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let ascii = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let e = starts.get(i + 1).copied().unwrap_or(text.len());
                text.as_bytes()[s..e].is_ascii()
            })
            .collect();
        LineIndex {
            text,
            starts,
            ascii,
        }
    }

    pub fn origin(&self, offset: usize) -> Origin {
        let offset = offset.min(self.text.len());
        let index = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.starts.get(index).copied().unwrap_or(0).min(offset);
        let col = if self.ascii.get(index).copied().unwrap_or(true) {
            offset - start
        } else {
            self.text
                .get(start..offset)
                .map_or(offset - start, |s| s.chars().count())
        };
        Origin::File {
            line: to_u32(index + 1),
            col: to_u32(col + 1),
        }
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Parse scenario text into a tree (a TOML syntax error becomes a
/// [`crate::ScenarioError`] at the error's position).
pub(crate) fn parse_document(ctx: &Ctx, text: &str) -> Result<Node> {
    let lines = LineIndex::new(text);
    let doc = Document::parse(text).map_err(|e| {
        let origin = lines.origin(e.span().map_or(0, |s| s.start));
        ctx.err(&origin, "", format!("TOML syntax error: {}", e.message()))
    })?;
    let conv = Converter {
        ctx,
        spans: Spans::File(lines),
    };
    conv.table(
        doc.as_table(),
        Origin::File { line: 1, col: 1 },
        &Path::Root,
    )
}

/// Convert an override value (already parsed as TOML) into a tree whose
/// every node has `origin`. `None` if it holds a value the language has no
/// use for (a date-time).
pub(crate) fn from_override_value(ctx: &Ctx, value: &Value, origin: &Origin) -> Option<Node> {
    let conv = Converter {
        ctx,
        spans: Spans::Fixed(origin.clone()),
    };
    conv.value(value, origin, &Path::Root).ok()
}

/// A value's place in the document (`step[2].child[1].op`), spelled out
/// only for an error: building every field name while converting cost
/// more than the conversion itself.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    /// A 0-based element of an array, spelled 1-based.
    Index(&'p Path<'p>, usize),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{}]", i + 1),
        }
    }
}

enum Spans<'a> {
    File(LineIndex<'a>),
    Fixed(Origin),
}

struct Converter<'a> {
    ctx: &'a Ctx,
    spans: Spans<'a>,
}

impl Converter<'_> {
    fn origin(&self, span: Option<Range<usize>>, fallback: &Origin) -> Origin {
        match (&self.spans, span) {
            (Spans::File(lines), Some(span)) => lines.origin(span.start),
            (Spans::Fixed(origin), _) => origin.clone(),
            (Spans::File(_), None) => fallback.clone(),
        }
    }

    fn table(&self, table: &dyn TableLike, origin: Origin, path: &Path<'_>) -> Result<Node> {
        let mut entries = Vec::new();
        for (key, item) in table.iter() {
            let key_span = table.get_key_value(key).and_then(|(k, _)| k.span());
            let key_origin = self.origin(key_span, &origin);
            let field = Path::Key(path, key);
            if let Some(node) = self.item(item, &key_origin, &field)? {
                entries.push(Entry {
                    key: key.to_owned(),
                    key_origin,
                    node,
                });
            }
        }
        Ok(Node::new(Data::Table(entries), origin))
    }

    fn item(&self, item: &Item, fallback: &Origin, path: &Path<'_>) -> Result<Option<Node>> {
        let node = match item {
            Item::None => return Ok(None),
            Item::Value(value) => self.value(value, fallback, path)?,
            Item::Table(table) => {
                let origin = self.origin(table.span(), fallback);
                self.table(table, origin, path)?
            }
            Item::ArrayOfTables(array) => {
                let origin = self.origin(array.span(), fallback);
                let mut nodes = Vec::new();
                for (i, table) in array.iter().enumerate() {
                    let table_origin = self.origin(table.span(), &origin);
                    nodes.push(self.table(table, table_origin, &Path::Index(path, i))?);
                }
                Node::new(Data::Array(nodes), origin)
            }
        };
        Ok(Some(node))
    }

    fn value(&self, value: &Value, fallback: &Origin, path: &Path<'_>) -> Result<Node> {
        let origin = self.origin(value.span(), fallback);
        let data = match value {
            Value::String(s) => Data::Str(s.value().clone()),
            Value::Integer(i) => Data::Int(*i.value()),
            Value::Float(x) => Data::Float(*x.value()),
            Value::Boolean(b) => Data::Bool(*b.value()),
            Value::Datetime(_) => {
                let msg = "date-time values are not used by scenarios";
                return Err(self.ctx.err(&origin, &path.to_string(), msg));
            }
            Value::Array(array) => {
                let mut nodes = Vec::new();
                for (i, element) in array.iter().enumerate() {
                    nodes.push(self.value(element, &origin, &Path::Index(path, i))?);
                }
                Data::Array(nodes)
            }
            Value::InlineTable(table) => return self.table(table, origin, path),
        };
        Ok(Node::new(data, origin))
    }
}

/// `prefix.key`, or `key` at the top level.
pub(crate) fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_counts_characters() {
        let text = "ab\nçd\n\nx";
        let lines = LineIndex::new(text);
        assert_eq!(lines.origin(0), Origin::File { line: 1, col: 1 });
        assert_eq!(lines.origin(3), Origin::File { line: 2, col: 1 });
        // 'd' follows the two-byte 'ç'.
        assert_eq!(lines.origin(5), Origin::File { line: 2, col: 2 });
        assert_eq!(lines.origin(7), Origin::File { line: 3, col: 1 });
        assert_eq!(lines.origin(99), Origin::File { line: 4, col: 2 });
    }
}

//! `[[file]]` tables.

use std::collections::HashMap;

use crate::ast::{CacheFill, FileSpec};
use crate::check::Fields;
use crate::error::{Ctx, Result};
use crate::tree::Node;

const KEYS: &[&str] = &["name", "size", "fill", "write_size", "read_size"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    Cold,
    Write,
    Read,
}

const FILLS: &[(&str, Fill)] = &[
    ("cold", Fill::Cold),
    ("write", Fill::Write),
    ("read", Fill::Read),
];

/// Validate the `[[file]]` array (absent: no files).
pub(crate) fn files(ctx: &Ctx, node: Option<&Node>) -> Result<Vec<FileSpec>> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    let tables = ctx.array(node, "file", "an array of tables ([[file]])")?;
    let mut files: Vec<FileSpec> = Vec::with_capacity(tables.len());
    // Each name's index, so the uniqueness check stays linear in the files.
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(tables.len());
    for (i, table) in tables.iter().enumerate() {
        let path = format!("file[{}]", i + 1);
        let fields = Fields::new(ctx, table, &path, format!("in {path}"))?;
        let file = file(&fields)?;
        // The name as the table spells it (`file()` took a copy).
        let name = table.get_str("name").unwrap_or_default();
        if let Some(j) = index.insert(name, i) {
            let msg = format!("duplicate file name {:?} (also file[{}])", file.name, j + 1);
            return Err(fields.err_at("name", msg));
        }
        files.push(file);
    }
    Ok(files)
}

fn file(f: &Fields<'_>) -> Result<FileSpec> {
    f.check_allowed(KEYS)?;
    let name = f.req("name", Ctx::name)?;
    let size = f.req("size", Ctx::nonzero_size)?;
    let fill = match f.opt("fill", |c, n, p| c.choice(n, p, FILLS))? {
        None | Some(Fill::Write) => {
            f.forbid("read_size", "with fill = \"read\"")?;
            let write_size = f.opt("write_size", Ctx::page_size)?.unwrap_or(4096);
            CacheFill::Write { write_size }
        }
        Some(Fill::Read) => {
            f.forbid("write_size", "with fill = \"write\"")?;
            let read_size = f.opt("read_size", Ctx::nonzero_size)?.unwrap_or(131_072);
            CacheFill::Read { read_size }
        }
        Some(Fill::Cold) => {
            f.forbid("write_size", "with fill = \"write\"")?;
            f.forbid("read_size", "with fill = \"read\"")?;
            CacheFill::Cold
        }
    };
    Ok(FileSpec {
        loc: f.ctx().loc(&f.table().origin),
        name,
        size,
        fill,
    })
}

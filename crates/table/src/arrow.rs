//! The tidy table as an Arrow IPC file (the Feather v2 format), one
//! record batch, no compression.
//!
//! Types: `point` UInt64; the grid columns, `scenario`, `arch`, `engine`,
//! `phase`, `kind`, `name` and `error` Utf8 (the last four null where the
//! CSV leaves them empty); `value` Int64 (null on a failed point's row).
//! A raw pagemap entry (`kind` = `pagemap`) is an unsigned 64-bit word:
//! it is stored as the Int64 with the same bits (bit 63, "present", makes
//! it negative) and read back as the unsigned entry.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};

use crate::{Row, Table};

fn schema(t: &Table) -> Schema {
    let mut fields = vec![Field::new("point", DataType::UInt64, false)];
    for c in &t.grid_columns {
        fields.push(Field::new(c, DataType::Utf8, false));
    }
    for c in ["scenario", "arch", "engine"] {
        fields.push(Field::new(c, DataType::Utf8, false));
    }
    for c in ["phase", "kind", "name"] {
        fields.push(Field::new(c, DataType::Utf8, true));
    }
    fields.push(Field::new("value", DataType::Int64, true));
    fields.push(Field::new("error", DataType::Utf8, true));
    Schema::new(fields)
}

pub(crate) fn encode(t: &Table) -> Result<Vec<u8>, String> {
    let strings = |f: &dyn Fn(&Row) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(t.rows.iter().map(f)))
    };
    let nullable = |f: &dyn Fn(&Row) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter(t.rows.iter().map(|r| {
            let s = f(r);
            (!s.is_empty()).then_some(s)
        })))
    };
    let mut cols: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from_iter_values(
        t.rows.iter().map(|r| r.point),
    ))];
    for i in 0..t.grid_columns.len() {
        cols.push(strings(&|r| r.grid[i].as_str()));
    }
    cols.push(strings(&|r| &r.scenario));
    cols.push(strings(&|r| &r.arch));
    cols.push(strings(&|r| &r.engine));
    cols.push(nullable(&|r| &r.phase));
    cols.push(nullable(&|r| &r.kind));
    cols.push(nullable(&|r| &r.name));
    let mut values = Vec::with_capacity(t.rows.len());
    for r in &t.rows {
        values.push(match r.value {
            None => None,
            Some(v) if r.kind == "pagemap" => Some(
                u64::try_from(v)
                    .map(|u| u as i64)
                    .map_err(|_| format!("pagemap entry {v} is not a 64-bit word"))?,
            ),
            Some(v) => {
                Some(i64::try_from(v).map_err(|_| {
                    format!("{} = {v} does not fit the Int64 `value` column", r.name)
                })?)
            }
        });
    }
    cols.push(Arc::new(Int64Array::from(values)));
    cols.push(nullable(&|r| &r.error));
    let schema = Arc::new(schema(t));
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())?;
    let mut w =
        arrow_ipc::writer::FileWriter::try_new(Vec::new(), &schema).map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Table, String> {
    let rd = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None)
        .map_err(|e| format!("not an Arrow IPC file: {e}"))?;
    let cols: Vec<String> = rd
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut t = Table::from_header(&cols)?;
    let g = t.grid_columns.len();
    for batch in rd {
        let batch = batch.map_err(|e| e.to_string())?;
        let text = |i: usize| -> Result<&StringArray, String> {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| format!("column `{}` is not Utf8", cols[i]))
        };
        let point = batch
            .column(0)
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or("column `point` is not UInt64")?;
        let value = batch
            .column(g + 7)
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or("column `value` is not Int64")?;
        let texts: Vec<&StringArray> = (0..cols.len())
            .filter(|&i| i != 0 && i != g + 7)
            .map(text)
            .collect::<Result<_, _>>()?;
        let get = |a: &StringArray, row: usize| -> String {
            if a.is_null(row) {
                String::new()
            } else {
                a.value(row).to_string()
            }
        };
        for row in 0..batch.num_rows() {
            // texts: grid columns, scenario, arch, engine, phase, kind,
            // name, error.
            let s = |j: usize| get(texts[j], row);
            let kind = s(g + 4);
            let v = (!value.is_null(row)).then(|| value.value(row));
            t.rows.push(Row {
                point: point.value(row),
                grid: (0..g).map(s).collect(),
                scenario: s(g),
                arch: s(g + 1),
                engine: s(g + 2),
                phase: s(g + 3),
                name: s(g + 5),
                value: v.map(|v| {
                    if kind == "pagemap" {
                        i128::from(v as u64)
                    } else {
                        i128::from(v)
                    }
                }),
                kind,
                error: s(g + 6),
            });
        }
    }
    Ok(t)
}

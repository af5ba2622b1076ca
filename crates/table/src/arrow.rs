//! The tidy table as one Arrow record batch, written as an Arrow IPC
//! file (the Feather v2 format, no compression) or a Parquet file (no
//! compression).
//!
//! Types: `point` UInt64; `scenario`, `arch`, `engine`, `phase`, `kind`,
//! `name` and `error` Utf8 (the last four null where the CSV leaves them
//! empty); `value` Int64 (null on a failed point's row). The grid columns
//! are Utf8 in the Arrow IPC file; in Parquet each has its own type: Int64
//! when every value is an integer written plainly, Float64 when every
//! value is a decimal number, Boolean when every value is `true` or
//! `false`, else Utf8 (`64K`, `zram`). A raw pagemap entry (`kind` =
//! `pagemap`) is an unsigned 64-bit word: it is stored as the Int64 with
//! the same bits (bit 63, "present", makes it negative) and read back as
//! the unsigned entry.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Metadata, Schema};

use crate::{GridType, Row, Table, METADATA_KEY};

/// The Arrow type of a grid column whose values are `values`, when
/// typed ([`GridType`]).
fn grid_type<'a>(values: impl Iterator<Item = &'a str> + Clone) -> DataType {
    match GridType::of(values) {
        GridType::Int => DataType::Int64,
        GridType::Float => DataType::Float64,
        GridType::Bool => DataType::Boolean,
        GridType::Text => DataType::Utf8,
    }
}

/// Grid column `i` as an array of type `ty` (from [`grid_type`]).
fn grid_array(t: &Table, i: usize, ty: &DataType) -> ArrayRef {
    let values = t.rows.iter().map(|r| r.grid[i].as_str());
    match ty {
        DataType::Int64 => Arc::new(Int64Array::from_iter_values(
            values.map(|v| v.parse().expect("checked by grid_type")),
        )),
        DataType::Float64 => Arc::new(Float64Array::from_iter_values(
            values.map(|v| v.parse().expect("checked by grid_type")),
        )),
        DataType::Boolean => Arc::new(BooleanArray::from_iter(values.map(|v| Some(v == "true")))),
        _ => Arc::new(StringArray::from_iter_values(values)),
    }
}

/// The table as one record batch; `typed`: grid columns of their own
/// types rather than Utf8.
fn batch(t: &Table, typed: bool) -> Result<RecordBatch, String> {
    let strings = |f: &dyn Fn(&Row) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(t.rows.iter().map(f)))
    };
    let nullable = |f: &dyn Fn(&Row) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter(t.rows.iter().map(|r| {
            let s = f(r);
            (!s.is_empty()).then_some(s)
        })))
    };
    let mut fields = vec![Field::new("point", DataType::UInt64, false)];
    let mut cols: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from_iter_values(
        t.rows.iter().map(|r| r.point),
    ))];
    for (i, c) in t.grid_columns.iter().enumerate() {
        let ty = if typed {
            grid_type(t.rows.iter().map(|r| r.grid[i].as_str()))
        } else {
            DataType::Utf8
        };
        cols.push(grid_array(t, i, &ty));
        fields.push(Field::new(c, ty, false));
    }
    for c in ["scenario", "arch", "engine"] {
        fields.push(Field::new(c, DataType::Utf8, false));
    }
    for c in ["phase", "kind", "name"] {
        fields.push(Field::new(c, DataType::Utf8, true));
    }
    fields.push(Field::new("value", DataType::Int64, true));
    fields.push(Field::new("error", DataType::Utf8, true));
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
    let schema = Schema::new(fields).with_metadata(metadata(t).into_iter().collect::<Metadata>());
    RecordBatch::try_new(Arc::new(schema), cols).map_err(|e| e.to_string())
}

/// The table's provenance as schema metadata: [`METADATA_KEY`] and the
/// JSON object (nothing for a table without provenance).
fn metadata(t: &Table) -> Option<(String, String)> {
    let p = t.provenance.as_ref()?;
    Some((METADATA_KEY.to_string(), p.to_json_value().to_string()))
}

pub(crate) fn encode(t: &Table) -> Result<Vec<u8>, String> {
    let batch = batch(t, false)?;
    let mut w = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &batch.schema())
        .map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Table, String> {
    check_blocks(bytes)?;
    let (schema, batches) = reader_may_panic("Arrow IPC file", || {
        let rd = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None)
            .map_err(|e| format!("not an Arrow IPC file: {e}"))?;
        let schema = rd.schema();
        let batches = rd
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        Ok((schema, batches))
    })?;
    from_batches(&schema, &batches)
}

/// Refuse an Arrow IPC file whose footer places a record batch or
/// dictionary beyond the end of the file. arrow-ipc's `FileReader`
/// allocates the size a block claims before reading it (`read_block`): in
/// 54 a damaged length ended the process on a failed allocation, which no
/// panic handler sees; 60's allocation fails with an error, but still asks
/// for whatever the block claims. Anything else wrong with the footer is
/// left to the reader, which refuses it.
fn check_blocks(bytes: &[u8]) -> Result<(), String> {
    let n = bytes.len();
    let Some(tail) = n.checked_sub(10).map(|t| &bytes[t..]) else {
        return Ok(());
    };
    if &tail[4..] != b"ARROW1" {
        return Ok(());
    }
    let len = i32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let Some(start) = usize::try_from(len)
        .ok()
        .and_then(|l| (n - 10).checked_sub(l))
    else {
        return Ok(());
    };
    let Ok(footer) = arrow_ipc::root_as_footer(&bytes[start..n - 10]) else {
        return Ok(());
    };
    let blocks = footer.recordBatches().into_iter().flatten();
    for b in blocks.chain(footer.dictionaries().into_iter().flatten()) {
        let (at, meta, body) = (b.offset(), i64::from(b.metaDataLength()), b.bodyLength());
        let end = i128::from(at) + i128::from(meta) + i128::from(body);
        if at < 0 || meta < 0 || body < 0 || end > n as i128 {
            return Err(format!(
                "not a readable Arrow IPC file: it is damaged (a block of {} bytes at \
                 offset {at} lies beyond its end, {n} bytes)",
                i128::from(meta) + i128::from(body)
            ));
        }
    }
    Ok(())
}

thread_local! {
    /// Whether this thread is inside [`reader_may_panic`].
    static READING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Call `f`, which reads a file with the Arrow or Parquet reader; a panic
/// inside it becomes an error saying the file is damaged, and prints
/// nothing. Those readers panic on some malformed files instead of
/// returning an error (arrow-ipc 60 slices a buffer whose offset lies
/// beyond the message body, and `Buffer::slice_with_length` asserts),
/// and a table is a file anyone may hand us.
/// The panic hook is process-wide: the one installed here stays, passing
/// every panic outside such a read to the hook that was there before.
fn reader_may_panic<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    use std::panic;
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !READING.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let was = READING.with(|r| r.replace(true));
    let result = panic::catch_unwind(panic::AssertUnwindSafe(f));
    READING.with(|r| r.set(was));
    result.unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(format!(
            "not a readable {what}: it is damaged (the reader failed: {why})"
        ))
    })
}

/// The table as a Parquet file: the record batch with typed grid
/// columns; the Arrow schema goes in the file's metadata.
pub(crate) fn encode_parquet(t: &Table) -> Result<Vec<u8>, String> {
    let batch = batch(t, true)?;
    // Also in the file's own key-value metadata, for Parquet readers that
    // do not decode the Arrow schema (DuckDB's `parquet_kv_metadata`).
    let props = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(
            metadata(t).map(|(k, v)| vec![parquet::file::metadata::KeyValue::new(k, v)]),
        )
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props))
        .map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())
}

/// Rows a Parquet table may claim per byte of file. Run-length and
/// dictionary encoding let a few bytes stand for many rows, so a damaged
/// or hostile file of a few KiB could make the reader build gigabytes of
/// rows; the tables foliosim writes hold about 0.4 rows per byte (the
/// 19,350 rows of `sweeps/seed000-pageout.toml` in 49,126 bytes).
const PARQUET_ROWS_PER_BYTE: u64 = 16;

/// Refuse a Parquet file whose row groups claim more rows than
/// [`PARQUET_ROWS_PER_BYTE`] allows, or one of whose dictionary pages
/// claims more values than its bytes can encode (at least one bit each):
/// the reader sizes the dictionary from that claim before reading any
/// value (`DictDecoder::set_dict`), 8 GiB for a 2 KiB file the fuzzer
/// found.
fn check_parquet_claims(data: &bytes::Bytes) -> Result<(), String> {
    use parquet::column::page::Page;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let damaged = |e: parquet::errors::ParquetError| format!("not a Parquet file: {e}");
    let file = SerializedFileReader::new(data.clone()).map_err(damaged)?;
    let rows: i64 = file
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows().max(0))
        .fold(0, i64::saturating_add);
    let limit = PARQUET_ROWS_PER_BYTE * data.len() as u64;
    if rows as u64 > limit {
        return Err(format!(
            "not a readable Parquet table: its row groups claim {rows} rows, more than \
             {PARQUET_ROWS_PER_BYTE} per byte of its {} bytes (damaged?)",
            data.len()
        ));
    }
    for g in 0..file.num_row_groups() {
        let group = file.get_row_group(g).map_err(damaged)?;
        for c in 0..group.num_columns() {
            let mut pages = group.get_column_page_reader(c).map_err(damaged)?;
            while let Some(page) = pages.get_next_page().map_err(damaged)? {
                if let Page::DictionaryPage {
                    buf, num_values, ..
                } = &page
                {
                    if u64::from(*num_values) > 8 * buf.len() as u64 {
                        return Err(format!(
                            "not a readable Parquet table: a dictionary page of column {c} \
                             claims {num_values} values in {} bytes (damaged)",
                            buf.len()
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn decode_parquet(data: &[u8]) -> Result<Table, String> {
    let (schema, batches) = reader_may_panic("Parquet file", || {
        let data = bytes::Bytes::copy_from_slice(data);
        check_parquet_claims(&data)?;
        // The builder's schema has the metadata; the reader's has not.
        let (schema, rd) =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(data)
                .and_then(|b| Ok((b.schema().clone(), b.build()?)))
                .map_err(|e| format!("not a Parquet file: {e}"))?;
        let batches = rd
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        Ok((schema, batches))
    })?;
    from_batches(&schema, &batches)
}

/// Row `row` of a text or grid column as the CSV writes it (empty for
/// null).
fn text(a: &dyn Array, name: &str, row: usize) -> Result<String, String> {
    if a.is_null(row) {
        return Ok(String::new());
    }
    let any = a.as_any();
    if let Some(s) = any.downcast_ref::<StringArray>() {
        Ok(s.value(row).to_string())
    } else if let Some(n) = any.downcast_ref::<Int64Array>() {
        Ok(n.value(row).to_string())
    } else if let Some(x) = any.downcast_ref::<Float64Array>() {
        Ok(x.value(row).to_string())
    } else if let Some(b) = any.downcast_ref::<BooleanArray>() {
        Ok(b.value(row).to_string())
    } else {
        Err(format!(
            "column `{name}` is not Utf8, Int64, Float64 or Boolean"
        ))
    }
}

/// The table the record batches hold.
fn from_batches(schema: &Schema, batches: &[RecordBatch]) -> Result<Table, String> {
    let cols: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let mut t = Table::from_header(&cols)?;
    if t.provenance.is_some() {
        return Err("not a sweep table: provenance columns in an Arrow or Parquet file".into());
    }
    t.provenance = match schema.metadata().get(METADATA_KEY) {
        None => None,
        Some(text) => {
            let v: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("the `{METADATA_KEY}` metadata is not JSON: {e}"))?;
            Some(
                foliosim_report::Provenance::from_json_value(&v)
                    .map_err(|e| format!("the `{METADATA_KEY}` metadata: {e}"))?,
            )
        }
    };
    let g = t.grid_columns.len();
    for batch in batches {
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
        // Every other column: grid columns, scenario, arch, engine, phase,
        // kind, name, error.
        let texts: Vec<(usize, &dyn Array)> = (1..cols.len())
            .filter(|&i| i != g + 7)
            .map(|i| (i, batch.column(i).as_ref()))
            .collect();
        for row in 0..batch.num_rows() {
            let s = |j: usize| -> Result<String, String> {
                let (i, a) = texts[j];
                text(a, &cols[i], row)
            };
            let kind = s(g + 4)?;
            let v = (!value.is_null(row)).then(|| value.value(row));
            t.rows.push(Row {
                point: point.value(row),
                grid: (0..g).map(s).collect::<Result<_, _>>()?,
                scenario: s(g)?,
                arch: s(g + 1)?,
                engine: s(g + 2)?,
                phase: s(g + 3)?,
                name: s(g + 5)?,
                value: v.map(|v| {
                    if kind == "pagemap" {
                        i128::from(v as u64)
                    } else {
                        i128::from(v)
                    }
                }),
                kind,
                error: s(g + 6)?,
            });
        }
    }
    Ok(t)
}

//! Reading the tidy table `foliosim sweep` writes: columns `point, <one
//! column per grid key>, scenario, arch, engine, phase, kind, name, value,
//! error`, as CSV (a header row with those names) or as JSON lines (one
//! object per row with those keys). The grid keys are the columns between
//! `point` and `scenario`.

use std::path::Path;

use foliosim_table::{Row, Table, TableFormat};

/// One row (one value of one grid point: the sweep's own [`Row`]) with
/// its line in the file (1-based), for messages.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    pub row: Row,
    pub line: u64,
}

impl std::ops::Deref for SweepRow {
    type Target = Row;
    fn deref(&self) -> &Row {
        &self.row
    }
}

/// A whole sweep table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sweep {
    /// The grid keys, in column order.
    pub keys: Vec<String>,
    pub rows: Vec<SweepRow>,
    /// How the sweep was made (None: a table written without it).
    pub provenance: Option<foliosim_report::Provenance>,
}

impl Sweep {
    /// Read a sweep file in any format `foliosim sweep` writes (CSV, JSON
    /// lines, Arrow IPC, Parquet; told apart by content), through the sweep's own
    /// reader (`foliosim_table::Table`).
    pub fn load(path: &Path) -> Result<Sweep, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Sweep::decode(&path.display().to_string(), &bytes)
    }

    /// [`Sweep::load`] of `text`, naming `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<Sweep, String> {
        Sweep::decode(file, text.as_bytes())
    }

    fn decode(file: &str, bytes: &[u8]) -> Result<Sweep, String> {
        let format = TableFormat::sniff(bytes.trim_ascii_start());
        let table = Table::decode(bytes, format).map_err(|e| format!("{file}: {e}"))?;
        // The row's line in the file: CSV has a header line first.
        let first = match format {
            TableFormat::Csv => 2,
            TableFormat::Jsonl | TableFormat::Arrow | TableFormat::Parquet => 1,
        };
        let mut rows = Vec::with_capacity(table.rows.len());
        for (i, r) in table.rows.into_iter().enumerate() {
            let line = first + i as u64;
            if r.value.is_none() && r.error.is_empty() {
                return Err(format!(
                    "{file}:{line}: column `value`: empty, and the row has no error"
                ));
            }
            rows.push(SweepRow { row: r, line });
        }
        Ok(Sweep {
            keys: table.grid_columns,
            rows,
            provenance: table.provenance,
        })
    }

    /// The distinct values of grid key `k` in order of first appearance.
    pub fn values_of(&self, k: usize) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.grid[k].as_str()) {
                out.push(&r.grid[k]);
            }
        }
        out
    }

    /// The distinct `name`s, sorted.
    pub fn names(&self) -> Vec<&str> {
        let set: std::collections::BTreeSet<&str> =
            self.rows.iter().map(|r| r.name.as_str()).collect();
        set.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str =
        "point,fault_around_bytes,series.x,scenario,arch,engine,phase,kind,name,value,error
0,4096,0,s,x86_64,sim,measured,counter,pgfault,16,
1,65536,0,s,x86_64,sim,measured,counter,pgfault,1,
2,\"4096<<2\",1,s,arm64,sim,measured,counter,pgfault,,\"boom, badly\"
";

    #[test]
    fn csv_and_jsonl_read_alike() {
        let a = Sweep::parse("a.csv", CSV).unwrap();
        assert_eq!(a.keys, ["fault_around_bytes", "series.x"]);
        assert_eq!(a.rows.len(), 3);
        assert_eq!(a.rows[1].value, Some(1));
        assert_eq!(a.rows[2].grid[0], "4096<<2");
        assert_eq!(a.rows[2].error, "boom, badly");
        assert_eq!(a.rows[2].line, 4);
        let jl = r#"{"point":0,"fault_around_bytes":4096,"series.x":"0","scenario":"s","arch":"x86_64","engine":"sim","phase":"measured","kind":"counter","name":"pgfault","value":16,"error":null}
{"point":1,"fault_around_bytes":65536,"series.x":"0","scenario":"s","arch":"x86_64","engine":"sim","phase":"measured","kind":"counter","name":"pgfault","value":1,"error":""}
{"point":2,"fault_around_bytes":"4096<<2","series.x":"1","scenario":"s","arch":"arm64","engine":"sim","phase":"measured","kind":"counter","name":"pgfault","value":null,"error":"boom, badly"}
"#;
        let b = Sweep::parse("a.jsonl", jl).unwrap();
        assert_eq!(b.keys, a.keys);
        for (x, y) in a.rows.iter().zip(&b.rows) {
            assert_eq!((&x.grid, x.value, &x.error), (&y.grid, y.value, &y.error));
        }
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let bad = CSV.replace(",1,\n", ",one,\n");
        let e = Sweep::parse("s.csv", &bad).unwrap_err();
        assert!(e.starts_with("s.csv: line 3: `value`"), "{e}");
        let e = Sweep::parse("s.csv", "x,y\n").unwrap_err();
        assert!(e.starts_with("s.csv: ") && e.contains("point"), "{e}");
        let e = Sweep::parse("s.csv", &CSV.replace(",error\n", "\n")).unwrap_err();
        assert!(e.contains("not a sweep table"), "{e}");
        let e = Sweep::parse("s.jsonl", "{\"point\":0}\n{").unwrap_err();
        assert!(e.starts_with("s.jsonl: "), "{e}");
    }
}

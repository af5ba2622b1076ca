//! Reading the tidy table `foliosim sweep` writes: columns `point, <one
//! column per grid key>, scenario, arch, engine, phase, kind, name, value,
//! error`, as CSV (a header row with those names) or as JSON lines (one
//! object per row with those keys). The grid keys are the columns between
//! `point` and `scenario`.

use std::path::Path;

use serde_json::Value;

/// The columns after the grid keys, in order.
pub const TAIL: [&str; 8] = [
    "scenario", "arch", "engine", "phase", "kind", "name", "value", "error",
];

/// One row: one value of one grid point.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    /// The grid point's number.
    pub point: u64,
    /// The value of each grid key, in the order of [`Sweep::keys`].
    pub grid: Vec<String>,
    pub scenario: String,
    pub arch: String,
    pub engine: String,
    pub phase: String,
    pub kind: String,
    pub name: String,
    /// None when the point failed (see `error`).
    pub value: Option<f64>,
    /// Why the point failed; empty when it ran.
    pub error: String,
    /// The row's line in the file (1-based), for messages.
    pub line: u64,
}

/// A whole sweep table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sweep {
    /// The grid keys, in column order.
    pub keys: Vec<String>,
    pub rows: Vec<SweepRow>,
}

impl Sweep {
    /// Read a sweep file, CSV or JSON lines (told apart by the first
    /// character that is not white space: `{` starts JSON lines).
    pub fn load(path: &Path) -> Result<Sweep, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Sweep::parse(&path.display().to_string(), &text)
    }

    /// [`Sweep::load`] of `text`, naming `file` in errors.
    pub fn parse(file: &str, text: &str) -> Result<Sweep, String> {
        if text.trim_start().starts_with('{') {
            parse_jsonl(file, text)
        } else {
            parse_csv(file, text)
        }
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

/// The grid keys of a header, checking the fixed columns.
fn keys_of(file: &str, line: u64, cols: &[String]) -> Result<Vec<String>, String> {
    let bad = |what: String| format!("{file}:{line}: {what}");
    if cols.first().map(String::as_str) != Some("point") {
        return Err(bad(
            "the first column is not `point` (a sweep table starts `point,<grid keys>,scenario,...`)"
                .into(),
        ));
    }
    if cols.len() < 1 + TAIL.len() || cols[cols.len() - TAIL.len()..] != TAIL {
        return Err(bad(format!(
            "the last columns are not `{}`",
            TAIL.join(",")
        )));
    }
    Ok(cols[1..cols.len() - TAIL.len()].to_vec())
}

/// A row from its cells (the header's order), checking the numbers.
fn row(file: &str, line: u64, nkeys: usize, cells: Vec<String>) -> Result<SweepRow, String> {
    let at = |col: &str, what: String| format!("{file}:{line}: column `{col}`: {what}");
    let point = cells[0].trim().parse::<u64>().map_err(|_| {
        at(
            "point",
            format!("expected a point number, found {:?}", cells[0]),
        )
    })?;
    let tail = &cells[1 + nkeys..];
    let value = match tail[6].trim() {
        "" => None,
        v => Some(
            v.parse::<f64>()
                .map_err(|_| at("value", format!("expected a number, found {v:?}")))?,
        ),
    };
    let error = tail[7].clone();
    if value.is_none() && error.is_empty() {
        return Err(at("value", "empty, and the row has no error".into()));
    }
    Ok(SweepRow {
        point,
        grid: cells[1..1 + nkeys].to_vec(),
        scenario: tail[0].clone(),
        arch: tail[1].clone(),
        engine: tail[2].clone(),
        phase: tail[3].clone(),
        kind: tail[4].clone(),
        name: tail[5].clone(),
        value,
        error,
        line,
    })
}

fn parse_csv(file: &str, text: &str) -> Result<Sweep, String> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = rd.records();
    let header = match records.next() {
        None => return Err(format!("{file}: empty; a sweep table has a header row")),
        Some(h) => h.map_err(|e| format!("{file}: {e}"))?,
    };
    let cols: Vec<String> = header.iter().map(|c| c.trim().to_string()).collect();
    let keys = keys_of(file, 1, &cols)?;
    let mut rows = Vec::new();
    for rec in records {
        let rec = rec.map_err(|e| format!("{file}: {e}"))?;
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() != cols.len() {
            return Err(format!(
                "{file}:{line}: {} cells, the header has {}",
                rec.len(),
                cols.len()
            ));
        }
        rows.push(row(
            file,
            line,
            keys.len(),
            rec.iter().map(str::to_string).collect(),
        )?);
    }
    Ok(Sweep { keys, rows })
}

fn parse_jsonl(file: &str, text: &str) -> Result<Sweep, String> {
    let mut keys: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i as u64 + 1;
        if l.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(l).map_err(|e| format!("{file}:{line}: not JSON: {e}"))?;
        let obj = v
            .as_object()
            .ok_or_else(|| format!("{file}:{line}: a row is a JSON object"))?;
        let cols: Vec<String> = obj.keys().cloned().collect();
        let ks = match &keys {
            Some(k) => {
                if cols.len() != k.len() + 1 + TAIL.len()
                    || cols[1..1 + k.len()] != k[..]
                    || keys_of(file, line, &cols).is_err()
                {
                    return Err(format!(
                        "{file}:{line}: the keys differ from the first row's (point, {}, {})",
                        k.join(", "),
                        TAIL.join(", ")
                    ));
                }
                k.clone()
            }
            None => {
                let k = keys_of(file, line, &cols)?;
                keys = Some(k.clone());
                k
            }
        };
        let cells: Vec<String> = obj
            .values()
            .map(|v| match v {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        rows.push(row(file, line, ks.len(), cells)?);
    }
    Ok(Sweep {
        keys: keys.ok_or_else(|| format!("{file}: no rows"))?,
        rows,
    })
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
        assert_eq!(a.rows[1].value, Some(1.0));
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
        assert!(e.starts_with("s.csv:3: column `value`"), "{e}");
        let e = Sweep::parse("s.csv", "x,y\n").unwrap_err();
        assert!(e.contains("s.csv:1") && e.contains("point"), "{e}");
        let e = Sweep::parse("s.csv", &CSV.replace(",error\n", "\n")).unwrap_err();
        assert!(e.contains("last columns"), "{e}");
        let e = Sweep::parse("s.jsonl", "{\"point\":0}\n{").unwrap_err();
        assert!(e.starts_with("s.jsonl:1"), "{e}");
    }
}

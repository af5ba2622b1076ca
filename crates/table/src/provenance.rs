//! The provenance of a sweep table: as columns on every row of a CSV or
//! JSON-lines file, as the schema's metadata in Arrow and Parquet, and
//! the check that keeps a resumed sweep from mixing runs.

use foliosim_report::{Override, Provenance};

use crate::Table;

/// The provenance columns that end every row of a CSV or JSON-lines
/// table that has a provenance, in order. Prefixed so that no grid key
/// (`seed`, say) shadows one.
pub const PROVENANCE_COLUMNS: [&str; 9] = [
    "provenance.foliosim",
    "provenance.commit",
    "provenance.scenarios",
    "provenance.seed",
    "provenance.overrides",
    "provenance.profile",
    "provenance.kernel",
    "provenance.kernel_release",
    "provenance.arch",
];

/// The key of the provenance (a JSON object) in the schema metadata of
/// an Arrow or Parquet table.
pub const METADATA_KEY: &str = "foliosim.provenance";

/// `words` as one line of shell words (`a.toml 'b c.toml'`), which
/// `shlex.split` or a shell splits back.
pub fn join_words(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}

/// The cells of [`PROVENANCE_COLUMNS`] for `p` (empty for what it does
/// not have).
pub(crate) fn cells(p: &Provenance) -> [String; 9] {
    let (kernel, release) = p.kernel.clone().unwrap_or_default();
    [
        p.foliosim.clone(),
        p.commit.clone().unwrap_or_default(),
        p.scenario_path.clone(),
        p.seed.map(|s| s.to_string()).unwrap_or_default(),
        p.overrides_shell(),
        p.profile.clone().unwrap_or_default(),
        kernel,
        release,
        p.arch.clone().unwrap_or_default(),
    ]
}

/// The provenance of a row's [`PROVENANCE_COLUMNS`] cells, its engine
/// from the `engine` column.
pub(crate) fn from_cells(c: &[String], engine: &str) -> Result<Provenance, String> {
    let some = |s: &String| (!s.is_empty()).then(|| s.clone());
    let seed = match c[3].as_str() {
        "" => None,
        s => Some(
            s.parse()
                .map_err(|_| format!("`provenance.seed` {s:?} is not a number"))?,
        ),
    };
    Ok(Provenance {
        foliosim: c[0].clone(),
        commit: some(&c[1]),
        scenario_path: c[2].clone(),
        seed,
        overrides: parse_overrides(&c[4])?,
        profile: some(&c[5]),
        kernel: (!c[6].is_empty()).then(|| (c[6].clone(), c[7].clone())),
        arch: some(&c[8]),
        engine: (!engine.is_empty()).then(|| engine.to_string()),
        // A table's provenance names its scenarios, recordings or not.
        recording: None,
    })
}

/// The overrides [`Provenance::overrides_shell`] wrote.
fn parse_overrides(text: &str) -> Result<Vec<Override>, String> {
    let bad = || format!("`provenance.overrides` {text:?} is not --set/--arch/--seed options");
    let words = shlex::split(text).ok_or_else(bad)?;
    let mut out = Vec::new();
    for pair in words.chunks(2) {
        let [option, value] = pair else {
            return Err(bad());
        };
        let (key, value) = match option.as_str() {
            "--set" => value.split_once('=').ok_or_else(bad)?,
            "--arch" => ("arch", value.as_str()),
            "--seed" => ("seed", value.as_str()),
            _ => return Err(bad()),
        };
        out.push(Override {
            option: option.clone(),
            key: key.into(),
            value: value.into(),
        });
    }
    Ok(out)
}

/// An override as an option (`--set memory=2G`), the value quoted for a
/// shell when it needs it.
fn option_text(o: &Override) -> String {
    let value = shlex::try_quote(&o.value).map_or_else(|_| o.value.clone(), |q| q.into_owned());
    match o.option.as_str() {
        "--set" => format!("--set {}={value}", o.key),
        option => format!("{option} {value}"),
    }
}

/// The overrides of `a` that `b` does not have, as options; when there
/// are none, `b`'s as absent (`no --set memory`).
fn overrides_only(a: &Provenance, b: &Provenance) -> String {
    let only: Vec<String> = a
        .overrides
        .iter()
        .filter(|o| !b.overrides.contains(o))
        .map(option_text)
        .collect();
    if !only.is_empty() {
        return only.join(" ");
    }
    let absent: Vec<String> = b
        .overrides
        .iter()
        .filter(|o| !a.overrides.contains(o))
        .map(|o| match o.option.as_str() {
            "--set" => format!("no --set {}", o.key),
            option => format!("no {option}"),
        })
        .collect();
    if absent.is_empty() {
        // The same overrides in another order.
        a.overrides
            .iter()
            .map(option_text)
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        absent.join(", ")
    }
}

/// How `p` reads in a message, field by field: the fields a resumed
/// sweep must share with the table (all but the scenario files, which a
/// sweep may add to). The overrides are compared, and shown, apart.
fn described(p: &Provenance) -> [String; 4] {
    let build = format!(
        "foliosim {} (commit {})",
        p.foliosim,
        p.commit.as_deref().unwrap_or("unknown")
    );
    let engine = format!("--engine {}", p.engine.as_deref().unwrap_or("sim"));
    let profile = match &p.profile {
        Some(x) => format!("--profile {x}"),
        None => "the default cost profile".into(),
    };
    let platform = match (&p.kernel, &p.arch) {
        (None, None) => "the simulated machine".to_string(),
        (k, a) => {
            let kernel = match k {
                Some((name, release)) if release.is_empty() => format!("kernel {name}"),
                Some((name, release)) => format!("kernel {name} (Linux {release})"),
                None => "no kernel".into(),
            };
            format!("{kernel} on {}", a.as_deref().unwrap_or("an unknown arch"))
        }
    };
    [build, engine, profile, platform]
}

impl Table {
    /// How many points the table holds.
    pub fn point_count(&self) -> usize {
        let points: std::collections::BTreeSet<u64> = self.rows.iter().map(|r| r.point).collect();
        points.len()
    }

    /// Take the provenance of a sweep that resumes this table: refuse
    /// one that differs from the table's (or a table without provenance,
    /// written by an older foliosim) when the table holds points, saying
    /// which fields differ; the scenario files are the table's followed
    /// by the sweep's new ones.
    pub fn adopt_provenance(&mut self, new: &Provenance) -> Result<(), String> {
        let n = self.point_count();
        let points = if n == 1 { "point" } else { "points" };
        match &self.provenance {
            _ if n == 0 => {}
            None => {
                return Err(format!(
                    "its {n} {points} ran with an unknown provenance (the table has none: an \
                     older foliosim wrote it); this sweep has {}",
                    described(new).join(", ")
                ))
            }
            Some(old) => {
                let (was, is) = (described(old), described(new));
                let mut differ: Vec<(String, String)> = (0..was.len())
                    .filter(|&i| was[i] != is[i])
                    .map(|i| (was[i].clone(), is[i].clone()))
                    .collect();
                if old.overrides != new.overrides {
                    differ.push((overrides_only(old, new), overrides_only(new, old)));
                }
                if !differ.is_empty() {
                    let (was, is): (Vec<String>, Vec<String>) = differ.into_iter().unzip();
                    return Err(format!(
                        "its {n} {points} ran with {}; this sweep has {}",
                        was.join(", "),
                        is.join(", ")
                    ));
                }
            }
        }
        let mut files: Vec<String> = match &self.provenance {
            Some(old) if n > 0 => shlex::split(&old.scenario_path).unwrap_or_default(),
            _ => Vec::new(),
        };
        for f in shlex::split(&new.scenario_path).unwrap_or_default() {
            if !files.contains(&f) {
                files.push(f);
            }
        }
        self.provenance = Some(Provenance {
            scenario_path: join_words(&files),
            ..new.clone()
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Row, TableFormat};

    fn prov(set: &str) -> Provenance {
        Provenance {
            foliosim: "1.2.3".into(),
            scenario_path: "a.toml 'b c.toml'".into(),
            seed: Some(5),
            overrides: [
                ("--set", "memory", set),
                ("--set", "step.0.name", "x, \"y\" z"),
                ("--arch", "arch", "arm64"),
                ("--seed", "seed", "5"),
            ]
            .map(|(option, key, value)| Override {
                option: option.into(),
                key: key.into(),
                value: value.into(),
            })
            .to_vec(),
            kernel: Some(("host".into(), "6.18.35".into())),
            commit: Some("abc1234".into()),
            engine: Some("native".into()),
            arch: Some("x86_64".into()),
            profile: None,
            recording: None,
        }
    }

    fn table(p: Option<Provenance>) -> Table {
        let mut t = Table::new(&["seed".to_string()]);
        for point in 0..3 {
            t.rows.push(Row {
                point,
                grid: vec![point.to_string()],
                scenario: "s".into(),
                arch: "x86_64".into(),
                engine: "native".into(),
                phase: "p".into(),
                kind: "counter".into(),
                name: "pgfault".into(),
                value: Some(3),
                error: String::new(),
            });
        }
        t.provenance = p;
        t
    }

    const FORMATS: [TableFormat; 4] = [
        TableFormat::Csv,
        TableFormat::Jsonl,
        TableFormat::Arrow,
        TableFormat::Parquet,
    ];

    #[test]
    fn every_format_keeps_the_provenance_and_old_tables_read() {
        for f in FORMATS {
            let t = table(Some(prov("2G")));
            let back = Table::decode(&t.encode(f).unwrap(), f).unwrap();
            assert_eq!(back, t, "{f:?}");
            // A table without provenance (as older versions wrote it)
            // reads back without one.
            let old = table(None);
            let back = Table::decode(&old.encode(f).unwrap(), f).unwrap();
            assert_eq!(back.provenance, None, "{f:?}");
            assert_eq!(back, old, "{f:?}");
        }
        // CSV: the provenance columns after `error`, the same on each row;
        // without provenance, the ten columns of before.
        let csv = String::from_utf8(table(Some(prov("2G"))).encode(TableFormat::Csv).unwrap());
        let csv = csv.unwrap();
        let mut rd = csv::Reader::from_reader(csv.as_bytes());
        let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header[10..], PROVENANCE_COLUMNS);
        assert_eq!(
            header[1], "seed",
            "a grid key named like a provenance field"
        );
        let first = rd.records().next().unwrap().unwrap();
        assert_eq!(&first[11], "abc1234");
        assert_eq!(
            &first[14],
            "--set 'memory=2G' --set 'step.0.name=x, \"y\" z' --arch arm64 --seed 5"
        );
        let old = table(None).encode(TableFormat::Csv).unwrap();
        assert!(old.starts_with(b"point,seed,scenario,arch,engine,phase,kind,name,value,error\n"));
        // Rows that disagree are refused.
        let mixed = csv.replacen("abc1234", "def5678", 1);
        let err = Table::decode(mixed.as_bytes(), TableFormat::Csv).unwrap_err();
        assert!(err.starts_with("line 3: its provenance"), "{err}");
    }

    #[test]
    fn arrow_and_parquet_keep_the_provenance_as_schema_metadata() {
        let t = table(Some(prov("2G")));
        let bytes = t.encode(TableFormat::Parquet).unwrap();
        // The parquet crate's own reader sees the key in the schema.
        let rd = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            bytes::Bytes::from(bytes),
        )
        .unwrap();
        let json = rd.schema().metadata()[METADATA_KEY].clone();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["commit"], "abc1234");
        assert_eq!(v["engine"], "native");
        assert_eq!(v["overrides"][0]["value"], "2G");
        let kv = rd.metadata().file_metadata().key_value_metadata().unwrap();
        assert!(kv.iter().any(|k| k.key == METADATA_KEY));
        let bytes = t.encode(TableFormat::Arrow).unwrap();
        let rd = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
        assert!(rd.schema().metadata().contains_key(METADATA_KEY));
    }

    #[test]
    fn a_resumed_sweep_takes_the_same_provenance_only() {
        let mut t = table(Some(prov("2G")));
        let err = t.adopt_provenance(&prov("1G")).unwrap_err();
        assert_eq!(
            err,
            "its 3 points ran with --set memory=2G; this sweep has --set memory=1G"
        );
        let mut fewer = prov("2G");
        fewer.overrides.remove(0);
        fewer.overrides[0].value = "w".into();
        let err = t.adopt_provenance(&fewer).unwrap_err();
        assert_eq!(
            err,
            "its 3 points ran with --set memory=2G --set step.0.name='x, \"y\" z'; \
             this sweep has --set step.0.name=w"
        );
        fewer.overrides.remove(0);
        let err = t.adopt_provenance(&fewer).unwrap_err();
        assert!(
            err.ends_with("this sweep has no --set memory, no --set step.0.name"),
            "{err}"
        );
        let other = Provenance {
            commit: Some("fff0000".into()),
            profile: Some("p.json".into()),
            ..prov("2G")
        };
        let err = t.adopt_provenance(&other).unwrap_err();
        assert_eq!(
            err,
            "its 3 points ran with foliosim 1.2.3 (commit abc1234), the default cost \
             profile; this sweep has foliosim 1.2.3 (commit fff0000), --profile p.json"
        );
        assert_eq!(t.provenance, Some(prov("2G")), "untouched");
        // The same provenance with another scenario file: the files add up.
        let more = Provenance {
            scenario_path: "d.toml a.toml".into(),
            ..prov("2G")
        };
        t.adopt_provenance(&more).unwrap();
        let p = t.provenance.clone().unwrap();
        assert_eq!(p.scenario_path, "a.toml 'b c.toml' d.toml");
        // A table without provenance is refused; an empty one is not.
        let mut old = table(None);
        let err = old.adopt_provenance(&prov("2G")).unwrap_err();
        assert!(
            err.starts_with("its 3 points ran with an unknown provenance"),
            "{err}"
        );
        old.rows.clear();
        old.adopt_provenance(&prov("2G")).unwrap();
        assert_eq!(old.provenance, Some(prov("2G")));
    }
}

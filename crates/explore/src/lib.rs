//! Parameter sweeps over foliosim scenarios, the tidy table of their
//! results, and base-versus-patched diffs: the logic behind `foliosim
//! sweep`, `foliosim diff` and `foliosim run --ab`, shared with the Python
//! package.
//!
//! A sweep is a [`SweepSpec`]: scenario files, base overrides and a
//! [`Grid`] of keys with value lists, combined as a Cartesian product or
//! zipped. [`expand`] turns it into [`Point`]s (validating every point's
//! overrides against the scenario), [`sweep`] runs them (in parallel with
//! rayon for the simulator, one at a time on the host or in a VM) and
//! [`Table::from_results`] turns the reports into one tidy table: a row
//! per point, phase and value, with the columns of [`Table::columns`].
//! [`diff`] compares two runs (or two values of a swept key) as the table
//! kernel developers post to linux-mm.
//!
//! [`run_sweep`] does expand, sweep and table in one call; [`sweep_with`]
//! reports each point as it finishes (checkpoints); [`Table::encode`] /
//! [`Table::read`] write and read the CSV, JSON-lines and Arrow IPC files,
//! and [`Table::resume`] turns a previous output into the points still to
//! run. The table itself is the `foliosim-table` crate's, re-exported
//! here. Errors are messages (`String`) that name the file and line, or
//! the command-line argument, they come from.
//!
//! ```no_run
//! use foliosim_explore::{expand, grid, sweep, Engine, SweepOptions, SweepSpec, Table};
//!
//! let mut spec = SweepSpec::new(vec!["scenarios/seed001/seq-16g.toml".into()]);
//! spec.grid.add(vec![grid::parse_grid_arg("fault_around_bytes=4096<<[0..4]")?], false);
//! let points = expand(&spec)?;
//! let results = sweep(&points, &Engine::sim(), &SweepOptions::default());
//! let table = Table::from_results(&spec.grid.keys(), &results);
//! print!("{}", String::from_utf8(table.encode(foliosim_explore::TableFormat::Csv)?).unwrap());
//! # Ok::<(), String>(())
//! ```

#![forbid(unsafe_code)]

pub mod diff;
pub mod grid;
pub mod nway;
mod run;
mod spec;
mod table;

pub use table::provenance;

pub use foliosim_table::{
    check_writable, GridType, PointKey, PointOutcome, Row, SweepPoint, Table, TableFormat,
};
pub use grid::{parse_ab_arg, parse_grid_arg, Axis, Dim, Grid, Source, HELPER_KEYS};
pub use run::{
    run_point, run_sweep, sweep, sweep_with, Engine, PointResult, SimOptions, SweepOptions,
};
pub use spec::{
    expand, parse_sweep_file, parse_sweep_str, Point, Setting, SweepSpec, MAX_POINTS, RESERVED_KEYS,
};

//! Sweeps, grids and diffs.
//!
//! One test executable per crate: each file here is a module (cargo
//! links one executable instead of one per file, and runs all of them in
//! parallel); `cargo test -p foliosim-explore --test explore MODULE::` runs
//! one file's tests.

mod diff;
mod grid;
mod sweep;

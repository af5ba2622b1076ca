//! The scenario crate's integration tests: parsing, errors, overrides and limits.
//!
//! One test executable per crate: each file here is a module (cargo
//! links one executable instead of one per file, and runs all of them in
//! parallel); `cargo test -p foliosim-scenario --test scenario MODULE::` runs
//! one file's tests.

mod common;
mod errors;
mod garbage;
mod io_steps;
mod mremap;
mod overrides;
mod parse;
mod per_call;
mod replay_keys;
mod scale;
mod swap_series_memcg;

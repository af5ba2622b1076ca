//! The foliosim command's tests: each runs the built binary.
//!
//! One test executable per crate: each file here is a module (cargo
//! links one executable instead of one per file, and runs all of them in
//! parallel); `cargo test -p foliosim --test cli MODULE::` runs
//! one file's tests. (restore.rs is an executable of its own: it must not
//! run beside other foliosim commands.)

mod calibrate;
mod census;
mod cli;
mod output;
mod plot;
mod readme;
mod record;
mod runs;
mod sweep;

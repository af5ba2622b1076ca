//! The simulator's integration tests: the model against the kernel's rules.
//!
//! One test executable per crate: each file here is a module (cargo
//! links one executable instead of one per file, and runs all of them in
//! parallel); `cargo test -p foliosim-sim --test model MODULE::` runs
//! one file's tests.

mod arch_conformance;
mod collapse;
mod common;
mod corpus;
mod faults;
mod folio_map;
mod io_steps;
mod lazyfree;
mod limits;
mod madvise_per_call;
mod memcg;
mod mglru;
mod mmu_gather;
mod pagemap;
mod pagemap_summary;
mod properties;
mod reclaim;
mod seeds;
mod spec_walk;
mod swap_readahead;
mod threads;
mod timing;
mod workingset;
mod zswap;

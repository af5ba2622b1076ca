//! Scenario parsing, validation and `--set` overrides on arbitrary input
//! (`foliosim_fuzz::scenario`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| foliosim_fuzz::scenario(data));

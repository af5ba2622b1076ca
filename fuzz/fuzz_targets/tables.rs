//! Arbitrary bytes as a JSON report document and as a sweep table in
//! every format (`foliosim_fuzz::tables`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| foliosim_fuzz::tables(data));

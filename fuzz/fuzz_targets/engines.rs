//! Arbitrary scenario text through the simulator's whole run: admitted,
//! parsed, bounded, estimated, compiled, simulated with the invariant
//! checker and rendered (`foliosim_fuzz::engines`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = foliosim_fuzz::engines(data);
});

//! The project's one pseudo-random generator.

/// SplitMix64, the one PRNG of the project (documented in
/// docs/scenarios.md so that a C program reproduces it): the random touch
/// order of scenarios, and the model's stand-in for the kernel's
/// `get_random_u32_below()` where a kernel decision is random.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `bound` (> 0), as `get_random_u32_below()`: the top
    /// 32 bits of the next number scaled by `bound` (no modulo bias).
    pub fn below(&mut self, bound: u32) -> u32 {
        debug_assert!(bound > 0);
        (((self.next_u64() >> 32) * u64::from(bound)) >> 32) as u32
    }
}

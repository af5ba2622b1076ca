//! The random touch order, driven by the project's one pseudo-random
//! generator (`foliosim_uapi::rng`).

pub use foliosim_uapi::rng::SplitMix64;

/// The random touch order: a Fisher-Yates shuffle of `0..n` driven by
/// [`SplitMix64`] seeded with `seed`.
///
/// `j = next_u64() % (i + 1)` for `i` from `n - 1` down to 1; the modulo bias
/// (below 2^-32 for any `n`) is accepted.
pub fn random_order(n: u32, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..order.len()).rev() {
        let bound = i as u64 + 1;
        // j <= i, so it is a valid index.
        let j = (rng.next_u64() % bound) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn splitmix_is_deterministic_per_seed() {
        let a: Vec<u64> = {
            let mut r = SplitMix64::new(42);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let mut r = SplitMix64::new(42);
        let b: Vec<u64> = (0..8).map(|_| r.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
    }

    #[test]
    fn random_order_is_a_permutation() {
        for n in [2u32, 3, 7, 64, 512, 1000] {
            for seed in [0u64, 1, 7, u64::MAX] {
                let mut order = random_order(n, seed);
                assert_eq!(order, random_order(n, seed), "deterministic");
                order.sort_unstable();
                assert_eq!(order, (0..n).collect::<Vec<_>>(), "n={n} seed={seed}");
            }
        }
    }

    #[test]
    fn random_order_shuffles() {
        let order = random_order(512, 1);
        assert_ne!(order, (0..512).collect::<Vec<_>>());
        assert_ne!(order, random_order(512, 2));
    }

    #[test]
    fn random_order_edge_cases() {
        assert!(random_order(0, 5).is_empty());
        assert_eq!(random_order(1, 5), vec![0]);
    }

    #[test]
    fn random_order_first_swap_follows_the_algorithm() {
        // n = 2: one draw, j = next_u64() % 2.
        let first = SplitMix64::new(0).next_u64();
        let want = match first % 2 {
            0 => vec![1, 0],
            _ => vec![0, 1],
        };
        assert_eq!(random_order(2, 0), want);
    }
}

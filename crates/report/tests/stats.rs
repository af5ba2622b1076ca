//! Summaries of repeated runs and Welch's t-test against values worked
//! out by hand.

use foliosim_report::stats::{welch, Summary};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn summary_is_the_sample_statistics() {
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 40/8 = 5; squared deviations
    // 9+1+1+1+0+0+4+16 = 32; sample variance 32/7, stddev 2.13809.
    let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    assert_eq!((s.n, s.min, s.max, s.mean), (8, 2.0, 9.0, 5.0));
    assert!(close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-12));
    assert!(close(
        s.cov_pct().unwrap(),
        100.0 * (32.0f64 / 7.0).sqrt() / 5.0,
        1e-9
    ));
    // One run: no spread; a mean of 0 has no coefficient of variation.
    assert_eq!(Summary::of(&[3.0]).unwrap().stddev, 0.0);
    assert_eq!(Summary::of(&[0.0, 0.0]).unwrap().cov_pct(), None);
    assert_eq!(Summary::of(&[]), None);
}

#[test]
fn welch_with_four_degrees_of_freedom() {
    // a = 1,2,3 and b = 4,5,6: means 2 and 5, variances 1 and 1, n = 3.
    // t = (5 − 2) / sqrt(1/3 + 1/3) = 3 / sqrt(2/3) = 3.674235;
    // df = (2/3)² / ((1/3)²/2 + (1/3)²/2) = (4/9) / (1/9) = 4.
    // Student's t with 4 degrees of freedom has the closed-form CDF
    // F(t) = 1/2 + (3/8)·x·(1 − t²/(12·(1 + t²/4))), x = t/sqrt(1 + t²/4):
    // t² = 13.5, 1 + t²/4 = 4.375, x = 1.756620, 1 − 13.5/52.5 = 0.742857,
    // F = 0.5 + 0.375·1.756620·0.742857 = 0.989344, p = 2·(1 − F) = 0.021312.
    let w = welch(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
    assert!(close(w.t, 3.0 / (2.0f64 / 3.0).sqrt(), 1e-12), "{w:?}");
    assert!(close(w.df, 4.0, 1e-12), "{w:?}");
    assert!(close(w.p, 0.021312, 2e-6), "{w:?}");
    // The order of the samples flips only the sign of t.
    let r = welch(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
    assert!(close(r.t, -w.t, 1e-12) && close(r.p, w.p, 1e-12));
}

#[test]
fn welch_with_two_degrees_of_freedom() {
    // a = 0,2 and b = 3,5: means 1 and 4, variances 2 and 2, n = 2.
    // t = 3 / sqrt(1 + 1) = 2.121320; df = 2² / (1/1 + 1/1) = 2.
    // With 2 degrees of freedom F(t) = 1/2 + t / (2·sqrt(2 + t²)):
    // sqrt(2 + 4.5) = 2.549510, F = 0.5 + 2.121320/5.099020 = 0.916025,
    // p = 2·(1 − F) = 0.167950.
    let w = welch(&[0.0, 2.0], &[3.0, 5.0]).unwrap();
    assert!(close(w.t, 3.0 / 2.0f64.sqrt(), 1e-12), "{w:?}");
    assert!(close(w.df, 2.0, 1e-12), "{w:?}");
    assert!(close(w.p, 0.167950, 2e-6), "{w:?}");
}

#[test]
fn welch_with_unequal_variances() {
    // a = 1..5 (mean 3, variance 2.5), b = 2,4,..,10 (mean 6, variance
    // 10), n = 5 each: var/n = 0.5 and 2, t = 3 / sqrt(2.5) = 1.897367;
    // df = 2.5² / (0.5²/4 + 2²/4) = 6.25 / 1.0625 = 5.882353.
    let w = welch(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
    assert!(close(w.t, 3.0 / 2.5f64.sqrt(), 1e-12), "{w:?}");
    assert!(close(w.df, 6.25 / 1.0625, 1e-12), "{w:?}");
    // p lies between the two-sided p-values of t = 1.897 at 5 and at 6
    // degrees of freedom (t tables: t_0.975 is 2.571 and 2.447, t_0.95 is
    // 2.015 and 1.943, t_0.90 is 1.476 and 1.440): 0.10 < p < 0.20.
    assert!(w.p > 0.10 && w.p < 0.20, "{w:?}");
}

#[test]
fn welch_of_values_without_spread() {
    // Deterministic counters: equal means are no change, different means
    // a certain one; one run gives no test.
    assert_eq!(welch(&[7.0, 7.0], &[7.0, 7.0]).unwrap().p, 1.0);
    assert_eq!(welch(&[7.0, 7.0], &[8.0, 8.0]).unwrap().p, 0.0);
    assert_eq!(welch(&[7.0], &[8.0, 8.0]), None);
}

//! Non-negative least squares: minimise `‖A·x − b‖₂` subject to `x ≥ 0`,
//! by the active-set method of Lawson and Hanson ("Solving Least Squares
//! Problems", 1974, chapter 23, algorithm NNLS), written from the book's
//! description.
//!
//! Why NNLS: a primitive's cost cannot be negative, and an unconstrained fit
//! of collinear counts (a fault that always maps one PTE, allocates one
//! folio and zeroes one page) happily trades a large positive cost against a
//! negative one. The active-set method gives the exact constrained optimum
//! in a finite number of steps and leaves unidentifiable columns at zero,
//! instead of spreading noise over them.
//!
//! The matrices here are small (tens of rows and columns), so the inner
//! least-squares solves use a plain Householder QR on the passive columns.

/// A dense row-major matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

impl Matrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    pub fn from_rows(rows: &[Vec<f64>]) -> Self {
        let cols = rows.first().map_or(0, Vec::len);
        let mut m = Matrix::zeros(rows.len(), cols);
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r.len(), cols, "ragged matrix");
            m.data[i * cols..(i + 1) * cols].copy_from_slice(r);
        }
        m
    }

    #[inline]
    pub fn at(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.cols + c]
    }

    #[inline]
    pub fn set(&mut self, r: usize, c: usize, v: f64) {
        self.data[r * self.cols + c] = v;
    }

    /// `A·x`
    pub fn mul_vec(&self, x: &[f64]) -> Vec<f64> {
        (0..self.rows)
            .map(|r| (0..self.cols).map(|c| self.at(r, c) * x[c]).sum())
            .collect()
    }

    /// `Aᵀ·y`
    pub fn tmul_vec(&self, y: &[f64]) -> Vec<f64> {
        (0..self.cols)
            .map(|c| (0..self.rows).map(|r| self.at(r, c) * y[r]).sum())
            .collect()
    }
}

/// Unconstrained least squares on the columns `cols` of `a`, by Householder
/// QR. Columns that are numerically dependent on earlier ones get 0.
fn lstsq_cols(a: &Matrix, b: &[f64], cols: &[usize]) -> Vec<f64> {
    let m = a.rows;
    let n = cols.len();
    let mut q = Matrix::zeros(m, n);
    for (j, &c) in cols.iter().enumerate() {
        for r in 0..m {
            q.set(r, j, a.at(r, c));
        }
    }
    let mut rhs = b.to_vec();
    let scale = (0..n)
        .map(|j| (0..m).map(|r| q.at(r, j).powi(2)).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    let tiny = scale * 1e-12;
    let mut usable = vec![false; n];
    let mut row = 0;
    let mut pivot_row = vec![usize::MAX; n];
    for j in 0..n {
        if row >= m {
            break;
        }
        let norm = (row..m).map(|r| q.at(r, j).powi(2)).sum::<f64>().sqrt();
        if norm <= tiny {
            continue;
        }
        let alpha = if q.at(row, j) > 0.0 { -norm } else { norm };
        // v = x - alpha e1, stored in place.
        let mut v: Vec<f64> = (row..m).map(|r| q.at(r, j)).collect();
        v[0] -= alpha;
        let vnorm2: f64 = v.iter().map(|x| x * x).sum();
        if vnorm2 > 0.0 {
            for k in j..n {
                let dot: f64 = (row..m).map(|r| v[r - row] * q.at(r, k)).sum();
                let f = 2.0 * dot / vnorm2;
                for r in row..m {
                    let nv = q.at(r, k) - f * v[r - row];
                    q.set(r, k, nv);
                }
            }
            let dot: f64 = (row..m).map(|r| v[r - row] * rhs[r]).sum();
            let f = 2.0 * dot / vnorm2;
            for r in row..m {
                rhs[r] -= f * v[r - row];
            }
        }
        usable[j] = true;
        pivot_row[j] = row;
        row += 1;
    }
    // Back substitution over the usable columns.
    let mut x = vec![0.0; n];
    for j in (0..n).rev() {
        if !usable[j] {
            continue;
        }
        let r = pivot_row[j];
        let mut s = rhs[r];
        for k in j + 1..n {
            if usable[k] {
                s -= q.at(r, k) * x[k];
            }
        }
        x[j] = s / q.at(r, j);
    }
    x
}

/// The NNLS solution of `A·x ≈ b` with `x ≥ 0`.
///
/// Columns are scaled to unit norm internally (counts of different
/// primitives differ by orders of magnitude), which changes nothing in the
/// optimum but keeps the tolerances meaningful.
pub fn nnls(a: &Matrix, b: &[f64]) -> Vec<f64> {
    assert_eq!(a.rows, b.len(), "nnls: A and b disagree on the row count");
    let n = a.cols;
    let norms: Vec<f64> = (0..n)
        .map(|c| (0..a.rows).map(|r| a.at(r, c).powi(2)).sum::<f64>().sqrt())
        .collect();
    let mut s = a.clone();
    for (c, &norm) in norms.iter().enumerate() {
        let f = if norm > 0.0 { 1.0 / norm } else { 0.0 };
        for r in 0..a.rows {
            s.set(r, c, a.at(r, c) * f);
        }
    }
    let y = nnls_scaled(&s, b);
    (0..n)
        .map(|c| if norms[c] > 0.0 { y[c] / norms[c] } else { 0.0 })
        .collect()
}

fn nnls_scaled(a: &Matrix, b: &[f64]) -> Vec<f64> {
    let n = a.cols;
    let bnorm = b.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-300);
    let tol = 1e-10 * bnorm * (n.max(a.rows) as f64);
    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    let max_outer = 3 * n + 10;
    for _ in 0..max_outer {
        let resid: Vec<f64> = a.mul_vec(&x).iter().zip(b).map(|(ax, b)| b - ax).collect();
        let w = a.tmul_vec(&resid);
        let candidate = (0..n)
            .filter(|&j| !passive[j])
            .max_by(|&i, &j| w[i].total_cmp(&w[j]));
        let Some(t) = candidate.filter(|&t| w[t] > tol) else {
            break;
        };
        passive[t] = true;
        // Inner loop: keep the passive set feasible.
        for _ in 0..=n {
            let cols: Vec<usize> = (0..n).filter(|&j| passive[j]).collect();
            let zp = lstsq_cols(a, b, &cols);
            let mut z = vec![0.0; n];
            for (k, &c) in cols.iter().enumerate() {
                z[c] = zp[k];
            }
            if cols.iter().all(|&c| z[c] > 0.0) {
                x = z;
                break;
            }
            // Step from x towards z as far as feasibility allows.
            let mut alpha = f64::INFINITY;
            for &c in &cols {
                if z[c] <= 0.0 {
                    let d = x[c] - z[c];
                    if d > 0.0 {
                        alpha = alpha.min(x[c] / d);
                    } else {
                        alpha = 0.0_f64.min(alpha);
                    }
                }
            }
            if !alpha.is_finite() {
                alpha = 0.0;
            }
            for j in 0..n {
                x[j] += alpha * (z[j] - x[j]);
            }
            for &c in &cols {
                if x[c] <= 1e-15 {
                    x[c] = 0.0;
                    passive[c] = false;
                }
            }
        }
        // If the newly added column dropped straight out again, it cannot
        // improve the fit: stop rather than cycle.
        if !passive[t] && x[t] == 0.0 {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
    }

    #[test]
    fn exact_positive_solution_is_recovered() {
        // b = A·[2, 3, 0.5]: all positive, so NNLS = ordinary least squares.
        let a = Matrix::from_rows(&[
            vec![1.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
            vec![1.0, 1.0, 1.0],
            vec![2.0, 0.0, 4.0],
        ]);
        let x = nnls(&a, &[2.0, 3.0, 0.5, 5.5, 6.0]);
        assert!(close(&x, &[2.0, 3.0, 0.5], 1e-9), "{x:?}");
    }

    #[test]
    fn negative_unconstrained_component_is_clamped() {
        // Unconstrained LS of [[1,0],[0,1],[1,1]] x = [1,-1,0] is [1,-1];
        // with x >= 0 the optimum is x = [0.5, 0] (minimise (x1-1)^2 + 1 + x1^2).
        let a = Matrix::from_rows(&[vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]]);
        let x = nnls(&a, &[1.0, -1.0, 0.0]);
        assert!(close(&x, &[0.5, 0.0], 1e-9), "{x:?}");
    }

    #[test]
    fn all_negative_target_gives_zero() {
        let a = Matrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 1.0]]);
        let x = nnls(&a, &[-1.0, -2.0]);
        assert_eq!(x, vec![0.0, 0.0]);
    }

    #[test]
    fn duplicate_columns_do_not_break_the_solve() {
        // Two identical columns: any split of 4 between them fits; the
        // solution must be non-negative and fit exactly.
        let a = Matrix::from_rows(&[vec![1.0, 1.0, 0.0], vec![2.0, 2.0, 1.0]]);
        let b = [4.0, 9.0];
        let x = nnls(&a, &b);
        assert!(x.iter().all(|&v| v >= 0.0));
        let fit = a.mul_vec(&x);
        assert!(close(&fit, &b, 1e-9), "{x:?} -> {fit:?}");
    }

    #[test]
    fn wildly_scaled_columns() {
        // Counts of 1e6 next to counts of 1: the solution is [3e-4, 70].
        let a = Matrix::from_rows(&[vec![1.0e6, 1.0], vec![2.0e6, 1.0], vec![5.0e5, 2.0]]);
        let truth = [3.0e-4, 70.0];
        let b = a.mul_vec(&truth);
        let x = nnls(&a, &b);
        assert!(
            (x[0] - truth[0]).abs() < 1e-12 && (x[1] - truth[1]).abs() < 1e-6,
            "{x:?}"
        );
    }

    #[test]
    fn matches_a_brute_force_optimum() {
        // Compare with the best of all 2^n active sets solved by least
        // squares, on a small problem with an interior and a boundary part.
        let a = Matrix::from_rows(&[
            vec![1.0, 2.0, 0.5],
            vec![0.3, 1.0, 2.0],
            vec![2.0, 0.1, 1.0],
            vec![1.0, 1.0, 1.0],
        ]);
        let b = [1.0, -0.5, 3.0, 1.2];
        let x = nnls(&a, &b);
        let cost = |x: &[f64]| -> f64 {
            a.mul_vec(x)
                .iter()
                .zip(&b)
                .map(|(p, q)| (p - q).powi(2))
                .sum()
        };
        let mut best = f64::INFINITY;
        for mask in 0u32..8 {
            let cols: Vec<usize> = (0..3).filter(|j| mask & (1 << j) != 0).collect();
            let z = lstsq_cols(&a, &b, &cols);
            if z.iter().any(|&v| v < 0.0) {
                continue;
            }
            let mut full = vec![0.0; 3];
            for (k, &c) in cols.iter().enumerate() {
                full[c] = z[k];
            }
            best = best.min(cost(&full));
        }
        assert!(x.iter().all(|&v| v >= 0.0));
        assert!((cost(&x) - best).abs() < 1e-9, "{} vs {best}", cost(&x));
    }
}

//! The bench frame's uncertainty as the calibration hands it to the processing: a small error of
//! the frame taken as a similarity of the bench plane about the origin A,
//! x' = x + o_x - a y + s x, y' = y + o_y + a x + s y (first order in the offset o (m), the
//! angle a (rad) and the relative scale s), and the covariance of (o_x, o_y, a, s). The
//! calibration estimates it by sampling its inputs' errors (the clicks, the board's corners,
//! the intrinsics) and fitting the similarity between the frame drawn and the frame found over
//! the pixels the bench is seen in; `process` carries it to the forces.

use serde::{Deserialize, Serialize};

/// Names of the similarity's four numbers, in the covariance's order (with their units).
pub const FRAME_ERROR_NAMES: [&str; 4] = ["offset x (m)", "offset y (m)", "angle (rad)", "scale"];

/// The covariance of the bench frame's error (offset x, m; offset y, m; angle, rad; relative
/// scale), the similarity about the origin of the module's description; symmetric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FrameCovariance(pub [[f64; 4]; 4]);

impl FrameCovariance {
    /// The covariance of `draws` of (o_x, o_y, a, s) about zero (the frame found is the mean's
    /// estimate: the draws are its errors). None without draws or with a non-finite one.
    pub fn of_draws(draws: &[[f64; 4]]) -> Option<Self> {
        if draws.is_empty() || draws.iter().flatten().any(|v| !v.is_finite()) {
            return None;
        }
        let mut c = [[0.0; 4]; 4];
        for d in draws {
            for (i, row) in c.iter_mut().enumerate() {
                for (j, e) in row.iter_mut().enumerate() {
                    *e += d[i] * d[j];
                }
            }
        }
        let n = draws.len() as f64;
        c.iter_mut().flatten().for_each(|e| *e /= n);
        Some(Self(c))
    }

    /// The standard deviation of each of the four numbers (m, m, rad, relative).
    pub fn sigmas(&self) -> [f64; 4] {
        std::array::from_fn(|i| self.0[i][i].max(0.0).sqrt())
    }

    /// The covariance as 16 numbers, row by row (as written to a calibration file).
    pub fn to_row_major(&self) -> [f64; 16] {
        std::array::from_fn(|k| self.0[k / 4][k % 4])
    }

    /// The covariance from 16 numbers row by row; None unless they are finite, symmetric
    /// (1e-12 of the largest) and the variances not negative.
    pub fn from_row_major(v: &[f64]) -> Option<Self> {
        if v.len() != 16 || v.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let c: [[f64; 4]; 4] = std::array::from_fn(|i| std::array::from_fn(|j| v[4 * i + j]));
        let top = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let symmetric = (0..4).all(|i| (0..4).all(|j| (c[i][j] - c[j][i]).abs() <= 1e-12 * top));
        (symmetric && (0..4).all(|i| c[i][i] >= 0.0)).then_some(Self(c))
    }

    /// A bench position moved by the frame's error `e` = (o_x, o_y, a, s) (m): the similarity
    /// of the module's description, to first order.
    pub fn moved(e: &[f64; 4], (x, y): (f64, f64)) -> (f64, f64) {
        (
            x + e[0] - e[2] * y + e[3] * x,
            y + e[1] + e[2] * x + e[3] * y,
        )
    }

    /// The frame's error `e` = (o_x, o_y, a, s) applied to a velocity or acceleration (m/s,
    /// m/s^2): the similarity without its offset.
    pub fn turned(e: &[f64; 4], (x, y): (f64, f64)) -> (f64, f64) {
        (x - e[2] * y + e[3] * x, y + e[2] * x + e[3] * y)
    }

    /// The least-squares similarity (o_x, o_y, a, s) that takes the bench positions `found` to
    /// `drawn` (pairs of the same pixels mapped by two frames), to first order; None with fewer
    /// than two distinct points.
    pub fn fit(found: &[(f64, f64)], drawn: &[(f64, f64)]) -> Option<[f64; 4]> {
        // Rows per point: dx = o_x - a y + s x, dy = o_y + a x + s y; normal equations 4x4.
        let mut n = [[0.0; 4]; 4];
        let mut b = [0.0; 4];
        for (&(x, y), &(xd, yd)) in found.iter().zip(drawn) {
            for (row, d) in [([1.0, 0.0, -y, x], xd - x), ([0.0, 1.0, x, y], yd - y)] {
                for i in 0..4 {
                    b[i] += row[i] * d;
                    for j in 0..4 {
                        n[i][j] += row[i] * row[j];
                    }
                }
            }
        }
        solve4(n, b)
    }
}

/// The 4x4 system n x = b by Gaussian elimination with partial pivoting; None when singular
/// (a pivot below 1e-14 of the largest entry).
fn solve4(mut n: [[f64; 4]; 4], mut b: [f64; 4]) -> Option<[f64; 4]> {
    let top = n.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
    for c in 0..4 {
        let p = (c..4).max_by(|&i, &j| n[i][c].abs().total_cmp(&n[j][c].abs()))?;
        if n[p][c].abs() <= 1e-14 * top.max(1e-300) {
            return None;
        }
        n.swap(c, p);
        b.swap(c, p);
        let pivot = n[c];
        for r in c + 1..4 {
            let f = n[r][c] / pivot[c];
            for (x, p) in n[r][c..].iter_mut().zip(&pivot[c..]) {
                *x -= f * p;
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = [0.0; 4];
    for c in (0..4).rev() {
        let s: f64 = (c + 1..4).map(|k| n[c][k] * x[k]).sum();
        x[c] = (b[c] - s) / n[c][c];
    }
    Some(x)
}

/// What fitted similarities leave of frames drawn against a frame found (the plane's bending a
/// similarity cannot follow): sums of squares over the points and the draws (m^2) and the
/// coordinates counted.
#[derive(Debug, Default)]
pub struct BeyondSimilarity {
    ss: f64,
    n: usize,
}

impl BeyondSimilarity {
    /// The draw's frame `drawn` at the points the found frame puts at `found` (bench m), less
    /// the similarity `e` fitted between them.
    pub fn add(&mut self, e: &[f64; 4], found: &[(f64, f64)], drawn: &[(f64, f64)]) {
        for (f, d) in found.iter().zip(drawn) {
            let m = FrameCovariance::moved(e, *f);
            self.ss += (d.0 - m.0).powi(2) + (d.1 - m.1).powi(2);
            self.n += 2;
        }
    }

    /// The RMS per coordinate, mm; None without a point.
    pub fn rms_mm(&self) -> Option<f64> {
        (self.n > 0).then(|| 1e3 * (self.ss / self.n as f64).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A similarity leaves nothing; a stretch along x and a squeeze along y over four points
    /// about the origin (orthogonal to every similarity) is left whole: delta / sqrt(2) per
    /// coordinate.
    #[test]
    fn what_a_similarity_leaves_is_measured() {
        let found = [(1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0)];
        let e = [1e-4, -2e-4, 3e-4, 5e-5];
        let moved: Vec<_> = found
            .iter()
            .map(|&f| FrameCovariance::moved(&e, f))
            .collect();
        let mut b = BeyondSimilarity::default();
        b.add(
            &FrameCovariance::fit(&found, &moved).unwrap(),
            &found,
            &moved,
        );
        assert!(b.rms_mm().unwrap() < 1e-12, "{:?}", b.rms_mm());
        let d = 1e-5;
        let bent = [
            (1.0 + d, 0.0),
            (-1.0 - d, 0.0),
            (0.0, 1.0 - d),
            (0.0, -1.0 + d),
        ];
        let mut b = BeyondSimilarity::default();
        b.add(&FrameCovariance::fit(&found, &bent).unwrap(), &found, &bent);
        let want = 1e3 * d / 2f64.sqrt();
        assert!(
            (b.rms_mm().unwrap() - want).abs() < 1e-12,
            "{:?} {want}",
            b.rms_mm()
        );
        assert!(BeyondSimilarity::default().rms_mm().is_none());
    }

    /// A known similarity is found again from the points it moved, to rounding; two points
    /// suffice, one does not.
    #[test]
    fn the_similarity_is_found_again() {
        let e = [2e-4, -1e-4, 3e-4, -5e-5];
        let found = [(0.0, 0.0), (0.35, 0.02), (0.2, -0.1), (0.1, 0.15)];
        let drawn: Vec<_> = found
            .iter()
            .map(|&p| FrameCovariance::moved(&e, p))
            .collect();
        let got = FrameCovariance::fit(&found, &drawn).expect("four points");
        for (g, w) in got.iter().zip(e) {
            assert!((g - w).abs() < 1e-15, "{got:?} against {e:?}");
        }
        let two = FrameCovariance::fit(&found[..2], &drawn[..2]).expect("two points");
        assert!((two[2] - e[2]).abs() < 1e-15);
        assert!(FrameCovariance::fit(&found[..1], &drawn[..1]).is_none());
    }

    /// The covariance of draws about zero, its standard deviations, and its round trip through
    /// 16 numbers; an asymmetric or negative-variance set is refused.
    #[test]
    fn covariance_of_draws_and_its_row_major_form() {
        let draws = [
            [1.0, 0.0, 2.0, 0.0],
            [-1.0, 0.0, -2.0, 0.0],
            [0.0, 3.0, 0.0, 0.0],
        ];
        let c = FrameCovariance::of_draws(&draws).expect("draws");
        assert_eq!(c.0[0][0], 2.0 / 3.0);
        assert_eq!(c.0[0][2], 4.0 / 3.0);
        assert_eq!(c.0[1][1], 3.0);
        assert_eq!(c.sigmas()[1], 3.0f64.sqrt());
        let back = FrameCovariance::from_row_major(&c.to_row_major()).expect("symmetric");
        assert_eq!(back, c);
        let mut bad = c.to_row_major();
        bad[1] = 1.0;
        assert!(FrameCovariance::from_row_major(&bad).is_none());
        let mut neg = c.to_row_major();
        neg[5] = -1.0;
        assert!(FrameCovariance::from_row_major(&neg).is_none());
        assert!(FrameCovariance::of_draws(&[]).is_none());
    }
}

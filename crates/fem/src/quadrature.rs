//! Gauss-Legendre quadrature on [0, 1].

/// Points on [0, 1] and weights of the n-point Gauss-Legendre rule, exact for polynomials of
/// degree up to 2n - 1. The points are the roots of the Legendre polynomial P_n found by Newton's
/// method from Tricomi's approximation cos(pi (i - 1/4) / (n + 1/2)); the weights are
/// 2 / ((1 - x^2) P_n'(x)^2) on [-1, 1], halved for [0, 1].
pub fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(n);
    for i in 1..=n {
        let mut x = (std::f64::consts::PI * (i as f64 - 0.25) / (n as f64 + 0.5)).cos();
        let mut dp = 1.0;
        for _ in 0..100 {
            // P_n(x) and P_n'(x) by the three-term recurrence.
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=n {
                let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                p0 = p1;
                p1 = p2;
            }
            dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
            let dx = p1 / dp;
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        let w = 2.0 / ((1.0 - x * x) * dp * dp);
        out.push((0.5 * (1.0 + x), 0.5 * w));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The n-point rule integrates x^k exactly (1 / (k + 1)) for k <= 2n - 1, to rounding.
    #[test]
    fn exact_to_degree_2n_minus_1() {
        for n in 1..=10 {
            let rule = gauss_legendre(n);
            assert_eq!(rule.len(), n);
            for k in 0..2 * n {
                let got: f64 = rule.iter().map(|(x, w)| w * x.powi(k as i32)).sum();
                assert!(
                    (got - 1.0 / (k as f64 + 1.0)).abs() < 1e-15,
                    "n {n} degree {k}: {got}"
                );
            }
            // and not beyond: x^(2n) is off
            let got: f64 = rule.iter().map(|(x, w)| w * x.powi(2 * n as i32)).sum();
            assert!((got - 1.0 / (2.0 * n as f64 + 1.0)).abs() > 1e-12);
        }
    }
}

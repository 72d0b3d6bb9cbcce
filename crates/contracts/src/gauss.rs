//! A fixed pseudo-random Gaussian sequence (Box-Muller on a xorshift64 generator): the same
//! numbers on every run and machine, no dependency. For test data across the workspace, and for
//! the Monte Carlo draws whose result must be the same every run (the bench frame's
//! uncertainty).

/// Standard normal numbers from a seed.
pub struct Gauss {
    state: u64,
}

impl Gauss {
    /// The sequence of this (non-zero) seed.
    pub fn new(seed: u64) -> Self {
        Gauss { state: seed }
    }

    /// The next uniform number in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        ((self.state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// The next standard normal number (an endless sequence: not an `Iterator`, whose `next`
    /// would wrap every draw in an `Option`).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> f64 {
        let (a, b) = (self.uniform(), self.uniform());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }
}

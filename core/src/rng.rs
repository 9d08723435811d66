//! A small, seedable, portable random number generator (xoshiro256**, seeded by SplitMix64).
//!
//! Bundled samples and replays must be bit-identical for the same seed on every platform and
//! every version of the dependencies, so the generator and the few distributions we need live
//! here rather than behind a crate whose streams may change.

/// xoshiro256** state.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

/// SplitMix64 (Steele, Lea and Flood 2014): a tiny, portable, seedable generator. The one
/// implementation in the crate: it seeds [`Rng`], drives the `random` policy and assigns the
/// cross-validation folds of the shrinkage fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; `n = 0` gives 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `0..=bound` (multiply-shift).
    #[inline]
    pub fn below_or_eq(&mut self, bound: usize) -> usize {
        ((u128::from(self.next_u64()) * (bound as u128 + 1)) >> 64) as usize
    }
}

impl Rng {
    /// A generator from a 64-bit seed.
    pub fn new(seed: u64) -> Rng {
        let mut x = SplitMix64::new(seed);
        Rng {
            s: [x.next_u64(), x.next_u64(), x.next_u64(), x.next_u64()],
        }
    }

    /// An independent stream derived from this seed and a stream number.
    pub fn stream(seed: u64, stream: u64) -> Rng {
        Rng::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1], safe for logarithms.
    fn open01(&mut self) -> f64 {
        1.0 - self.uniform()
    }

    /// Uniform integer in [0, n) (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.open01();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * self.open01().ln()
    }

    /// Weibull with shape `k` and scale `lambda`: `lambda * (-ln U)^(1/k)`.
    pub fn weibull(&mut self, k: f64, lambda: f64) -> f64 {
        lambda * (-self.open01().ln()).powf(1.0 / k)
    }

    /// Log-normal: `exp(mu + sigma * Z)`.
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.normal()).exp()
    }

    /// Gamma with shape `k` and scale `theta` (Marsaglia-Tsang).
    pub fn gamma(&mut self, k: f64, theta: f64) -> f64 {
        if k < 1.0 {
            let u = self.open01();
            return self.gamma(k + 1.0, theta) * u.powf(1.0 / k);
        }
        let d = k - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.open01();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v * theta;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // SplitMix64 reference output for seed 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut a = SplitMix64::new(9);
        let mut b = SplitMix64::new(9);
        for bound in [0usize, 1, 5, 1000] {
            let x = a.below_or_eq(bound);
            assert!(x <= bound);
            assert_eq!(x as u64, b.below(bound as u64 + 1));
        }
    }

    #[test]
    fn same_seed_same_stream() {
        let a: Vec<u64> = (0..5)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..5)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(
            a,
            (0..5)
                .scan(Rng::new(8), |r, _| Some(r.next_u64()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn moments_are_right() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let m = (0..n).map(|_| r.exponential(3.0)).sum::<f64>() / n as f64;
        assert!((m - 3.0).abs() < 0.05, "exponential mean {m}");
        let m = (0..n).map(|_| r.gamma(2.5, 2.0)).sum::<f64>() / n as f64;
        assert!((m - 5.0).abs() < 0.06, "gamma mean {m}");
        // Weibull k=2, scale 1: mean = Gamma(1.5) = 0.886227
        let m = (0..n).map(|_| r.weibull(2.0, 1.0)).sum::<f64>() / n as f64;
        assert!((m - 0.886_227).abs() < 0.01, "weibull mean {m}");
        let u = (0..n).map(|_| r.uniform()).fold(0.0f64, f64::max);
        assert!(u < 1.0);
    }
}

//! The tests behind every paired comparison: the paired Student t test over windows (its
//! studentized interval and two-sided p-value) and the Benjamini-Hochberg q-values that
//! control the false-discovery rate across the cells of a map.
//!
//! Why t and not the percentile bootstrap: with ten windows a percentile-bootstrap interval of
//! a mean covers about 88 % for a nominal 95 % (it uses `sd sqrt((n-1)/n) z` where the pivot
//! needs `sd t_{n-1}`). The t interval is the studentized one, and its p-value is what the
//! q-values adjust; the A/A test in the suite checks that identical policies are flagged no
//! more often than the nominal rate.

use crate::survival::numeric::ln_gamma;

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function `I_x(a, b)`.
fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Two-sided p-value of Student's t with `df` degrees of freedom: `P(|T| >= |t|)`.
fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || !(df > 0.0) {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    beta_inc(0.5 * df, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// The quantile `t_{df}(q)` of Student's t for `q` in (0.5, 1), by bisection on
/// [`t_two_sided_p`] (to 1e-12).
fn t_quantile(q: f64, df: f64) -> f64 {
    let target = 2.0 * (1.0 - q);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_two_sided_p(hi, df) > target {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided_p(mid, df) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The paired t test of per-window differences: their mean, the studentized interval
/// `mean ± t_{n-1}(1 - alpha/2) sd / sqrt(n)` (95 %: `alpha = 0.05`) and the two-sided p-value
/// of "mean = 0".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedT {
    /// Mean difference.
    pub mean: f64,
    /// The `1 - alpha` interval (95 % from [`paired_t`]).
    pub ci: [f64; 2],
    /// Two-sided p-value; `None` when the differences have no spread (no test: a t statistic
    /// over zero variance is not a p-value of 0, however far the mean is from 0).
    pub p: Option<f64>,
}

/// [`PairedT`] of `diffs`; `None` with fewer than two. Identical differences give a zero-width
/// interval and no test (`p = None`).
pub fn paired_t(diffs: &[f64]) -> Option<PairedT> {
    paired_t_at(diffs, 0.05)
}

/// [`paired_t`] with the interval at level `1 - alpha` (`alpha` in (0, 1)).
pub(crate) fn paired_t_at(diffs: &[f64], alpha: f64) -> Option<PairedT> {
    let n = diffs.len();
    if n < 2 || diffs.iter().any(|d| !d.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mean = diffs.iter().sum::<f64>() / nf;
    let var = diffs.iter().map(|d| (d - mean) * (d - mean)).sum::<f64>() / (nf - 1.0);
    let se = (var / nf).sqrt();
    // Differences equal up to rounding have no spread to test against.
    if !(se > 1e-12 * mean.abs().max(f64::MIN_POSITIVE)) {
        return Some(PairedT {
            mean,
            ci: [mean, mean],
            p: None,
        });
    }
    let df = nf - 1.0;
    let half = t_quantile(1.0 - 0.5 * alpha, df) * se;
    Some(PairedT {
        mean,
        ci: [mean - half, mean + half],
        p: Some(t_two_sided_p(mean / se, df)),
    })
}

/// Benjamini-Hochberg q-values of `p` (same order; `None` entries are not tests and stay
/// `None`): `q_(i) = min_{j >= i} (m p_(j) / j)` over the `m` tests sorted by p, capped at 1.
/// Declaring every test with `q < alpha` controls the false-discovery rate at `alpha`.
pub fn bh_q_values(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut idx: Vec<(usize, f64)> = p
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.filter(|x| !x.is_nan()).map(|x| (i, x)))
        .collect();
    idx.sort_by(|a, b| a.1.total_cmp(&b.1));
    let m = idx.len() as f64;
    let mut out = vec![None; p.len()];
    let mut running = 1.0f64;
    for (rank, &(i, pv)) in idx.iter().enumerate().rev() {
        running = running.min(pv * m / (rank + 1) as f64).min(1.0);
        out[i] = Some(running);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_reference_values() {
        // scipy.stats.t.ppf(0.975, df) and 2 * t.sf(2, df).
        assert!((t_quantile(0.975, 9.0) - 2.262_157_162_740_992).abs() < 1e-9);
        assert!((t_quantile(0.975, 29.0) - 2.045_229_642_132_703).abs() < 1e-9);
        assert!((t_quantile(0.975, 1.0) - 12.706_204_736_174_7).abs() < 1e-7);
        assert!((t_two_sided_p(2.0, 9.0) - 0.076_552_823_770_672).abs() < 1e-9);
        assert!((t_two_sided_p(0.0, 5.0) - 1.0).abs() < 1e-14);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
    }

    #[test]
    fn paired_t_interval_and_p() {
        let d = [1.0, 2.0, 3.0, 4.0];
        let t = paired_t(&d).unwrap();
        assert_eq!(t.mean, 2.5);
        // sd = 1.2910, se = 0.6455, t_3(0.975) = 3.1824.
        assert!((t.ci[0] - (2.5 - 3.182_446_305_284_263 * 0.645_497_224_367_902_8)).abs() < 1e-9);
        assert!(t.p.is_some_and(|p| p < 0.05 && p > 0.01));
        // Zero variance: no test, whatever the mean.
        assert_eq!(paired_t(&[0.0, 0.0, 0.0]).unwrap().p, None);
        assert_eq!(paired_t(&[1.0, 1.0]).unwrap().p, None);
        assert_eq!(paired_t(&[1.0, 1.0]).unwrap().ci, [1.0, 1.0]);
        assert!(paired_t(&[1.0]).is_none());
    }

    #[test]
    fn bh_matches_a_hand_computation() {
        let p = [Some(0.01), Some(0.04), None, Some(0.03), Some(0.5)];
        let q = bh_q_values(&p);
        // Sorted: 0.01, 0.03, 0.04, 0.5 (m = 4): 0.04, 0.0533, 0.0533, 0.5.
        assert!((q[0].unwrap() - 0.04).abs() < 1e-12);
        assert!((q[3].unwrap() - 0.04 * 4.0 / 3.0).abs() < 1e-12);
        assert!((q[1].unwrap() - 0.04 * 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(q[2], None);
        assert!((q[4].unwrap() - 0.5).abs() < 1e-12);
    }
}

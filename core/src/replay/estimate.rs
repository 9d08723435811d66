//! Output-length estimates: how the estimate a policy sees is made from a request's true
//! length, and the posterior the policies price with, so that the two agree.
//!
//! A router never knows a request's output length; it has a noisy predictor at best, and it
//! has history: the workload's own length distribution. The policies price a request's
//! remaining output with a log-normal posterior `ln L ~ N(ln m_r, s^2)` (median `m_r`, log-sd
//! `s`, [`crate::policy::RequestView::remaining_expected`]). This module makes `m_r` and `s`
//! the posterior of the estimator that generated the observation:
//!
//! * `exact`: `m_r = L_r`, `s = 0`.
//! * `lognormal:SIGMA`: the predictor observes `y = ln L_r + SIGMA Z`, `Z ~ N(0, 1)` drawn from
//!   the request's own stream (run seed, window, request index: every policy sees the same
//!   observation). The prior is the workload's own length distribution (a histogram of
//!   `ln L` over the whole workload, [`Posterior`]), so `E[L | y]` shrinks toward the workload
//!   instead of trusting the observation (a flat prior, `E[L | y] = e^{y + SIGMA^2/2}`,
//!   overstates lengths by `e^{SIGMA^2}` over a workload: 1.28 at 0.5). The posterior's log-sd
//!   is the normal-normal one, `s^2 = SIGMA^2 tau^2 / (SIGMA^2 + tau^2)` (`tau^2` the workload's
//!   log-length variance), and `m_r = E[L | y] e^{-s^2/2}`, so that the policies' expected
//!   length of a fresh request is `E[L | y]`. By the tower property the policies' expected
//!   lengths then average to the workload's mean length (tested).
//! * `bucket`: the predictor observes the request's prompt-length bucket (`floor(log2 P) + 1`,
//!   0 for an empty prompt); `E[L | bucket]` is the bucket's mean length, `s` the pooled
//!   within-bucket log-sd, `m_r = E[L | bucket] e^{-s^2/2}`.
//!
//! A zero-length request's estimate is 0 under every estimator.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// How the output-length estimate the policies see is made from the true length `L_r` (see
/// the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum LengthEstimator {
    /// The true length.
    Exact,
    /// A predictor with multiplicative log-normal noise, `y = ln L_r + sigma Z`, priced with
    /// its posterior under the workload's own length distribution.
    Lognormal {
        /// `sigma` of the log-noise (default 0.5).
        sigma: f64,
    },
    /// The mean output length of the workload's requests in the same prompt-length bucket,
    /// buckets being powers of two of the prompt: bucket `b = floor(log2 P_r) + 1` (0 for an
    /// empty prompt), over the whole workload.
    Bucket,
}

impl LengthEstimator {
    /// Default `sigma` of [`LengthEstimator::Lognormal`].
    pub const DEFAULT_SIGMA: f64 = 0.5;
}

impl Default for LengthEstimator {
    /// [`LengthEstimator::Exact`].
    fn default() -> LengthEstimator {
        LengthEstimator::Exact
    }
}

impl fmt::Display for LengthEstimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthEstimator::Exact => f.write_str("exact"),
            LengthEstimator::Lognormal { sigma } => write!(f, "lognormal:{sigma}"),
            LengthEstimator::Bucket => f.write_str("bucket"),
        }
    }
}

/// An output-length estimator spec that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown estimator `{0}` (expected exact, lognormal[:SIGMA] or bucket)")]
pub struct UnknownEstimator(pub String);

impl FromStr for LengthEstimator {
    type Err = UnknownEstimator;
    /// `exact`, `lognormal` (sigma 0.5), `lognormal:SIGMA` (finite, non-negative) or `bucket`.
    fn from_str(s: &str) -> Result<LengthEstimator, UnknownEstimator> {
        let t = s.trim().to_ascii_lowercase();
        let unknown = || UnknownEstimator(s.to_string());
        match t.as_str() {
            "exact" => Ok(LengthEstimator::Exact),
            "bucket" => Ok(LengthEstimator::Bucket),
            "lognormal" => Ok(LengthEstimator::Lognormal {
                sigma: LengthEstimator::DEFAULT_SIGMA,
            }),
            _ => {
                let rest = t.strip_prefix("lognormal:").ok_or_else(unknown)?;
                let sigma: f64 = rest.trim().parse().map_err(|_| unknown())?;
                if sigma.is_finite() && sigma >= 0.0 {
                    Ok(LengthEstimator::Lognormal { sigma })
                } else {
                    Err(unknown())
                }
            }
        }
    }
}

/// Salt of the estimator streams (see [`super::input::run_stream_seed`]).
const SALT_ESTIMATE: u64 = 0x6573_7469_6d61_7465;

/// The smallest log-noise read as noise; below it an estimate is the true length.
const MIN_SIGMA: f64 = 1e-6;

/// Bins of the prior's histogram of `ln L`.
const PRIOR_BINS: usize = 256;
/// Points of the tabulated posterior mean, over the prior's range widened by 6 `sigma`.
const GRID_POINTS: usize = 1024;

/// An estimator ready for one workload: the estimates of its requests and the posterior
/// log-sd the policies are told.
#[derive(Debug, Clone)]
pub(crate) struct Estimates {
    kind: LengthEstimator,
    /// `lognormal`: the tabulated posterior.
    posterior: Option<Posterior>,
    /// `bucket`: each bucket's mean length (NaN when empty).
    bucket_means: Vec<f64>,
    /// The posterior log-sd `s`.
    sigma: f64,
}

impl Estimates {
    /// The estimator `kind` for a workload of `(prompt, output)` lengths.
    pub(crate) fn new(
        kind: LengthEstimator,
        lengths: impl Iterator<Item = (u64, u64)> + Clone,
    ) -> Estimates {
        let mut out = Estimates {
            kind,
            posterior: None,
            bucket_means: Vec::new(),
            sigma: 0.0,
        };
        match kind {
            LengthEstimator::Exact => {}
            LengthEstimator::Lognormal { sigma } => {
                // Below 1e-6 the noise is no noise (and sigma^2 would underflow the
                // likelihood): the estimate is the length.
                if sigma >= MIN_SIGMA {
                    if let Some(p) = Posterior::new(lengths.map(|(_, l)| l), sigma) {
                        out.sigma = p.sigma;
                        out.posterior = Some(p);
                    }
                }
            }
            LengthEstimator::Bucket => {
                let (means, sigma) = bucket_means(lengths);
                out.bucket_means = means;
                out.sigma = sigma;
            }
        }
        out
    }

    /// The posterior log-sd `s` the policies are told
    /// ([`crate::policy::RequestView::est_sigma`]).
    pub(crate) fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The estimate (posterior median `m_r`, tokens) of the request at `index` in the run
    /// whose streams are seeded by `stream_seed`.
    pub(crate) fn estimate(&self, prompt: u64, output: u64, index: u64, stream_seed: u64) -> u64 {
        if output == 0 {
            return 0;
        }
        let shrink = (-0.5 * self.sigma * self.sigma).exp();
        match self.kind {
            LengthEstimator::Exact => output,
            LengthEstimator::Lognormal { sigma } => match &self.posterior {
                Some(p) => {
                    let mut rng = Rng::stream(stream_seed ^ SALT_ESTIMATE, index);
                    let y = (output as f64).ln() + sigma * rng.normal();
                    to_tokens(p.mean(y) * shrink).max(1)
                }
                None => output,
            },
            LengthEstimator::Bucket => match self.bucket_means.get(prompt_bucket(prompt)) {
                Some(&m) if m > 0.0 => to_tokens(m * shrink).max(1),
                _ => output,
            },
        }
    }
}

/// `E[L | y]` for `y = ln L + sigma Z` under a histogram prior of `ln L`, tabulated on a grid
/// of `y` (linear interpolation of `ln E[L | y]`; clamped outside the grid, where the
/// posterior sits on the prior's extreme bin).
#[derive(Debug, Clone)]
struct Posterior {
    y0: f64,
    dy: f64,
    ln_mean: Vec<f64>,
    /// The normal-normal posterior log-sd.
    sigma: f64,
}

impl Posterior {
    /// The posterior for the workload's lengths (zero lengths left out) and noise `sigma`;
    /// `None` without a positive length.
    fn new(lengths: impl Iterator<Item = u64>, sigma: f64) -> Option<Posterior> {
        let logs: Vec<(f64, f64)> = lengths
            .filter(|&l| l > 0)
            .map(|l| (l as f64, (l as f64).ln()))
            .collect();
        if logs.is_empty() {
            return None;
        }
        let n = logs.len() as f64;
        let lo = logs.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let hi = logs.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
        let mean_log = logs.iter().map(|x| x.1).sum::<f64>() / n;
        let tau2 = logs.iter().map(|x| (x.1 - mean_log).powi(2)).sum::<f64>() / n;
        // Atoms: per bin, (count, mean L, mean ln L).
        let width = ((hi - lo) / PRIOR_BINS as f64).max(1e-12);
        let mut bins = vec![(0.0f64, 0.0f64, 0.0f64); PRIOR_BINS];
        for &(l, x) in &logs {
            let b = (((x - lo) / width) as usize).min(PRIOR_BINS - 1);
            bins[b].0 += 1.0;
            bins[b].1 += l;
            bins[b].2 += x;
        }
        let atoms: Vec<(f64, f64, f64)> = bins
            .into_iter()
            .filter(|b| b.0 > 0.0)
            .map(|(c, s, x)| (c.ln(), s / c, x / c))
            .collect();
        let y0 = lo - 6.0 * sigma;
        let span = (hi - lo) + 12.0 * sigma;
        let dy = span / (GRID_POINTS - 1) as f64;
        let inv = 1.0 / (2.0 * sigma * sigma);
        let ln_mean = (0..GRID_POINTS)
            .map(|g| {
                let y = y0 + dy * g as f64;
                // log-sum-exp over the atoms' log weights.
                let lw: Vec<f64> = atoms
                    .iter()
                    .map(|&(lc, _, x)| lc - (y - x) * (y - x) * inv)
                    .collect();
                let top = lw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let (mut num, mut den) = (0.0, 0.0);
                for (w, &(_, l, _)) in lw.iter().zip(&atoms) {
                    let e = (w - top).exp();
                    num += e * l;
                    den += e;
                }
                (num / den).ln()
            })
            .collect();
        let s2 = sigma * sigma * tau2 / (sigma * sigma + tau2);
        Some(Posterior {
            y0,
            dy,
            ln_mean,
            sigma: s2.sqrt(),
        })
    }

    /// `E[L | y]`.
    fn mean(&self, y: f64) -> f64 {
        let last = self.ln_mean.len() - 1;
        let t = ((y - self.y0) / self.dy).clamp(0.0, last as f64);
        let i = (t.floor() as usize).min(last.saturating_sub(1));
        let f = t - i as f64;
        let a = self.ln_mean[i];
        let b = self.ln_mean[(i + 1).min(last)];
        (a + f * (b - a)).exp()
    }
}

/// Each prompt bucket's mean length (NaN when empty) and the pooled within-bucket log-sd,
/// both over the positive lengths (a zero-length request's estimate is 0 whatever its bucket).
fn bucket_means(lengths: impl Iterator<Item = (u64, u64)> + Clone) -> (Vec<f64>, f64) {
    let mut sums = vec![(0.0f64, 0u64, 0.0f64, 0u64); 65];
    for (p, l) in lengths.clone() {
        let b = &mut sums[prompt_bucket(p)];
        if l > 0 {
            b.0 += l as f64;
            b.1 += 1;
            b.2 += (l as f64).ln();
            b.3 += 1;
        }
    }
    let (mut ss, mut dof) = (0.0, 0u64);
    for (p, l) in lengths {
        let b = sums[prompt_bucket(p)];
        if l > 0 && b.3 > 0 {
            ss += ((l as f64).ln() - b.2 / b.3 as f64).powi(2);
        }
    }
    for b in &sums {
        dof += b.3.saturating_sub(1);
    }
    let means = sums
        .iter()
        .map(|b| if b.1 > 0 { b.0 / b.1 as f64 } else { f64::NAN })
        .collect();
    let sigma = if dof > 0 {
        (ss / dof as f64).sqrt()
    } else {
        0.0
    };
    (means, sigma)
}

/// Bucket of a prompt length for [`LengthEstimator::Bucket`]: `floor(log2 P) + 1`, 0 for `P = 0`.
#[inline]
fn prompt_bucket(prompt_tokens: u64) -> usize {
    (64 - prompt_tokens.leading_zeros()) as usize
}

fn to_tokens(x: f64) -> u64 {
    if x >= u64::MAX as f64 {
        u64::MAX
    } else if x > 0.0 {
        x.round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policies' expected length of a fresh request, `m_r e^{s^2/2}`.
    fn expected(e: &Estimates, m: u64) -> f64 {
        m as f64 * (0.5 * e.sigma() * e.sigma()).exp()
    }

    /// Over many requests, the mean of the policies' expected length given the estimate
    /// against the mean true length, in units of the difference's standard error.
    fn z_of_mean(kind: LengthEstimator, lengths: &[(u64, u64)]) -> (f64, f64) {
        let e = Estimates::new(kind, lengths.iter().copied());
        let d: Vec<f64> = lengths
            .iter()
            .enumerate()
            .map(|(i, &(p, l))| expected(&e, e.estimate(p, l, i as u64, 7)) - l as f64)
            .collect();
        let n = d.len() as f64;
        let mean = d.iter().sum::<f64>() / n;
        let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let truth = lengths.iter().map(|x| x.1 as f64).sum::<f64>() / n;
        (mean / (var / n).sqrt(), mean / truth)
    }

    fn workload(seed: u64, n: usize, draw: impl Fn(&mut Rng) -> f64) -> Vec<(u64, u64)> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| {
                let p = rng.lognormal(6.0, 1.0).round() as u64;
                (p, (draw(&mut rng).round() as u64).max(1))
            })
            .collect()
    }

    #[test]
    fn the_policies_expected_length_averages_to_the_workloads_mean_length() {
        // Log-normal, bimodal (short answers and long essays) and heavy-tailed workloads, at
        // several noise levels: the flat-prior posterior overstates by e^{sigma^2} (28 % at
        // 0.5) and fails every case.
        let cases: Vec<(&str, Vec<(u64, u64)>)> = vec![
            ("lognormal", workload(1, 40_000, |r| r.lognormal(5.0, 1.0))),
            (
                "bimodal",
                workload(2, 40_000, |r| {
                    if r.uniform() < 0.7 {
                        r.lognormal(3.0, 0.3)
                    } else {
                        r.lognormal(6.5, 0.4)
                    }
                }),
            ),
            (
                "pareto",
                workload(3, 40_000, |r| {
                    20.0 / (1.0 - r.uniform()).max(1e-12).powf(0.4)
                }),
            ),
        ];
        for (name, lengths) in &cases {
            for sigma in [0.25, 0.5, 1.0] {
                let (z, rel) = z_of_mean(LengthEstimator::Lognormal { sigma }, lengths);
                assert!(
                    z.abs() < 4.0 && rel.abs() < 0.03,
                    "{name}, sigma {sigma}: mean expected length off by {:.2} % (z = {z:.2})",
                    rel * 100.0
                );
            }
            let (z, rel) = z_of_mean(LengthEstimator::Bucket, lengths);
            assert!(
                rel.abs() < 0.03,
                "{name}, bucket: off by {:.2} % (z = {z:.2})",
                rel * 100.0
            );
        }
    }

    #[test]
    fn the_posterior_shrinks_toward_the_workload_and_tracks_the_observation() {
        let lengths = workload(4, 20_000, |r| r.lognormal(5.0, 1.0));
        let e = Estimates::new(
            LengthEstimator::Lognormal { sigma: 0.5 },
            lengths.iter().copied(),
        );
        // Normal-normal: tau = 1, sigma = 0.5 -> s^2 = 0.2, the mean's weight on y is 0.8.
        assert!(
            (e.sigma() - 0.2f64.sqrt()).abs() < 0.02,
            "s = {}",
            e.sigma()
        );
        let p = e.posterior.as_ref().expect("a posterior");
        for y in [3.0, 5.0, 7.0] {
            let want = 0.8 * y + 0.2 * 5.0 + 0.5 * 0.2;
            assert!(
                (p.mean(y).ln() - want).abs() < 0.05,
                "ln E[L | y = {y}] = {} against {want}",
                p.mean(y).ln()
            );
        }
        // Monotone in the observation.
        let m: Vec<f64> = (0..50).map(|i| p.mean(i as f64 * 0.2)).collect();
        assert!(m.windows(2).all(|w| w[1] >= w[0]));
    }

    #[test]
    fn exact_and_degenerate_inputs() {
        let lengths = [(10u64, 0u64), (10, 7), (100, 7)];
        let e = Estimates::new(
            LengthEstimator::Lognormal { sigma: 0.5 },
            lengths.iter().copied(),
        );
        assert_eq!(e.estimate(10, 0, 0, 1), 0, "a zero-length request");
        // One distinct length: the posterior is that length, whatever the noise.
        assert_eq!(e.estimate(10, 7, 1, 1), 7);
        assert_eq!(e.sigma(), 0.0);
        let x = Estimates::new(LengthEstimator::Exact, lengths.iter().copied());
        assert_eq!((x.estimate(1, 7, 0, 1), x.sigma()), (7, 0.0));
        let z = Estimates::new(
            LengthEstimator::Lognormal { sigma: 0.0 },
            lengths.iter().copied(),
        );
        assert_eq!(z.estimate(1, 7, 0, 1), 7);
        assert!("lognormal:-1".parse::<LengthEstimator>().is_err());
        assert_eq!(
            "Lognormal:0.25".parse::<LengthEstimator>(),
            Ok(LengthEstimator::Lognormal { sigma: 0.25 })
        );
    }
}

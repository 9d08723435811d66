//! The iteration model's calibration: the fidelity table (measured figure, model figure,
//! error) that `hazardserve presets --fidelity` prints and the book shows, for every
//! hardware preset against its own published figures, the step model fitted to published
//! batched tables with the fit's residuals, and the step's roofline fitted to published
//! kernel profiles.
//!
//! # The fit
//!
//! A batched decode measurement (llama.cpp's `batched-bench`: `B` sequences of a `PP`-token
//! prompt each generating `TG` tokens, aggregate decode throughput `S_TG`) gives the step time
//! `B / S_TG`, which the step model ([`crate::policy::iteration`]) writes as
//! `hypot(alpha, beta B) + gamma B + delta B (PP + TG)` (every decoder reads its KV at its
//! end, as the engine charges it), less `epsilon` at `B = 1`. A prompt-processing row (`PP`
//! tokens alone at `S_PP` tokens/s, in chunks of the table's budget) gives the prefill time
//! `PP / S_PP = hypot(alpha n, beta PP) + zeta PP^2 / 2`, `n` its chunks. The fit alternates
//! until it settles: the batched rows (`B >= 2`) by least squares on relative error for
//! `alpha`, `gamma` (and `delta` where the rows hold more than one context length; otherwise
//! `delta = 0`), the roofline's excess over `alpha` taken from the current `beta`, each kept
//! non-negative; the lone rows then give `epsilon`, the mean of what their step saves against
//! the batched line (kept in `[0, alpha + gamma]`; without two batched rows every row is
//! fitted by the line and `epsilon = 0`); the prefill rows give `beta` (a one-dimensional
//! search) and `zeta` (least squares given `beta`, kept non-negative; 0 with a single prompt
//! length). [`Fit::shape`] is the fit read as a [`crate::policy::iteration::StepShape`],
//! relative to the lone decode step `s1 = hypot(alpha, beta) + gamma - epsilon`.
//!
//! A kernel profile (Vidur's per-iteration time of the linear layers at `n` tokens) is the
//! roofline alone, `hypot(alpha, beta n)`, fitted by the least largest relative error
//! ([`fit_roofline`]).

use serde::Serialize;

use crate::policy::iteration::{StepCoefficients, StepShape};

pub use crate::policy::measurements::{
    Figure, Measured, TierCalibration, KERNEL_PROFILES, REFERENCE_TABLES,
};

/// A fit: coefficients (seconds) and the residual of each decode row (model / measured - 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// `alpha`, s per step.
    pub alpha: f64,
    /// `beta`, s per prefill token.
    pub beta: f64,
    /// `gamma`, s per decoding sequence.
    pub gamma: f64,
    /// `delta`, s per context token read.
    pub delta: f64,
    /// `epsilon`, s a lone decode step saves.
    pub epsilon: f64,
    /// `zeta`, s of a prefill's attention per prefill token per prompt token.
    pub zeta: f64,
    /// The token budget.
    pub budget: u32,
    /// Each row's relative residual, in the rows' order.
    pub residuals: Vec<f64>,
}

impl Fit {
    /// Every coefficient 0 (a fit's starting point), with the token budget `budget`.
    fn zero(budget: u32) -> Fit {
        Fit {
            alpha: 0.0,
            beta: 0.0,
            gamma: 0.0,
            delta: 0.0,
            epsilon: 0.0,
            zeta: 0.0,
            budget,
            residuals: Vec::new(),
        }
    }

    /// The fit with the residual of each of `t`'s rows (model / measured - 1).
    fn with_residuals(mut self, t: &TierCalibration) -> Fit {
        self.residuals = t
            .rows
            .iter()
            .map(|m| self.model(m.figure) / m.value - 1.0)
            .collect();
        self
    }

    /// The coefficients as the step model takes them.
    pub fn coefficients(&self) -> StepCoefficients {
        StepCoefficients {
            alpha: self.alpha,
            beta: self.beta,
            gamma: self.gamma,
            delta: self.delta,
            epsilon: self.epsilon,
            zeta: self.zeta,
            budget: self.budget,
            prefill_tok_s: 1.0 / self.beta,
        }
    }

    /// The fit's shape (relative to its own lone decode rate `1 / s1` and prefill rate
    /// `1 / beta`).
    pub fn shape(&self) -> StepShape {
        let lone = self.alpha.hypot(self.beta) + self.gamma - self.epsilon;
        let of = |x: f64| if lone > 0.0 { x / lone } else { 0.0 };
        StepShape {
            fixed_share: if lone > 0.0 { self.alpha / lone } else { 1.0 },
            context_per_ktok: 1000.0 * of(self.delta),
            max_batched_tokens: self.budget,
            lone_discount: of(self.epsilon),
            prefill_attention_per_ktok: if self.beta > 0.0 {
                500.0 * self.zeta / self.beta
            } else {
                0.0
            },
        }
    }

    /// The model's figure for a measured row.
    pub fn model(&self, figure: Figure) -> f64 {
        let c = self.coefficients();
        match figure {
            Figure::Prefill { prompt } => c.prefill_throughput(f64::from(prompt)),
            Figure::Decode {
                batch,
                prompt,
                generated,
            } => c.decode_throughput(batch, f64::from(prompt) + f64::from(generated)),
            Figure::LinearOps { tokens } => 1e3 * self.alpha.hypot(self.beta * f64::from(tokens)),
        }
    }
}

/// Least squares of `y ~ X w` over the columns `cols` (normal equations, Gaussian
/// elimination); `None` when singular.
fn least_squares(x: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let n = x.first()?.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for (row, &yv) in x.iter().zip(y) {
        for i in 0..n {
            for j in 0..n {
                a[i][j] += row[i] * row[j];
            }
            a[i][n] += row[i] * yv;
        }
    }
    for col in 0..n {
        let piv = (col..n).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        let scale = a
            .iter()
            .map(|r| r[col].abs())
            .fold(0.0, f64::max)
            .max(1e-300);
        if a[piv][col].abs() <= 1e-12 * scale {
            return None;
        }
        a.swap(col, piv);
        for r in 0..n {
            if r != col {
                let f = a[r][col] / a[col][col];
                let pivot = a[col].clone();
                for (x, p) in a[r].iter_mut().zip(&pivot).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..n).map(|i| a[i][n] / a[i][i]).collect())
}

/// The minimum of `f` on `[lo, hi]` by golden-section search on a log scale (`f` unimodal
/// there; `lo > 0`).
fn golden_log(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (lo.ln(), hi.ln());
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    let (mut fc, mut fd) = (f(c.exp()), f(d.exp()));
    for _ in 0..200 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = f(c.exp());
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = f(d.exp());
        }
    }
    ((a + b) / 2.0).exp()
}

/// Fit rounds of the alternating fit (it settles within a few; the rest cost nothing).
const FIT_ROUNDS: usize = 60;

/// Fits a tier's rows (see the module docs); `None` without a decode row and a prefill row.
pub fn fit(t: &TierCalibration) -> Option<Fit> {
    let decode: Vec<(f64, f64, f64)> = t
        .rows
        .iter()
        .filter_map(|m| match m.figure {
            Figure::Decode {
                batch,
                prompt,
                generated,
            } if m.value > 0.0 => {
                let b = f64::from(batch);
                Some((b, b * f64::from(prompt + generated), b / m.value))
            }
            _ => None,
        })
        .collect();
    let prefill: Vec<(f64, f64)> = t
        .rows
        .iter()
        .filter_map(|m| match m.figure {
            Figure::Prefill { prompt } if m.value > 0.0 => {
                Some((f64::from(prompt), f64::from(prompt) / m.value))
            }
            _ => None,
        })
        .collect();
    if decode.is_empty() || prefill.is_empty() {
        return None;
    }
    let budget = f64::from(t.max_batched_tokens.max(1));
    let lengths = {
        let mut l: Vec<u64> = prefill.iter().map(|p| p.0 as u64).collect();
        l.sort_unstable();
        l.dedup();
        l.len()
    };
    // The batched rows set the step; the lone rows then set the lone discount, when there are
    // at least two batched rows to fit.
    let batched: Vec<(f64, f64, f64)> = decode.iter().copied().filter(|d| d.0 >= 2.0).collect();
    let split = batched.len() >= 2 && batched.len() < decode.len();
    let mean_s_per_token =
        prefill.iter().map(|p| p.1).sum::<f64>() / prefill.iter().map(|p| p.0).sum::<f64>();
    // The first round fits the decode rows by the plain line (`beta = 0`: no roofline
    // excess), which starts `alpha` at the batched rows' floor.
    let mut f = Fit::zero(t.max_batched_tokens);
    for _ in 0..FIT_ROUNDS {
        // The decode rows, less the roofline's excess over the floor at the current alpha.
        let excess = |d: &(f64, f64, f64)| f.alpha.hypot(f.beta * d.0) - f.alpha;
        let adjust = |rows: &[(f64, f64, f64)]| -> Vec<(f64, f64, f64)> {
            rows.iter().map(|d| (d.0, d.1, d.2 - excess(d))).collect()
        };
        let (alpha, gamma, delta) = if split {
            linear_step(&adjust(&batched))
        } else {
            linear_step(&adjust(&decode))
        };
        f.alpha = alpha;
        f.gamma = gamma;
        f.delta = delta;
        let lone: Vec<f64> = decode
            .iter()
            .filter(|d| d.0 < 2.0 && split)
            .map(|d| alpha.hypot(f.beta * d.0) + gamma * d.0 + delta * d.1 - d.2)
            .collect();
        f.epsilon = if lone.is_empty() {
            0.0
        } else {
            (lone.iter().sum::<f64>() / lone.len() as f64).clamp(0.0, alpha + gamma)
        };
        // The prefill rows: beta by search, zeta by least squares given beta.
        let roof = |beta: f64, p: f64| {
            let x = budget.min(p);
            (alpha * p / x).hypot(beta * p)
        };
        let zeta_at = |beta: f64| -> f64 {
            if lengths < 2 {
                return 0.0;
            }
            let (mut num, mut den) = (0.0, 0.0);
            for &(p, t) in &prefill {
                let q = p * p / 2.0 / t;
                num += q * (1.0 - roof(beta, p) / t);
                den += q * q;
            }
            if den > 0.0 {
                (num / den).max(0.0)
            } else {
                0.0
            }
        };
        let sse = |beta: f64| -> f64 {
            let z = zeta_at(beta);
            prefill
                .iter()
                .map(|&(p, t)| ((roof(beta, p) + z * p * p / 2.0) / t - 1.0).powi(2))
                .sum()
        };
        f.beta = golden_log(mean_s_per_token * 1e-3, mean_s_per_token * 2.0, sse);
        f.zeta = zeta_at(f.beta);
    }
    Some(f.with_residuals(t))
}

/// A kernel profile's roofline `hypot(alpha, beta n)` (seconds) fitted to its
/// [`Figure::LinearOps`] rows by the least largest relative error (a profile's rows are
/// measured with similar care at every size, and the claim checked of them is the largest
/// error); `None` without two of them. Its `residuals` follow the rows.
pub fn fit_roofline(t: &TierCalibration) -> Option<Fit> {
    let rows: Vec<(f64, f64)> = t
        .rows
        .iter()
        .filter_map(|m| match m.figure {
            Figure::LinearOps { tokens } if m.value > 0.0 => {
                Some((f64::from(tokens), m.value / 1e3))
            }
            _ => None,
        })
        .collect();
    if rows.len() < 2 {
        return None;
    }
    let worst = |alpha: f64, beta: f64| -> f64 {
        rows.iter()
            .map(|&(n, t)| (alpha.hypot(beta * n) / t - 1.0).abs())
            .fold(0.0, f64::max)
    };
    let t_min = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let per_token = rows.iter().map(|r| r.1 / r.0).fold(0.0, f64::max);
    let best_alpha = |beta: f64| golden_log(t_min * 1e-3, t_min * 2.0, |a| worst(a, beta));
    let beta = golden_log(per_token * 1e-4, per_token * 2.0, |b| {
        worst(best_alpha(b), b)
    });
    let f = Fit {
        alpha: best_alpha(beta),
        beta,
        ..Fit::zero(t.max_batched_tokens)
    };
    Some(f.with_residuals(t))
}

/// `alpha`, `gamma`, `delta` of decode rows `(batch, context read, step seconds)` by least
/// squares on relative error, each kept non-negative: all three where the rows hold more than
/// one context length, else `delta = 0`, else through the origin.
fn linear_step(decode: &[(f64, f64, f64)]) -> (f64, f64, f64) {
    let y: Vec<f64> = decode.iter().map(|_| 1.0).collect();
    let contexts = {
        let mut c: Vec<f64> = decode.iter().map(|d| d.1 / d.0).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c.len()
    };
    let three = (contexts > 1)
        .then(|| {
            let x: Vec<Vec<f64>> = decode
                .iter()
                .map(|d| vec![1.0 / d.2, d.0 / d.2, d.1 / d.2])
                .collect();
            least_squares(&x, &y)
        })
        .flatten()
        .filter(|w| w.iter().all(|v| *v >= 0.0));
    match three {
        Some(w) => (w[0], w[1], w[2]),
        None => {
            let x: Vec<Vec<f64>> = decode.iter().map(|d| vec![1.0 / d.2, d.0 / d.2]).collect();
            match least_squares(&x, &y) {
                Some(w) if w[0] >= 0.0 && w[1] >= 0.0 => (w[0], w[1], 0.0),
                _ => {
                    // Through the origin: all of the step grows with the batch.
                    let g = decode.iter().map(|d| d.0 / d.2).sum::<f64>()
                        / decode.iter().map(|d| (d.0 / d.2).powi(2)).sum::<f64>();
                    (0.0, g.max(0.0), 0.0)
                }
            }
        }
    }
}

/// One row of the fidelity table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityRow {
    /// The hardware preset, or the published table's name.
    pub tier: String,
    /// What is compared.
    pub figure: String,
    /// The published figure (`None`: no measurement published for this row).
    pub measured: Option<f64>,
    /// The model's figure.
    pub model: f64,
    /// `model / measured - 1`.
    pub error: Option<f64>,
}

/// The prompt of the TTFT row: a 512-token prompt arriving as a 8,192-token prompt starts
/// prefilling on the same node beside 8 decoders.
pub const TTFT_PROMPT: u32 = 512;
/// The long prompt already prefilling in the TTFT row.
pub const TTFT_LONG_PROMPT: u32 = 8_192;
/// The decoders beside them in the TTFT row.
pub const TTFT_DECODERS: u32 = 8;

/// Seconds to first token of a [`TTFT_PROMPT`]-token prompt that arrives as a
/// [`TTFT_LONG_PROMPT`]-token prompt starts prefilling beside [`TTFT_DECODERS`] decoders
/// (each holding 1,024 tokens): it waits for the long prompt's chunks, then prefills its own.
pub fn ttft_behind_long_prompt(c: &StepCoefficients) -> f64 {
    let ctx = f64::from(TTFT_DECODERS) * 1024.0;
    let (long, _) = c.prefill_s(f64::from(TTFT_LONG_PROMPT), TTFT_DECODERS, ctx);
    let (own, _) = c.prefill_s(f64::from(TTFT_PROMPT), TTFT_DECODERS, ctx);
    long + own
}

fn row(tier: &str, figure: String, measured: Option<f64>, model: f64) -> FidelityRow {
    FidelityRow {
        tier: tier.to_string(),
        figure,
        measured,
        model,
        error: measured.map(|m| model / m - 1.0),
    }
}

/// The fidelity table. For every hardware preset, the iteration model with the preset's
/// coefficients ([`StepCoefficients::of`]) against the preset's own published figures
/// (prefill at `pp512`, one decoder) and, without a published figure for the device, its
/// prefill at 8,192 tokens, its decode throughput at batch 8 and 32 and the TTFT behind a
/// long prompt. Then every published batched table ([`REFERENCE_TABLES`]) against the step
/// model fitted to it, and every kernel profile ([`KERNEL_PROFILES`]) against the roofline
/// fitted to it.
pub fn fidelity() -> Vec<FidelityRow> {
    let mut out = Vec::new();
    for h in crate::policy::presets::HARDWARE {
        let Some(c) = StepCoefficients::of(h.prefill_tok_s, h.decode_tok_s, h.step) else {
            continue;
        };
        out.push(row(
            h.name,
            "prefill tok/s, pp512".into(),
            Some(h.prefill_tok_s),
            c.prefill_throughput(512.0),
        ));
        out.push(row(
            h.name,
            "prefill tok/s, pp8192".into(),
            None,
            c.prefill_throughput(8192.0),
        ));
        for b in [1u32, 8, 32] {
            out.push(row(
                h.name,
                format!("decode tok/s, batch {b}"),
                (b == 1).then_some(h.decode_tok_s),
                c.decode_throughput(b, 0.0),
            ));
        }
        out.push(row(
            h.name,
            format!(
                "TTFT s, pp{TTFT_PROMPT} behind pp{TTFT_LONG_PROMPT} beside {TTFT_DECODERS} decoders"
            ),
            None,
            ttft_behind_long_prompt(&c),
        ));
    }
    let tables = REFERENCE_TABLES
        .iter()
        .map(|t| (t, fit(t)))
        .chain(KERNEL_PROFILES.iter().map(|t| (t, fit_roofline(t))));
    for (t, f) in tables {
        let Some(f) = f else { continue };
        for m in t.rows {
            out.push(row(
                t.name,
                m.figure.label(),
                Some(m.value),
                f.model(m.figure),
            ));
        }
    }
    out
}

/// The fidelity table as Markdown (the book's `engine-fidelity` block, docs/src/engines.md).
pub fn fidelity_markdown() -> String {
    let mut s =
        String::from("| tier | figure | measured | model | error |\n|---|---|---|---|---|\n");
    for r in fidelity() {
        let num = |x: f64| {
            if x >= 100.0 {
                format!("{x:.1}")
            } else {
                format!("{x:.3}")
            }
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.tier,
            r.figure,
            r.measured.map_or("no measurement".into(), num),
            num(r.model),
            r.error
                .map_or("-".into(), |e| format!("{:+.1} %", 100.0 * e))
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::iteration::PRESET_PREFILL_ATTENTION_PER_KTOK;
    use crate::policy::presets::HARDWARE;

    fn leak(rows: Vec<Measured>) -> &'static [Measured] {
        Box::leak(rows.into_boxed_slice())
    }

    fn table(rows: &'static [Measured]) -> TierCalibration {
        TierCalibration {
            name: "x",
            source: "s",
            setup: "s",
            max_batched_tokens: 2048,
            rows,
        }
    }

    #[test]
    fn a_fit_recovers_the_coefficients_that_made_its_rows() {
        let truth = StepCoefficients {
            alpha: 0.012,
            beta: 1.0 / 9000.0,
            gamma: 0.0009,
            delta: 2e-7,
            epsilon: 0.004,
            zeta: 3e-9,
            budget: 2048,
            prefill_tok_s: 9000.0,
        };
        let mut rows = Vec::new();
        for (b, pp) in [(1, 512), (8, 512), (32, 512), (8, 128), (32, 128), (1, 128)] {
            let figure = Figure::Decode {
                batch: b,
                prompt: pp,
                generated: 128,
            };
            rows.push(Measured {
                figure,
                value: truth.decode_throughput(b, f64::from(pp + 128)),
            });
        }
        for pp in [512u32, 4096, 8192] {
            rows.push(Measured {
                figure: Figure::Prefill { prompt: pp },
                value: truth.prefill_throughput(f64::from(pp)),
            });
        }
        let f = fit(&table(leak(rows))).unwrap();
        let rel = |a: f64, b: f64| (a / b - 1.0).abs();
        assert!(rel(f.alpha, truth.alpha) < 1e-4, "{f:?}");
        assert!(rel(f.gamma, truth.gamma) < 1e-3, "{f:?}");
        assert!(rel(f.delta, truth.delta) < 1e-3, "{f:?}");
        assert!(rel(f.beta, truth.beta) < 1e-4, "{f:?}");
        assert!(rel(f.zeta, truth.zeta) < 1e-3, "{f:?}");
        assert!(rel(f.epsilon, truth.epsilon) < 1e-3, "{f:?}");
        assert!(f.residuals.iter().all(|r| r.abs() < 1e-5), "{f:?}");
        // The shape, applied to the fit's own lone rates, gives back the coefficients.
        let lone = f.alpha.hypot(f.beta) + f.gamma - f.epsilon;
        let back = StepCoefficients::of(1.0 / f.beta, 1.0 / lone, f.shape()).unwrap();
        assert!(rel(back.alpha, f.alpha) < 1e-12 && rel(back.gamma, f.gamma) < 1e-12);
        assert!(rel(back.epsilon, f.epsilon) < 1e-12 && rel(back.delta, f.delta) < 1e-12);
        assert!(rel(back.zeta, f.zeta) < 1e-12);
    }

    #[test]
    fn a_roofline_fit_recovers_its_floor_and_slope() {
        let rows: Vec<Measured> = [1u32, 16, 128, 256, 1024, 4096]
            .iter()
            .map(|&n| Measured {
                figure: Figure::LinearOps { tokens: n },
                value: 1e3 * 0.009f64.hypot(7e-5 * f64::from(n)),
            })
            .collect();
        let f = fit_roofline(&table(leak(rows))).unwrap();
        assert!((f.alpha / 0.009 - 1.0).abs() < 1e-4 && (f.beta / 7e-5 - 1.0).abs() < 1e-4);
        assert!(f.residuals.iter().all(|r| r.abs() < 1e-4));
    }

    #[test]
    fn every_row_with_a_measurement_is_within_15_percent() {
        let rows = fidelity();
        assert!(rows.len() >= 6 * HARDWARE.len());
        for t in REFERENCE_TABLES.iter().chain(KERNEL_PROFILES) {
            let n = rows.iter().filter(|r| r.tier == t.name).count();
            assert_eq!(n, t.rows.len(), "{}: not fitted", t.name);
        }
        for r in &rows {
            if let Some(e) = r.error {
                assert!(
                    e.abs() <= 0.15,
                    "{} {}: off by {:.1} %",
                    r.tier,
                    r.figure,
                    100.0 * e
                );
            }
        }
        // A long prompt ahead costs every tier more than its own prefill alone.
        for h in HARDWARE {
            let c = StepCoefficients::of(h.prefill_tok_s, h.decode_tok_s, h.step).unwrap();
            assert!(ttft_behind_long_prompt(&c) > 512.0 / h.prefill_tok_s);
        }
    }

    /// A lone prompt never prefills faster than the tier's measured rate: at any length, on
    /// every preset (measured at 512 tokens), and on every fitted table's measured lengths
    /// within the fit's residual. A step `alpha + beta x` with `beta = 1/p - alpha/512`
    /// fails this (a 2,048-token chunk ran 20 % faster than `2048 / p`).
    #[test]
    fn a_lone_prompt_never_prefills_faster_than_measured() {
        for h in HARDWARE {
            let c = StepCoefficients::of(h.prefill_tok_s, h.decode_tok_s, h.step).unwrap();
            let mut n = 1.0;
            while n <= 65_536.0 {
                let r = c.prefill_throughput(n);
                assert!(
                    r <= h.prefill_tok_s,
                    "{} at {n}: {r} > {}",
                    h.name,
                    h.prefill_tok_s
                );
                n *= 2.0;
            }
            // ... and at 512 it is the measurement, within the table's 15 %.
            assert!(
                c.prefill_throughput(512.0) >= 0.85 * h.prefill_tok_s,
                "{}",
                h.name
            );
            // Past 2,048 tokens the prefill slows as the prompt grows (attention).
            assert!(c.prefill_throughput(32_768.0) < c.prefill_throughput(4096.0));
        }
    }

    /// The presets' attention share is the DGX Spark dense model's fit (to the rounding of
    /// the constant).
    #[test]
    fn the_presets_attention_share_is_the_dense_tables_fit() {
        let t = REFERENCE_TABLES
            .iter()
            .find(|t| t.name.contains("qwen"))
            .unwrap();
        let z = fit(t).unwrap().shape().prefill_attention_per_ktok;
        assert!(
            (z - PRESET_PREFILL_ATTENTION_PER_KTOK).abs() < 5e-4,
            "fit {z}, constant {PRESET_PREFILL_ATTENTION_PER_KTOK}"
        );
    }
}

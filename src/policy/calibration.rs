//! The iteration model's calibration: the fidelity table (measured figure, model figure,
//! error) that `hazardserve presets --fidelity` prints and the README shows, for every
//! hardware preset against its own published figures, and the step model fitted to published
//! batched-decode tables with the fit's residuals.
//!
//! # The fit
//!
//! A batched decode measurement (llama.cpp's `batched-bench`: `B` sequences of a `PP`-token
//! prompt each generating `TG` tokens, aggregate decode throughput `S_TG`) gives the step time
//! `B / S_TG`, which the step model ([`crate::policy::iteration`]) writes as
//! `alpha + gamma B + delta B (PP + TG)` (every decoder reads its KV at its end, as the engine
//! charges it), less `epsilon` at `B = 1`. The batched rows (`B >= 2`) are fitted by least
//! squares for `alpha`, `gamma` (and `delta` where the rows hold more than one context length;
//! otherwise `delta = 0` and the context's cost is in `gamma`), each kept non-negative; the
//! lone rows then give `epsilon`, the mean of what their step saves against the batched line
//! (kept in `[0, alpha + gamma]`; without two batched rows every row is fitted by the line and
//! `epsilon = 0`). A prompt-processing row (`PP` tokens in one step at `S_PP` tokens/s) gives
//! `beta = (PP / S_PP - alpha) / PP`. [`Fit::shape`] is the fit read as a
//! [`crate::policy::iteration::StepShape`], relative to the lone decode step
//! `s1 = alpha + gamma - epsilon`: `a = alpha / s1`, `c = 1000 delta / s1`, `e = epsilon / s1`.

use serde::Serialize;

use crate::policy::iteration::{StepCoefficients, StepShape, PREFILL_REFERENCE_TOKENS};

/// What a published row measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Figure {
    /// Prompt processing of one `prompt`-token prompt alone, tokens/s.
    Prefill {
        /// Prompt tokens.
        prompt: u32,
    },
    /// Aggregate decode throughput of `batch` sequences, each with a `prompt`-token prompt
    /// generating `generated` tokens, tokens/s.
    Decode {
        /// Sequences decoding together.
        batch: u32,
        /// Prompt tokens of each.
        prompt: u32,
        /// Tokens each generates.
        generated: u32,
    },
}

impl Figure {
    /// A short label: `prefill pp512`, `decode B=8 (pp512, tg128)`.
    pub fn label(&self) -> String {
        match *self {
            Figure::Prefill { prompt } => format!("prefill tok/s, pp{prompt}"),
            Figure::Decode {
                batch,
                prompt,
                generated,
            } => format!("decode tok/s, batch {batch} (pp{prompt} tg{generated})"),
        }
    }
}

/// One published measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    /// What it measured.
    pub figure: Figure,
    /// The published figure, tokens/s.
    pub tok_s: f64,
}

/// A tier's published measurements and where they come from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TierCalibration {
    /// The table's name.
    pub name: &'static str,
    /// Where the rows were published.
    pub source: &'static str,
    /// Device, model, quantisation and engine of the measurement.
    pub setup: &'static str,
    /// The step's token budget the tier serves with (the engine's batch size setting).
    pub max_batched_tokens: u32,
    /// The rows, verbatim from the source.
    pub rows: &'static [Measured],
}

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
    /// The token budget.
    pub budget: u32,
    /// Each row's relative residual, in the rows' order.
    pub residuals: Vec<f64>,
}

impl Fit {
    /// The coefficients as the step model takes them.
    pub fn coefficients(&self) -> StepCoefficients {
        StepCoefficients {
            alpha: self.alpha,
            beta: self.beta,
            gamma: self.gamma,
            delta: self.delta,
            epsilon: self.epsilon,
            budget: self.budget,
            prefill_tok_s: PREFILL_REFERENCE_TOKENS
                / (self.alpha + PREFILL_REFERENCE_TOKENS * self.beta),
        }
    }

    /// The fit's shape (relative to its own lone decode rate).
    pub fn shape(&self) -> StepShape {
        let lone = self.alpha + self.gamma - self.epsilon;
        let of = |x: f64| if lone > 0.0 { x / lone } else { 0.0 };
        StepShape {
            fixed_share: if lone > 0.0 { self.alpha / lone } else { 1.0 },
            context_per_ktok: 1000.0 * of(self.delta),
            max_batched_tokens: self.budget,
            lone_discount: of(self.epsilon),
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
            } if m.tok_s > 0.0 => {
                let b = f64::from(batch);
                Some((b, b * f64::from(prompt + generated), b / m.tok_s))
            }
            _ => None,
        })
        .collect();
    if decode.is_empty() {
        return None;
    }
    // The batched rows set the step; the lone rows then set the lone discount, when there are
    // at least two batched rows to fit.
    let batched: Vec<(f64, f64, f64)> = decode.iter().copied().filter(|d| d.0 >= 2.0).collect();
    let (alpha, gamma, delta) = if batched.len() >= 2 && batched.len() < decode.len() {
        linear_step(&batched)
    } else {
        linear_step(&decode)
    };
    let lone: Vec<f64> = decode
        .iter()
        .filter(|d| d.0 < 2.0 && batched.len() >= 2)
        .map(|d| alpha + gamma + delta * d.1 - d.2)
        .collect();
    let epsilon = if lone.is_empty() {
        0.0
    } else {
        (lone.iter().sum::<f64>() / lone.len() as f64).clamp(0.0, alpha + gamma)
    };
    let prefill: Vec<f64> = t
        .rows
        .iter()
        .filter_map(|m| match m.figure {
            Figure::Prefill { prompt } if m.tok_s > 0.0 => {
                let p = f64::from(prompt);
                Some(((p / m.tok_s - alpha) / p).max(1e-12))
            }
            _ => None,
        })
        .collect();
    if prefill.is_empty() {
        return None;
    }
    let beta = prefill.iter().sum::<f64>() / prefill.len() as f64;
    let mut f = Fit {
        alpha,
        beta,
        gamma,
        delta,
        epsilon,
        budget: t.max_batched_tokens,
        residuals: Vec::new(),
    };
    f.residuals = t
        .rows
        .iter()
        .map(|m| f.model(m.figure) / m.tok_s - 1.0)
        .collect();
    Some(f)
}

/// `alpha`, `gamma`, `delta` of decode rows `(batch, context read, step seconds)`, each kept
/// non-negative: all three where the rows hold more than one context length, else `delta = 0`,
/// else through the origin.
fn linear_step(decode: &[(f64, f64, f64)]) -> (f64, f64, f64) {
    let y: Vec<f64> = decode.iter().map(|d| d.2).collect();
    let contexts = {
        let mut c: Vec<f64> = decode.iter().map(|d| d.1 / d.0).collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c.len()
    };
    let three = (contexts > 1)
        .then(|| {
            let x: Vec<Vec<f64>> = decode.iter().map(|d| vec![1.0, d.0, d.1]).collect();
            least_squares(&x, &y)
        })
        .flatten()
        .filter(|w| w.iter().all(|v| *v >= 0.0));
    match three {
        Some(w) => (w[0], w[1], w[2]),
        None => {
            let x: Vec<Vec<f64>> = decode.iter().map(|d| vec![1.0, d.0]).collect();
            match least_squares(&x, &y) {
                Some(w) if w[0] >= 0.0 && w[1] >= 0.0 => (w[0], w[1], 0.0),
                _ => {
                    // Through the origin: all of the step grows with the batch.
                    let g = decode.iter().map(|d| d.0 * d.2).sum::<f64>()
                        / decode.iter().map(|d| d.0 * d.0).sum::<f64>();
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
/// decode throughput at batch 8 and 32 and the TTFT behind a long prompt. Then every
/// published batched table ([`REFERENCE_TABLES`]) against the step model fitted to it.
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
    for t in REFERENCE_TABLES {
        let Some(f) = fit(t) else { continue };
        for m in t.rows {
            out.push(row(
                t.name,
                m.figure.label(),
                Some(m.tok_s),
                f.model(m.figure),
            ));
        }
    }
    out
}

/// The fidelity table as Markdown (the README's `engine-fidelity` block).
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

/// Published batched-decode tables the step model is fitted to, to show how well a linear
/// step describes a real engine's batching.
pub const REFERENCE_TABLES: &[TierCalibration] = &[TierCalibration {
    name: "llama.cpp batched-bench sample",
    source: "https://github.com/ggml-org/llama.cpp/blob/master/examples/batched-bench/README.md (Sample results)",
    setup: "LLaMA 7B F16, llama.cpp batched-bench, prompt not shared, -c 16384 -b 2048 -ub 512 -ngl 99 (the device is not stated)",
    max_batched_tokens: 2048,
    rows: &[
        Measured {
            figure: Figure::Prefill { prompt: 128 },
            tok_s: 1186.64,
        },
        Measured {
            figure: Figure::Decode {
                batch: 1,
                prompt: 128,
                generated: 128,
            },
            tok_s: 41.57,
        },
        Measured {
            figure: Figure::Decode {
                batch: 8,
                prompt: 128,
                generated: 128,
            },
            tok_s: 139.43,
        },
        Measured {
            figure: Figure::Decode {
                batch: 32,
                prompt: 128,
                generated: 128,
            },
            tok_s: 465.40,
        },
        Measured {
            figure: Figure::Decode {
                batch: 1,
                prompt: 128,
                generated: 256,
            },
            tok_s: 40.45,
        },
        Measured {
            figure: Figure::Decode {
                batch: 8,
                prompt: 128,
                generated: 256,
            },
            tok_s: 135.54,
        },
        Measured {
            figure: Figure::Decode {
                batch: 32,
                prompt: 128,
                generated: 256,
            },
            tok_s: 426.15,
        },
    ],
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_recovers_the_coefficients_that_made_its_rows() {
        let truth = StepCoefficients {
            alpha: 0.012,
            beta: 1.0 / 9000.0,
            gamma: 0.0009,
            delta: 2e-7,
            epsilon: 0.004,
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
                tok_s: truth.decode_throughput(b, f64::from(pp + 128)),
            });
        }
        rows.push(Measured {
            figure: Figure::Prefill { prompt: 512 },
            tok_s: truth.prefill_throughput(512.0),
        });
        let rows: &'static [Measured] = Box::leak(rows.into_boxed_slice());
        let t = TierCalibration {
            name: "x",
            source: "s",
            setup: "s",
            max_batched_tokens: 2048,
            rows,
        };
        let f = fit(&t).unwrap();
        assert!((f.alpha - truth.alpha).abs() < 1e-9);
        assert!((f.gamma - truth.gamma).abs() < 1e-9);
        assert!((f.delta - truth.delta).abs() < 1e-12);
        assert!((f.beta - truth.beta).abs() < 1e-12);
        assert!((f.epsilon - truth.epsilon).abs() < 1e-9);
        assert!(f.residuals.iter().all(|r| r.abs() < 1e-9));
        // The shape, applied to the fit's own lone rates, gives back the coefficients.
        let lone = f.alpha + f.gamma - f.epsilon;
        let back = StepCoefficients::of(1.0 / f.beta, 1.0 / lone, f.shape()).unwrap();
        assert!((back.alpha - f.alpha).abs() < 1e-12 && (back.gamma - f.gamma).abs() < 1e-12);
        assert!((back.epsilon - f.epsilon).abs() < 1e-12 && (back.delta - f.delta).abs() < 1e-15);
    }

    #[test]
    fn every_row_with_a_measurement_is_within_15_percent() {
        let rows = fidelity();
        assert!(rows.len() >= 5 * crate::policy::presets::HARDWARE.len());
        assert!(rows.iter().filter(|r| r.tier.contains(' ')).count() >= 7);
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
        for h in crate::policy::presets::HARDWARE {
            let c = StepCoefficients::of(h.prefill_tok_s, h.decode_tok_s, h.step).unwrap();
            assert!(ttft_behind_long_prompt(&c) > 512.0 / h.prefill_tok_s);
        }
    }
}

//! The iteration-level step model: how a serving engine that batches every running request
//! into one forward pass per step (vLLM, SGLang, llama.cpp's server, TensorRT-LLM) spends its
//! time, and the rates it gives each request between two events.
//!
//! # The step
//!
//! Each step runs the decode token of every decoding request (`k` of them) and, under a token
//! budget `B = max_batched_tokens`, a chunk of the oldest pending prefill (chunked prefill, as
//! vLLM's scheduler and Sarathi-Serve do: decodes first, the rest of the budget to the prefill):
//!
//! ```text
//! t_step = alpha + beta * x + gamma * k + delta * C
//! ```
//!
//! with `x` the prefill tokens in the step, `C` the context tokens the decodes read. A prefill
//! of `L` tokens beside `k` decoders runs in chunks of `x = min(max(B - k, 1), L)` tokens:
//! `L / x` steps of `t(x)` seconds, during which each decoder gains one token per step
//! ([`pace`]; a prompt within the budget prefills in one step, and the last, shorter chunk of a
//! long one is charged at the full chunk's rate). `C` is the KV each decoder holds when it
//! finishes (its prompt plus its output). The rates depend only on what the node holds, so
//! they are constant between events (admission, prefill end, decode start, completion, node
//! loss), and the replay advances analytically from one to the next instead of stepping every
//! iteration.
//!
//! Prefills are served one at a time, oldest first (a step carries one request's chunk); the
//! fixed overheads of a recovery (the stall penalty and the recompute overhead) are charged as
//! prefill work at the node's prefill rate.
//!
//! # Coefficients
//!
//! A node's coefficients come from its own rates and its preset's calibrated shape
//! ([`StepShape`], fitted in [`crate::policy::calibration`]): `alpha + gamma - epsilon = 1 / d`
//! (one decoder alone, without context, decodes at the node's `d`), `alpha = a / d` with the
//! shape's fixed share `a`, `epsilon = e / d` with its lone discount `e` (what a step of one
//! decode token alone saves: llama.cpp runs a lone sequence on a matrix-vector kernel, faster
//! than its batched path; the published batched table in [`crate::policy::calibration`] shows
//! a 2x jump from batch 1 to batch 8 that no linear step fits without it), `delta = c / (1000 d)`
//! with its context share `c` per 1,000 tokens, and
//! `beta = 1 / p - alpha / 512`, so that a 512-token prompt alone (llama-bench's `pp512`, what
//! the presets' `p` measured) prefills in one step at the node's `p`. Both engines therefore
//! serve a lone request alike; they differ in how requests on one node contend.
//!
//! A preset's shape is its batch slowdown `f` read as a step (`a = 1 - f`, `c = 0`: `k`
//! decoders alone step in `(1 + f (k - 1)) / d`, the simple model's decode rate), so that the
//! two engines differ only in what the iteration model adds (prefills that contend with each
//! other and with the decoders, chunked under the token budget).
//! [`crate::policy::calibration`] fits the full step to a published batched table and shows
//! where the linear step misses.

use serde::{Deserialize, Serialize};

/// Which implementation of the service-time model serves requests (and prices `T_i`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// Per-request prefill at `p`, decode at `d / (1 + f (k - 1))`; prefills never contend
    /// ([`crate::policy::service`]). The default: the committed regime map and every
    /// published verdict so far were measured with it, so a result stays comparable.
    #[default]
    Simple,
    /// Iteration-level continuous batching with chunked prefill (this module).
    Iteration,
}

impl EngineKind {
    /// The names [`EngineKind::parse`] accepts.
    pub const NAMES: [&'static str; 2] = ["simple", "iteration"];

    /// Parses `simple` or `iteration`.
    pub fn parse(s: &str) -> Option<EngineKind> {
        match s {
            "simple" => Some(EngineKind::Simple),
            "iteration" => Some(EngineKind::Iteration),
            _ => None,
        }
    }

    /// The name [`EngineKind::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Simple => "simple",
            EngineKind::Iteration => "iteration",
        }
    }
}

/// A preset's calibrated step shape, relative to the node's own rates (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepShape {
    /// `a`: the part of the step that does not grow with the batch, in lone decode steps.
    pub fixed_share: f64,
    /// `c`: the cost of reading 1,000 context tokens, in lone decode steps.
    pub context_per_ktok: f64,
    /// `B`: the step's token budget (decode tokens plus the prefill chunk).
    pub max_batched_tokens: u32,
    /// `e`: what a step of one decode token alone saves, in lone decode steps (the
    /// single-sequence kernel: llama.cpp's matrix-vector path runs a lone decoder faster than
    /// its batched path runs one sequence). 0 unless a fit found it; older scenarios omit it.
    #[serde(default)]
    pub lone_discount: f64,
}

/// The prompt length the presets' prefill rates were measured at (llama-bench's `pp512`).
pub const PREFILL_REFERENCE_TOKENS: f64 = 512.0;

/// The shape of a node built without a preset: the CUDA tiers' batch slowdown (0.12) read as
/// a step, and vLLM's default token budget for chunked prefill (2,048 tokens).
pub const GENERIC_SHAPE: StepShape = StepShape {
    fixed_share: 0.88,
    context_per_ktok: 0.0,
    max_batched_tokens: 2048,
    lone_discount: 0.0,
};

impl Default for StepShape {
    /// [`GENERIC_SHAPE`].
    fn default() -> StepShape {
        GENERIC_SHAPE
    }
}

/// A node's step coefficients, seconds (and the budget), from its rates and shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepCoefficients {
    /// `alpha`: fixed seconds per step.
    pub alpha: f64,
    /// `beta`: seconds per prefill token in the step.
    pub beta: f64,
    /// `gamma`: seconds per decoding sequence in the step.
    pub gamma: f64,
    /// `delta`: seconds per context token the decodes read.
    pub delta: f64,
    /// `epsilon`: seconds a step of one decode token alone saves (the single-sequence kernel).
    pub epsilon: f64,
    /// `B`: tokens per step.
    pub budget: u32,
    /// The node's prefill rate `p` (tokens/s): a prefill of `s` seconds at `p` is `s p`
    /// tokens of work.
    pub prefill_tok_s: f64,
}

impl StepCoefficients {
    /// The coefficients of a node with prefill rate `p`, lone decode rate `d` (tokens/s) and
    /// step shape `shape`; `None` unless both rates are positive and finite and the shape's
    /// figures are finite, `lone_discount >= 0`, `fixed_share` in `[0, 1 + lone_discount]`,
    /// `context_per_ktok >= 0`, budget >= 1.
    pub fn of(p: f64, d: f64, shape: StepShape) -> Option<StepCoefficients> {
        let e = shape.lone_discount;
        let ok = p.is_finite()
            && p > 0.0
            && d.is_finite()
            && d > 0.0
            && e.is_finite()
            && e >= 0.0
            && shape.fixed_share >= 0.0
            && shape.fixed_share <= 1.0 + e
            && shape.context_per_ktok.is_finite()
            && shape.context_per_ktok >= 0.0
            && shape.max_batched_tokens >= 1;
        let alpha = shape.fixed_share / d;
        ok.then(|| StepCoefficients {
            alpha,
            beta: (1.0 / p - alpha / PREFILL_REFERENCE_TOKENS).max(1e-3 / p),
            gamma: (1.0 + e - shape.fixed_share) / d,
            delta: shape.context_per_ktok / (1000.0 * d),
            epsilon: e / d,
            budget: shape.max_batched_tokens,
            prefill_tok_s: p,
        })
    }

    /// Seconds of one step with `x` prefill tokens, `k` decoders reading `ctx` context tokens
    /// (less `epsilon` for one decode token alone).
    #[inline]
    pub fn step_s(&self, x: f64, k: u32, ctx: f64) -> f64 {
        let lone = if k == 1 && !(x > 0.0) {
            self.epsilon
        } else {
            0.0
        };
        self.alpha + self.beta * x + self.gamma * f64::from(k) + self.delta * ctx - lone
    }

    /// The prefill chunk beside `k` decoders: `max(B - k, 1)` tokens.
    #[inline]
    pub fn chunk(&self, k: u32) -> f64 {
        f64::from(self.budget.saturating_sub(k).max(1))
    }

    /// Seconds and steps to prefill `left` tokens beside `k` decoders reading `ctx` tokens:
    /// full chunks, then the rest in one last step.
    pub fn prefill_s(&self, left: f64, k: u32, ctx: f64) -> (f64, f64) {
        if !(left > 0.0) {
            return (0.0, 0.0);
        }
        let c = self.chunk(k);
        let full = (left / c).floor();
        let rest = left - full * c;
        let mut t = full * self.step_s(c, k, ctx);
        let mut steps = full;
        if rest > 1e-9 {
            t += self.step_s(rest, k, ctx);
            steps += 1.0;
        }
        (t, steps)
    }

    /// Aggregate decode throughput of `k` decoders each holding `ctx_each` context tokens,
    /// tokens/s (no prefill in the steps).
    pub fn decode_throughput(&self, k: u32, ctx_each: f64) -> f64 {
        f64::from(k) / self.step_s(0.0, k, f64::from(k) * ctx_each)
    }

    /// Prefill throughput of one prompt of `tokens` alone, tokens/s.
    pub fn prefill_throughput(&self, tokens: f64) -> f64 {
        let (t, _) = self.prefill_s(tokens, 0, 0.0);
        tokens / t
    }
}

/// The rates a node's residents get until the next event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Tokens/s of each decoder.
    pub decode_tok_s: f64,
    /// Prefill tokens/s of the oldest pending prefill (the others wait for it).
    pub prefill_tok_s: f64,
}

/// The rates on a node with `k` decoders reading `ctx` context tokens and, if any, the oldest
/// pending prefill, of `head_tokens` tokens in all: with a prefill, each step carries a chunk
/// of `x = min(max(B - k, 1), head_tokens)` of its tokens (`x / t(x)` tokens/s) and one token
/// of each decoder (`1 / t(x)`); without one, each decoder gains one token per `t(0)`.
pub fn pace(c: &StepCoefficients, k: u32, ctx: f64, head_tokens: Option<f64>) -> Pace {
    match head_tokens {
        Some(total) if total > 0.0 => {
            let x = c.chunk(k).min(total);
            let t = c.step_s(x, k, ctx);
            Pace {
                decode_tok_s: 1.0 / t,
                prefill_tok_s: x / t,
            }
        }
        _ => Pace {
            decode_tok_s: 1.0 / c.step_s(0.0, k.max(1), ctx),
            prefill_tok_s: 0.0,
        },
    }
}

/// Tokens per KV block (vLLM's default block size).
pub const KV_BLOCK_TOKENS: f64 = 16.0;

/// The share of a node's blocks a new admission must leave free (vLLM's default watermark).
pub const KV_WATERMARK: f64 = 0.01;

/// A node's KV cache in blocks, as the iteration model allocates it (vLLM's block manager):
/// a request takes the blocks of its context (prompt and the tokens generated so far) when it
/// is admitted, and one more block each time a decode fills its last one. Admission leaves
/// [`KV_WATERMARK`] of the blocks free; when a decode needs a block and none is free the
/// engine preempts the most recently admitted request (recompute preemption: its blocks are
/// freed, it returns to the front of the node's queue with its generated tokens kept, and it
/// prefills its whole context again when it is admitted again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvBlocks {
    /// Blocks on the node: `floor(capacity tokens / 16)`.
    pub capacity: u64,
    /// Blocks an admission leaves free: `floor(0.01 capacity)`.
    pub watermark: u64,
}

impl KvBlocks {
    /// The blocks of a node with `capacity_tokens` tokens of KV.
    pub fn of(capacity_tokens: u64) -> KvBlocks {
        let capacity = (capacity_tokens as f64 / KV_BLOCK_TOKENS).floor() as u64;
        KvBlocks {
            capacity,
            watermark: (KV_WATERMARK * capacity as f64).floor() as u64,
        }
    }

    /// Blocks that hold `tokens` tokens (0 for none).
    #[inline]
    pub fn blocks(tokens: f64) -> u64 {
        if tokens > 0.0 {
            (tokens / KV_BLOCK_TOKENS).ceil() as u64
        } else {
            0
        }
    }

    /// Blocks a decoder with `tokens` context tokens holds: those of its tokens and of the
    /// next one, `floor(tokens / 16) + 1` (vLLM allocates the block of the token a step will
    /// write before the step; a decoder whose last block is full holds the next one).
    #[inline]
    pub fn decoder_blocks(tokens: f64) -> u64 {
        (tokens.max(0.0) / KV_BLOCK_TOKENS).floor() as u64 + 1
    }

    /// Whether a request of `tokens` context tokens is admitted beside `used` blocks: its
    /// blocks and that of its first generated token ([`KvBlocks::decoder_blocks`]) leave the
    /// watermark free (so that a request just preempted never fits back at once).
    #[inline]
    pub fn admits(&self, used: u64, tokens: f64) -> bool {
        used.saturating_add(Self::decoder_blocks(tokens))
            .saturating_add(self.watermark)
            <= self.capacity
    }

    /// The most context tokens a request alone can be admitted with and reach: it then never
    /// overflows the node by itself.
    pub fn room_tokens(&self) -> u64 {
        ((self.capacity.saturating_sub(self.watermark)) as f64 * KV_BLOCK_TOKENS) as u64
    }

    /// When the decoders overflow the node with `used` blocks in use: each decoder `r` is
    /// `(since_r, context tokens at since_r, tokens at now)`, all decoding at `rate` tokens/s.
    /// Decoder `r` needs block `b + m + 1` (`b` its blocks now, [`KvBlocks::decoder_blocks`],
    /// `m >= 0`) when its context reaches `16 (b + m)`, at
    /// `since_r + to_us((16 (b + m) - n_r) / rate)` (`to_us` the clock's rounding of seconds to
    /// whole microseconds, the service-time model's `secs_to_us`); the free blocks absorb the first
    /// `capacity - used` of these needs, and the next one overflows (at the earliest `now`).
    /// `None` without decoders or at a rate of 0. Each need is computed from the decoder's own
    /// `since_r` and context there, so the answer does not depend on when it is asked while
    /// the node's state is unchanged. `scratch` is a buffer.
    pub fn overflow_us(
        &self,
        used: u64,
        now_us: i64,
        rate: f64,
        decoders: &[(i64, f64, f64)],
        scratch: &mut Vec<(i64, usize, u64)>,
        to_us: fn(f64) -> i64,
    ) -> Option<i64> {
        if decoders.is_empty() || !(rate > 0.0) {
            return None;
        }
        let need_at = |(since, n_since, _): (i64, f64, f64), boundary: u64| -> i64 {
            let tokens = (boundary as f64 * KV_BLOCK_TOKENS - n_since).max(0.0);
            since.saturating_add(to_us(tokens / rate))
        };
        let free = self.capacity as i64 - used as i64;
        if free < 0 {
            return Some(now_us);
        }
        scratch.clear();
        for (k, d) in decoders.iter().enumerate() {
            let b = Self::decoder_blocks(d.2);
            scratch.push((need_at(*d, b), k, b));
        }
        let k = decoders.len() as i64;
        let (j, m) = (free / k, (free % k) as usize);
        scratch.select_nth_unstable(m);
        let (_, r, b) = scratch[m];
        Some(need_at(decoders[r], b + j as u64).max(now_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coeffs(budget: u32) -> StepCoefficients {
        StepCoefficients {
            alpha: 0.010,
            beta: 0.0001,
            gamma: 0.002,
            delta: 1e-6,
            epsilon: 0.0,
            budget,
            prefill_tok_s: 10_000.0,
        }
    }

    #[test]
    fn a_prompt_within_the_budget_prefills_in_one_step() {
        let c = coeffs(2048);
        let (t, steps) = c.prefill_s(1500.0, 0, 0.0);
        assert_eq!(steps, 1.0);
        assert!((t - (0.010 + 0.15)).abs() < 1e-12);
        // Beside 4 decoders reading 4,000 tokens: still one step, each decoder gains one token.
        let p = pace(&c, 4, 4000.0, Some(1500.0));
        let step = 0.010 + 0.15 + 0.008 + 0.004;
        assert!((p.prefill_tok_s - 1500.0 / step).abs() < 1e-9);
        assert!((p.decode_tok_s - 1.0 / step).abs() < 1e-9);
        assert!((1500.0 / p.prefill_tok_s - step).abs() < 1e-12);
    }

    #[test]
    fn a_long_prompt_lengthens_the_decoders_inter_token_time() {
        let c = coeffs(512);
        let idle = pace(&c, 4, 4000.0, None);
        let busy = pace(&c, 4, 4000.0, Some(8000.0));
        // Chunks of 508 tokens beside the 4 decoders: each step 10 + 50.8 + 8 + 4 ms, one
        // token for each decoder (their inter-token time from 22 ms to 72.8 ms).
        let full = 0.010 + 0.0001 * 508.0 + 0.008 + 0.004;
        assert!((1.0 / busy.decode_tok_s - full).abs() < 1e-12);
        assert!((busy.prefill_tok_s - 508.0 / full).abs() < 1e-9);
        assert!((1.0 / idle.decode_tok_s - 0.022).abs() < 1e-12);
        // 15 full chunks and a last of 380 tokens: 16 steps.
        let (t, steps) = c.prefill_s(8000.0, 4, 4000.0);
        assert_eq!(steps, 16.0);
        let last = 0.010 + 0.0001 * 380.0 + 0.008 + 0.004;
        assert!((t - (15.0 * full + last)).abs() < 1e-12);
    }

    #[test]
    fn coefficients_keep_the_nodes_rates() {
        let shape = StepShape {
            fixed_share: 0.8,
            context_per_ktok: 0.05,
            max_batched_tokens: 1024,
            lone_discount: 0.0,
        };
        let c = StepCoefficients::of(2000.0, 40.0, shape).unwrap();
        assert!((c.decode_throughput(1, 0.0) - 40.0).abs() < 1e-9);
        assert!((c.prefill_throughput(512.0) - 2000.0).abs() < 1e-6);
        assert!(StepCoefficients::of(0.0, 40.0, shape).is_none());
        assert!(StepCoefficients::of(
            1.0,
            1.0,
            StepShape {
                fixed_share: 1.5,
                ..shape
            }
        )
        .is_none());
        // A lone discount: one decoder alone still decodes at d, a batch of two pays the
        // batched path's fixed cost.
        let lone = StepShape {
            fixed_share: 1.6,
            lone_discount: 1.2,
            ..shape
        };
        let c = StepCoefficients::of(2000.0, 40.0, lone).unwrap();
        assert!((c.decode_throughput(1, 0.0) - 40.0).abs() < 1e-9);
        assert!((c.decode_throughput(2, 0.0) - 2.0 / ((1.6 + 2.0 * 0.6) / 40.0)).abs() < 1e-9);
        assert!((c.prefill_throughput(512.0) - 2000.0).abs() < 1e-6);
        assert!(StepCoefficients::of(
            1.0,
            1.0,
            StepShape {
                lone_discount: -0.1,
                ..lone
            }
        )
        .is_none());
    }

    #[test]
    fn engine_names_round_trip() {
        for n in EngineKind::NAMES {
            assert_eq!(EngineKind::parse(n).unwrap().name(), n);
        }
        assert_eq!(EngineKind::parse("vllm"), None);
    }
}

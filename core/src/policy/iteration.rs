//! The iteration-level step model: how a serving engine that batches every running request
//! into one forward pass per step (vLLM, SGLang, llama.cpp's server, TensorRT-LLM) spends its
//! time, and the rates it gives each request between two events.
//!
//! # The step
//!
//! Each step runs the decode token of every decoding request (`k` of them) and, under a token
//! budget `B = max_batched_tokens`, a chunk of the oldest pending prefill (chunked prefill, as
//! vLLM's scheduler and Sarathi-Serve do: decodes first, the rest of the budget to the prefill).
//! Its time is a smooth roofline:
//!
//! ```text
//! t_step = hypot(alpha, beta (x + k)) + gamma k + delta C + zeta x L / 2
//! ```
//!
//! with `x` the prefill tokens in the step, `L` the prefill's tokens in all and `C` the
//! context tokens the decodes read. `hypot(alpha, beta n) = sqrt(alpha^2 + (beta n)^2)` is the
//! forward pass's linear layers over `n = x + k` tokens: flat at the memory floor `alpha` (the
//! weights are read once per step) while few tokens ride along, linear at `beta` per token once
//! compute-bound, with the smooth knee that kernel profiles show (Vidur's A100, H100 and A40
//! profiles, fitted in [`crate::policy::calibration`]: every power-of-two row within 11 %,
//! where a hard `max` misses the knee by up to 25 % and `alpha + beta x` misses both ends).
//! `gamma` is the
//! per-sequence cost (sampling, the KV write), `delta` each decoder's read of its context, and
//! `zeta x L / 2` the prefill's attention: each of its tokens attends on average to half of the
//! prompt, so a prompt alone costs `zeta L^2 / 2` over its chunks and its throughput falls
//! slowly as it grows (the DGX Spark table: 2,380 tok/s at 512, 2,187 at 8,192).
//!
//! A prefill of `L` tokens beside `k` decoders runs in chunks of `x = min(max(B - k, 1), L)`
//! tokens: `L / x` steps of `t(x)` seconds, during which each decoder gains one token per step
//! ([`pace`]; a prompt within the budget prefills in one step, and the last, shorter chunk of
//! a long one is charged at the full chunk's rate). `C` is the KV each decoder holds when it
//! finishes (its prompt plus its output). The rates depend only on what the node holds, so
//! they are constant between events (admission, prefill end, decode start, completion, node
//! loss), and the replay advances analytically from one to the next instead of stepping every
//! iteration.
//!
//! Prefills are served one at a time, oldest first (a step carries one request's chunk). A
//! recovery after a node loss and a planned move by recompute are served alike: their fixed
//! overheads (the stall penalty and the recompute overhead; a move's overhead) are waiting
//! time, the slot and its KV held while no GPU work is done, and then the recomputed context
//! is prefill work on the destination that contends with its other requests like any prefill.
//!
//! # Coefficients
//!
//! A node's coefficients come from its own rates and its preset's calibrated shape
//! ([`StepShape`]): `alpha = a / d` with the shape's fixed share `a`, `beta = 1 / p` (a
//! prefill token costs at least what the node's measured prefill rate says: a lone prompt of
//! any length prefills at most at `p`, and slower while the step is memory-bound or the
//! prompt long), `epsilon = e / d` with its lone discount `e` (what a step of one decode token
//! alone saves: llama.cpp runs a lone sequence on a matrix-vector kernel, faster than its
//! batched path), `gamma = (1 + e) / d - hypot(alpha, beta)` so that one decoder alone,
//! without context, decodes at the node's `d`, `delta = c / (1000 d)` with its context share
//! `c` per 1,000 tokens, and `zeta = z beta / 500` with its prefill attention share `z` (what
//! 1,000 more prompt tokens add to each of its prefill tokens' cost, in prefill tokens).
//!
//! # Lower bounds
//!
//! Every step that carries `x` of a prefill's tokens costs at least `hypot(alpha, beta x) +
//! zeta x L / 2` (the decoders and their context only add), `hypot(alpha, beta x) / x` falls
//! as `x` grows and `x <= min(B, L)`, so a prefill of `L` tokens takes at least
//! [`StepCoefficients::min_prefill_s`] `= hypot(alpha L / min(B, L), beta L) + zeta L^2 / 2`,
//! which is exactly its time alone; every step that carries a decode token costs at least
//! `hypot(alpha, beta) + gamma - epsilon = 1 / d`. The `bound` reference uses these
//! ([`StepCoefficients::min_prefill_s`], `L / d`); the placement's pruning keeps `L beta + L / d`
//! (`beta = 1 / p`), below both; so both stay bounds under this engine.
//!
//! A preset's shape is its batch slowdown `f` read as a step (`a = 1 - f`, `c = 0`): on the
//! GPU tiers, whose knee `alpha / beta` is 124-160 tokens, `k` decoders alone step in about
//! `(1 + f (k - 1)) / d`, the simple model's decode rate (within 1 % at 32 decoders); on the
//! slow laptop tiers (`m1-max`, `wan-peer`: prefill at 500 and 250 tokens/s, a knee of 7-8
//! tokens) a batch of decoders is compute-bound, and 32 decoders decode 15-18 % slower than
//! the simple model has them (the `phone`'s batch, `f = 1`, gains nothing under either
//! model, and they agree). Otherwise the engines differ in what the iteration model adds
//! (prefills that contend with each other and with the decoders, chunked under the token
//! budget, memory-bound short chunks, attention on long prompts). [`crate::policy::calibration`] fits the full step to published batched tables
//! and kernel profiles and shows where it misses.

use serde::{Deserialize, Serialize};

/// Which implementation of the service-time model serves requests (and prices `T_i`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// Per-request prefill at `p`, decode at `d / (1 + f (k - 1))`; prefills never contend
    /// ([`crate::policy::service`]). The ablation: how serving engines do not work, kept so
    /// that a verdict can be checked against the engine model.
    Simple,
    /// Iteration-level continuous batching with chunked prefill (this module). The default:
    /// its step follows published measurements (`hazardserve presets --fidelity`).
    #[default]
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
    /// `a`: the step's memory floor (the part that does not grow with the tokens in it), in
    /// lone decode steps.
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
    /// `z`: what 1,000 tokens of prompt add to the cost of each of its prefill tokens
    /// (attention), in prefill tokens. 0 when a scenario omits it.
    #[serde(default)]
    pub prefill_attention_per_ktok: f64,
}

/// The prefill attention share `z` of the presets, which publish no long-prompt figure: the
/// DGX Spark dense model's (Qwen2.5-Coder-7B, llama.cpp, prefill at 512, 4,096 and 8,192
/// tokens; [`crate::policy::calibration`] fits it and a test holds this constant to the fit).
pub const PRESET_PREFILL_ATTENTION_PER_KTOK: f64 = 0.0135;

/// The shape of a node built without a preset: the CUDA tiers' batch slowdown (0.12) read as
/// a step, vLLM's default token budget for chunked prefill (2,048 tokens) and the presets'
/// prefill attention share.
pub const GENERIC_SHAPE: StepShape = StepShape {
    fixed_share: 0.88,
    context_per_ktok: 0.0,
    max_batched_tokens: 2048,
    lone_discount: 0.0,
    prefill_attention_per_ktok: PRESET_PREFILL_ATTENTION_PER_KTOK,
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
    /// `alpha`: the step's memory floor, seconds.
    pub alpha: f64,
    /// `beta`: seconds per token in the step once compute-bound.
    pub beta: f64,
    /// `gamma`: seconds per decoding sequence in the step.
    pub gamma: f64,
    /// `delta`: seconds per context token the decodes read.
    pub delta: f64,
    /// `epsilon`: seconds a step of one decode token alone saves (the single-sequence kernel).
    pub epsilon: f64,
    /// `zeta`: a prefill's attention, seconds per prefill token per token of its prompt
    /// (a chunk of `x` tokens of an `L`-token prompt costs `zeta x L / 2`).
    pub zeta: f64,
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
    /// `context_per_ktok >= 0`, `prefill_attention_per_ktok >= 0`, budget >= 1. `gamma` is
    /// kept non-negative (a node whose prefill rate is so low that one token's compute exceeds
    /// its lone decode step then decodes alone slightly below `d`).
    pub fn of(p: f64, d: f64, shape: StepShape) -> Option<StepCoefficients> {
        let e = shape.lone_discount;
        let z = shape.prefill_attention_per_ktok;
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
            && z.is_finite()
            && z >= 0.0
            && shape.max_batched_tokens >= 1;
        let alpha = shape.fixed_share / d;
        let beta = 1.0 / p;
        ok.then(|| StepCoefficients {
            alpha,
            beta,
            gamma: ((1.0 + e) / d - alpha.hypot(beta)).max(0.0),
            delta: shape.context_per_ktok / (1000.0 * d),
            epsilon: e / d,
            zeta: z * beta / 500.0,
            budget: shape.max_batched_tokens,
            prefill_tok_s: p,
        })
    }

    /// Seconds of one step with `x` prefill tokens of a prefill of `l` tokens in all, `k`
    /// decoders reading `ctx` context tokens (less `epsilon` for one decode token alone).
    #[inline]
    pub fn step_s(&self, x: f64, k: u32, ctx: f64, l: f64) -> f64 {
        let kf = f64::from(k);
        let (lone, attention) = if x > 0.0 {
            (0.0, self.zeta * x * l * 0.5)
        } else if k == 1 {
            (self.epsilon, 0.0)
        } else {
            (0.0, 0.0)
        };
        floor_s(self.alpha, self.beta * (x + kf)) + self.gamma * kf + self.delta * ctx + attention
            - lone
    }

    /// The prefill chunk beside `k` decoders: `max(B - k, 1)` tokens.
    #[inline]
    pub fn chunk(&self, k: u32) -> f64 {
        f64::from(self.budget.saturating_sub(k).max(1))
    }

    /// Seconds and steps to prefill a prompt of `tokens` tokens beside `k` decoders reading
    /// `ctx` tokens, as [`pace`] serves it: `tokens / x` steps of `x = min(chunk, tokens)`.
    pub fn prefill_s(&self, tokens: f64, k: u32, ctx: f64) -> (f64, f64) {
        if !(tokens > 0.0) {
            return (0.0, 0.0);
        }
        let x = self.chunk(k).min(tokens);
        let steps = tokens / x;
        (steps * self.step_s(x, k, ctx, tokens), steps)
    }

    /// The least time a prefill of `tokens` tokens can take on this node, whatever shares it:
    /// its time alone, `hypot(alpha tokens / min(B, tokens), beta tokens) + zeta tokens^2 / 2`
    /// (see the module docs' lower bounds).
    pub fn min_prefill_s(&self, tokens: f64) -> f64 {
        self.prefill_s(tokens, 0, 0.0).0
    }

    /// Aggregate decode throughput of `k` decoders each holding `ctx_each` context tokens,
    /// tokens/s (no prefill in the steps).
    pub fn decode_throughput(&self, k: u32, ctx_each: f64) -> f64 {
        f64::from(k) / self.step_s(0.0, k, f64::from(k) * ctx_each, 0.0)
    }

    /// Prefill throughput of one prompt of `tokens` alone, tokens/s.
    pub fn prefill_throughput(&self, tokens: f64) -> f64 {
        tokens / self.min_prefill_s(tokens)
    }

    /// Node seconds a prompt of `tokens` tokens adds to a busy node's steps (compute-bound:
    /// its tokens at `beta` and its attention), what the offered load counts.
    pub fn prefill_work_s(&self, tokens: f64) -> f64 {
        tokens * self.beta + self.zeta * tokens * tokens * 0.5
    }
}

/// Entries of [`floor_s`]'s memo (a power of two).
const FLOOR_MEMO: usize = 2048;

/// One remembered `alpha.hypot(beta_n)`: the arguments' bits and the answer.
#[derive(Clone, Copy)]
struct FloorMemo {
    alpha: u64,
    beta_n: u64,
    value: f64,
}

thread_local! {
    /// [`floor_s`]'s direct-mapped memo. All zeros is a true entry: `hypot(0, 0) = 0`.
    static FLOORS: [std::cell::Cell<FloorMemo>; FLOOR_MEMO] = const {
        [const { std::cell::Cell::new(FloorMemo { alpha: 0, beta_n: 0, value: 0.0 }) }; FLOOR_MEMO]
    };
}

/// The step's floor `alpha.hypot(beta_n)`, remembered per thread: a node asks for the same
/// few (its `alpha`, `beta` times a batch's token count) at every event and in every forecast,
/// and the library's `hypot` was the replay's largest single cost. A pure function of its
/// arguments' bits, so the answer is the library's, bit for bit.
#[inline]
fn floor_s(alpha: f64, beta_n: f64) -> f64 {
    let (a, b) = (alpha.to_bits(), beta_n.to_bits());
    let shift = 64 - FLOOR_MEMO.trailing_zeros();
    let slot = ((a ^ b.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
    FLOORS.with(|memo| {
        let cell = &memo[slot];
        let hit = cell.get();
        if hit.alpha == a && hit.beta_n == b {
            return hit.value;
        }
        let value = alpha.hypot(beta_n);
        cell.set(FloorMemo {
            alpha: a,
            beta_n: b,
            value,
        });
        value
    })
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
            let t = c.step_s(x, k, ctx, total);
            Pace {
                decode_tok_s: 1.0 / t,
                prefill_tok_s: x / t,
            }
        }
        _ => Pace {
            decode_tok_s: 1.0 / c.step_s(0.0, k.max(1), ctx, 0.0),
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
    /// Blocks an admission leaves free: `floor(0.01 capacity)`, and at least one. (vLLM's
    /// floor alone is 0 below 100 blocks: a request just preempted for a decoder's next block
    /// would then fit back at once, in the block it was preempted to free.)
    pub watermark: u64,
}

impl KvBlocks {
    /// The blocks of a node with `capacity_tokens` tokens of KV.
    pub fn of(capacity_tokens: u64) -> KvBlocks {
        let capacity = (capacity_tokens as f64 / KV_BLOCK_TOKENS).floor() as u64;
        KvBlocks {
            capacity,
            watermark: ((KV_WATERMARK * capacity as f64).floor() as u64).max(1),
        }
    }

    /// Blocks that hold `tokens` tokens (0 for none): `ceil(tokens / 16)`, by truncation (the
    /// baseline x86-64 target has no rounding instruction and calls `ceil`; the same answer).
    #[inline]
    pub fn blocks(tokens: f64) -> u64 {
        if tokens > 0.0 {
            let y = tokens / KV_BLOCK_TOKENS;
            let whole = y as u64;
            if (whole as f64) < y {
                whole.saturating_add(1)
            } else {
                whole
            }
        } else {
            0
        }
    }

    /// Blocks a decoder with `tokens` context tokens holds: those of its tokens and of the
    /// next one, `floor(tokens / 16) + 1` (vLLM allocates the block of the token a step will
    /// write before the step; a decoder whose last block is full holds the next one).
    #[inline]
    pub fn decoder_blocks(tokens: f64) -> u64 {
        (tokens.max(0.0) / KV_BLOCK_TOKENS) as u64 + 1
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
            zeta: 0.0,
            budget,
            prefill_tok_s: 10_000.0,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn the_step_is_flat_while_memory_bound_and_linear_once_compute_bound() {
        let c = coeffs(4096);
        // 1 and 20 tokens cost about the floor; 1,000 and 2,000 tokens about beta each.
        let t1 = c.step_s(0.0, 1, 0.0, 0.0);
        let t20 = c.step_s(19.0, 1, 0.0, 19.0);
        assert!(close(t1, 0.010f64.hypot(0.0001) + 0.002));
        assert!(t20 - t1 < 0.0003, "{t1} {t20}");
        let t1000 = c.step_s(1000.0, 0, 0.0, 1000.0);
        let t2000 = c.step_s(2000.0, 0, 0.0, 2000.0);
        assert!(close(t1000, 0.010f64.hypot(0.1)));
        assert!(((t2000 - t1000) / 1000.0 / 0.0001 - 1.0).abs() < 0.01);
    }

    #[test]
    fn a_prompt_within_the_budget_prefills_in_one_step() {
        let c = coeffs(2048);
        let (t, steps) = c.prefill_s(1500.0, 0, 0.0);
        assert_eq!(steps, 1.0);
        assert!(close(t, 0.010f64.hypot(0.15)));
        // Beside 4 decoders reading 4,000 tokens: still one step, each decoder gains one token.
        let p = pace(&c, 4, 4000.0, Some(1500.0));
        let step = 0.010f64.hypot(0.0001 * 1504.0) + 0.008 + 0.004;
        assert!(close(p.prefill_tok_s, 1500.0 / step));
        assert!(close(p.decode_tok_s, 1.0 / step));
    }

    #[test]
    fn a_long_prompt_lengthens_the_decoders_inter_token_time() {
        let c = StepCoefficients {
            zeta: 1e-8,
            ..coeffs(512)
        };
        let idle = pace(&c, 4, 4000.0, None);
        let busy = pace(&c, 4, 4000.0, Some(8000.0));
        // Chunks of 508 tokens beside the 4 decoders, each step carrying their 4 tokens and
        // the chunk's attention over half the 8,000-token prompt.
        let full = 0.010f64.hypot(0.0001 * 512.0) + 0.008 + 0.004 + 1e-8 * 508.0 * 4000.0;
        assert!(close(1.0 / busy.decode_tok_s, full));
        assert!(close(busy.prefill_tok_s, 508.0 / full));
        assert!(close(
            1.0 / idle.decode_tok_s,
            0.010f64.hypot(0.0004) + 0.012
        ));
        assert!(1.0 / busy.decode_tok_s > 2.5 / idle.decode_tok_s);
        // 8,000 / 508 steps, the last charged at the full chunk's rate.
        let (t, steps) = c.prefill_s(8000.0, 4, 4000.0);
        assert!(close(steps, 8000.0 / 508.0));
        assert!(close(t, steps * full));
    }

    #[test]
    fn a_lone_prefill_is_the_least_any_prefill_can_take() {
        for budget in [1u32, 16, 512, 2048] {
            let c = StepCoefficients {
                zeta: 2e-9,
                ..coeffs(budget)
            };
            for tokens in [1.0, 7.0, 100.0, 512.0, 3000.0, 40_000.0] {
                let lone = c.min_prefill_s(tokens);
                let n = tokens / f64::from(budget).min(tokens);
                let formula = (0.010 * n).hypot(0.0001 * tokens) + 1e-9 * tokens * tokens;
                assert!(close(lone, formula), "{budget} {tokens}: {lone} {formula}");
                // Never faster than beta per token; decoders beside it only slow it.
                assert!(lone >= tokens * c.beta);
                for k in [1u32, 3, 40] {
                    assert!(c.prefill_s(tokens, k, 500.0).0 >= lone * (1.0 - 1e-12));
                }
            }
        }
    }

    #[test]
    fn coefficients_keep_the_nodes_rates() {
        let shape = StepShape {
            fixed_share: 0.8,
            context_per_ktok: 0.05,
            max_batched_tokens: 1024,
            lone_discount: 0.0,
            prefill_attention_per_ktok: 0.0,
        };
        let c = StepCoefficients::of(2000.0, 40.0, shape).unwrap();
        assert!((c.decode_throughput(1, 0.0) - 40.0).abs() < 1e-9);
        assert!((c.beta - 1.0 / 2000.0).abs() < 1e-15);
        // A prompt alone prefills below p, approaching it as it grows (no attention here).
        let at = |n: f64| c.prefill_throughput(n);
        assert!(at(16.0) < at(512.0) && at(512.0) < at(1024.0) && at(1024.0) < 2000.0);
        assert!(at(512.0) > 0.95 * 2000.0);
        // With attention the throughput falls again for long prompts.
        let attn = StepCoefficients::of(
            2000.0,
            40.0,
            StepShape {
                prefill_attention_per_ktok: 0.1,
                ..shape
            },
        )
        .unwrap();
        let a = |n: f64| attn.prefill_throughput(n);
        assert!(a(8192.0) < a(1024.0) && a(32_768.0) < a(8192.0));
        // 1,000 more prompt tokens add 0.1 prefill tokens to each token's cost.
        assert!((attn.zeta * 1000.0 / 2.0 / attn.beta - 0.1).abs() < 1e-12);
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
        let two = c.alpha.hypot(2.0 * c.beta) + 2.0 * c.gamma;
        assert!((c.decode_throughput(2, 0.0) - 2.0 / two).abs() < 1e-9);
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

    #[test]
    fn the_remembered_floor_and_the_block_count_are_the_library_roundings() {
        // Many more arguments than the memo holds, each asked twice (a hit and, after
        // collisions, a miss): every answer is `hypot`'s, bit for bit.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut draws = Vec::new();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let alpha = 1.0 / (1.0 + (x % 97) as f64);
            let beta_n = (x >> 40) as f64 / 4.0e6;
            draws.push((alpha, beta_n));
        }
        draws.push((0.0, 0.0));
        draws.push((0.01, 0.0));
        draws.push((f64::INFINITY, 1.0));
        for _ in 0..2 {
            for &(a, b) in &draws {
                assert_eq!(floor_s(a, b).to_bits(), a.hypot(b).to_bits(), "{a} {b}");
            }
        }
        for tokens in [
            f64::MIN_POSITIVE,
            1.0,
            15.999,
            16.0,
            16.0 + 1e-12,
            1e9 + 0.5,
            1.5e17,
            4.0e20,
            f64::INFINITY,
        ] {
            assert_eq!(
                KvBlocks::blocks(tokens),
                (tokens / KV_BLOCK_TOKENS).ceil() as u64
            );
        }
        assert_eq!(KvBlocks::blocks(0.0), 0);
        assert_eq!(KvBlocks::blocks(-3.0), 0);
        assert_eq!(KvBlocks::blocks(f64::NAN), 0);
    }
}

//! Published engine measurements, row by row with their sources: the batched tables the
//! step model is fitted to ([`REFERENCE_TABLES`]) and the kernel profiles its roofline is
//! fitted to ([`KERNEL_PROFILES`]), as [`crate::policy::calibration`] reads them. The DGX
//! Spark and Vidur rows are the published figures as `../shared/engine-calibration/` holds
//! them (a test compares every row with that copy); only the rows used here are kept.

use serde::Serialize;

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
    /// Milliseconds of one forward pass's linear layers over `tokens` tokens (a kernel
    /// profile: the roofline alone).
    LinearOps {
        /// Tokens in the pass.
        tokens: u32,
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
            Figure::LinearOps { tokens } => format!("linear layers ms, {tokens} tokens"),
        }
    }
}

/// One published measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    /// What it measured.
    pub figure: Figure,
    /// The published figure: tokens/s, or milliseconds for [`Figure::LinearOps`].
    pub value: f64,
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

/// The llama.cpp batched-bench sample table.
const LLAMACPP_SAMPLE: &[Measured] = &[
    Measured {
        figure: Figure::Prefill { prompt: 128 },
        value: 1186.64,
    },
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 128,
            generated: 128,
        },
        value: 41.57,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 128,
            generated: 128,
        },
        value: 139.43,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 128,
            generated: 128,
        },
        value: 465.40,
    },
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 128,
            generated: 256,
        },
        value: 40.45,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 128,
            generated: 256,
        },
        value: 135.54,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 128,
            generated: 256,
        },
        value: 426.15,
    },
];

const DGX_SOURCE: &str = "https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca/benches/dgx-spark.md (llama-batched-bench)";

/// DGX Spark, Qwen2.5-Coder-7B Q8_0 (a dense 7B), llama.cpp CUDA, `n_batch = n_ubatch = 2048`.
const DGX_QWEN_7B: &[Measured] = &[
    Measured {
        figure: Figure::Prefill { prompt: 512 },
        value: 2379.83,
    },
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 512,
            generated: 32,
        },
        value: 29.24,
    },
    Measured {
        figure: Figure::Decode {
            batch: 2,
            prompt: 512,
            generated: 32,
        },
        value: 54.46,
    },
    Measured {
        figure: Figure::Decode {
            batch: 4,
            prompt: 512,
            generated: 32,
        },
        value: 104.33,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 512,
            generated: 32,
        },
        value: 195.67,
    },
    Measured {
        figure: Figure::Decode {
            batch: 16,
            prompt: 512,
            generated: 32,
        },
        value: 335.01,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 512,
            generated: 32,
        },
        value: 593.27,
    },
    Measured {
        figure: Figure::Prefill { prompt: 4096 },
        value: 2259.55,
    },
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 4096,
            generated: 32,
        },
        value: 28.42,
    },
    Measured {
        figure: Figure::Decode {
            batch: 2,
            prompt: 4096,
            generated: 32,
        },
        value: 51.35,
    },
    Measured {
        figure: Figure::Decode {
            batch: 4,
            prompt: 4096,
            generated: 32,
        },
        value: 93.86,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 4096,
            generated: 32,
        },
        value: 163.1,
    },
    Measured {
        figure: Figure::Decode {
            batch: 16,
            prompt: 4096,
            generated: 32,
        },
        value: 252.8,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 4096,
            generated: 32,
        },
        value: 377.05,
    },
    Measured {
        figure: Figure::Prefill { prompt: 8192 },
        value: 2186.6,
    },
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 8192,
            generated: 32,
        },
        value: 27.5,
    },
    Measured {
        figure: Figure::Decode {
            batch: 2,
            prompt: 8192,
            generated: 32,
        },
        value: 48.39,
    },
    Measured {
        figure: Figure::Decode {
            batch: 4,
            prompt: 8192,
            generated: 32,
        },
        value: 84.71,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 8192,
            generated: 32,
        },
        value: 138.88,
    },
    Measured {
        figure: Figure::Decode {
            batch: 16,
            prompt: 8192,
            generated: 32,
        },
        value: 196.21,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 8192,
            generated: 32,
        },
        value: 268.2,
    },
];

/// DGX Spark, gpt-oss-20b MXFP4 (a mixture of experts), llama.cpp CUDA, `n_batch = n_ubatch =
/// 2048`. The lone 512-token prefill row (1,311.72 tok/s, the run's first measurement) is left
/// out: the same device prefilled two 512-token prompts at 3,754.20 tok/s in the next row and
/// one 4,096-token prompt at 3,513.60, so it measured the run's warm-up, not the engine.
const DGX_GPT_OSS_20B: &[Measured] = &[
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 512,
            generated: 32,
        },
        value: 81.11,
    },
    Measured {
        figure: Figure::Decode {
            batch: 2,
            prompt: 512,
            generated: 32,
        },
        value: 95.0,
    },
    Measured {
        figure: Figure::Decode {
            batch: 4,
            prompt: 512,
            generated: 32,
        },
        value: 151.9,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 512,
            generated: 32,
        },
        value: 254.09,
    },
    Measured {
        figure: Figure::Decode {
            batch: 16,
            prompt: 512,
            generated: 32,
        },
        value: 400.94,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 512,
            generated: 32,
        },
        value: 614.82,
    },
    Measured {
        figure: Figure::Prefill { prompt: 4096 },
        value: 3513.6,
    },
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 4096,
            generated: 32,
        },
        value: 77.97,
    },
    Measured {
        figure: Figure::Decode {
            batch: 2,
            prompt: 4096,
            generated: 32,
        },
        value: 87.18,
    },
    Measured {
        figure: Figure::Decode {
            batch: 4,
            prompt: 4096,
            generated: 32,
        },
        value: 139.9,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 4096,
            generated: 32,
        },
        value: 216.7,
    },
    Measured {
        figure: Figure::Decode {
            batch: 16,
            prompt: 4096,
            generated: 32,
        },
        value: 310.48,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 4096,
            generated: 32,
        },
        value: 422.45,
    },
    Measured {
        figure: Figure::Prefill { prompt: 8192 },
        value: 3313.11,
    },
    Measured {
        figure: Figure::Decode {
            batch: 1,
            prompt: 8192,
            generated: 32,
        },
        value: 72.07,
    },
    Measured {
        figure: Figure::Decode {
            batch: 2,
            prompt: 8192,
            generated: 32,
        },
        value: 82.98,
    },
    Measured {
        figure: Figure::Decode {
            batch: 4,
            prompt: 8192,
            generated: 32,
        },
        value: 127.28,
    },
    Measured {
        figure: Figure::Decode {
            batch: 8,
            prompt: 8192,
            generated: 32,
        },
        value: 191.33,
    },
    Measured {
        figure: Figure::Decode {
            batch: 16,
            prompt: 8192,
            generated: 32,
        },
        value: 262.36,
    },
    Measured {
        figure: Figure::Decode {
            batch: 32,
            prompt: 8192,
            generated: 32,
        },
        value: 341.16,
    },
];

/// Vidur's profile of Meta-Llama-3-8B on an A100: the power-of-two token counts.
const VIDUR_A100_LLAMA3_8B: &[Measured] = &[
    Measured {
        figure: Figure::LinearOps { tokens: 1 },
        value: 9.699,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2 },
        value: 9.796,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4 },
        value: 9.797,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 8 },
        value: 9.992,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 16 },
        value: 10.142,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 32 },
        value: 10.917,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 64 },
        value: 11.238,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 128 },
        value: 13.193,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 256 },
        value: 19.503,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 512 },
        value: 34.667,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 1024 },
        value: 75.199,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2048 },
        value: 145.692,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4096 },
        value: 273.81,
    },
];

/// Vidur's profile of Llama-2-7b-hf on an A100: the power-of-two token counts.
const VIDUR_A100_LLAMA2_7B: &[Measured] = &[
    Measured {
        figure: Figure::LinearOps { tokens: 1 },
        value: 9.283,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2 },
        value: 8.964,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4 },
        value: 9.029,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 8 },
        value: 9.064,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 16 },
        value: 9.198,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 32 },
        value: 9.54,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 64 },
        value: 9.702,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 128 },
        value: 12.249,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 256 },
        value: 17.823,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 512 },
        value: 33.389,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 1024 },
        value: 67.997,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2048 },
        value: 133.542,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4096 },
        value: 258.619,
    },
];

/// Vidur's profile of Llama-2-7b-hf on an H100: the power-of-two token counts.
const VIDUR_H100_LLAMA2_7B: &[Measured] = &[
    Measured {
        figure: Figure::LinearOps { tokens: 1 },
        value: 5.602,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2 },
        value: 5.475,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4 },
        value: 5.508,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 8 },
        value: 5.511,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 16 },
        value: 5.804,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 32 },
        value: 5.795,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 64 },
        value: 5.86,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 128 },
        value: 6.374,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 256 },
        value: 9.161,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 512 },
        value: 12.0,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 1024 },
        value: 21.054,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2048 },
        value: 40.379,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4096 },
        value: 83.591,
    },
];

/// Vidur's profile of Llama-2-7b-hf on an A40: the power-of-two token counts.
const VIDUR_A40_LLAMA2_7B: &[Measured] = &[
    Measured {
        figure: Figure::LinearOps { tokens: 1 },
        value: 23.938,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2 },
        value: 23.939,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4 },
        value: 24.004,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 8 },
        value: 24.166,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 16 },
        value: 24.714,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 32 },
        value: 26.452,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 64 },
        value: 30.053,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 128 },
        value: 30.279,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 256 },
        value: 44.591,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 512 },
        value: 71.132,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 1024 },
        value: 136.916,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 2048 },
        value: 259.591,
    },
    Measured {
        figure: Figure::LinearOps { tokens: 4096 },
        value: 523.082,
    },
];

const VIDUR_SOURCE: &str = "https://github.com/microsoft/vidur data/profiling/compute/<device>/<model>/mlp.csv (linear layers: the embedding plus 32 layers of norms, projections, MLP and add; medians)";

/// Published batched tables the step model is fitted to, to show how well the step describes
/// a real engine's batching.
pub const REFERENCE_TABLES: &[TierCalibration] = &[
    TierCalibration {
        name: "llama.cpp batched-bench sample",
        source: "https://github.com/ggml-org/llama.cpp/blob/master/examples/batched-bench/README.md (Sample results)",
        setup: "LLaMA 7B F16, llama.cpp batched-bench, prompt not shared, -c 16384 -b 2048 -ub 512 -ngl 99 (the device is not stated)",
        max_batched_tokens: 2048,
        rows: LLAMACPP_SAMPLE,
    },
    TierCalibration {
        name: "DGX Spark qwen2.5-coder-7b",
        source: DGX_SOURCE,
        setup: "NVIDIA GB10 (DGX Spark), Qwen2.5-Coder-7B Q8_0 (dense), llama.cpp CUDA, flash attention, n_batch = n_ubatch = 2048, prompts not shared",
        max_batched_tokens: 2048,
        rows: DGX_QWEN_7B,
    },
    TierCalibration {
        name: "DGX Spark gpt-oss-20b",
        source: DGX_SOURCE,
        setup: "NVIDIA GB10 (DGX Spark), gpt-oss-20b MXFP4 (mixture of experts), llama.cpp CUDA, flash attention, n_batch = n_ubatch = 2048, prompts not shared; the lone pp512 row (the run's warm-up) left out",
        max_batched_tokens: 2048,
        rows: DGX_GPT_OSS_20B,
    },
];

/// Published kernel profiles the step's roofline is fitted to.
pub const KERNEL_PROFILES: &[TierCalibration] = &[
    TierCalibration {
        name: "Vidur A100 llama-3-8b",
        source: VIDUR_SOURCE,
        setup: "A100, Meta-Llama-3-8B, tensor parallel 1, vLLM-style kernels",
        max_batched_tokens: 4096,
        rows: VIDUR_A100_LLAMA3_8B,
    },
    TierCalibration {
        name: "Vidur A100 llama-2-7b",
        source: VIDUR_SOURCE,
        setup: "A100, Llama-2-7b-hf, tensor parallel 1, vLLM-style kernels",
        max_batched_tokens: 4096,
        rows: VIDUR_A100_LLAMA2_7B,
    },
    TierCalibration {
        name: "Vidur H100 llama-2-7b",
        source: VIDUR_SOURCE,
        setup: "H100, Llama-2-7b-hf, tensor parallel 1, vLLM-style kernels",
        max_batched_tokens: 4096,
        rows: VIDUR_H100_LLAMA2_7B,
    },
    TierCalibration {
        name: "Vidur A40 llama-2-7b",
        source: VIDUR_SOURCE,
        setup: "A40, Llama-2-7b-hf, tensor parallel 1, vLLM-style kernels",
        max_batched_tokens: 4096,
        rows: VIDUR_A40_LLAMA2_7B,
    },
];

//! Model, hardware and link presets, with their sources.
//!
//! KV bytes per token (fp16) are `2 (K and V) * layers * kv_heads * head_dim * 2 bytes`, from
//! each model's Hugging Face `config.json` (`num_hidden_layers`, `num_key_value_heads` — equal to
//! `num_attention_heads` when absent — and `hidden_size / num_attention_heads`).
//!
//! Hardware rates are single-request llama.cpp `llama-bench` figures (prompt processing `pp512`
//! as the prefill rate, text generation as the per-request decode rate). They are inputs to a
//! model, not measurements of this project; the design note defers the real constants to a
//! hardware measurement.

use serde::Serialize;

use crate::policy::iteration::{StepShape, PRESET_PREFILL_ATTENTION_PER_KTOK};

/// A model's KV-cache footprint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelPreset {
    /// Short name.
    pub name: &'static str,
    /// Where the figures come from.
    pub source: &'static str,
    /// Transformer layers.
    pub layers: u32,
    /// Key/value heads (GQA groups).
    pub kv_heads: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Bytes of fp16 KV cache per token: `2 * layers * kv_heads * head_dim * 2`.
    pub kv_bytes_per_token: f64,
}

const fn kv_fp16(layers: u32, kv_heads: u32, head_dim: u32) -> f64 {
    (2 * layers as u64 * kv_heads as u64 * head_dim as u64 * 2) as f64
}

/// Llama-2-7B: 32 layers, 32 KV heads (no GQA), head dim 128 → 512 KiB/token.
/// Source: <https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json>.
pub const LLAMA2_7B: ModelPreset = ModelPreset {
    name: "llama-2-7b",
    source: "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json",
    layers: 32,
    kv_heads: 32,
    head_dim: 128,
    kv_bytes_per_token: kv_fp16(32, 32, 128),
};

/// Llama-2-13B: 40 layers, 40 KV heads, head dim 128 → 800 KiB/token.
/// Source: <https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json>.
pub const LLAMA2_13B: ModelPreset = ModelPreset {
    name: "llama-2-13b",
    source: "https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json",
    layers: 40,
    kv_heads: 40,
    head_dim: 128,
    kv_bytes_per_token: kv_fp16(40, 40, 128),
};

/// Llama-3-8B: 32 layers, 8 KV heads (GQA), head dim 128 → 128 KiB/token.
/// Source: <https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json>.
pub const LLAMA3_8B: ModelPreset = ModelPreset {
    name: "llama-3-8b",
    source: "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
    layers: 32,
    kv_heads: 8,
    head_dim: 128,
    kv_bytes_per_token: kv_fp16(32, 8, 128),
};

/// Llama-2-70B and Llama-3-70B: 80 layers, 8 KV heads (GQA), head dim 128 → 320 KiB/token.
/// Sources: <https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json>,
/// <https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json>.
pub const LLAMA_70B: ModelPreset = ModelPreset {
    name: "llama-70b",
    source: "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
    layers: 80,
    kv_heads: 8,
    head_dim: 128,
    kv_bytes_per_token: kv_fp16(80, 8, 128),
};

/// Llama-3.2-1B: 16 layers, 8 KV heads (GQA), head dim 64 (2048 / 32) → 32 KiB/token; the
/// phone-class model. Source: <https://huggingface.co/meta-llama/Llama-3.2-1B/blob/main/config.json>
/// (`num_hidden_layers` 16, `num_key_value_heads` 8, `head_dim` 64).
pub const LLAMA32_1B: ModelPreset = ModelPreset {
    name: "llama-3.2-1b",
    source: "https://huggingface.co/meta-llama/Llama-3.2-1B/blob/main/config.json",
    layers: 16,
    kv_heads: 8,
    head_dim: 64,
    kv_bytes_per_token: kv_fp16(16, 8, 64),
};

/// Llama-3.2-3B: 28 layers, 8 KV heads (GQA), head dim 128 (3072 / 24) → 112 KiB/token.
/// Source: <https://huggingface.co/meta-llama/Llama-3.2-3B/blob/main/config.json>.
pub const LLAMA32_3B: ModelPreset = ModelPreset {
    name: "llama-3.2-3b",
    source: "https://huggingface.co/meta-llama/Llama-3.2-3B/blob/main/config.json",
    layers: 28,
    kv_heads: 8,
    head_dim: 128,
    kv_bytes_per_token: kv_fp16(28, 8, 128),
};

/// All model presets.
pub const MODELS: [ModelPreset; 6] = [
    LLAMA2_7B, LLAMA2_13B, LLAMA3_8B, LLAMA_70B, LLAMA32_1B, LLAMA32_3B,
];

/// A model preset by name (case-insensitive).
pub fn model(name: &str) -> Option<ModelPreset> {
    MODELS
        .into_iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
}

/// Per-request serving rates of one device running one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HardwarePreset {
    /// Short name.
    pub name: &'static str,
    /// Where the figures come from.
    pub source: &'static str,
    /// Model and quantisation the figures were measured with.
    pub measured_with: &'static str,
    /// Prefill rate `p`, tokens/s.
    pub prefill_tok_s: f64,
    /// Per-request decode rate `d`, tokens/s.
    pub decode_tok_s: f64,
    /// Decode slowdown per other concurrent request, `b`: with `k` requests decoding at once
    /// each decodes at `d / (1 + b (k - 1))`. Fitted to a batched benchmark of the device class:
    /// `b = (r_1 / r_B - 1) / (B - 1)` from the per-request rates `r` at batch 1 and batch `B`.
    pub batch_slowdown: f64,
    /// The iteration model's step shape ([`crate::policy::iteration`]), fitted to the
    /// measurements [`crate::policy::calibration`] cites.
    pub step: StepShape,
}

/// `b` of CUDA data-centre and consumer GPUs: llama.cpp `llama-batched-bench` on an A100
/// (PR #3749, <https://github.com/ggml-org/llama.cpp/pull/3749>, shared prompt 512, 128 new
/// tokens): S_TG 228.57 tok/s at B = 1 and 987.82 at B = 8, so 123.5 tok/s per request at
/// B = 8 and `b = (228.57 / 123.48 - 1) / 7 = 0.12`.
pub const CUDA_BATCH_SLOWDOWN: f64 = 0.12;

/// `b` of Apple-silicon laptops: llama.cpp Metal on an M1 Pro, Llama 1B Q4_0 (PR #10491,
/// <https://github.com/ggml-org/llama.cpp/pull/10491>): 140.13 tok/s for one token per step,
/// 268.95 for four, so 67.2 per request at four and `b = (140.13 / 67.24 - 1) / 3 = 0.36`.
/// (Four tokens of one step stand in for four sequences: the weight reads are shared alike.)
pub const APPLE_BATCH_SLOWDOWN: f64 = 0.36;

/// `b` of phones: aggregate decode does not grow with the batch on a phone's CPU (llama.cpp
/// issue #4064, <https://github.com/ggml-org/llama.cpp/issues/4064>: "batch size 1 = 4 t/s,
/// batch size 2 = 4 t/s, batch size 4 = 4 t/s"), so `k` requests share one request's rate:
/// `b = 1`.
pub const PHONE_BATCH_SLOWDOWN: f64 = 1.0;

/// NVIDIA RTX 4090, llama.cpp, LLaMA-7B F16: prompt ~11,048 tok/s, generation ~61 tok/s
/// (figures as specified for this project). For comparison, XiongjieDai's llama.cpp benchmark
/// (Dec 2023 build) measured 7,245 / 60.9 tok/s for LLaMA-7B F16 on the same card:
/// <https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference>.
pub const RTX4090_7B_F16: HardwarePreset = HardwarePreset {
    name: "rtx4090",
    source: "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference (batch slowdown: https://github.com/ggml-org/llama.cpp/pull/3749)",
    measured_with: "llama-7b f16, llama.cpp",
    prefill_tok_s: 11_048.0,
    decode_tok_s: 61.0,
    batch_slowdown: CUDA_BATCH_SLOWDOWN,
    step: StepShape {
        fixed_share: 1.0 - CUDA_BATCH_SLOWDOWN,
        context_per_ktok: 0.0,
        max_batched_tokens: 2048,
        lone_discount: 0.0,
        prefill_attention_per_ktok: PRESET_PREFILL_ATTENTION_PER_KTOK,
    },
};

/// Apple M1 Max, llama.cpp Metal, Llama-3-8B Q4: prompt ~500 tok/s, generation ~46 tok/s
/// (figures as specified for this project). XiongjieDai's benchmark (May 2024) measured
/// 408 / 35.7 tok/s (pp512 / tg512) for 8B Q4_K_M on the 32-core 64 GB M1 Max:
/// <https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference>.
pub const M1_MAX_8B_Q4: HardwarePreset = HardwarePreset {
    name: "m1-max",
    source: "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference (batch slowdown: https://github.com/ggml-org/llama.cpp/pull/10491)",
    measured_with: "llama-3-8b q4, llama.cpp metal",
    prefill_tok_s: 500.0,
    decode_tok_s: 46.0,
    batch_slowdown: APPLE_BATCH_SLOWDOWN,
    step: StepShape {
        fixed_share: 1.0 - APPLE_BATCH_SLOWDOWN,
        context_per_ktok: 0.0,
        max_batched_tokens: 2048,
        lone_discount: 0.0,
        prefill_attention_per_ktok: PRESET_PREFILL_ATTENTION_PER_KTOK,
    },
};

/// NVIDIA A100 PCIe 80 GB, llama.cpp CUDA, Llama-3-8B F16: pp512 7,741 tok/s, tg512
/// 54.8 tok/s. Source: XiongjieDai, GPU-Benchmarks-on-LLM-Inference, "NVIDIA Professional
/// GPUs" table (May 2024): <https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference>.
pub const A100_8B_F16: HardwarePreset = HardwarePreset {
    name: "a100",
    source: "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference (batch slowdown: https://github.com/ggml-org/llama.cpp/pull/3749)",
    measured_with: "llama-3-8b f16, llama.cpp",
    prefill_tok_s: 7_741.34,
    decode_tok_s: 54.84,
    batch_slowdown: CUDA_BATCH_SLOWDOWN,
    step: StepShape {
        fixed_share: 1.0 - CUDA_BATCH_SLOWDOWN,
        context_per_ktok: 0.0,
        max_batched_tokens: 2048,
        lone_discount: 0.0,
        prefill_attention_per_ktok: PRESET_PREFILL_ATTENTION_PER_KTOK,
    },
};

/// NVIDIA H100 PCIe 80 GB, llama.cpp CUDA, Llama-3-8B F16: pp512 10,816 tok/s, tg512
/// 68.0 tok/s. Source: as [`A100_8B_F16`].
pub const H100_8B_F16: HardwarePreset = HardwarePreset {
    name: "h100",
    source: "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference (batch slowdown: https://github.com/ggml-org/llama.cpp/pull/3749)",
    measured_with: "llama-3-8b f16, llama.cpp",
    prefill_tok_s: 10_815.51,
    decode_tok_s: 68.03,
    batch_slowdown: CUDA_BATCH_SLOWDOWN,
    step: StepShape {
        fixed_share: 1.0 - CUDA_BATCH_SLOWDOWN,
        context_per_ktok: 0.0,
        max_batched_tokens: 2048,
        lone_discount: 0.0,
        prefill_attention_per_ktok: PRESET_PREFILL_ATTENTION_PER_KTOK,
    },
};

/// The design note's WAN peer: 250 tok/s prefill (design note "The algorithm", trigger
/// example: "≈ 18 s at 4.5 k tokens, 250 tok/s"), 20 tok/s decode (assumed). A laptop-class
/// node; XiongjieDai measured 213 / 13.8 tok/s for Llama-2-7B F16 on a 24-core M1 Max.
pub const DESIGN_WAN_PEER: HardwarePreset = HardwarePreset {
    name: "wan-peer",
    source: "design note trigger example (250 tok/s prefill; 20 tok/s decode assumed; batch slowdown: https://github.com/ggml-org/llama.cpp/pull/10491)",
    measured_with: "design note example",
    prefill_tok_s: 250.0,
    decode_tok_s: 20.0,
    batch_slowdown: APPLE_BATCH_SLOWDOWN,
    step: StepShape {
        fixed_share: 1.0 - APPLE_BATCH_SLOWDOWN,
        context_per_ktok: 0.0,
        max_batched_tokens: 2048,
        lone_discount: 0.0,
        prefill_attention_per_ktok: PRESET_PREFILL_ATTENTION_PER_KTOK,
    },
};

/// A recent phone: Llama-3.2-1B Q4_0 on a Snapdragon Hexagon NPU (v79, the Snapdragon 8 Elite
/// generation), llama.cpp `llama-bench`: pp128 169.42 tok/s, tg64 51.54 tok/s. Source:
/// llama.cpp `docs/backend/snapdragon/README.md`,
/// <https://github.com/ggml-org/llama.cpp/blob/master/docs/backend/snapdragon/README.md>.
/// Use with the `llama-3.2-1b` model preset.
pub const PHONE_1B_Q4: HardwarePreset = HardwarePreset {
    name: "phone",
    source: "https://github.com/ggml-org/llama.cpp/blob/master/docs/backend/snapdragon/README.md (batch slowdown: https://github.com/ggml-org/llama.cpp/issues/4064)",
    measured_with: "llama-3.2-1b q4_0, llama.cpp hexagon npu",
    prefill_tok_s: 169.42,
    decode_tok_s: 51.54,
    batch_slowdown: PHONE_BATCH_SLOWDOWN,
    step: StepShape {
        fixed_share: 1.0 - PHONE_BATCH_SLOWDOWN,
        context_per_ktok: 0.0,
        max_batched_tokens: 2048,
        lone_discount: 0.0,
        prefill_attention_per_ktok: PRESET_PREFILL_ATTENTION_PER_KTOK,
    },
};

/// All hardware presets.
pub const HARDWARE: [HardwarePreset; 6] = [
    DESIGN_WAN_PEER,
    M1_MAX_8B_Q4,
    A100_8B_F16,
    H100_8B_F16,
    RTX4090_7B_F16,
    PHONE_1B_Q4,
];

/// A hardware preset by name (case-insensitive).
pub fn hardware(name: &str) -> Option<HardwarePreset> {
    HARDWARE
        .into_iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
}

/// A network link tier.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkPreset {
    /// Short name.
    pub name: &'static str,
    /// Where the figures come from.
    pub source: &'static str,
    /// Bandwidth, bytes/s.
    pub bandwidth_bytes_s: f64,
}

/// 100 Mb/s WAN uplink: 12.5 MB/s.
pub const WAN_100M: LinkPreset = LinkPreset {
    name: "wan-100mbps",
    source: "100 Mb/s uplink = 12.5 MB/s",
    bandwidth_bytes_s: 12.5e6,
};

/// 1 Gigabit Ethernet: 125 MB/s.
pub const GBE_1: LinkPreset = LinkPreset {
    name: "1gbe",
    source: "1 Gb/s Ethernet = 125 MB/s",
    bandwidth_bytes_s: 125e6,
};

/// 10 Gigabit Ethernet: 1.25 GB/s.
pub const GBE_10: LinkPreset = LinkPreset {
    name: "10gbe",
    source: "10 Gb/s Ethernet = 1.25 GB/s",
    bandwidth_bytes_s: 1.25e9,
};

/// 100 Gb/s RDMA (InfiniBand EDR / RoCE): 12.5 GB/s.
pub const RDMA_100G: LinkPreset = LinkPreset {
    name: "rdma-100gbps",
    source: "100 Gb/s InfiniBand EDR / RoCE = 12.5 GB/s",
    bandwidth_bytes_s: 12.5e9,
};

/// NVLink, ~300 GB/s per direction (A100 NVLink 3: 600 GB/s total bidirectional, NVIDIA A100
/// datasheet, <https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf>).
pub const NVLINK: LinkPreset = LinkPreset {
    name: "nvlink",
    source: "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
    bandwidth_bytes_s: 300e9,
};

/// The crossover table's bandwidth tiers, slowest first.
pub const LINKS: [LinkPreset; 5] = [WAN_100M, GBE_1, GBE_10, RDMA_100G, NVLINK];

/// A link preset by its short name: `wan`, `1gbe`, `10gbe`, `rdma`, `nvlink` (or a full
/// preset name).
fn link_by_alias(name: &str) -> Option<LinkPreset> {
    match name.to_ascii_lowercase().as_str() {
        "wan" => Some(WAN_100M),
        "rdma" => Some(RDMA_100G),
        other => link(other),
    }
}

/// A link preset by name (case-insensitive).
pub fn link(name: &str) -> Option<LinkPreset> {
    LINKS
        .into_iter()
        .find(|l| l.name.eq_ignore_ascii_case(name))
}

/// The kind of preset a lookup was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresetKind {
    /// A [`HardwarePreset`].
    Hardware,
    /// A [`ModelPreset`].
    Model,
    /// A [`LinkPreset`].
    Link,
}

impl std::fmt::Display for PresetKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PresetKind::Hardware => "hardware preset",
            PresetKind::Model => "model",
            PresetKind::Link => "link",
        })
    }
}

/// A preset name that no preset of its kind has; the message lists the known names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown {kind} {name:?}{}; known: {}",
    crate::diag::did_you_mean(&crate::diag::similar_names(name, known.iter().copied())),
    known.join(", ")
)]
pub struct UnknownPreset {
    /// What was looked up.
    pub kind: PresetKind,
    /// The name given.
    pub name: String,
    /// The names that would have been accepted.
    pub known: Vec<&'static str>,
}

/// Short names of the links, as [`link_by_alias`] accepts them.
pub const LINK_ALIASES: [&str; 5] = ["wan", "1gbe", "10gbe", "rdma", "nvlink"];

/// A hardware preset by name, or an error listing the presets.
pub fn find_hardware(name: &str) -> Result<HardwarePreset, UnknownPreset> {
    hardware(name).ok_or_else(|| UnknownPreset {
        kind: PresetKind::Hardware,
        name: name.to_string(),
        known: HARDWARE.iter().map(|h| h.name).collect(),
    })
}

/// A model preset by name, or an error listing the presets.
pub fn find_model(name: &str) -> Result<ModelPreset, UnknownPreset> {
    model(name).ok_or_else(|| UnknownPreset {
        kind: PresetKind::Model,
        name: name.to_string(),
        known: MODELS.iter().map(|m| m.name).collect(),
    })
}

/// A link by short name (`wan`, `1gbe`, `10gbe`, `rdma`, `nvlink`) or full preset name, or an
/// error listing the short names.
pub fn find_link(name: &str) -> Result<LinkPreset, UnknownPreset> {
    link_by_alias(name).ok_or_else(|| UnknownPreset {
        kind: PresetKind::Link,
        name: name.to_string(),
        known: LINK_ALIASES.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_sizes_match_the_issue() {
        assert_eq!(LLAMA2_7B.kv_bytes_per_token, 512.0 * 1024.0);
        assert_eq!(LLAMA2_13B.kv_bytes_per_token, 800.0 * 1024.0);
        assert_eq!(LLAMA3_8B.kv_bytes_per_token, 128.0 * 1024.0);
        assert_eq!(LLAMA_70B.kv_bytes_per_token, 320.0 * 1024.0);
        assert_eq!(LLAMA32_1B.kv_bytes_per_token, 32.0 * 1024.0);
        assert_eq!(LLAMA32_3B.kv_bytes_per_token, 112.0 * 1024.0);
    }

    #[test]
    fn lookups_name_the_known_presets() {
        assert_eq!(find_link("WAN").map(|l| l.name), Ok("wan-100mbps"));
        assert_eq!(find_link("nvlink").map(|l| l.name), Ok("nvlink"));
        let e = find_link("wam").map(|l| l.name);
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err(
                "unknown link \"wam\"; did you mean wan?; known: wan, 1gbe, 10gbe, rdma, nvlink"
                    .to_string()
            )
        );
        assert!(find_model("llama-3-8b").is_ok());
        let m = find_model("gpt").map(|m| m.name).map_err(|e| e.to_string());
        assert!(m.is_err_and(|e| e.contains("llama-3-8b")));
        assert!(find_hardware("A100").is_ok());
        for alias in LINK_ALIASES {
            assert!(find_link(alias).is_ok(), "{alias}");
        }
    }
}

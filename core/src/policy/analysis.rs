//! Library side of the `trigger` and `crossover` analyses (the CLI renders the rows).
//!
//! * [`trigger_rows`]: for a two-node hop, both trigger conditions per source uptime
//!   (design note "The trigger rarely fires, and not because of the hysteresis").
//! * [`crossover_rows`]: transfer-vs-recompute crossover `c*` per bandwidth tier and destination
//!   prefill rate (design note "Decision 3").
//!
//! Both go through the same functions the policy uses ([`assess_move`], [`crossover`]).

use serde::Serialize;

use super::cost::RiskModel;
use super::migration::{assess_move, crossover, source_state, trigger_fires, MoveQuery};
use super::model::{NodeView, Params, RequestView};
use super::presets::{
    LinkPreset, ModelPreset, DESIGN_WAN_PEER, HARDWARE, LLAMA2_7B, LLAMA3_8B, WAN_100M,
};
use crate::survival::curve::{ConditionalSurvival, Weibull};

/// Serving rates and bandwidth of one side of the hop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HopEndpoint {
    /// Decode rate, tokens/s per request.
    pub decode_tok_s: f64,
    /// Prefill rate, tokens/s.
    pub prefill_tok_s: f64,
    /// Bandwidth, bytes/s.
    pub bandwidth_bytes_s: f64,
}

/// A two-node hop `i -> j` for [`trigger_rows`].
pub struct TriggerScenario {
    /// Model constants, overheads, `sigma`, `overlap`.
    pub params: Params,
    /// Source node `i`.
    pub source: HopEndpoint,
    /// Destination node `j`.
    pub dest: HopEndpoint,
    /// Source session curve.
    pub source_curve: Box<dyn ConditionalSurvival>,
    /// Destination session curve.
    pub dest_curve: Box<dyn ConditionalSurvival>,
    /// Destination uptime `a_j`, seconds.
    pub dest_age_s: f64,
    /// The running request (its context is resident on the source).
    pub request: RequestView,
}

/// A volunteer-desktop session curve: Weibull shape 0.6 (decreasing hazard), scale 4 h
/// (an assumption standing in for the pooled Kaplan-Meier fit).
pub const VOLUNTEER_WEIBULL: Weibull = Weibull {
    shape: 0.6,
    scale: 4.0 * 3600.0,
};

impl TriggerScenario {
    /// The design note's WAN hop: Llama-2-7B (512 KiB/token), 100 Mb/s link, both nodes
    /// [`DESIGN_WAN_PEER`] (250 tok/s prefill, 20 tok/s decode), context 4.5 k tokens
    /// (prompt 4,000 + 500 generated) with 500 more expected, both nodes on
    /// [`VOLUNTEER_WEIBULL`], destination up for 1 h. `Params::default()` overheads
    /// (`O_t = 0.2 s`, `O_r = 0.1 s`, `sigma = 2 s`).
    pub fn design_wan() -> TriggerScenario {
        let peer = HopEndpoint {
            decode_tok_s: DESIGN_WAN_PEER.decode_tok_s,
            prefill_tok_s: DESIGN_WAN_PEER.prefill_tok_s,
            bandwidth_bytes_s: WAN_100M.bandwidth_bytes_s,
        };
        TriggerScenario {
            params: Params {
                kv_bytes_per_token: LLAMA2_7B.kv_bytes_per_token,
                ..Params::default()
            },
            source: peer,
            dest: peer,
            source_curve: Box::new(VOLUNTEER_WEIBULL),
            dest_curve: Box::new(VOLUNTEER_WEIBULL),
            dest_age_s: 3600.0,
            request: RequestView {
                id: 0,
                prompt_tokens: 4000,
                done_tokens: 500,
                est_output_tokens: 1000,
                node: Some(0),
                resident_tokens: 4500,
                planned_hops: 0,
                est_sigma: 0.0,
                recovering: false,
                conversation: None,
            },
        }
    }
}

/// The hop of `hazardserve trigger`, as its flags set it: both nodes serve at the same rates
/// over one link, the request has `context` tokens resident and `remaining` still expected.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TriggerSettings {
    /// Context tokens resident on the source (prompt + generated).
    pub context: u64,
    /// Tokens still expected.
    pub remaining: u64,
    /// Prefill rate of both nodes, tokens/s.
    pub prefill_tok_s: f64,
    /// Decode rate of both nodes, tokens/s.
    pub decode_tok_s: f64,
    /// Link bandwidth, bytes/s.
    pub bandwidth_bytes_s: f64,
    /// KV cache bytes per token.
    pub kv_bytes_per_token: f64,
    /// Overlapped migration.
    pub overlap: bool,
    /// Destination uptime, seconds.
    pub dest_age_s: f64,
}

impl TriggerSettings {
    /// `hazardserve trigger`'s defaults: the design's WAN hop ([`DESIGN_WAN_PEER`] rates,
    /// 100 Mb/s) with Llama-3-8B's KV size, 4.5 k tokens resident and 500 to go, destination
    /// up for 1 h.
    pub const DEFAULT: TriggerSettings = TriggerSettings {
        context: 4500,
        remaining: 500,
        prefill_tok_s: DESIGN_WAN_PEER.prefill_tok_s,
        decode_tok_s: DESIGN_WAN_PEER.decode_tok_s,
        bandwidth_bytes_s: WAN_100M.bandwidth_bytes_s,
        kv_bytes_per_token: LLAMA3_8B.kv_bytes_per_token,
        overlap: false,
        dest_age_s: 3600.0,
    };

    /// The hop with these settings, the source on `source_curve` and the destination on
    /// `dest_curve` (the rest of [`TriggerScenario::design_wan`]: its prompt and overheads).
    pub fn scenario(
        &self,
        source_curve: Box<dyn ConditionalSurvival>,
        dest_curve: Box<dyn ConditionalSurvival>,
    ) -> TriggerScenario {
        let mut sc = TriggerScenario::design_wan();
        sc.source_curve = source_curve;
        sc.dest_curve = dest_curve;
        for n in [&mut sc.source, &mut sc.dest] {
            n.prefill_tok_s = self.prefill_tok_s;
            n.decode_tok_s = self.decode_tok_s;
            n.bandwidth_bytes_s = self.bandwidth_bytes_s;
        }
        sc.params = Params {
            kv_bytes_per_token: self.kv_bytes_per_token,
            overlap: self.overlap,
            ..sc.params
        };
        sc.dest_age_s = self.dest_age_s;
        sc.request.done_tokens = self
            .context
            .saturating_sub(sc.request.prompt_tokens.min(self.context));
        sc.request.prompt_tokens = self.context - sc.request.done_tokens;
        sc.request.resident_tokens = self.context;
        sc.request.est_output_tokens = sc.request.done_tokens + self.remaining;
        sc
    }
}

impl Default for TriggerSettings {
    fn default() -> Self {
        TriggerSettings::DEFAULT
    }
}

/// Source uptimes of the default grid: 0 s to 2 days.
pub const DEFAULT_UPTIMES_S: [f64; 12] = [
    0.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 57600.0, 86400.0, 172800.0,
];

/// Hysteresis values of the default grid, seconds.
pub const DEFAULT_HYSTERESIS_S: [f64; 6] = [0.0, 0.5, 1.0, 2.0, 5.0, 10.0];

/// Whether the trigger fires at one hysteresis value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HysteresisFire {
    /// Hysteresis `h`, seconds.
    pub h_s: f64,
    /// `risk_gain > h && dt < h`.
    pub fires: bool,
}

/// One source uptime of the trigger analysis.
///
/// Identity: `risk_gain = l_i - (c_planned + l_j)`. With overlap, `c_transfer`, `c_recompute`
/// and `c_planned` price the catch-up at cutover, and `l_j` includes the source's loss during
/// the overlap window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TriggerRow {
    /// Source uptime `a_i`, seconds.
    pub uptime_s: f64,
    /// `L_i`, seconds.
    pub l_i: f64,
    /// KV transfer cost, seconds.
    pub c_transfer: f64,
    /// Recompute cost, seconds.
    pub c_recompute: f64,
    /// `C_planned = min(c_transfer, c_recompute)`, seconds.
    pub c_planned: f64,
    /// `L_j` (residual risk of the move), seconds.
    pub l_j: f64,
    /// `risk_gain = L_i - (C_planned + L_j)`, seconds.
    pub risk_gain: f64,
    /// `dT = (T_j + C_planned) - T_i`, seconds.
    pub dt: f64,
    /// The trigger at each hysteresis value.
    pub fires: Vec<HysteresisFire>,
}

/// Both trigger conditions of the hop `sc` at each source uptime in `uptimes_s`, for each
/// hysteresis in `hysteresis_s` (guards not applied). Uses the policy's own pricing.
pub fn trigger_rows(
    sc: &TriggerScenario,
    uptimes_s: &[f64],
    hysteresis_s: &[f64],
) -> Vec<TriggerRow> {
    fn spec<'a>(s: &HopEndpoint, curve: &'a dyn ConditionalSurvival, age: f64) -> NodeView<'a> {
        let mut n = NodeView::new(curve);
        n.age_s = age;
        n.decode_tok_s = s.decode_tok_s;
        n.prefill_tok_s = s.prefill_tok_s;
        n.bandwidth_bytes_s = s.bandwidth_bytes_s;
        n
    }
    let dst = spec(&sc.dest, sc.dest_curve.as_ref(), sc.dest_age_s);
    let req = RequestView {
        node: Some(0),
        ..sc.request
    };
    uptimes_s
        .iter()
        .map(|&a| {
            let src = spec(&sc.source, sc.source_curve.as_ref(), a);
            // Two nodes: each one's fallback is the other.
            let source = source_state(
                &src,
                &req,
                dst.prefill_tok_s,
                &sc.params,
                RiskModel::Hazard,
                None,
            );
            let m = assess_move(&MoveQuery {
                src: &src,
                source: &source,
                dst: &dst,
                dst_fallback_prefill: src.prefill_tok_s,
                params: &sc.params,
                model: RiskModel::Hazard,
                src_remaining_up: None,
                dst_remaining_up: None,
                prune: None,
            });
            TriggerRow {
                uptime_s: a,
                l_i: source.cost.l,
                c_transfer: m.mv.transfer_s,
                c_recompute: m.mv.recompute_s,
                c_planned: m.mv.cost_s,
                l_j: m.l_j,
                risk_gain: m.risk_gain,
                dt: m.dt,
                fires: hysteresis_s
                    .iter()
                    .map(|&h| HysteresisFire {
                        h_s: h,
                        fires: trigger_fires(m.risk_gain, m.dt, h),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// One cell of the crossover table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrossoverRow {
    /// Link tier name.
    pub link: String,
    /// `min(B_i, B_j)`, bytes/s.
    pub bandwidth_bytes_s: f64,
    /// Destination prefill rate `p_j`, tokens/s.
    pub prefill_tok_s: f64,
    /// Context above which transfer beats recompute; `None`: transfer never wins (`c* = ∞`).
    /// See [`super::migration::Crossover::c_star`].
    pub c_star: Option<f64>,
}

/// Destination prefill rates of the default table: every hardware preset.
pub fn default_prefill_rates() -> Vec<f64> {
    HARDWARE.iter().map(|h| h.prefill_tok_s).collect()
}

/// `c*` for each link in `links` and each destination prefill rate, for `model`'s KV size and
/// the overheads in `params`.
pub fn crossover_rows(
    model: &ModelPreset,
    links: &[LinkPreset],
    prefill_rates: &[f64],
    params: &Params,
) -> Vec<CrossoverRow> {
    let mut rows = Vec::with_capacity(links.len() * prefill_rates.len());
    for l in links {
        for &p in prefill_rates {
            let x = crossover(
                params.transfer_overhead_s,
                params.recompute_overhead_s,
                model.kv_bytes_per_token,
                l.bandwidth_bytes_s,
                p,
            );
            rows.push(CrossoverRow {
                link: l.name.to_string(),
                bandwidth_bytes_s: l.bandwidth_bytes_s,
                prefill_tok_s: p,
                c_star: x.c_star(),
            });
        }
    }
    rows
}

//! The comparison of policies: per-policy estimates with bootstrap intervals over windows,
//! paired per-window differences against reference policies, and the share of the
//! fastest-to-oracle gap a policy closes.
//!
//! Scheme. Every metric is computed per run (one policy, window, seed and parameter point),
//! averaged over the seeds of a window (the per-window value), then over windows (the reported
//! value, with a percentile-bootstrap 95 % interval over windows). Policies are compared on
//! the same requests and windows: a paired difference is the mean over windows of
//! `m_policy(w) - m_reference(w)` with the paired t interval of that mean and its two-sided
//! p-value ([`super::stats::paired_t`]: studentized, so that ten windows still cover 95 %).
//! The references are `fastest` and the best hazard-blind baseline (of `fastest`,
//! `least-loaded`, `random`), chosen per metric on all windows and tested with the paired t
//! test Bonferroni-corrected for the choice (`k` candidates: p-value `k p`, interval at
//! `1 - 0.05 / k`), so that its interval and p-value include the selection (the row names the
//! best on mean completion).
//!
//! Gap closed is a ratio of sums over windows, `sum_w (F_w - P_w) / sum_w (F_w - O_w)` on one
//! metric (F = `fastest`, O = `oracle`, P = the policy), reported only when the paired t interval
//! of `F - O` excludes 0 (a test: differences without spread claim no gap) (otherwise there is no gap to close: printed as "none", never as a
//! number), with a paired-bootstrap interval of the ratio (windows resampled together). A
//! share whose interval reaches outside [`GAP_PRECISE_RANGE`] is printed "imprecise": a gap of
//! a few interruptions cannot say what share of it a policy closed.
//!
//! The metric is [`AggregateOptions::gap_metric`], by default the unplanned interruptions: the
//! oracle is a tested reference on that metric (no policy is interrupted less over a run), so
//! the share is at most 1 up to noise. On mean completion the clairvoyant greedy oracle is not
//! a reference (a policy may finish requests sooner than it, which once made "gap closed"
//! exceed 1); the reference there is the `bound` row, and the paired `vs_fastest` differences
//! carry the completion-time comparison. The `bound` row is not a policy and has no gap closed.
//!
//! Forecast calibration ([`ForecastCalibration`], JSON `forecast`): each row pools its runs'
//! [`Calibration`], so a reader can tell a wrong load model (`t_ratio_median` away from 1) from
//! a wrong hazard model (`interruption_brier`, the reliability table).
//!
//! Size: over 800 lines because the rows, their JSON, the paired and best-of references and
//! the gap closed are one aggregation over the same per-window table; splitting them would
//! split that table's one definition.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde_json::{json, Map, Value};

use super::metrics::{
    bootstrap_mean_ci, bootstrap_ratio_ci, mean, AggregateOptions, Better, Calibration, Metric,
    RunMetrics, DEFAULT_GAP_METRIC, METRICS, N_METRICS,
};
use super::stats::{paired_t, paired_t_at};
use crate::policy::PolicyKind;

/// A row of a comparison: a policy at a parameter point (`hazard`, or `hazard --overlap` for
/// the `overlap` point).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PolicyLabel {
    /// The policy.
    pub kind: PolicyKind,
    /// The parameter point's label, `None` for the default point.
    pub param: Option<String>,
}

impl PolicyLabel {
    /// The policy at the default parameter point.
    pub fn new(kind: PolicyKind) -> PolicyLabel {
        PolicyLabel { kind, param: None }
    }

    /// The policy at a labelled parameter point (`default` and the empty label mean none).
    pub fn with_param(kind: PolicyKind, param: &str) -> PolicyLabel {
        let param = (!param.is_empty() && param != "default").then(|| param.to_string());
        PolicyLabel { kind, param }
    }
}

impl fmt::Display for PolicyLabel {
    /// `hazard`, or `hazard --overlap` for the parameter point `overlap`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(p) = &self.param {
            write!(f, " --{p}")?;
        }
        Ok(())
    }
}

/// A label that is not `POLICY` or `POLICY --PARAM`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy {0:?}; policies: {names}", names = PolicyKind::ALL.map(|k| k.name()).join(", "))]
pub struct UnknownPolicy(pub String);

impl FromStr for PolicyLabel {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<PolicyLabel, UnknownPolicy> {
        let (name, param) = match s.split_once(" --") {
            Some((n, p)) => (n.trim(), p.trim()),
            None => (s.trim(), ""),
        };
        let kind = name
            .parse::<PolicyKind>()
            .map_err(|_| UnknownPolicy(s.to_string()))?;
        Ok(PolicyLabel::with_param(kind, param))
    }
}

/// A point estimate with its bootstrap interval (no interval with fewer than two windows).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// Mean over windows, `None` where undefined in every window.
    pub value: Option<f64>,
    /// 95 % percentile-bootstrap interval.
    pub ci: Option<[f64; 2]>,
}

/// A paired difference `policy - reference`, mean over windows, with its paired interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedDiff {
    /// Mean over windows of the per-window difference.
    pub diff: f64,
    /// Lower end of the 95 % interval (the paired t interval over windows,
    /// [`super::stats::paired_t`]; `None` with fewer than two windows).
    pub ci_low: Option<f64>,
    /// Upper end.
    pub ci_high: Option<f64>,
    /// Two-sided p-value of "no difference" (the paired t test); `None` with fewer than two
    /// windows or for rows stored before p-values were kept.
    pub p_value: Option<f64>,
}

impl PairedDiff {
    /// The difference the other way round (`b - a` from `a - b`): the interval mirrored, the
    /// same p-value.
    pub fn negated(self) -> PairedDiff {
        PairedDiff {
            diff: -self.diff,
            ci_low: self.ci_high.map(|v| -v),
            ci_high: self.ci_low.map(|v| -v),
            p_value: self.p_value,
        }
    }

    /// True when the interval exists and excludes 0.
    pub fn significant(&self) -> bool {
        // A zero-width interval (differences without spread) is no test.
        matches!((self.ci_low, self.ci_high), (Some(lo), Some(hi)) if lo < hi && (lo > 0.0 || hi < 0.0))
    }

    /// `Less` (the policy is lower) or `Greater` when the interval excludes 0, `None` when it
    /// contains 0 or there is none.
    pub fn direction(&self) -> Option<std::cmp::Ordering> {
        self.significant()
            .then(|| self.diff.total_cmp(&0.0))
            .filter(|o| o.is_ne())
    }
}

/// Paired differences against one reference, one per metric (`None` where undefined).
#[derive(Debug, Clone, PartialEq)]
pub struct Versus {
    /// The reference policy.
    pub reference: PolicyLabel,
    /// Per metric, in [`METRICS`] order.
    pub diffs: [Option<PairedDiff>; N_METRICS],
}

impl Versus {
    /// The difference of one metric.
    pub fn get(&self, m: Metric) -> Option<PairedDiff> {
        self.diffs[m as usize]
    }

    /// `{"reference": label, <metric key>: {"diff", "ci_low", "ci_high"}, ...}`.
    pub fn to_json(&self) -> Value {
        versus_json(self)
    }

    /// Reads what [`Versus::to_json`] wrote.
    pub fn from_json(v: &Value) -> Result<Versus, SummaryParseError> {
        let reference: PolicyLabel = v
            .get("reference")
            .and_then(Value::as_str)
            .ok_or(SummaryParseError("no reference".into()))?
            .parse()
            .map_err(|e: UnknownPolicy| SummaryParseError(e.to_string()))?;
        let mut diffs = [None; N_METRICS];
        for (def, d) in METRICS.iter().zip(diffs.iter_mut()) {
            *d = v.get(def.key).and_then(|d| {
                Some(PairedDiff {
                    diff: d.get("diff")?.as_f64()?,
                    ci_low: d.get("ci_low").and_then(Value::as_f64),
                    ci_high: d.get("ci_high").and_then(Value::as_f64),
                    p_value: d.get("p_value").and_then(Value::as_f64),
                })
            });
        }
        Ok(Versus { reference, diffs })
    }
}

/// The share of the fastest-to-oracle gap a policy closes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GapClosed {
    /// The metric the gap is measured on.
    pub metric: Metric,
    /// `sum(F - P) / sum(F - O)`, `None` unless the gap is [`GapState::Measured`].
    pub value: Option<f64>,
    /// Its paired-bootstrap interval.
    pub ci: Option<[f64; 2]>,
    /// Why there is (or is not) a number.
    pub state: GapState,
}

/// Whether a fastest-to-oracle gap exists to be closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GapState {
    /// The paired 95 % interval of `F - O` contains 0 (or there is no `fastest`/`oracle` run,
    /// or fewer than two windows): no gap to close. JSON `"gap": "none"`.
    #[default]
    None,
    /// The row is the analytic bound, not a policy. JSON `"gap": "not a policy"`.
    NotAPolicy,
    /// A gap exists but the share closed is too uncertain to state: its 95 % interval reaches
    /// outside [`GAP_PRECISE_RANGE`] (or has no interval), as happens when the gap is a few
    /// interruptions over the windows. JSON `"gap": "imprecise"`.
    Imprecise,
    /// The gap is measured: `value` is the share closed.
    Measured,
}

/// The range a measured share's interval must stay within to be printed as a number: a share
/// is 0 for `fastest` and 1 for the oracle, so an interval past `[-0.5, 1.5]` says no more
/// than "imprecise".
pub const GAP_PRECISE_RANGE: [f64; 2] = [-0.5, 1.5];

impl Default for GapClosed {
    /// No gap, on the default gap metric.
    fn default() -> GapClosed {
        GapClosed {
            metric: DEFAULT_GAP_METRIC,
            value: None,
            ci: None,
            state: GapState::None,
        }
    }
}

impl GapClosed {
    /// The share as a table shows it: `number(value, interval)` when measured, else why there
    /// is none ([`GapState::as_str`]).
    pub fn text(&self, number: impl FnOnce(f64, Option<[f64; 2]>) -> String) -> String {
        match (self.state, self.value) {
            (GapState::Measured, Some(v)) => number(v, self.ci),
            (state, _) => state.as_str().unwrap_or("none").to_string(),
        }
    }
}

impl GapState {
    /// Why there is no measured value (`none`: no gap, `not a policy`), or `None` when measured.
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            GapState::None => Some("none"),
            GapState::NotAPolicy => Some("not a policy"),
            GapState::Imprecise => Some("imprecise"),
            GapState::Measured => None,
        }
    }
}

/// One row of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySummary {
    /// Policy and parameter point.
    pub label: PolicyLabel,
    /// Requests over all runs of this row.
    pub requests: u64,
    /// Windows with a run.
    pub windows: usize,
    /// Estimates in [`METRICS`] order.
    pub metrics: [Estimate; N_METRICS],
    /// Mean unplanned interruptions per window by the end cause behind them.
    pub interruptions_by_cause: BTreeMap<String, f64>,
    /// Mean dollars per window by pool (empty when no pool has a price).
    pub dollars_by_pool: BTreeMap<String, f64>,
    /// Mean recompute preemptions per window because a node's KV ran out (the iteration
    /// model; 0 under the simple model).
    pub kv_preemptions: f64,
    /// Mean placements per window priced without the engine's forecast
    /// ([`super::output::RunStats::forecast_fallbacks`]).
    pub forecast_fallbacks: f64,
    /// Paired differences against `fastest` (absent for `fastest` itself).
    pub vs_fastest: Option<Versus>,
    /// Paired differences against the best hazard-blind baseline (absent for that baseline).
    pub vs_best_blind: Option<Versus>,
    /// Share of the fastest-to-oracle gap closed.
    pub gap_closed: GapClosed,
    /// How well the policy's forecasts matched the engine (`None` when nothing was scored).
    pub forecast: Option<ForecastCalibration>,
}

/// One row of the interruption forecast's reliability table.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReliabilityRow {
    /// Lower edge of the decile of prediction.
    pub from: f64,
    /// Upper edge.
    pub to: f64,
    /// Requests scored in it.
    pub n: u64,
    /// Their mean predicted interruption probability.
    pub predicted: f64,
    /// The share of them that was lost.
    pub observed: f64,
}

/// A policy's forecast calibration over all its runs of a comparison: its `T` at the first
/// placement against the realised service time of the requests served there without
/// interruption or move (`t_*`), and its predicted interruption probability `1 - S(T | a)`
/// against whether the first placement was lost (censored placements not scored). A
/// `t_ratio_median` far from 1 says the load model is wrong; a poor `interruption_brier`
/// with a good `T` says the hazard model is.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForecastCalibration {
    /// Requests scored for `T`.
    pub t_n: u64,
    /// Median of `predicted T / realised`.
    pub t_ratio_median: Option<f64>,
    /// Mean absolute percentage error of `T`, as a fraction.
    pub t_mape: Option<f64>,
    /// Requests scored for the interruption forecast.
    pub interruption_n: u64,
    /// Brier score of the interruption forecast.
    pub interruption_brier: Option<f64>,
    /// Share of the scored placements that were lost.
    pub interruption_rate: Option<f64>,
    /// Mean predicted interruption probability of the scored placements.
    pub interruption_predicted: Option<f64>,
    /// The reliability table: deciles of prediction that hold requests.
    pub reliability: Vec<ReliabilityRow>,
}

impl ForecastCalibration {
    /// The summary of merged run calibrations; `None` when nothing was scored.
    pub fn from_calibration(c: &Calibration) -> Option<ForecastCalibration> {
        if c.t_n() == 0 && c.p_n == 0 {
            return None;
        }
        let nb = c.bins.len() as f64;
        let predicted_sum: f64 = c.bins.iter().map(|b| b.predicted_sum).sum();
        Some(ForecastCalibration {
            t_n: c.t_n() as u64,
            t_ratio_median: c.t_ratio_median(),
            t_mape: c.t_mape(),
            interruption_n: c.p_n,
            interruption_brier: c.interruption_brier(),
            interruption_rate: c.interruption_rate(),
            interruption_predicted: (c.p_n > 0).then(|| predicted_sum / c.p_n as f64),
            reliability: c
                .bins
                .iter()
                .enumerate()
                .filter(|(_, b)| b.n > 0)
                .map(|(k, b)| ReliabilityRow {
                    from: k as f64 / nb,
                    to: (k + 1) as f64 / nb,
                    n: b.n,
                    predicted: b.predicted_sum / b.n as f64,
                    observed: b.lost as f64 / b.n as f64,
                })
                .collect(),
        })
    }
}

impl PolicySummary {
    /// The estimate of one metric.
    pub fn get(&self, m: Metric) -> Estimate {
        self.metrics[m as usize]
    }

    /// The JSON object of the row: `policy` (the label), `kind`, `param`, `requests`,
    /// `windows`, each metric key with `<key>_ci = [low, high]` when an interval exists,
    /// `interruptions_by_cause`, `dollars_by_pool` (when priced), `kv_preemptions`, `forecast_fallbacks`, `vs_fastest` and `vs_best_blind` (objects keyed by metric,
    /// each `{"diff", "ci_low", "ci_high"}`, with `reference`), `gap_closed` (number or null),
    /// `gap_closed_ci`, and `"gap": "none"` when there is no gap to close.
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("policy".into(), json!(self.label.to_string()));
        o.insert("kind".into(), json!(self.label.kind.name()));
        o.insert("param".into(), json!(self.label.param));
        o.insert("requests".into(), json!(self.requests));
        o.insert("windows".into(), json!(self.windows));
        for (def, e) in METRICS.iter().zip(&self.metrics) {
            o.insert(def.key.into(), json!(e.value));
            if let Some(ci) = e.ci {
                o.insert(format!("{}_ci", def.key), json!(ci));
            }
        }
        o.insert(
            "interruptions_by_cause".into(),
            json!(self.interruptions_by_cause),
        );
        if !self.dollars_by_pool.is_empty() {
            o.insert("dollars_by_pool".into(), json!(self.dollars_by_pool));
        }
        o.insert("kv_preemptions".into(), json!(self.kv_preemptions));
        o.insert("forecast_fallbacks".into(), json!(self.forecast_fallbacks));
        for (key, v) in [
            ("vs_fastest", &self.vs_fastest),
            ("vs_best_blind", &self.vs_best_blind),
        ] {
            if let Some(v) = v {
                o.insert(key.into(), versus_json(v));
            }
        }
        o.insert("gap_metric".into(), json!(self.gap_closed.metric.key()));
        o.insert("gap_closed".into(), json!(self.gap_closed.value));
        if let Some(ci) = self.gap_closed.ci {
            o.insert("gap_closed_ci".into(), json!(ci));
        }
        if let Some(why) = self.gap_closed.state.as_str() {
            o.insert("gap".into(), json!(why));
        }
        if let Some(f) = &self.forecast {
            o.insert("forecast".into(), json!(f));
        }
        Value::Object(o)
    }

    /// Reads a row written by [`PolicySummary::to_json`].
    pub fn from_json(v: &Value) -> Result<PolicySummary, SummaryParseError> {
        let o = v
            .as_object()
            .ok_or(SummaryParseError("not an object".into()))?;
        let label: PolicyLabel = o
            .get("policy")
            .and_then(Value::as_str)
            .ok_or(SummaryParseError("no policy".into()))?
            .parse()
            .map_err(|e: UnknownPolicy| SummaryParseError(e.to_string()))?;
        let pair = |v: Option<&Value>| -> Option<[f64; 2]> {
            let a = v?.as_array()?;
            Some([a.first()?.as_f64()?, a.get(1)?.as_f64()?])
        };
        let mut metrics = [Estimate::default(); N_METRICS];
        for (def, e) in METRICS.iter().zip(metrics.iter_mut()) {
            e.value = o.get(def.key).and_then(Value::as_f64);
            e.ci = pair(o.get(&format!("{}_ci", def.key)));
        }
        let versus = |key: &str| -> Result<Option<Versus>, SummaryParseError> {
            match o.get(key) {
                Some(v) if v.is_object() => Versus::from_json(v)
                    .map(Some)
                    .map_err(|e| SummaryParseError(format!("{key}: {}", e.0))),
                _ => Ok(None),
            }
        };
        Ok(PolicySummary {
            label,
            requests: o.get("requests").and_then(Value::as_u64).unwrap_or(0),
            windows: o.get("windows").and_then(Value::as_u64).unwrap_or(0) as usize,
            metrics,
            interruptions_by_cause: named_values(o.get("interruptions_by_cause")),
            dollars_by_pool: named_values(o.get("dollars_by_pool")),
            kv_preemptions: o
                .get("kv_preemptions")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            forecast_fallbacks: o
                .get("forecast_fallbacks")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            vs_fastest: versus("vs_fastest")?,
            vs_best_blind: versus("vs_best_blind")?,
            gap_closed: GapClosed {
                // Runs stored before the gap metric was recorded measured mean completion.
                metric: match o.get("gap_metric").and_then(Value::as_str) {
                    Some(k) => Metric::from_key(k)
                        .ok_or(SummaryParseError(format!("unknown gap metric {k:?}")))?,
                    None => Metric::MeanCompletion,
                },
                value: o.get("gap_closed").and_then(Value::as_f64),
                ci: pair(o.get("gap_closed_ci")),
                state: match o.get("gap").and_then(Value::as_str) {
                    Some("not a policy") => GapState::NotAPolicy,
                    Some("imprecise") => GapState::Imprecise,
                    Some(_) => GapState::None,
                    None => GapState::Measured,
                },
            },
            forecast: match o.get("forecast") {
                Some(v) if v.is_object() => Some(
                    serde_json::from_value(v.clone())
                        .map_err(|e| SummaryParseError(format!("forecast: {e}")))?,
                ),
                _ => None,
            },
        })
    }
}

impl serde::Serialize for PolicySummary {
    /// Serialises as [`PolicySummary::to_json`].
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// A stored comparison row that cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("comparison row: {0}")]
pub struct SummaryParseError(pub String);

/// A JSON object of numbers as a map (empty when absent; non-numbers skipped).
fn named_values(v: Option<&Value>) -> BTreeMap<String, f64> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn versus_json(v: &Versus) -> Value {
    let mut o = Map::new();
    o.insert("reference".into(), json!(v.reference.to_string()));
    for (def, d) in METRICS.iter().zip(&v.diffs) {
        if let Some(d) = d {
            o.insert(
                def.key.into(),
                json!({"diff": d.diff, "ci_low": d.ci_low, "ci_high": d.ci_high, "p_value": d.p_value}),
            );
        }
    }
    Value::Object(o)
}

/// The hazard-blind baselines: they know speed and load, but neither age, per-node history
/// nor the future.
pub const HAZARD_BLIND: [PolicyKind; 3] = [
    PolicyKind::Fastest,
    PolicyKind::LeastLoaded,
    PolicyKind::Random,
];

fn policy_rank(k: PolicyKind) -> usize {
    PolicyKind::ALL
        .iter()
        .position(|&x| x == k)
        .unwrap_or(usize::MAX)
}

/// Per-window values of one row: window -> metric vector (mean over seeds).
type WindowValues = BTreeMap<usize, [Option<f64>; N_METRICS]>;

struct Row {
    label: PolicyLabel,
    requests: u64,
    windows: WindowValues,
    causes: BTreeMap<String, f64>,
    pools: BTreeMap<String, f64>,
    kv_preemptions: f64,
    forecast_fallbacks: f64,
    calibration: Calibration,
}

fn seed_for(opts: &AggregateOptions, salt: u64) -> u64 {
    opts.seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Paired differences `row - reference` per metric over the windows both have.
fn versus(row: &WindowValues, reference: &Row) -> Versus {
    versus_windows(row, &reference.windows, &reference.label)
}

fn versus_windows(row: &WindowValues, reference: &WindowValues, label: &PolicyLabel) -> Versus {
    let mut diffs = [None; N_METRICS];
    for (m, d) in diffs.iter_mut().enumerate() {
        let xs: Vec<f64> = row
            .iter()
            .filter_map(|(w, v)| Some(v[m]? - reference.get(w)?[m]?))
            .collect();
        *d = mean(&xs).map(|diff| {
            let t = paired_t(&xs);
            PairedDiff {
                diff,
                ci_low: t.map(|t| t.ci[0]),
                ci_high: t.map(|t| t.ci[1]),
                p_value: t.and_then(|t| t.p),
            }
        });
    }
    Versus {
        reference: label.clone(),
        diffs,
    }
}

/// `row` minus the best of `candidates`, per metric: the best chosen on the windows all of
/// them share (by its mean, in the metric's better direction; lower for a metric with
/// neither), then the paired t test against it with a Bonferroni correction for the choice
/// among `k` candidates: p-value `min(1, k p)` and the studentized interval at level
/// `1 - 0.05 / k` (simultaneous over the candidates, so it covers whichever is chosen). A
/// percentile bootstrap with the choice inside each resample rejected identical policies in
/// 14 % of A/A cells at a nominal 5 % (ten windows are too few for percentile intervals).
/// `label` names the reference (the best on mean completion over all windows).
fn versus_best_of(row: &WindowValues, candidates: &[&Row], label: &PolicyLabel) -> Versus {
    let mut diffs = [None; N_METRICS];
    for (m, d) in diffs.iter_mut().enumerate() {
        let higher = METRICS[m].better == Better::Higher;
        // Windows where the row and every candidate have a value.
        let table: Vec<(f64, Vec<f64>)> = row
            .iter()
            .filter_map(|(w, v)| {
                let cs: Option<Vec<f64>> = candidates
                    .iter()
                    .map(|c| c.windows.get(w).and_then(|x| x[m]))
                    .collect();
                Some((v[m]?, cs?))
            })
            .collect();
        let n = table.len();
        let k = candidates.len();
        if n == 0 || k == 0 {
            continue;
        }
        let sums: Vec<f64> = (0..k)
            .map(|j| table.iter().map(|(_, c)| c[j]).sum::<f64>())
            .collect();
        let better = |a: f64, b: f64| if higher { a > b } else { a < b };
        let best = (1..k).fold(0, |b, j| if better(sums[j], sums[b]) { j } else { b });
        let xs: Vec<f64> = table.iter().map(|(r, c)| r - c[best]).collect();
        let diff = xs.iter().sum::<f64>() / n as f64;
        let t = paired_t_at(&xs, 0.05 / k as f64);
        *d = Some(PairedDiff {
            diff,
            ci_low: t.map(|t| t.ci[0]),
            ci_high: t.map(|t| t.ci[1]),
            p_value: t.and_then(|t| t.p).map(|p| (p * k as f64).min(1.0)),
        });
    }
    Versus {
        reference: label.clone(),
        diffs,
    }
}

/// Per-window values (mean over seeds) of the runs of `label`, by window index, in
/// [`METRICS`] order.
pub fn window_values(runs: &[RunMetrics], label: &PolicyLabel) -> WindowValues {
    let mut per_seed: BTreeMap<usize, Vec<[Option<f64>; N_METRICS]>> = BTreeMap::new();
    for r in runs {
        if PolicyLabel::with_param(r.policy, &r.param_label) == *label {
            per_seed.entry(r.window).or_default().push(r.summary.values);
        }
    }
    per_seed
        .iter()
        .map(|(&w, seeds)| (w, seed_means(seeds)))
        .collect()
}

/// The mean over seeds of each metric (`None` where no seed has it).
fn seed_means(seeds: &[[Option<f64>; N_METRICS]]) -> [Option<f64>; N_METRICS] {
    let mut out = [None; N_METRICS];
    for (m, o) in out.iter_mut().enumerate() {
        let xs: Vec<f64> = seeds.iter().filter_map(|v| v[m]).collect();
        *o = mean(&xs);
    }
    out
}

/// Paired differences `a - b` per metric, by window (each window's value the mean over its
/// seeds), over the windows both labels ran, with the same paired t test as the comparison
/// rows; `None` when either label has no run. This pairs any two rows of a comparison, e.g.
/// `hazard --overlap` with `hazard` (across parameter points) or `hazard` with `uptime`.
pub fn paired(runs: &[RunMetrics], a: &PolicyLabel, b: &PolicyLabel) -> Option<Versus> {
    let wa = window_values(runs, a);
    let wb = window_values(runs, b);
    (!wa.is_empty() && !wb.is_empty()).then(|| versus_windows(&wa, &wb, b))
}

/// Aggregates runs into comparison rows, one per (parameter point, policy). Runs are first
/// sorted by (parameter point, policy, window, seed), so the result does not depend on the
/// order they were produced in. Output order: parameter point, then [`PolicyKind::ALL`].
pub fn aggregate(runs: &[RunMetrics], opts: &AggregateOptions) -> Vec<PolicySummary> {
    let mut runs: Vec<&RunMetrics> = runs.iter().collect();
    runs.sort_by_key(|r| (r.param, policy_rank(r.policy), r.window, r.seed));
    // (param, rank) -> window -> seeds' values.
    type PerSeed = BTreeMap<usize, Vec<[Option<f64>; N_METRICS]>>;
    type Group<'a> = (PolicyLabel, u64, PerSeed, Vec<&'a RunMetrics>);
    let mut groups: BTreeMap<(usize, usize), Group> = BTreeMap::new();
    for r in &runs {
        let g = groups
            .entry((r.param, policy_rank(r.policy)))
            .or_insert_with(|| {
                (
                    PolicyLabel::with_param(r.policy, &r.param_label),
                    0,
                    BTreeMap::new(),
                    Vec::new(),
                )
            });
        g.1 += r.summary.requests;
        g.2.entry(r.window).or_default().push(r.summary.values);
        g.3.push(r);
    }
    let rows: BTreeMap<(usize, usize), Row> = groups
        .into_iter()
        .map(|(key, (label, requests, per_seed, members))| {
            let windows: WindowValues = per_seed
                .iter()
                .map(|(&w, seeds)| (w, seed_means(seeds)))
                .collect();
            // Interruptions by cause: total over runs / number of runs = mean per window.
            let mut causes: BTreeMap<String, f64> = BTreeMap::new();
            for r in &members {
                for (c, n) in &r.summary.interruptions_by_cause {
                    *causes.entry(c.clone()).or_insert(0.0) += n;
                }
            }
            // Dollars by pool: the same mean per run.
            let mut pools: BTreeMap<String, f64> = BTreeMap::new();
            for r in &members {
                for (p, d) in &r.summary.dollars_by_pool {
                    *pools.entry(p.clone()).or_insert(0.0) += d;
                }
            }
            let n_runs = members.len().max(1) as f64;
            let kv_preemptions = members
                .iter()
                .map(|r| r.summary.kv_preemptions)
                .sum::<f64>()
                / n_runs;
            let forecast_fallbacks = members
                .iter()
                .map(|r| r.summary.forecast_fallbacks)
                .sum::<f64>()
                / n_runs;
            causes.values_mut().for_each(|v| *v /= n_runs);
            pools.values_mut().for_each(|v| *v /= n_runs);
            let mut calibration = Calibration::default();
            for r in &members {
                calibration.merge(&r.summary.calibration);
            }
            (
                key,
                Row {
                    label,
                    requests,
                    windows,
                    causes,
                    pools,
                    kv_preemptions,
                    forecast_fallbacks,
                    calibration,
                },
            )
        })
        .collect();

    let mean_of = |row: &Row| -> Option<f64> {
        let xs: Vec<f64> = row
            .windows
            .values()
            .filter_map(|v| v[Metric::MeanCompletion as usize])
            .collect();
        mean(&xs)
    };
    let mut out = Vec::with_capacity(rows.len());
    // A reference not run at a parameter point is the same there as at the first point (see
    // `ParamPoint::policies`).
    let at = |param: usize, k: PolicyKind| {
        rows.get(&(param, policy_rank(k)))
            .or_else(|| rows.get(&(0, policy_rank(k))))
    };
    for (&(param, _), row) in &rows {
        let fastest = at(param, PolicyKind::Fastest);
        let oracle = at(param, PolicyKind::Oracle);
        let blinds: Vec<&Row> = HAZARD_BLIND.iter().filter_map(|&k| at(param, k)).collect();
        let best_blind = blinds
            .iter()
            .filter_map(|r| Some((mean_of(r)?, *r)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, r)| r);
        let mut metrics = [Estimate::default(); N_METRICS];
        for (m, e) in metrics.iter_mut().enumerate() {
            let xs: Vec<f64> = row.windows.values().filter_map(|v| v[m]).collect();
            e.value = mean(&xs);
            e.ci = bootstrap_mean_ci(&xs, opts.resamples, seed_for(opts, m as u64));
        }
        let vs = |reference: Option<&Row>| -> Option<Versus> {
            let r = reference?;
            (r.label != row.label).then(|| versus(&row.windows, r))
        };
        out.push(PolicySummary {
            label: row.label.clone(),
            requests: row.requests,
            windows: row.windows.len(),
            metrics,
            interruptions_by_cause: row.causes.clone(),
            dollars_by_pool: row.pools.clone(),
            kv_preemptions: row.kv_preemptions,
            forecast_fallbacks: row.forecast_fallbacks,
            vs_fastest: vs(fastest),
            // A blind row is compared with the best of the *other* blind baselines (with
            // itself among the candidates its difference could never be negative).
            vs_best_blind: best_blind.filter(|b| b.label != row.label).map(|b| {
                let others: Vec<&Row> = blinds
                    .iter()
                    .copied()
                    .filter(|c| c.label != row.label)
                    .collect();
                versus_best_of(&row.windows, &others, &b.label)
            }),
            forecast: ForecastCalibration::from_calibration(&row.calibration),
            gap_closed: match (fastest, oracle) {
                _ if row.label.kind == PolicyKind::Bound => GapClosed {
                    metric: opts.gap_metric,
                    state: GapState::NotAPolicy,
                    ..GapClosed::default()
                },
                (Some(f), Some(o)) => gap_closed(f, o, row, opts),
                _ => GapClosed {
                    metric: opts.gap_metric,
                    ..GapClosed::default()
                },
            },
        });
    }
    out
}

/// `sum_w (F_w - P_w) / sum_w (F_w - O_w)` on [`AggregateOptions::gap_metric`] over the
/// windows all three have, when the paired interval of `F - O` excludes 0.
fn gap_closed(f: &Row, o: &Row, p: &Row, opts: &AggregateOptions) -> GapClosed {
    let k = opts.gap_metric as usize;
    let none = GapClosed {
        metric: opts.gap_metric,
        ..GapClosed::default()
    };
    let (mut num, mut den) = (Vec::new(), Vec::new());
    for (w, fv) in &f.windows {
        let (Some(fm), Some(om), Some(pm)) = (
            fv[k],
            o.windows.get(w).and_then(|v| v[k]),
            p.windows.get(w).and_then(|v| v[k]),
        ) else {
            continue;
        };
        num.push(fm - pm);
        den.push(fm - om);
    }
    // The gate: the paired t interval of `F - O` (the interval every paired difference
    // states) excludes 0; without spread there is no test, so no gap is claimed.
    let gap = paired_t(&den);
    if !gap.is_some_and(|t| t.p.is_some() && (t.ci[0] > 0.0 || t.ci[1] < 0.0)) {
        return none;
    }
    let value = num.iter().sum::<f64>() / den.iter().sum::<f64>();
    let ci = bootstrap_ratio_ci(&num, &den, opts.resamples, seed_for(opts, 201));
    let [lo, hi] = GAP_PRECISE_RANGE;
    if !value.is_finite() || !ci.is_some_and(|[a, b]| a >= lo && b <= hi) {
        return GapClosed {
            state: GapState::Imprecise,
            ..none
        };
    }
    GapClosed {
        value: Some(value),
        ci,
        state: GapState::Measured,
        ..none
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::metrics::RunSummary;

    fn run(policy: PolicyKind, window: usize, mean_s: f64) -> RunMetrics {
        let mut values = [Some(0.0); N_METRICS];
        values[Metric::MeanCompletion as usize] = Some(mean_s);
        RunMetrics {
            policy,
            window,
            seed: 1,
            param: 0,
            param_label: String::new(),
            summary: RunSummary {
                requests: 10,
                values,
                interruptions_by_cause: BTreeMap::new(),
                calibration: Default::default(),
                dollars_by_pool: BTreeMap::new(),
                good_tokens: 0.0,
                kv_preemptions: 0.0,
                forecast_fallbacks: 0.0,
                prefix: [None; 2],
            },
        }
    }

    #[test]
    fn labels_round_trip() {
        for s in ["hazard", "hazard --overlap", "least-loaded", "oracle --h2"] {
            let l: PolicyLabel = s.parse().expect("label");
            assert_eq!(l.to_string(), s);
        }
        assert_eq!(
            "hazard --default".parse::<PolicyLabel>(),
            Ok(PolicyLabel::new(PolicyKind::Hazard))
        );
        assert!("fastets".parse::<PolicyLabel>().is_err());
    }

    #[test]
    fn gap_closed_is_a_ratio_of_sums_and_none_without_a_gap() {
        // fastest 10, oracle 6, hazard 8 in every window except noise (the oracle's of mean
        // 0, so that the gap has spread to test): gap closed 0.5.
        let spread = [0.1, -0.1, 0.2, -0.2, 0.05, -0.05];
        let mut runs = Vec::new();
        for (w, jitter) in spread.iter().enumerate() {
            let e = w as f64 * 0.01;
            runs.push(run(PolicyKind::Fastest, w, 10.0 + e));
            runs.push(run(PolicyKind::Oracle, w, 6.0 + e + jitter));
            runs.push(run(PolicyKind::Hazard, w, 8.0 + e));
        }
        let on_mean = AggregateOptions {
            gap_metric: Metric::MeanCompletion,
            ..AggregateOptions::default()
        };
        // A gap without spread (the oracle exactly 4 s ahead in every window) is no test:
        // no gap is claimed.
        let flat: Vec<RunMetrics> = (0..6)
            .flat_map(|w| {
                [
                    run(PolicyKind::Fastest, w, 10.0 + w as f64),
                    run(PolicyKind::Oracle, w, 6.0 + w as f64),
                    run(PolicyKind::Hazard, w, 8.0 + w as f64),
                ]
            })
            .collect();
        for r in aggregate(&flat, &on_mean) {
            assert_eq!(r.gap_closed.state, GapState::None, "{}", r.label);
        }
        let rows = aggregate(&runs, &on_mean);
        let hazard = rows
            .iter()
            .find(|r| r.label.kind == PolicyKind::Hazard)
            .expect("hazard row");
        assert!((hazard.gap_closed.value.unwrap_or(f64::NAN) - 0.5).abs() < 1e-12);
        assert_eq!(hazard.to_json()["gap_metric"], "mean_completion_s");
        // The default metric is the unplanned interruptions, equal (0) everywhere here.
        let rows = aggregate(&runs, &AggregateOptions::default());
        assert!(rows.iter().all(|r| r.gap_closed.value.is_none()
            && r.gap_closed.metric == Metric::UnplannedInterruptions));
        let d = hazard
            .vs_fastest
            .as_ref()
            .and_then(|v| v.get(Metric::MeanCompletion))
            .expect("paired diff");
        // hazard is exactly 2 s ahead in every window: no spread, no test.
        assert!((d.diff + 2.0).abs() < 1e-12 && !d.significant() && d.p_value.is_none());

        // No gap: the oracle ties fastest up to noise of both signs.
        let mut runs = Vec::new();
        for w in 0..6 {
            let e = if w % 2 == 0 { 0.001 } else { -0.001 };
            runs.push(run(PolicyKind::Fastest, w, 10.0));
            runs.push(run(PolicyKind::Oracle, w, 10.0 + e));
            runs.push(run(PolicyKind::Hazard, w, 9.0));
        }
        let rows = aggregate(&runs, &on_mean);
        for r in &rows {
            assert_eq!(r.gap_closed.value, None, "{}", r.label);
            assert_eq!(r.to_json()["gap"], "none");
        }
    }

    #[test]
    fn json_round_trips() {
        let mut runs = Vec::new();
        for w in 0..4 {
            runs.push(run(PolicyKind::Fastest, w, 10.0 + w as f64));
            runs.push(run(PolicyKind::Random, w, 11.0 + w as f64));
            runs.push(run(PolicyKind::Oracle, w, 5.0));
        }
        for row in aggregate(&runs, &AggregateOptions::default()) {
            let back = PolicySummary::from_json(&row.to_json()).expect("parse");
            assert_eq!(back, row);
        }
    }
}

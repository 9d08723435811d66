//! A decision's inputs as data, and the decision again from them.
//!
//! [`DecisionInputs`] holds everything a [`Policy`] read for one placement or migration
//! check: the request, each node it visited (the view's fields, its curve as an index into a
//! table of [`CurveSpec`]s, its known remaining session), the workload's reuse gap, and every
//! question the decision asked the service-time forecast with its answer ([`LoadsCall`],
//! recorded by [`RecordingLoads`]). [`DecisionInputs::decide`] takes the same decision again
//! from them, answering the forecast from the record ([`TableLoads`]): the replay's decision
//! log carries them (`replay --decision-log`) so that another implementation of the policy
//! (the Python package's `HazardAwarePolicy`) can be held to the same choices and costs.
//!
//! [`GivenLoads`] is the forecast a host simulator gives: one answer per node, whatever the
//! newcomer.

use std::cell::RefCell;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::model::{ClusterView, Foresight, NodeIdx, NodeView, RequestView};
use super::policies::{Explanation, Policy};
use super::retained::ReuseGap;
use super::service::{Marginal, NodeLoads, ServiceTime, Waiting};
use crate::survival::curve::{nonneg, ConditionalSurvival};

/// One node as a decision saw it ([`NodeView`]'s fields), with its index in the run's fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedNode {
    /// The node's index in the fleet.
    pub idx: NodeIdx,
    /// [`NodeView::up`].
    pub up: bool,
    /// [`NodeView::age_s`].
    #[serde(with = "num")]
    pub age_s: f64,
    /// [`NodeView::slots`].
    pub slots: u32,
    /// [`NodeView::slots_used`].
    pub slots_used: u32,
    /// [`NodeView::kv_capacity_tokens`].
    pub kv_capacity_tokens: u64,
    /// [`NodeView::kv_used_tokens`].
    pub kv_used_tokens: u64,
    /// [`NodeView::queue_wait_s`].
    #[serde(with = "num")]
    pub queue_wait_s: f64,
    /// [`NodeView::decode_tok_s`].
    #[serde(with = "num")]
    pub decode_tok_s: f64,
    /// [`NodeView::prefill_tok_s`].
    #[serde(with = "num")]
    pub prefill_tok_s: f64,
    /// [`NodeView::bandwidth_bytes_s`].
    #[serde(with = "num")]
    pub bandwidth_bytes_s: f64,
    /// [`NodeView::exp_rate_per_s`].
    #[serde(with = "num")]
    pub exp_rate_per_s: f64,
    /// [`NodeView::cached_tokens`].
    pub cached_tokens: u64,
    /// [`NodeView::queued`].
    pub queued: u32,
    /// [`NodeView::cache_tokens`].
    pub cache_tokens: u64,
    /// The node's curve: an index into the run's curve table.
    pub curve: usize,
    /// What the decision's foresight knew of the node's remaining session, seconds.
    #[serde(with = "opt_num")]
    pub remaining_up_s: Option<f64>,
    /// The forecast's unloaded decode rate of the node (its lower bounds' rate).
    #[serde(with = "num")]
    pub unloaded_decode_tok_s: f64,
}

/// What a forecast question asked ([`NodeLoads`]' methods).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ask {
    /// [`NodeLoads::forecast_newcomer`].
    Own,
    /// [`NodeLoads::forecast_newcomer_marginal`].
    Marginal,
    /// [`NodeLoads::forecast_newcomer_stationary`].
    Stationary,
    /// [`NodeLoads::forecast_resident`].
    Resident,
    /// [`NodeLoads::forecast_resident_stationary`].
    ResidentStationary,
    /// [`NodeLoads::stationary_bound`].
    Bound,
}

/// A newcomer as a forecast question has it ([`Waiting`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoggedWaiting {
    /// [`Waiting::kv`].
    pub kv: u64,
    /// [`Waiting::prompt`].
    pub prompt: u64,
    /// [`Waiting::start_s`].
    #[serde(with = "num")]
    pub start_s: f64,
    /// [`Waiting::prefill`].
    pub prefill: bool,
    /// [`Waiting::stall_s`].
    #[serde(with = "num")]
    pub stall_s: f64,
    /// [`Waiting::tokens`].
    #[serde(with = "num")]
    pub tokens: f64,
    /// [`Waiting::done`].
    #[serde(with = "num")]
    pub done: f64,
    /// [`Waiting::target`].
    #[serde(with = "num")]
    pub target: f64,
    /// [`Waiting::cached`].
    pub cached: u64,
}

impl From<Waiting> for LoggedWaiting {
    fn from(w: Waiting) -> LoggedWaiting {
        LoggedWaiting {
            kv: w.kv,
            prompt: w.prompt,
            start_s: w.start_s,
            prefill: w.prefill,
            stall_s: w.stall_s,
            tokens: w.tokens,
            done: w.done,
            target: w.target,
            cached: w.cached,
        }
    }
}

/// One forecast question and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadsCall {
    /// Which question.
    pub ask: Ask,
    /// The node asked about (its index in the fleet).
    pub node: NodeIdx,
    /// The newcomer (the newcomer questions and the bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newcomer: Option<LoggedWaiting>,
    /// The resident request's id (the resident questions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The bound's lower bound of the newcomer's start, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_num")]
    pub start_lb: Option<f64>,
    /// `[start_s, total_s, imposed_s]` (the bound: `[bound, NaN, NaN]`; the own and resident
    /// questions: `imposed_s` NaN); `None`: the forecast had no answer.
    #[serde(with = "opt_triple")]
    pub answer: Option<[f64; 3]>,
}

impl LoadsCall {
    /// Whether this call asked `ask` about `node`, with `newcomer`, `id` and `start_lb`.
    fn asks(&self, ask: Ask, node: NodeIdx, newcomer: Option<Waiting>, id: Option<u64>) -> bool {
        self.ask == ask
            && self.node == node
            && self.newcomer == newcomer.map(LoggedWaiting::from)
            && self.id == id
    }
}

/// A [`NodeLoads`] that answers as `inner` does and records every question and answer.
pub struct RecordingLoads<'a> {
    inner: &'a dyn NodeLoads,
    calls: RefCell<Vec<LoadsCall>>,
}

impl<'a> RecordingLoads<'a> {
    /// Records the questions put to `inner`.
    pub fn new(inner: &'a dyn NodeLoads) -> RecordingLoads<'a> {
        RecordingLoads {
            inner,
            calls: RefCell::new(Vec::new()),
        }
    }

    /// The questions asked, in order.
    pub fn into_calls(self) -> Vec<LoadsCall> {
        self.calls.into_inner()
    }

    fn push(
        &self,
        ask: Ask,
        node: NodeIdx,
        newcomer: Option<Waiting>,
        id: Option<u64>,
        start_lb: Option<f64>,
        answer: Option<[f64; 3]>,
    ) {
        self.calls.borrow_mut().push(LoadsCall {
            ask,
            node,
            newcomer: newcomer.map(LoggedWaiting::from),
            id,
            start_lb,
            answer,
        });
    }
}

fn own(st: ServiceTime) -> [f64; 3] {
    [st.start_s, st.total_s, f64::NAN]
}

fn marginal(m: Marginal) -> [f64; 3] {
    [m.time.start_s, m.time.total_s, m.imposed_s]
}

/// A recorded answer `[start_s, total_s, imposed_s]` as the forecast's own answer.
pub fn as_time(a: [f64; 3]) -> ServiceTime {
    ServiceTime {
        start_s: a[0],
        total_s: a[1],
    }
}

/// A recorded answer `[start_s, total_s, imposed_s]` as the marginal (or stationary) answer.
pub fn as_marginal(a: [f64; 3]) -> Marginal {
    Marginal {
        time: as_time(a),
        imposed_s: a[2],
    }
}

impl NodeLoads for RecordingLoads<'_> {
    fn forecast_newcomer(&self, node: usize, w: Waiting) -> Option<ServiceTime> {
        let got = self.inner.forecast_newcomer(node, w);
        self.push(Ask::Own, node, Some(w), None, None, got.map(own));
        got
    }
    fn forecast_newcomer_marginal(&self, node: usize, w: Waiting) -> Option<Marginal> {
        let got = self.inner.forecast_newcomer_marginal(node, w);
        self.push(Ask::Marginal, node, Some(w), None, None, got.map(marginal));
        got
    }
    fn forecast_resident(&self, node: usize, id: u64) -> Option<ServiceTime> {
        let got = self.inner.forecast_resident(node, id);
        self.push(Ask::Resident, node, None, Some(id), None, got.map(own));
        got
    }
    fn forecast_newcomer_stationary(&self, node: usize, w: Waiting) -> Option<Marginal> {
        let got = self.inner.forecast_newcomer_stationary(node, w);
        self.push(
            Ask::Stationary,
            node,
            Some(w),
            None,
            None,
            got.map(marginal),
        );
        got
    }
    fn forecast_resident_stationary(&self, node: usize, id: u64) -> Option<ServiceTime> {
        let got = self.inner.forecast_resident_stationary(node, id);
        let answer = got.map(own);
        self.push(Ask::ResidentStationary, node, None, Some(id), None, answer);
        got
    }
    fn stationary_bound(&self, node: usize, w: Waiting, start_lb: f64) -> Option<f64> {
        let got = self.inner.stationary_bound(node, w, start_lb);
        let answer = got.map(|b| [b, f64::NAN, f64::NAN]);
        self.push(Ask::Bound, node, Some(w), None, Some(start_lb), answer);
        got
    }
    fn unloaded_decode_tok_s(&self, node: usize) -> f64 {
        self.inner.unloaded_decode_tok_s(node)
    }
}

/// A [`NodeLoads`] that answers from a record ([`LoadsCall`]s) over a compact view of the
/// logged nodes: node `k` of the view is the fleet's `fleet_idx[k]`. A question not in the
/// record has no answer (the decision then falls back as without a forecast, which a parity
/// check shows as a different cost).
pub struct TableLoads<'a> {
    calls: &'a [LoadsCall],
    fleet_idx: Vec<NodeIdx>,
    unloaded: Vec<f64>,
}

impl TableLoads<'_> {
    fn find(&self, ask: Ask, node: usize, w: Option<Waiting>, id: Option<u64>) -> Option<[f64; 3]> {
        let n = *self.fleet_idx.get(node)?;
        self.calls
            .iter()
            .find(|c| c.asks(ask, n, w, id))
            .and_then(|c| c.answer)
    }
}

impl NodeLoads for TableLoads<'_> {
    fn forecast_newcomer(&self, node: usize, w: Waiting) -> Option<ServiceTime> {
        self.find(Ask::Own, node, Some(w), None).map(as_time)
    }
    fn forecast_newcomer_marginal(&self, node: usize, w: Waiting) -> Option<Marginal> {
        self.find(Ask::Marginal, node, Some(w), None)
            .map(as_marginal)
    }
    fn forecast_resident(&self, node: usize, id: u64) -> Option<ServiceTime> {
        self.find(Ask::Resident, node, None, Some(id)).map(as_time)
    }
    fn forecast_newcomer_stationary(&self, node: usize, w: Waiting) -> Option<Marginal> {
        self.find(Ask::Stationary, node, Some(w), None)
            .map(as_marginal)
    }
    fn forecast_resident_stationary(&self, node: usize, id: u64) -> Option<ServiceTime> {
        self.find(Ask::ResidentStationary, node, None, Some(id))
            .map(as_time)
    }
    fn stationary_bound(&self, node: usize, w: Waiting, _start_lb: f64) -> Option<f64> {
        self.find(Ask::Bound, node, Some(w), None).map(|a| a[0])
    }
    fn unloaded_decode_tok_s(&self, node: usize) -> f64 {
        self.unloaded.get(node).copied().unwrap_or(0.0)
    }
}

/// A host simulator's forecast: for node `k`, `answers[k] = [start_s, total_s, imposed_s]`
/// (NaN start: no answer, the view's fields price the node), the same for any newcomer and
/// for the request already there; the unloaded decode rate per node.
pub struct GivenLoads<'a> {
    /// `[start_s, total_s, imposed_s]` per node.
    pub answers: &'a [[f64; 3]],
    /// The node's decode rate with nothing else on it, per node.
    pub unloaded_decode_tok_s: &'a [f64],
}

impl GivenLoads<'_> {
    fn at(&self, node: usize) -> Option<[f64; 3]> {
        self.answers
            .get(node)
            .copied()
            .filter(|a| !a[0].is_nan() && !a[1].is_nan())
    }
}

impl NodeLoads for GivenLoads<'_> {
    fn forecast_newcomer(&self, node: usize, _w: Waiting) -> Option<ServiceTime> {
        self.at(node).map(as_time)
    }
    fn forecast_newcomer_marginal(&self, node: usize, _w: Waiting) -> Option<Marginal> {
        self.at(node)
            .map(|a| as_marginal([a[0], a[1], nonneg(a[2])]))
    }
    fn forecast_resident(&self, node: usize, _id: u64) -> Option<ServiceTime> {
        self.at(node).map(as_time)
    }
    fn forecast_newcomer_stationary(&self, node: usize, w: Waiting) -> Option<Marginal> {
        self.forecast_newcomer_marginal(node, w)
    }
    fn forecast_resident_stationary(&self, node: usize, _id: u64) -> Option<ServiceTime> {
        self.at(node).map(as_time)
    }
    fn unloaded_decode_tok_s(&self, node: usize) -> f64 {
        self.unloaded_decode_tok_s.get(node).copied().unwrap_or(0.0)
    }
}

/// Everything one decision read (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionInputs {
    /// The request.
    pub request: RequestView,
    /// Migration: the request's source node (its index in the fleet).
    pub from: Option<NodeIdx>,
    /// The nodes the decision visited, ascending by index.
    pub nodes: Vec<LoggedNode>,
    /// The forecast's questions and answers, in order.
    pub loads: Vec<LoadsCall>,
    /// The workload's reuse gap, when the view had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<ReuseGap>,
    /// The oracle's foresight of the conversation's next turn, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_num")]
    pub next_turn_s: Option<f64>,
}

/// The foresight of a logged decision, over its compact view.
struct LoggedForesight<'a> {
    nodes: &'a [LoggedNode],
    next_turn_s: Option<f64>,
}

impl Foresight for LoggedForesight<'_> {
    fn remaining_up(&self, node: NodeIdx) -> Option<f64> {
        self.nodes.get(node).and_then(|n| n.remaining_up_s)
    }
    fn next_turn_s(&self) -> Option<f64> {
        self.next_turn_s
    }
}

impl DecisionInputs {
    /// The inputs of a decision over `view` about `req` (from `from`, a migration check),
    /// with the forecast's `calls`; each node's `curve` is `curve_id` of its curve.
    pub fn capture(
        view: &ClusterView<'_>,
        req: &RequestView,
        from: Option<NodeIdx>,
        calls: Vec<LoadsCall>,
        mut curve_id: impl FnMut(&dyn ConditionalSurvival) -> usize,
    ) -> DecisionInputs {
        let mut idx: Vec<NodeIdx> = view.candidates().map(|(i, _)| i).collect();
        idx.extend(from.filter(|f| *f < view.nodes.len()));
        idx.sort_unstable();
        idx.dedup();
        let nodes = idx
            .into_iter()
            .map(|i| {
                let n = &view.nodes[i];
                LoggedNode {
                    idx: i,
                    up: n.up,
                    age_s: n.age_s,
                    slots: n.slots,
                    slots_used: n.slots_used,
                    kv_capacity_tokens: n.kv_capacity_tokens,
                    kv_used_tokens: n.kv_used_tokens,
                    queue_wait_s: n.queue_wait_s,
                    decode_tok_s: n.decode_tok_s,
                    prefill_tok_s: n.prefill_tok_s,
                    bandwidth_bytes_s: n.bandwidth_bytes_s,
                    exp_rate_per_s: n.exp_rate_per_s,
                    cached_tokens: n.cached_tokens,
                    queued: n.queued,
                    cache_tokens: n.cache_tokens,
                    curve: curve_id(n.survival),
                    remaining_up_s: view.foresight.and_then(|f| f.remaining_up(i)),
                    unloaded_decode_tok_s: view
                        .loads
                        .map_or(n.decode_tok_s, |l| l.unloaded_decode_tok_s(i)),
                }
            })
            .collect();
        DecisionInputs {
            request: *req,
            from,
            nodes,
            loads: calls,
            reuse: view.reuse.copied(),
            next_turn_s: view.foresight.and_then(|f| f.next_turn_s()),
        }
    }

    /// The decision again: `policy` places the request (or, with [`DecisionInputs::from`],
    /// checks its migration) over the logged nodes, each with `curves[node.curve]`, the
    /// forecast answered from the record. Returns the choice as a fleet index; `out` holds
    /// the explanation with compact node indices (the position among
    /// [`DecisionInputs::nodes`]). `None` in `curves` where a node's curve is missing: the
    /// decision cannot be taken again.
    pub fn decide(
        &self,
        policy: &mut dyn Policy,
        curves: &[Arc<dyn ConditionalSurvival>],
        out: &mut Explanation,
    ) -> Option<Option<NodeIdx>> {
        let position = |i: NodeIdx| self.nodes.iter().position(|n| n.idx == i);
        let mut views = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            views.push(NodeView {
                up: n.up,
                age_s: n.age_s,
                slots: n.slots,
                slots_used: n.slots_used,
                kv_capacity_tokens: n.kv_capacity_tokens,
                kv_used_tokens: n.kv_used_tokens,
                queue_wait_s: n.queue_wait_s,
                decode_tok_s: n.decode_tok_s,
                prefill_tok_s: n.prefill_tok_s,
                bandwidth_bytes_s: n.bandwidth_bytes_s,
                survival: curves.get(n.curve)?.as_ref(),
                exp_rate_per_s: n.exp_rate_per_s,
                cached_tokens: n.cached_tokens,
                queued: n.queued,
                cache_tokens: n.cache_tokens,
            });
        }
        let loads = TableLoads {
            calls: &self.loads,
            fleet_idx: self.nodes.iter().map(|n| n.idx).collect(),
            unloaded: self.nodes.iter().map(|n| n.unloaded_decode_tok_s).collect(),
        };
        let foresight = LoggedForesight {
            nodes: &self.nodes,
            next_turn_s: self.next_turn_s,
        };
        let view = ClusterView::new(&views)
            .with_loads(&loads)
            .with_foresight(&foresight)
            .with_reuse(self.reuse.as_ref());
        let mut req = self.request;
        req.node = req.node.and_then(position);
        let choice = match self.from {
            Some(f) => policy.check_migration(&view, &req, position(f)?, out),
            None => policy.place(&view, &req, out),
        };
        Some(choice.map(|k| self.nodes[k].idx))
    }
}

/// Runs `decide` over `view`, and when `record`, captures its inputs: the forecast's
/// questions are recorded on the way ([`RecordingLoads`]), each node's curve named by
/// `curve_id`.
pub fn recorded<'v, R>(
    view: ClusterView<'v>,
    record: bool,
    req: &RequestView,
    from: Option<NodeIdx>,
    curve_id: impl FnMut(&dyn ConditionalSurvival) -> usize,
    decide: impl FnOnce(&ClusterView<'_>) -> R,
) -> (R, Option<DecisionInputs>) {
    if !record {
        return (decide(&view), None);
    }
    let Some(inner) = view.loads else {
        let r = decide(&view);
        return (
            r,
            Some(DecisionInputs::capture(
                &view,
                req,
                from,
                Vec::new(),
                curve_id,
            )),
        );
    };
    let rec = RecordingLoads::new(inner);
    let r = decide(&view.with_loads(&rec));
    let calls = rec.into_calls();
    (
        r,
        Some(DecisionInputs::capture(&view, req, from, calls, curve_id)),
    )
}

/// `f64` in JSON with the non-finite values as strings (`"inf"`, `"-inf"`, `"nan"`), which
/// Python's `float()` reads.
pub mod num {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `x`.
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else if x.is_nan() {
            s.serialize_str("nan")
        } else if *x > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Num {
        Number(f64),
        Text(String),
    }

    /// Reads a number or one of the three strings.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Num::deserialize(d)? {
            Num::Number(x) => Ok(x),
            Num::Text(t) => match t.as_str() {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                other => Err(serde::de::Error::custom(format!(
                    "expected a number, \"inf\", \"-inf\" or \"nan\", got {other:?}"
                ))),
            },
        }
    }
}

/// One number read by [`num`] (for the optional forms).
#[derive(Deserialize)]
struct Wrap(#[serde(with = "num")] f64);

/// [`num`] for `Option<f64>` (`null`: `None`).
mod opt_num {
    use super::Wrap;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(v) => super::num::serialize(v, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

/// [`num`] for `Option<[f64; 3]>`.
mod opt_triple {
    use super::Wrap;
    use serde::ser::SerializeTuple;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    struct Num(f64);
    impl Serialize for Num {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            super::num::serialize(&self.0, s)
        }
    }

    pub fn serialize<S: Serializer>(x: &Option<[f64; 3]>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(a) => {
                let mut t = s.serialize_tuple(3)?;
                for v in a {
                    t.serialize_element(&Num(*v))?;
                }
                t.end()
            }
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[f64; 3]>, D::Error> {
        Ok(Option::<[Wrap; 3]>::deserialize(d)?.map(|[a, b, c]| [a.0, b.0, c.0]))
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;

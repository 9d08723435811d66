//! The hazard-aware policy for Python ([`NativePolicy`]): the replay's own policy code
//! ([`StandardPolicy`]) over nodes given as columns, each with one of the policy's curves,
//! and optionally the host simulator's forecast: per-node answers, or a callable asked each
//! question the decision puts to the forecast (what a replayed decision log answers with).

use std::cell::RefCell;
use std::sync::Arc;

use hazardserve_core::policy::model::{ClusterView, Foresight, NodeView, RequestView};
use hazardserve_core::policy::policies::{Explanation, Policy, PolicyKind, StandardPolicy};
use hazardserve_core::policy::record::{as_marginal, as_time, GivenLoads, LoggedWaiting};
use hazardserve_core::policy::retained::{ReuseGap, GAP_CELLS};
use hazardserve_core::policy::service::{Marginal, NodeLoads, ServiceTime, Waiting};
use hazardserve_core::policy::Params;
use hazardserve_core::survival::curve::ConditionalSurvival;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::{f64_bytes, items, NativeCurve};

/// The node columns of a decision, decoded from native-endian bytes.
struct Columns {
    up: Vec<bool>,
    age_s: Vec<f64>,
    slots: Vec<u32>,
    slots_used: Vec<u32>,
    kv_capacity_tokens: Vec<u64>,
    kv_used_tokens: Vec<u64>,
    queue_wait_s: Vec<f64>,
    decode_tok_s: Vec<f64>,
    prefill_tok_s: Vec<f64>,
    bandwidth_bytes_s: Vec<f64>,
    exp_rate_per_s: Vec<f64>,
    cached_tokens: Vec<u64>,
    queued: Vec<u32>,
    cache_tokens: Vec<u64>,
    curve: Vec<u32>,
    remaining_up_s: Vec<f64>,
    unloaded_decode_tok_s: Vec<f64>,
    forecast: Option<Vec<[f64; 3]>>,
}

fn f64s(b: &[u8], name: &str) -> PyResult<Vec<f64>> {
    items::<8, f64>(b, name, f64::from_ne_bytes)
}
fn u64s(b: &[u8], name: &str) -> PyResult<Vec<u64>> {
    items::<8, u64>(b, name, u64::from_ne_bytes)
}
fn u32s(b: &[u8], name: &str) -> PyResult<Vec<u32>> {
    items::<4, u32>(b, name, u32::from_ne_bytes)
}

impl Columns {
    /// Decodes the columns of the `nodes` dict (`bytes` per column name) and checks that
    /// every column has one value per node and every curve index names a curve.
    fn decode(nodes: &Bound<'_, PyDict>, curves: usize) -> PyResult<Columns> {
        let get = |name: &str| -> PyResult<Vec<u8>> {
            match nodes.get_item(name)? {
                Some(v) => v
                    .cast::<PyBytes>()
                    .map(|b| b.as_bytes().to_vec())
                    .map_err(|_| {
                        PyValueError::new_err(format!("nodes: column {name} must be bytes"))
                    }),
                None => Err(PyValueError::new_err(format!(
                    "nodes: column {name} is missing"
                ))),
            }
        };
        let up = items::<1, bool>(&get("up")?, "up", |[b]| b != 0)?;
        let forecast = match nodes.get_item("forecast")? {
            Some(_) => {
                let flat = f64s(&get("forecast")?, "forecast")?;
                if flat.len() % 3 != 0 {
                    return Err(PyValueError::new_err(
                        "nodes: column forecast must hold (start_s, total_s, imposed_s) triples",
                    ));
                }
                Some(flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
            }
            None => None,
        };
        let cols = Columns {
            age_s: f64s(&get("age_s")?, "age_s")?,
            slots: u32s(&get("slots")?, "slots")?,
            slots_used: u32s(&get("slots_used")?, "slots_used")?,
            kv_capacity_tokens: u64s(&get("kv_capacity_tokens")?, "kv_capacity_tokens")?,
            kv_used_tokens: u64s(&get("kv_used_tokens")?, "kv_used_tokens")?,
            queue_wait_s: f64s(&get("queue_wait_s")?, "queue_wait_s")?,
            decode_tok_s: f64s(&get("decode_tok_s")?, "decode_tok_s")?,
            prefill_tok_s: f64s(&get("prefill_tok_s")?, "prefill_tok_s")?,
            bandwidth_bytes_s: f64s(&get("bandwidth_bytes_s")?, "bandwidth_bytes_s")?,
            exp_rate_per_s: f64s(&get("exp_rate_per_s")?, "exp_rate_per_s")?,
            cached_tokens: u64s(&get("cached_tokens")?, "cached_tokens")?,
            queued: u32s(&get("queued")?, "queued")?,
            cache_tokens: u64s(&get("cache_tokens")?, "cache_tokens")?,
            curve: u32s(&get("curve")?, "curve")?,
            remaining_up_s: f64s(&get("remaining_up_s")?, "remaining_up_s")?,
            unloaded_decode_tok_s: f64s(&get("unloaded_decode_tok_s")?, "unloaded_decode_tok_s")?,
            forecast,
            up,
        };
        let n = cols.up.len();
        let lens = [
            ("age_s", cols.age_s.len()),
            ("slots", cols.slots.len()),
            ("slots_used", cols.slots_used.len()),
            ("kv_capacity_tokens", cols.kv_capacity_tokens.len()),
            ("kv_used_tokens", cols.kv_used_tokens.len()),
            ("queue_wait_s", cols.queue_wait_s.len()),
            ("decode_tok_s", cols.decode_tok_s.len()),
            ("prefill_tok_s", cols.prefill_tok_s.len()),
            ("bandwidth_bytes_s", cols.bandwidth_bytes_s.len()),
            ("exp_rate_per_s", cols.exp_rate_per_s.len()),
            ("cached_tokens", cols.cached_tokens.len()),
            ("queued", cols.queued.len()),
            ("cache_tokens", cols.cache_tokens.len()),
            ("curve", cols.curve.len()),
            ("remaining_up_s", cols.remaining_up_s.len()),
            ("unloaded_decode_tok_s", cols.unloaded_decode_tok_s.len()),
            ("forecast", cols.forecast.as_ref().map_or(n, Vec::len)),
        ];
        for (name, len) in lens {
            if len != n {
                return Err(PyValueError::new_err(format!(
                    "nodes: column {name} has {len} values, but up has {n}"
                )));
            }
        }
        if let Some(k) = cols.curve.iter().position(|&c| c as usize >= curves) {
            return Err(PyValueError::new_err(format!(
                "nodes: node {k} names curve {}, but the policy has {curves} curves",
                cols.curve[k]
            )));
        }
        Ok(cols)
    }
}

/// The known remaining sessions (NaN: unknown) and the next turn of a decision.
struct Known<'a> {
    remaining: &'a [f64],
    next_turn_s: Option<f64>,
}

impl Foresight for Known<'_> {
    fn remaining_up(&self, node: usize) -> Option<f64> {
        self.remaining.get(node).copied().filter(|r| !r.is_nan())
    }
    fn next_turn_s(&self) -> Option<f64> {
        self.next_turn_s
    }
}

/// The forecast as a Python callable: `forecast(ask, node, newcomer, id)` returns
/// `(start_s, total_s, imposed_s)` or `None`. The first exception it raises is kept (and
/// raised after the decision); later questions then have no answer.
struct PyLoads<'py> {
    py: Python<'py>,
    call: Bound<'py, PyAny>,
    unloaded: &'py [f64],
    error: RefCell<Option<PyErr>>,
}

impl PyLoads<'_> {
    fn ask(&self, ask: &str, node: usize, w: Option<Waiting>, id: Option<u64>) -> Option<[f64; 3]> {
        if self.error.borrow().is_some() {
            return None;
        }
        let got = (|| -> PyResult<Option<[f64; 3]>> {
            let newcomer = match w {
                Some(w) => {
                    let w = LoggedWaiting::from(w);
                    let d = PyDict::new(self.py);
                    d.set_item("kv", w.kv)?;
                    d.set_item("prompt", w.prompt)?;
                    d.set_item("start_s", w.start_s)?;
                    d.set_item("prefill", w.prefill)?;
                    d.set_item("stall_s", w.stall_s)?;
                    d.set_item("tokens", w.tokens)?;
                    d.set_item("done", w.done)?;
                    d.set_item("target", w.target)?;
                    d.set_item("cached", w.cached)?;
                    d.into_any()
                }
                None => self.py.None().into_bound(self.py),
            };
            let args = PyTuple::new(
                self.py,
                [
                    ask.into_pyobject(self.py)?.into_any(),
                    node.into_pyobject(self.py)?.into_any(),
                    newcomer,
                    id.into_pyobject(self.py)?.into_any(),
                ],
            )?;
            let r = self.call.call1(args)?;
            if r.is_none() {
                return Ok(None);
            }
            let (a, b, c): (f64, f64, f64) = r.extract().map_err(|_| {
                PyValueError::new_err(format!(
                    "forecast: the callable must return (start_s, total_s, imposed_s) or None, got {r}"
                ))
            })?;
            // A bound has only its first number; the others are times that must make sense.
            let times = if ask == "bound" { vec![a] } else { vec![a, b] };
            if times.iter().any(|t| t.is_nan() || *t < 0.0) || c < 0.0 || (b < a && ask != "bound")
            {
                return Err(PyValueError::new_err(format!(
                    "forecast: the answer to {ask} on node {node} is ({a}, {b}, {c}): times must \
                     be non-negative with total_s at least start_s"
                )));
            }
            Ok(Some([a, b, c]))
        })();
        match got {
            Ok(a) => a,
            Err(e) => {
                *self.error.borrow_mut() = Some(e);
                None
            }
        }
    }
}

/// A callable's answer as the marginal answer (no imposed delay given: none).
fn marginal(a: [f64; 3]) -> Marginal {
    as_marginal([a[0], a[1], if a[2].is_nan() { 0.0 } else { a[2] }])
}

impl NodeLoads for PyLoads<'_> {
    fn forecast_newcomer(&self, node: usize, w: Waiting) -> Option<ServiceTime> {
        self.ask("own", node, Some(w), None).map(as_time)
    }
    fn forecast_newcomer_marginal(&self, node: usize, w: Waiting) -> Option<Marginal> {
        self.ask("marginal", node, Some(w), None).map(marginal)
    }
    fn forecast_resident(&self, node: usize, id: u64) -> Option<ServiceTime> {
        self.ask("resident", node, None, Some(id)).map(as_time)
    }
    fn forecast_newcomer_stationary(&self, node: usize, w: Waiting) -> Option<Marginal> {
        self.ask("stationary", node, Some(w), None).map(marginal)
    }
    fn forecast_resident_stationary(&self, node: usize, id: u64) -> Option<ServiceTime> {
        self.ask("resident-stationary", node, None, Some(id))
            .map(as_time)
    }
    fn stationary_bound(&self, node: usize, w: Waiting, _start_lb: f64) -> Option<f64> {
        self.ask("bound", node, Some(w), None).map(|a| a[0])
    }
    fn unloaded_decode_tok_s(&self, node: usize) -> f64 {
        self.unloaded.get(node).copied().unwrap_or(0.0)
    }
}

/// A decision as Python receives it: the choice, the explanation's numbers by name, and the
/// priced candidates (node index as `u64` bytes; `t`, `l`, `e` as `f64` bytes).
type PyDecision<'py> = (Option<usize>, Bound<'py, PyDict>, Bound<'py, PyDict>);

/// One of the replay's policies over nodes given as columns.
#[pyclass(module = "hazardserve._native")]
pub struct NativePolicy {
    policy: StandardPolicy,
    curves: Vec<Arc<dyn ConditionalSurvival>>,
    reuse: Option<ReuseGap>,
    out: Explanation,
}

#[pymethods]
impl NativePolicy {
    /// `kind`: a policy name (`hazard`, `memoryless`, `fastest`, ...); `params`: the policy's
    /// constants as a JSON object (missing ones at their defaults); `curves`: the curves the
    /// nodes' `curve` column indexes; `reuse`: the reuse gap's `(mass, cells)`.
    #[new]
    #[pyo3(signature = (kind, params, curves, reuse=None))]
    fn new(
        kind: &str,
        params: &str,
        curves: Vec<PyRef<'_, NativeCurve>>,
        reuse: Option<(f64, Vec<f64>)>,
    ) -> PyResult<Self> {
        let kind: PolicyKind = kind
            .parse()
            .map_err(|e| PyValueError::new_err(format!("policy: {e}")))?;
        let params: Params = serde_json::from_str(params)
            .map_err(|e| PyValueError::new_err(format!("params: {e}")))?;
        let reuse = match reuse {
            None => None,
            Some((mass, cells)) => {
                let cells: [f64; GAP_CELLS] = cells.try_into().map_err(|c: Vec<f64>| {
                    PyValueError::new_err(format!(
                        "reuse_gap: {} cells, expected {GAP_CELLS}",
                        c.len()
                    ))
                })?;
                if !(0.0..=1.0).contains(&mass) || cells.iter().any(|c| c.is_nan() || *c < 0.0) {
                    return Err(PyValueError::new_err(
                        "reuse_gap: mass must be in [0, 1] and every cell a non-negative number of seconds",
                    ));
                }
                Some(ReuseGap { mass, cells })
            }
        };
        Ok(NativePolicy {
            policy: StandardPolicy::new(kind, params, 0),
            curves: curves.iter().map(|c| c.curve.clone()).collect(),
            reuse,
            out: Explanation::recording(),
        })
    }

    /// The policy's name.
    #[getter]
    fn kind(&self) -> &'static str {
        self.policy.kind().name()
    }

    /// The policy's constants as JSON.
    #[getter]
    fn params(&self) -> String {
        serde_json::to_string(self.policy.params()).unwrap_or_default()
    }

    /// Places the request (`from_node` `None`) or checks its migration off `from_node`, over
    /// the `nodes` columns; `forecast`: a callable asked each forecast question (else the
    /// `forecast` column's per-node answers, else the view's fields price `T`).
    #[pyo3(signature = (nodes, request, from_node=None, forecast=None, next_turn_s=None, record=true))]
    #[allow(clippy::too_many_arguments)]
    fn decide<'py>(
        &mut self,
        py: Python<'py>,
        nodes: &Bound<'py, PyDict>,
        request: RequestTuple,
        from_node: Option<usize>,
        forecast: Option<Bound<'py, PyAny>>,
        next_turn_s: Option<f64>,
        record: bool,
    ) -> PyResult<PyDecision<'py>> {
        let cols = Columns::decode(nodes, self.curves.len())?;
        let n = cols.up.len();
        if let Some(f) = from_node.filter(|&f| f >= n) {
            return Err(PyValueError::new_err(format!(
                "from_node: {f} is not one of the {n} nodes"
            )));
        }
        let req = request.view(n)?;
        let views: Vec<NodeView<'_>> = (0..n)
            .map(|i| NodeView {
                up: cols.up[i],
                age_s: cols.age_s[i],
                slots: cols.slots[i],
                slots_used: cols.slots_used[i],
                kv_capacity_tokens: cols.kv_capacity_tokens[i],
                kv_used_tokens: cols.kv_used_tokens[i],
                queue_wait_s: cols.queue_wait_s[i],
                decode_tok_s: cols.decode_tok_s[i],
                prefill_tok_s: cols.prefill_tok_s[i],
                bandwidth_bytes_s: cols.bandwidth_bytes_s[i],
                survival: self.curves[cols.curve[i] as usize].as_ref(),
                exp_rate_per_s: cols.exp_rate_per_s[i],
                cached_tokens: cols.cached_tokens[i],
                queued: cols.queued[i],
                cache_tokens: cols.cache_tokens[i],
            })
            .collect();
        let known = Known {
            remaining: &cols.remaining_up_s,
            next_turn_s,
        };
        let given = cols.forecast.as_ref().map(|answers| GivenLoads {
            answers,
            unloaded_decode_tok_s: &cols.unloaded_decode_tok_s,
        });
        let called = forecast.map(|call| PyLoads {
            py,
            call,
            unloaded: &cols.unloaded_decode_tok_s,
            error: RefCell::new(None),
        });
        let mut view = ClusterView::new(&views)
            .with_foresight(&known)
            .with_reuse(self.reuse.as_ref());
        if let Some(l) = called.as_ref() {
            view = view.with_loads(l);
        } else if let Some(g) = given.as_ref() {
            view = view.with_loads(g);
        }
        self.out.record_candidates = record;
        let choice = match from_node {
            Some(f) => self.policy.check_migration(&view, &req, f, &mut self.out),
            None => self.policy.place(&view, &req, &mut self.out),
        };
        if let Some(e) = called.and_then(|c| c.error.into_inner()) {
            return Err(e);
        }
        let o = &self.out;
        let expl = PyDict::new(py);
        expl.set_item(
            "outcome",
            serde_json::to_value(o.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string)),
        )?;
        for (k, v) in [
            ("t_s", o.t),
            ("l_s", o.l),
            ("e_s", o.e),
            ("imposed_s", o.imposed_s),
            ("p_interrupt", o.p_interrupt),
            ("t_j_s", o.t_j),
            ("l_j_s", o.l_j),
            ("c_transfer_s", o.c_transfer),
            ("c_recompute_s", o.c_recompute),
            ("c_planned_s", o.c_planned),
            ("window_s", o.window_s),
            ("risk_gain_s", o.risk_gain),
            ("dt_s", o.dt),
            ("hysteresis_s", o.hysteresis_s),
        ] {
            expl.set_item(k, v)?;
        }
        expl.set_item("target", o.target)?;
        expl.set_item(
            "method",
            o.method
                .and_then(|m| serde_json::to_value(m).ok())
                .and_then(|v| v.as_str().map(str::to_string)),
        )?;
        expl.set_item("feasible", o.feasible)?;
        let cands = PyDict::new(py);
        let nodes: Vec<u8> = o
            .candidates
            .iter()
            .flat_map(|c| (c.node as u64).to_ne_bytes())
            .collect();
        cands.set_item("node", PyBytes::new(py, &nodes))?;
        cands.set_item("t_s", f64_bytes(py, o.candidates.iter().map(|c| c.t)))?;
        cands.set_item("l_s", f64_bytes(py, o.candidates.iter().map(|c| c.l)))?;
        cands.set_item("e_s", f64_bytes(py, o.candidates.iter().map(|c| c.e)))?;
        Ok((choice, expl, cands))
    }
}

/// A request as Python passes it: `(id, prompt_tokens, done_tokens, est_output_tokens, node,
/// resident_tokens, planned_hops, est_sigma, recovering, conversation)`.
#[derive(Clone, Copy, FromPyObject)]
pub struct RequestTuple(
    u64,
    u64,
    u64,
    u64,
    Option<usize>,
    u64,
    u32,
    f64,
    bool,
    Option<u64>,
);

impl RequestTuple {
    fn view(&self, n: usize) -> PyResult<RequestView> {
        let RequestTuple(id, prompt, done, est, node, resident, hops, sigma, recovering, conv) =
            *self;
        if let Some(k) = node.filter(|&k| k >= n) {
            return Err(PyValueError::new_err(format!(
                "request: node {k} is not one of the {n} nodes"
            )));
        }
        if !(sigma.is_finite() && sigma >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "request: est_sigma must be a non-negative number, got {sigma}"
            )));
        }
        Ok(RequestView {
            id,
            prompt_tokens: prompt,
            done_tokens: done,
            est_output_tokens: est,
            node,
            resident_tokens: resident,
            planned_hops: hops,
            est_sigma: sigma,
            recovering,
            conversation: conv,
        })
    }
}

//! `hazardserve._native`: the pure stack's survival estimators, called by the Python package
//! (`python/hazardserve`), which gives them lifelines' classes, arguments and attributes.
//!
//! The estimators take their columns as numpy arrays (any buffer of the column's type: `f64`
//! times, `u8` event flags, `u32` weights and groups) or as native-endian bytes, copy them once
//! into the extension's memory, fit with the GIL released, and return their columns as
//! [`Column`]s, which numpy reads in place, in a `dict` (for the log-rank test, a tuple of
//! `f64` bytes); the priors ([`NativePriors`]) are parsed from JSON text. Input errors are
//! raised as `ValueError` with the library's message.

use std::collections::BTreeMap;
use std::sync::Arc;

use hazardserve_core::survival::competing::aalen_johansen;
use hazardserve_core::survival::curve::{ConditionalSurvival, CurveSpec, LinearCurve};
use hazardserve_core::survival::groups::{logrank, logrank_stratified, Weighting};
use hazardserve_core::survival::interval::{turnbull, Bounds, TurnbullOptions};
use hazardserve_core::survival::km::KmFit;
use hazardserve_core::survival::nelson_aalen::nelson_aalen;
use hazardserve_core::survival::priors::{Priors, PriorsEstimator};
use hazardserve_core::survival::{SurvivalData, SurvivalError};
use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::column::Column;
use crate::pool::detached;

// The extension's own allocations come from mimalloc, which keeps freed pages for the next fit
// (as polars' package keeps jemalloc): a fit at 1e6 rows allocates tens of megabytes, and the
// system allocator returns them to the kernel at once, to be faulted in again by the next.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A fitted estimator's columns by name.
type Columns = BTreeMap<&'static str, Vec<f64>>;

/// Columns as Python receives them: a `dict` of [`Column`]s (`numpy.asarray` reads each in
/// place).
type PyColumns = BTreeMap<&'static str, Column>;

/// A log-rank test as Python receives it: statistic, p-value, degrees of freedom, and the
/// observed and expected events per group as `f64` bytes.
type PyLogRank<'py> = (f64, f64, usize, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

/// `f64` values as native-endian bytes for Python (`numpy.frombuffer` reads them).
pub(crate) fn f64_bytes(
    py: Python<'_>,
    values: impl IntoIterator<Item = f64>,
) -> Bound<'_, PyBytes> {
    let bytes: Vec<u8> = values.into_iter().flat_map(f64::to_ne_bytes).collect();
    PyBytes::new(py, &bytes)
}

/// The columns as Python receives them.
fn to_python(cols: Columns) -> PyColumns {
    cols.into_iter().map(|(k, v)| (k, Column::f64(v))).collect()
}

/// `name`'s values from native-endian bytes of `W`-byte items.
pub(crate) fn items<const W: usize, T>(
    bytes: &[u8],
    name: &str,
    from: impl Fn([u8; W]) -> T,
) -> PyResult<Vec<T>> {
    if !bytes.len().is_multiple_of(W) {
        return Err(PyValueError::new_err(format!(
            "{name}: {} bytes is not a whole number of {W}-byte values",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(W)
        .map(|c| {
            let mut a = [0u8; W];
            a.copy_from_slice(c);
            from(a)
        })
        .collect())
}

/// A column argument's values: from native-endian bytes, or from any buffer of `T` (a numpy
/// array of that dtype, whatever its strides), copied once into the extension's memory. A
/// list or tuple of them is one column, its parts one after the other.
pub(crate) fn column_arg<T: Element + Copy, const W: usize>(
    py: Python<'_>,
    arg: &Bound<'_, PyAny>,
    name: &str,
    from: impl Fn([u8; W]) -> T + Copy,
) -> PyResult<Vec<T>> {
    if let Ok(bytes) = arg.cast::<PyBytes>() {
        return items::<W, T>(bytes.as_bytes(), name, from);
    }
    if arg.is_instance_of::<PyList>() || arg.is_instance_of::<PyTuple>() {
        let mut all = Vec::new();
        for part in arg.try_iter()? {
            all.extend(column_arg(py, &part?, name, from)?);
        }
        return Ok(all);
    }
    let buffer = PyBuffer::<T>::get(arg).map_err(|e| {
        PyValueError::new_err(format!(
            "{name}: not bytes nor a buffer of {W}-byte {} values ({e})",
            std::any::type_name::<T>()
        ))
    })?;
    // The format's byte-order prefix: the values are read as this machine stores them.
    let foreign = if cfg!(target_endian = "little") {
        [b'>', b'!']
    } else {
        [b'<', b'<']
    };
    if W > 1
        && buffer
            .format()
            .to_bytes()
            .first()
            .is_some_and(|b| foreign.contains(b))
    {
        return Err(PyValueError::new_err(format!(
            "{name}: values in the other byte order (convert them first, e.g. \
             `a.astype(a.dtype.newbyteorder(\"=\"))`)"
        )));
    }
    buffer.to_vec(py)
}

/// The estimators' inputs (see [`column_arg`]): durations and entry times as `f64`, events
/// as one byte each (non-zero: observed), weights as `u32`.
#[allow(clippy::type_complexity)]
fn decode(
    py: Python<'_>,
    durations: &Bound<'_, PyAny>,
    events: &Bound<'_, PyAny>,
    entry: Option<&Bound<'_, PyAny>>,
    weights: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Vec<f64>, Vec<bool>, Option<Vec<f64>>, Option<Vec<u32>>)> {
    let d = column_arg(py, durations, "durations", f64::from_ne_bytes)?;
    let e = column_arg(py, events, "event_observed", |[b]: [u8; 1]| b)?;
    let e: Vec<bool> = e.into_iter().map(|b| b != 0).collect();
    let en = entry
        .map(|b| column_arg(py, b, "entry", f64::from_ne_bytes))
        .transpose()?;
    let w = weights
        .map(|b| column_arg(py, b, "weights", u32::from_ne_bytes))
        .transpose()?;
    same_length(d.len(), &e, en.as_deref(), w.as_deref())?;
    Ok((d, e, en, w))
}

fn value_error(e: SurvivalError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Checks that the optional columns have the durations' length (the estimators assume it).
fn same_length(
    n: usize,
    events: &[bool],
    entry: Option<&[f64]>,
    weights: Option<&[u32]>,
) -> PyResult<()> {
    let lengths = [
        ("event_observed", Some(events.len())),
        ("entry", entry.map(<[f64]>::len)),
        ("weights", weights.map(<[u32]>::len)),
    ];
    for (name, len) in lengths {
        if let Some(len) = len {
            if len != n {
                return Err(PyValueError::new_err(format!(
                    "{name} has {len} values, durations {n}"
                )));
            }
        }
    }
    Ok(())
}

fn data<'a>(
    durations: &'a [f64],
    events: &'a [bool],
    entry: Option<&'a [f64]>,
    weights: Option<&'a [u32]>,
) -> SurvivalData<'a> {
    let mut d = SurvivalData::new(durations, events);
    if let Some(e) = entry {
        d = d.with_entry(e);
    }
    if let Some(w) = weights {
        d = d.with_weights(w);
    }
    d
}

fn counts(v: &[u32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

/// lifelines' event table as one block of `i64` columns, one after the other: `removed`,
/// `observed`, `censored`, `entrance`, `at_risk` (with entry times, each row's entrants
/// counted at risk, as lifelines counts them).
fn event_table(
    observed: &[u32],
    censored: &[u32],
    entered: &[u32],
    at_risk: &[u32],
    with_entry: bool,
) -> Vec<i64> {
    let mut table: Vec<i64> = Vec::with_capacity(5 * observed.len());
    let removed = observed
        .iter()
        .zip(censored)
        .map(|(&d, &c)| i64::from(d) + i64::from(c));
    table.extend(removed);
    for column in [observed, censored, entered] {
        table.extend(column.iter().map(|&x| i64::from(x)));
    }
    table.extend(
        at_risk
            .iter()
            .zip(entered)
            .enumerate()
            .map(|(i, (&n, &e))| i64::from(n) + if with_entry && i > 0 { i64::from(e) } else { 0 }),
    );
    table
}

/// Kaplan-Meier of right-censored (optionally left-truncated, integer-weighted) durations:
/// the `timeline` and, as blocks of `f64` columns (one column after the other), `survival`,
/// the cumulative `density` (1 - S), the log(-log) Greenwood `interval` at normal quantile
/// `z` (lower, upper) and the density's (1 - upper, 1 - lower); lifelines' event table as one
/// block of `i64` columns (`removed`, `observed`, `censored`, `entrance`, `at_risk`, each
/// row's entrants counted at risk as lifelines counts them); and the median, the first time
/// with survival at or below one half (NaN when never).
#[pyfunction]
#[pyo3(signature = (durations, events, entry=None, weights=None, z=1.959_963_984_540_054))]
fn kaplan_meier<'py>(
    py: Python<'py>,
    durations: &Bound<'py, PyAny>,
    events: &Bound<'py, PyAny>,
    entry: Option<&Bound<'py, PyAny>>,
    weights: Option<&Bound<'py, PyAny>>,
    z: f64,
) -> PyResult<(PyColumns, Column, f64)> {
    let (durations, events, entry, weights) = decode(py, durations, events, entry, weights)?;
    let (timeline, curves, table, median) = detached(py, || {
        let with_entry = entry.is_some();
        let (fit, lower, upper) = KmFit::fit_with_interval(
            &data(&durations, &events, entry.as_deref(), weights.as_deref()),
            z,
        )
        .map_err(value_error)?;
        let view = fit.view();
        let (observed, censored, entered) = (view.n_event(), view.n_censored(), view.n_entered());
        let at_risk = view.n_at_risk();
        let median = fit.median().unwrap_or(f64::NAN);
        // The event table and lifelines' other frames, built at once on the cores.
        let ((table, density), (interval, density_interval)) = rayon::join(
            || {
                rayon::join(
                    || event_table(observed, &censored, &entered, at_risk, with_entry),
                    || {
                        fit.survival_values()
                            .iter()
                            .map(|s| 1.0 - s)
                            .collect::<Vec<f64>>()
                    },
                )
            },
            || {
                rayon::join(
                    // The interval (lower, upper) and the density's (1 - upper, 1 - lower).
                    || [lower.as_slice(), &upper].concat(),
                    || {
                        upper
                            .iter()
                            .chain(&lower)
                            .map(|x| 1.0 - x)
                            .collect::<Vec<f64>>()
                    },
                )
            },
        );
        let (timeline, _, _, survival) = fit.into_columns();
        PyResult::Ok((
            timeline,
            [survival, density, interval, density_interval],
            table,
            median,
        ))
    })?;
    let [survival, density, interval, density_interval] = curves;
    let cols = PyColumns::from([
        ("timeline", Column::f64(timeline)),
        ("survival", Column::f64_block(survival, 1)),
        ("density", Column::f64_block(density, 1)),
        ("interval", Column::f64_block(interval, 2)),
        ("density_interval", Column::f64_block(density_interval, 2)),
    ]);
    Ok((cols, Column::i64_block(table, 5), median))
}

/// Nelson-Aalen cumulative hazard on the Kaplan-Meier event table: `timeline`, `at_risk`,
/// `observed`, `cumulative_hazard` and its `variance`; `smoothed` breaks ties one at a time
/// (lifelines' default), else `d / n`.
#[pyfunction]
#[pyo3(signature = (durations, events, entry=None, weights=None, smoothed=true))]
fn nelson_aalen_fit<'py>(
    py: Python<'py>,
    durations: &Bound<'py, PyAny>,
    events: &Bound<'py, PyAny>,
    entry: Option<&Bound<'py, PyAny>>,
    weights: Option<&Bound<'py, PyAny>>,
    smoothed: bool,
) -> PyResult<PyColumns> {
    let (durations, events, entry, weights) = decode(py, durations, events, entry, weights)?;
    let cols = detached(py, || {
        let na = nelson_aalen(
            &data(&durations, &events, entry.as_deref(), weights.as_deref()),
            smoothed,
        )
        .map_err(value_error)?;
        let mut cols = Columns::new();
        cols.insert("at_risk", counts(&na.n_at_risk));
        cols.insert("observed", counts(&na.n_event));
        cols.insert("cumulative_hazard", na.cumulative_hazard);
        cols.insert("variance", na.variance);
        cols.insert("timeline", na.timeline);
        Ok(cols)
    })?;
    Ok(to_python(cols))
}

/// The Aalen-Johansen cumulative incidence of `event_of_interest` among competing causes
/// (`causes`: `u32` bytes, a cause code per duration, 0 censored), on the all-cause
/// Kaplan-Meier table (optional `entry`): `timeline`, `at_risk`, `observed` (any cause),
/// `observed_cause` (the cause of interest), `overall_survival`, `cif` and its Collett
/// `variance` (NaN from the first row where everyone at risk ends). A cause that never occurs
/// has an incidence of 0 (its variance 0 up to that row, as lifelines').
#[pyfunction]
#[pyo3(signature = (durations, causes, event_of_interest, entry=None))]
fn aalen_johansen_fit<'py>(
    py: Python<'py>,
    durations: &[u8],
    causes: &[u8],
    event_of_interest: u32,
    entry: Option<&[u8]>,
) -> PyResult<PyColumns> {
    let cols = detached(py, || {
        let d = items::<8, f64>(durations, "durations", f64::from_ne_bytes)?;
        let c = items::<4, u32>(causes, "event_observed", u32::from_ne_bytes)?;
        let en = entry
            .map(|b| items::<8, f64>(b, "entry", f64::from_ne_bytes))
            .transpose()?;
        let events: Vec<bool> = c.iter().map(|&x| x != 0).collect();
        same_length(d.len(), &events, en.as_deref(), None)?;
        let fit = aalen_johansen(&d, &c, en.as_deref()).map_err(value_error)?;
        let rows = fit.timeline.len();
        let (observed_cause, cif, variance) = match fit.cause(event_of_interest) {
            Some(k) => (
                counts(&k.n_event),
                k.cif.clone(),
                fit.variance(event_of_interest).unwrap_or_default(),
            ),
            None => (
                vec![0.0; rows],
                vec![0.0; rows],
                fit.variance_without_events(),
            ),
        };
        let mut cols = Columns::new();
        cols.insert("timeline", fit.timeline);
        cols.insert("at_risk", counts(&fit.n_at_risk));
        cols.insert("observed", counts(&fit.n_event_any));
        cols.insert("observed_cause", observed_cause);
        cols.insert("overall_survival", fit.overall_survival);
        cols.insert("cif", cif);
        cols.insert("variance", variance);
        Ok(cols)
    })?;
    Ok(to_python(cols))
}

/// The log-rank test of right-censored durations in `k` groups (`groups`: `u32`, a group
/// index per duration; `None` when the durations and events come as one part per group)
/// under `weighting` (`None`, "wilcoxon", "tarone-ware", "peto"), stratified by `strata`
/// (`u32`, a stratum index per duration) when given:
/// `(statistic, p_value, degrees_of_freedom, observed, expected)`, the last two per group as
/// `f64` bytes.
#[pyfunction]
#[pyo3(signature = (durations, events, groups, k, weighting=None, strata=None))]
fn logrank_test<'py>(
    py: Python<'py>,
    durations: &Bound<'py, PyAny>,
    events: &Bound<'py, PyAny>,
    groups: Option<&Bound<'py, PyAny>>,
    k: usize,
    weighting: Option<&str>,
    strata: Option<&Bound<'py, PyAny>>,
) -> PyResult<PyLogRank<'py>> {
    let weighting = match weighting {
        None => Weighting::LogRank,
        Some("wilcoxon") => Weighting::Wilcoxon,
        Some("tarone-ware") => Weighting::TaroneWare,
        Some("peto") => Weighting::Peto,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "weightings must be None, \"wilcoxon\", \"tarone-ware\" or \"peto\", got {other:?}"
            )))
        }
    };
    let index = |arg: &Bound<'py, PyAny>, name: &str| -> PyResult<Vec<usize>> {
        Ok(column_arg(py, arg, name, u32::from_ne_bytes)?
            .into_iter()
            .map(|g| g as usize)
            .collect())
    };
    let (durations, groups) = match groups {
        Some(g) => (
            column_arg(py, durations, "durations", f64::from_ne_bytes)?,
            index(g, "groups")?,
        ),
        // Durations given in parts: each part is a group.
        None => {
            if !(durations.is_instance_of::<PyList>() || durations.is_instance_of::<PyTuple>()) {
                return Err(PyValueError::new_err(
                    "durations: without groups, a list of one array per group",
                ));
            }
            let (mut all, mut groups) = (Vec::new(), Vec::new());
            for (g, part) in durations.try_iter()?.enumerate() {
                all.extend(column_arg(py, &part?, "durations", f64::from_ne_bytes)?);
                groups.resize(all.len(), g);
            }
            (all, groups)
        }
    };
    let events: Vec<bool> = column_arg(py, events, "event_observed", |[b]: [u8; 1]| b)?
        .into_iter()
        .map(|b| b != 0)
        .collect();
    same_length(durations.len(), &events, None, None)?;
    if groups.len() != durations.len() {
        return Err(PyValueError::new_err(format!(
            "groups has {} values, durations {}",
            groups.len(),
            durations.len()
        )));
    }
    let strata = strata.map(|s| index(s, "strata")).transpose()?;
    let test = detached(py, || {
        match strata {
            Some(strata) => logrank_stratified(&durations, &events, &groups, k, &strata, weighting),
            None => logrank(&durations, &events, &groups, k, weighting),
        }
        .map_err(value_error)
    })?;
    Ok((
        test.statistic,
        test.p_value,
        test.degrees_of_freedom,
        f64_bytes(py, test.observed),
        f64_bytes(py, test.expected),
    ))
}

/// The converged NPMLE of interval-censored data (`lower`, `upper`: `f64` bytes, `upper`
/// `+inf` for right censoring; closed intervals, as lifelines): the Turnbull intervals
/// (`left`, `right`) and their `probabilities` as `f64` bytes, the log-likelihood, and whether
/// the Kuhn-Tucker conditions held to `tol`.
#[pyfunction]
#[pyo3(signature = (lower, upper, tol=1e-12, max_iter=20_000))]
fn npmle<'py>(
    py: Python<'py>,
    lower: &[u8],
    upper: &[u8],
    tol: f64,
    max_iter: usize,
) -> PyResult<(PyColumns, f64, bool)> {
    let (cols, ll, converged) = detached(py, || {
        let lower = items::<8, f64>(lower, "lower_bound", f64::from_ne_bytes)?;
        let upper = items::<8, f64>(upper, "upper_bound", f64::from_ne_bytes)?;
        let fit = turnbull(
            &lower,
            &upper,
            Bounds::Closed,
            &TurnbullOptions { tol, max_iter },
        )
        .map_err(value_error)?;
        let mut cols = Columns::new();
        cols.insert("left", fit.intervals.iter().map(|iv| iv.left).collect());
        cols.insert("right", fit.intervals.iter().map(|iv| iv.right).collect());
        cols.insert("probabilities", fit.probabilities);
        Ok((cols, fit.log_likelihood, fit.converged))
    })?;
    Ok((to_python(cols), ll, converged))
}

/// Exported hazard priors (`hazardserve priors export`, `docs/priors.schema.json`), parsed
/// and checked by the same loader the replay uses.
#[pyclass(frozen, module = "hazardserve._native")]
struct NativePriors {
    priors: Priors,
}

#[pymethods]
impl NativePriors {
    /// Parses and checks a priors JSON document (`ValueError` naming the problem).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Priors::from_json(text)
            .map(|priors| NativePriors { priors })
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The data the curves were fitted on.
    #[getter]
    fn source(&self) -> String {
        self.priors.source.clone()
    }

    /// The node-curve estimator: `beta`, `frailty` or `none`.
    #[getter]
    fn estimator(&self) -> &'static str {
        match self.priors.estimator {
            PriorsEstimator::Beta => "beta",
            PriorsEstimator::Frailty => "frailty",
            PriorsEstimator::None => "none",
        }
    }

    /// The training cut (seconds on the `time_base` clock).
    #[getter]
    fn cutoff_s(&self) -> f64 {
        self.priors.cutoff_s
    }

    /// `utc` or `relative`.
    #[getter]
    fn time_base(&self) -> String {
        self.priors.time_base.clone()
    }

    /// Every node's id, in the export's order.
    #[getter]
    fn node_ids(&self) -> Vec<String> {
        self.priors
            .nodes
            .iter()
            .map(|n| n.node_id.clone())
            .collect()
    }

    /// The age of a node's live session at the training cut (`None` when it was down or the
    /// node is unknown).
    fn age_at_cutoff_s(&self, node_id: &str) -> Option<f64> {
        self.priors.node(node_id).and_then(|n| n.age_at_cutoff_s)
    }

    /// The curve of `node_id`, the pooled curve for `None` or an unknown node (as the replay
    /// loads it); `linear`: read linearly between its knots, as the replay's policies do by
    /// default (`[policy] survival_curve = "linear"`).
    #[pyo3(signature = (node_id=None, linear=false))]
    fn curve(&self, node_id: Option<&str>, linear: bool) -> NativeCurve {
        let steps = match node_id {
            Some(id) => self.priors.node_curve(id),
            None => self.priors.pooled_curve(),
        };
        NativeCurve {
            curve: if linear {
                Arc::new(LinearCurve::new(steps))
            } else {
                Arc::new(steps)
            },
        }
    }
}

/// A survival curve of the session age: right-continuous steps and an exponential tail, or
/// any curve a decision log names ([`CurveSpec`]).
#[pyclass(frozen, module = "hazardserve._native")]
pub(crate) struct NativeCurve {
    pub(crate) curve: Arc<dyn ConditionalSurvival>,
}

#[pymethods]
impl NativeCurve {
    /// The curve a spec describes (JSON, as a decision log writes it; `ValueError` naming
    /// the problem).
    #[staticmethod]
    fn from_spec(json: &str) -> PyResult<Self> {
        let spec: CurveSpec = serde_json::from_str(json)
            .map_err(|e| PyValueError::new_err(format!("curve spec: {e}")))?;
        let curve = spec
            .build()
            .map_err(|e| PyValueError::new_err(format!("curve spec: {e}")))?;
        Ok(NativeCurve { curve })
    }

    /// The curve's spec as JSON (`None`: a curve without one).
    fn spec(&self) -> Option<String> {
        self.curve
            .spec()
            .and_then(|s| serde_json::to_string(&s).ok())
    }

    /// `S(t)` at each of `times` (`f64` bytes in and out).
    fn survival<'py>(&self, py: Python<'py>, times: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let t = items::<8, f64>(times, "times", f64::from_ne_bytes)?;
        Ok(f64_bytes(py, t.iter().map(|&x| self.curve.survival(x))))
    }

    /// `S(t | age) = S(age + t) / S(age)` at each of `times` (`f64` bytes in and out), the
    /// tail's where the curve has reached 0.
    fn conditional<'py>(
        &self,
        py: Python<'py>,
        age: f64,
        times: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        let t = items::<8, f64>(times, "times", f64::from_ne_bytes)?;
        Ok(f64_bytes(
            py,
            t.iter().map(|&x| self.curve.conditional(age, x)),
        ))
    }

    /// The hazard per second the curve assumes past its support.
    #[getter]
    fn tail_hazard(&self) -> f64 {
        self.curve.tail_hazard()
    }
}

/// The native module: [`kaplan_meier`], [`nelson_aalen_fit`], [`aalen_johansen_fit`],
/// [`logrank_test`], [`npmle`],
/// the priors ([`NativePriors`], [`NativeCurve`]), the policy ([`policy::NativePolicy`]) and
/// `__version__`.
mod column;
mod policy;
mod pool;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kaplan_meier, m)?)?;
    m.add_function(wrap_pyfunction!(nelson_aalen_fit, m)?)?;
    m.add_function(wrap_pyfunction!(aalen_johansen_fit, m)?)?;
    m.add_function(wrap_pyfunction!(logrank_test, m)?)?;
    m.add_function(wrap_pyfunction!(npmle, m)?)?;
    m.add_class::<Column>()?;
    m.add_class::<NativePriors>()?;
    m.add_class::<NativeCurve>()?;
    m.add_class::<policy::NativePolicy>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

//! `hazardserve._native`: the pure stack's survival estimators, called by the Python package
//! (`python/hazardserve`), which gives them lifelines' classes, arguments and attributes.
//!
//! Every function takes its columns as native-endian bytes (the Python side passes
//! `ndarray.tobytes()`: one copy, no per-element conversion; `f64` times, `u8` event flags,
//! `u32` weights), fits with the GIL released, and returns its columns as `f64` bytes in a
//! `dict` (`numpy.frombuffer` reads them without a copy); input errors are raised as
//! `ValueError` with the estimator's message.

use std::collections::BTreeMap;

use hazardserve_core::survival::km::KmFit;
use hazardserve_core::survival::nelson_aalen::nelson_aalen;
use hazardserve_core::survival::{SurvivalData, SurvivalError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A fitted estimator's columns by name.
type Columns = BTreeMap<&'static str, Vec<f64>>;

/// The columns as Python receives them: a `dict` of `f64` bytes.
fn to_python(py: Python<'_>, cols: Columns) -> BTreeMap<&'static str, Bound<'_, PyBytes>> {
    cols.into_iter()
        .map(|(k, v)| {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
            (k, PyBytes::new(py, &bytes))
        })
        .collect()
}

/// `name`'s values from native-endian bytes of `W`-byte items.
fn items<const W: usize, T>(
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

/// The estimators' inputs decoded from bytes: durations and entry times as `f64`, events as
/// one byte each (non-zero: observed), weights as `u32`.
#[allow(clippy::type_complexity)]
fn decode(
    durations: &[u8],
    events: &[u8],
    entry: Option<&[u8]>,
    weights: Option<&[u8]>,
) -> PyResult<(Vec<f64>, Vec<bool>, Option<Vec<f64>>, Option<Vec<u32>>)> {
    let d = items::<8, f64>(durations, "durations", f64::from_ne_bytes)?;
    let e = items::<1, bool>(events, "event_observed", |[b]| b != 0)?;
    let en = entry
        .map(|b| items::<8, f64>(b, "entry", f64::from_ne_bytes))
        .transpose()?;
    let w = weights
        .map(|b| items::<4, u32>(b, "weights", u32::from_ne_bytes))
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

/// Kaplan-Meier of right-censored (optionally left-truncated, integer-weighted) durations:
/// `timeline`, `at_risk`, `observed`, `censored`, `entrance`, `survival`, and the log(-log)
/// Greenwood interval at normal quantile `z` (`lower`, `upper`); `median` is the first time
/// with survival at or below one half (NaN when never).
#[pyfunction]
#[pyo3(signature = (durations, events, entry=None, weights=None, z=1.959_963_984_540_054))]
fn kaplan_meier<'py>(
    py: Python<'py>,
    durations: &[u8],
    events: &[u8],
    entry: Option<&[u8]>,
    weights: Option<&[u8]>,
    z: f64,
) -> PyResult<(BTreeMap<&'static str, Bound<'py, PyBytes>>, f64)> {
    let (cols, median) = py.detach(|| -> PyResult<(Columns, f64)> {
        let (durations, events, entry, weights) = decode(durations, events, entry, weights)?;
        let fit = KmFit::fit_data(&data(
            &durations,
            &events,
            entry.as_deref(),
            weights.as_deref(),
        ))
        .map_err(value_error)?;
        let view = fit.view();
        let (lower, upper) = view.confidence_interval(z);
        let mut cols = Columns::new();
        cols.insert("timeline", view.timeline().to_vec());
        cols.insert("at_risk", counts(view.n_at_risk()));
        cols.insert("observed", counts(view.n_event()));
        cols.insert("censored", counts(&view.n_censored()));
        cols.insert("entrance", counts(&view.n_entered()));
        cols.insert("survival", view.survival_values().to_vec());
        cols.insert("lower", lower);
        cols.insert("upper", upper);
        Ok((cols, view.median().unwrap_or(f64::NAN)))
    })?;
    Ok((to_python(py, cols), median))
}

/// Nelson-Aalen cumulative hazard on the Kaplan-Meier event table: `timeline`, `at_risk`,
/// `observed`, `cumulative_hazard` and its `variance`; `smoothed` breaks ties one at a time
/// (lifelines' default), else `d / n`.
#[pyfunction]
#[pyo3(signature = (durations, events, entry=None, weights=None, smoothed=true))]
fn nelson_aalen_fit<'py>(
    py: Python<'py>,
    durations: &[u8],
    events: &[u8],
    entry: Option<&[u8]>,
    weights: Option<&[u8]>,
    smoothed: bool,
) -> PyResult<BTreeMap<&'static str, Bound<'py, PyBytes>>> {
    let cols = py.detach(|| -> PyResult<Columns> {
        let (durations, events, entry, weights) = decode(durations, events, entry, weights)?;
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
    Ok(to_python(py, cols))
}

/// The native module: [`kaplan_meier`], [`nelson_aalen_fit`] and `__version__`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kaplan_meier, m)?)?;
    m.add_function(wrap_pyfunction!(nelson_aalen_fit, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

"""hazardserve.survival against lifelines 0.30.3 itself: every golden case of
../shared/survival-golden (cases/ and the Nelson-Aalen ones of cases-v2/) and random cases
drawn by hypothesis, at the tolerances of that directory's README (times and counts exact,
survival within 1e-12, intervals within 1e-10 relative)."""

import json
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lifelines
from lifelines.exceptions import StatError

import hazardserve
from hazardserve import statistics as hs_stats
from hazardserve import survival as hs

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("HAZARDSERVE_SHARED", ROOT.parent / "shared"))
GOLDEN = SHARED / "survival-golden"

assert lifelines.__version__ == "0.30.3", "the parity tests pin lifelines 0.30.3"


def golden_fits(folder, prefix=""):
    """(case/fit name, input) of every fit in a golden folder."""
    files = sorted((GOLDEN / folder).glob(f"{prefix}*.json"))
    assert files, f"no golden cases in {GOLDEN / folder} (set HAZARDSERVE_SHARED)"
    out = []
    for f in files:
        doc = json.loads(f.read_text())
        for fit in doc["fits"]:
            out.append(pytest.param(fit, id=f"{doc['case']}/{fit['name']}"))
    return out


def close(ours, theirs, abs_tol=0.0, rel_tol=0.0, what=""):
    a = np.asarray(ours, dtype=float)
    b = np.asarray(theirs, dtype=float)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} vs {b.shape}"
    both_nan = np.isnan(a) & np.isnan(b)
    diff = np.abs(a - b)
    ok = both_nan | (diff <= abs_tol + rel_tol * np.abs(b))
    assert ok.all(), f"{what}: worst at {np.argmax(np.where(ok, 0, diff))}: {a[~ok][:3]} vs {b[~ok][:3]}"


def assert_km_equal(ours, theirs):
    sf, lsf = ours.survival_function_, theirs.survival_function_
    assert list(sf.columns) == list(lsf.columns)
    assert sf.index.name == lsf.index.name == "timeline"
    np.testing.assert_array_equal(sf.index.to_numpy(), lsf.index.to_numpy())
    close(sf.to_numpy(), lsf.to_numpy(), abs_tol=1e-12, what="survival")
    ci, lci = ours.confidence_interval_, theirs.confidence_interval_
    assert list(ci.columns) == list(lci.columns)
    np.testing.assert_array_equal(ci.index.to_numpy(), lci.index.to_numpy())
    close(ci.to_numpy(), lci.to_numpy(), abs_tol=1e-12, rel_tol=1e-10, what="interval")
    assert ci.index.name == lci.index.name
    cd, lcd = ours.cumulative_density_, theirs.cumulative_density_
    assert list(cd.columns) == list(lcd.columns) and cd.index.name == lcd.index.name
    close(cd.to_numpy(), lcd.to_numpy(), abs_tol=1e-12, what="cumulative density")
    cd_ci = ours.confidence_interval_cumulative_density_
    lcd_ci = theirs.confidence_interval_cumulative_density_
    assert list(cd_ci.columns) == list(lcd_ci.columns) and cd_ci.index.name == lcd_ci.index.name
    np.testing.assert_array_equal(cd_ci.index.to_numpy(), lcd_ci.index.to_numpy())
    close(
        cd_ci.to_numpy(), lcd_ci.to_numpy(), abs_tol=1e-12, rel_tol=1e-10, what="density interval"
    )
    np.testing.assert_array_equal(ours.weights, theirs.weights)
    np.testing.assert_array_equal(ours.event_observed, theirs.event_observed)
    assert ours.median_survival_time_ == theirs.median_survival_time_
    et, let = ours.event_table, theirs.event_table
    assert list(et.columns) == list(let.columns)
    assert et.index.name == let.index.name
    np.testing.assert_array_equal(et.index.to_numpy(), let.index.to_numpy())
    np.testing.assert_array_equal(et.to_numpy(dtype=float), let.to_numpy(dtype=float))
    np.testing.assert_array_equal(ours.timeline, theirs.timeline)


def fit_both(cls_ours, cls_theirs, **kwargs):
    """Fits both; `None` when lifelines refuses the input (StatError)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = cls_theirs().fit(**kwargs)
        except StatError:
            return None, None
    return cls_ours().fit(**kwargs), theirs


@pytest.mark.parametrize("fit", golden_fits("cases"))
def test_kaplan_meier_equals_lifelines_on_every_golden_fit(fit):
    inp = fit["input"]
    kwargs = dict(durations=inp["durations"], event_observed=inp["event_observed"], entry=inp["entry"])
    ours, theirs = fit_both(hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, **kwargs)
    if theirs is None:
        # lifelines refuses (its StatError); ours fits: the exact reference's curve.
        ours = hs.KaplanMeierFitter().fit(**kwargs)
        out = fit["output"]
        np.testing.assert_array_equal(ours.timeline, out["timeline"])
        close(ours.survival_function_.iloc[:, 0], out["survival"], abs_tol=1e-12, what="survival")
        return
    assert_km_equal(ours, theirs)
    grid = (fit["output"].get("timeline_fit") or {}).get("grid")
    if grid:
        ours_g, theirs_g = fit_both(
            hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, timeline=grid, **kwargs
        )
        assert_km_equal(ours_g, theirs_g)
    q = fit["output"].get("query") or {}
    if q.get("t"):
        t = np.asarray(q["t"], dtype=float)
        close(ours.predict(t).to_numpy(), theirs.predict(t).to_numpy(), abs_tol=1e-12, what="predict")
        s = ours.survival_function_at_times(t)
        ls = theirs.survival_function_at_times(t)
        assert s.name == ls.name
        close(s.to_numpy(), ls.to_numpy(), abs_tol=1e-12, what="at times")
        close(
            ours.predict(t, interpolate=True).to_numpy(),
            theirs.predict(t, interpolate=True).to_numpy(),
            abs_tol=1e-12,
            what="interpolated",
        )


@pytest.mark.parametrize("fit", golden_fits("cases-v2", "na_"))
def test_nelson_aalen_equals_lifelines_on_the_golden_fits(fit):
    inp = fit["input"]
    kwargs = dict(
        durations=inp["durations"], event_observed=inp["event_observed"], entry=inp.get("entry")
    )
    ours, theirs = fit_both(hs.NelsonAalenFitter, lifelines.NelsonAalenFitter, **kwargs)
    assert theirs is not None
    if fit["crosscheck"]["smoothed_max_abs_diff_H_vs_exact"] > 1e-9:
        # lifelines' smoothed estimator adds a harmonic sum where the risk set is empty (the
        # golden file's exact reference does not, nor do we): the exact values, and lifelines
        # is shown to differ.
        out = fit["output"]
        np.testing.assert_array_equal(ours.timeline, out["timeline"])
        h = ours.cumulative_hazard_.iloc[:, 0].to_numpy()
        close(h, out["cumulative_hazard"], abs_tol=1e-12, rel_tol=1e-12, what="exact H")
        assert np.abs(h - theirs.cumulative_hazard_.iloc[:, 0].to_numpy()).max() > 1.0
        return
    assert_na_equal(ours, theirs)


def assert_na_equal(ours, theirs):
    h, lh = ours.cumulative_hazard_, theirs.cumulative_hazard_
    assert list(h.columns) == list(lh.columns)
    assert h.index.name == lh.index.name == "timeline"
    np.testing.assert_array_equal(h.index.to_numpy(), lh.index.to_numpy())
    close(h.to_numpy(), lh.to_numpy(), abs_tol=1e-12, rel_tol=1e-12, what="cumulative hazard")
    ci, lci = ours.confidence_interval_, theirs.confidence_interval_
    assert list(ci.columns) == list(lci.columns)
    close(ci.to_numpy(), lci.to_numpy(), abs_tol=1e-12, rel_tol=1e-10, what="interval")


durations = st.lists(
    st.one_of(st.integers(0, 12).map(float), st.floats(0.0, 50.0, allow_nan=False)),
    min_size=1,
    max_size=60,
)


@st.composite
def right_censored(draw):
    d = draw(durations)
    e = draw(st.lists(st.booleans(), min_size=len(d), max_size=len(d)))
    return d, [int(x) for x in e]


@st.composite
def truncated(draw):
    d, e = draw(right_censored())
    frac = draw(st.lists(st.floats(0.0, 0.9), min_size=len(d), max_size=len(d)))
    entry = [round(x * f, 3) for x, f in zip(d, frac)]
    return d, e, entry


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(right_censored(), st.sampled_from([0.05, 0.1, 0.2]))
def test_kaplan_meier_equals_lifelines_on_random_right_censored_data(data, alpha):
    d, e = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = lifelines.KaplanMeierFitter(alpha=alpha).fit(d, e)
    assert_km_equal(hs.KaplanMeierFitter(alpha=alpha).fit(d, e), theirs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(truncated())
def test_kaplan_meier_equals_lifelines_on_random_left_truncated_data(data):
    d, e, entry = data
    ours, theirs = fit_both(
        hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, durations=d, event_observed=e, entry=entry
    )
    if theirs is not None:
        assert_km_equal(ours, theirs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(right_censored(), st.lists(st.integers(0, 5), min_size=60, max_size=60))
def test_whole_number_weights_equal_lifelines(data, w):
    d, e = data
    w = w[: len(d)]
    if sum(w) == 0:
        w[0] = 1
    ours, theirs = fit_both(
        hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, durations=d, event_observed=e, weights=w
    )
    close(
        ours.survival_function_.to_numpy(),
        theirs.survival_function_.reindex(ours.timeline).to_numpy(),
        abs_tol=1e-12,
        what="weighted survival",
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(right_censored(), st.booleans())
def test_nelson_aalen_equals_lifelines_on_random_data(data, smoothing):
    d, e = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = lifelines.NelsonAalenFitter(nelson_aalen_smoothing=smoothing).fit(d, e)
    ours = hs.NelsonAalenFitter(nelson_aalen_smoothing=smoothing).fit(d, e)
    assert_na_equal(ours, theirs)


def test_labels_ci_labels_and_alpha_follow_lifelines():
    d, e = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], [1, 1, 0, 1, 1, 0, 1, 1]
    kw = dict(label="nodes", alpha=0.1)
    ours = hs.KaplanMeierFitter().fit(d, e, **kw)
    theirs = lifelines.KaplanMeierFitter().fit(d, e, **kw)
    assert list(ours.confidence_interval_.columns) == ["nodes_lower_0.9", "nodes_upper_0.9"]
    assert_km_equal(ours, theirs)
    named = hs.KaplanMeierFitter().fit(d, e, ci_labels=["lo", "hi"])
    assert list(named.confidence_interval_.columns) == ["lo", "hi"]
    assert hs.KaplanMeierFitter().fit(d, e).predict(4.5) == theirs.predict(4.5)
    assert isinstance(hs.KaplanMeierFitter().fit(d, e).predict(4.5), float)


def test_bad_input_raises_value_error_naming_the_problem():
    with pytest.raises(ValueError, match="NaN"):
        hs.KaplanMeierFitter().fit([1.0, float("nan")])
    with pytest.raises(ValueError, match="event_observed has 1 values, durations 2"):
        hs.KaplanMeierFitter().fit([1.0, 2.0], [1])
    with pytest.raises(ValueError, match="whole numbers"):
        hs.KaplanMeierFitter().fit([1.0, 2.0], weights=[0.5, 1.0])
    with pytest.raises(ValueError):
        hs.KaplanMeierFitter().fit([-1.0, 2.0], entry=[0.0, 3.0])
    with pytest.raises(ValueError, match="alpha"):
        hs.KaplanMeierFitter(alpha=1.5)
    with pytest.raises(RuntimeError, match="fit"):
        hs.KaplanMeierFitter().predict(1.0)


def test_accepts_what_lifelines_accepts_series_arrays_and_lists():
    df = pd.DataFrame({"T": [5, 3, 9, 8, 7, 4, 4, 3, 2, 5, 6, 7], "E": [1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0]})
    a = hs.KaplanMeierFitter().fit(df["T"], df["E"])
    b = hs.KaplanMeierFitter().fit(df["T"].to_numpy(), df["E"].to_numpy().astype(bool))
    c = hs.KaplanMeierFitter().fit(df["T"].tolist(), df["E"].tolist())
    pd.testing.assert_frame_equal(a.survival_function_, b.survival_function_)
    pd.testing.assert_frame_equal(a.survival_function_, c.survival_function_)
    assert_km_equal(a, lifelines.KaplanMeierFitter().fit(df["T"], df["E"]))


def test_the_package_says_its_version_and_ships_its_stubs():
    assert hazardserve.__version__
    pkg = Path(hazardserve.__file__).parent
    assert (pkg / "py.typed").exists()
    stub = (pkg / "_native.pyi").read_text()
    from hazardserve import _native

    public = {n for n in dir(_native) if not n.startswith("_")}
    for name in public:
        assert f"def {name}(" in stub or f"class {name}:" in stub, f"_native.{name} has no stub"
    for line in stub.splitlines():
        if line.startswith("def ") or line.startswith("class "):
            name = line.split()[1].split("(")[0].rstrip(":")
            assert name in public, f"stub for {name}, which the module lacks"
    for cls in ("NativePriors", "NativeCurve", "NativePolicy"):
        members = {n for n in dir(getattr(_native, cls)) if not n.startswith("_")}
        body = stub[stub.index(f"class {cls}:") :].split("\nclass ")[0]
        for m in members:
            assert f"def {m}(" in body or f"    {m}:" in body, f"{cls}.{m} has no stub"
    cols, table, median = _native.kaplan_meier(np.array([1.0, 2.0]).tobytes(), bytes([1, 1]))
    assert median == 1.0
    assert set(cols) == {"timeline", "survival", "density", "interval", "density_interval"}
    # Columns are read in place, writable, and outlive the dict that held them.
    survival = np.asarray(cols.pop("survival"))
    interval, density_interval = (np.asarray(cols.pop(k)) for k in ("interval", "density_interval"))
    del cols
    assert survival.tolist() == [[1.0, 0.5, 0.0]] and survival.flags.writeable
    assert isinstance(survival.base, _native.Column)
    # The interval's bounds, and the density's: 1 - them, swapped.
    assert interval.shape == (2, 3) and (interval[0] <= interval[1]).all()
    assert np.array_equal(density_interval, 1.0 - interval[::-1])
    # The event table: removed, observed, censored, entrance, at_risk, column after column.
    assert np.asarray(table).tolist() == [[0, 1, 1], [0, 1, 1], [0, 0, 0], [2, 0, 0], [2, 2, 1]]
    with pytest.raises(ValueError, match="8-byte"):
        _native.kaplan_meier(b"123", b"")
    # Arrays are read through the buffer protocol, whatever their strides; a wrong dtype is
    # refused naming the argument.
    strided = np.array([1.0, 9.0, 2.0, 9.0])[::2]
    cols, _, median = _native.kaplan_meier(strided, np.array([1, 1], dtype=np.uint8))
    assert median == 1.0 and np.asarray(cols["timeline"]).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="durations: not bytes nor a buffer of 8-byte f64"):
        _native.kaplan_meier(np.array([1, 2], dtype=np.int64), np.array([1, 1], dtype=np.uint8))
    with pytest.raises(ValueError, match="event_observed has 1 values, durations 2"):
        _native.kaplan_meier(np.array([1.0, 2.0]), np.array([1], dtype=np.uint8))
    # Values in the other byte order are refused, not misread.
    with pytest.raises(ValueError, match="durations: values in the other byte order"):
        _native.kaplan_meier(np.array([1.0, 2.0]).astype(">f8"), np.array([1, 1], dtype=np.uint8))
    with pytest.raises(ValueError, match="durations: without groups, a list of one array"):
        _native.logrank_test(np.array([1.0, 2.0]), np.array([1, 1], dtype=np.uint8), None, 2)
    # The log-rank test's groups as parts of one column equal the same groups as indices.
    parts = _native.logrank_test(
        [np.array([1.0, 3.0]), np.array([2.0, 4.0, 5.0])],
        [np.array([1, 0], dtype=np.uint8), np.array([1, 1, 0], dtype=np.uint8)],
        None,
        2,
    )
    indexed = _native.logrank_test(
        np.array([1.0, 3.0, 2.0, 4.0, 5.0]),
        np.array([1, 0, 1, 1, 0], dtype=np.uint8),
        np.array([0, 0, 1, 1, 1], dtype=np.uint32),
        2,
    )
    assert parts[:3] == indexed[:3] and parts[3:] == indexed[3:]
    with pytest.raises(ValueError, match="groups has 4 values, durations 5"):
        _native.logrank_test(
            np.array([1.0, 3.0, 2.0, 4.0, 5.0]),
            np.array([1, 0, 1, 1, 0], dtype=np.uint8),
            np.array([0, 0, 1, 1], dtype=np.uint32),
            2,
        )


def test_alpha_given_to_fit_is_for_that_fit_only_as_in_lifelines():
    d, e = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], [1, 1, 0, 1, 1, 0, 1, 1]
    ours, theirs = hs.KaplanMeierFitter(), lifelines.KaplanMeierFitter()
    ours.fit(d, e, alpha=0.1)
    theirs.fit(d, e, alpha=0.1)
    assert_km_equal(ours.fit(d, e), theirs.fit(d, e))
    assert list(ours.confidence_interval_.columns) == ["KM_estimate_lower_0.95", "KM_estimate_upper_0.95"]
    s = ours.predict([1.5, 2.5], interpolate=True)
    assert s.name == theirs.predict([1.5, 2.5], interpolate=True).name


def test_a_zero_length_observation_that_empties_a_risk_set_is_an_error_naming_the_time():
    d, e, entry = [1, 1, 0, 3, 5, 5, 2], [1, 1, 0, 1, 1, 0, 0], [1, 1, 0, 3, 2, 2, 0]
    for fitter in (hs.KaplanMeierFitter, hs.NelsonAalenFitter):
        with pytest.raises(ValueError, match="at time 1, 2 events among 1 at risk"):
            fitter().fit(d, e, entry=entry)
    # One such entry beside others at risk is a valid row, as in lifelines.
    ours, theirs = fit_both(
        hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, durations=[2, 3, 4], entry=[2, 0, 0]
    )
    assert_km_equal(ours, theirs)


@pytest.mark.parametrize("fit", golden_fits("cases-v2", "interval_"))
def test_interval_censoring_is_the_converged_npmle_laid_out_as_lifelines(fit):
    inp = fit["input"]
    lo = np.asarray(inp["lower"], dtype=float)
    hi = np.asarray([math.inf if u is None else u for u in inp["upper"]], dtype=float)
    shift = inp.get("lower_shift_for_open_intervals")
    if shift:
        # The half-open cells of a probe trace, as the golden file fits them.
        lo = np.where(lo < hi, lo + shift, lo)
    ours = hs.KaplanMeierFitter().fit_interval_censoring(lo, hi)
    assert ours.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = lifelines.KaplanMeierFitter().fit_interval_censoring(lo, hi)
    sf, lsf = ours.survival_function_, theirs.survival_function_
    assert list(sf.columns) == list(lsf.columns) == ["NPMLE_estimate_upper", "NPMLE_estimate_lower"]
    np.testing.assert_array_equal(sf.index.to_numpy(dtype=float), lsf.index.to_numpy(dtype=float))
    # The converged reference, on the finite timeline.
    out, ref = fit["output"], fit["reference"]
    finite = sf.loc[np.isfinite(sf.index.to_numpy(dtype=float))]
    np.testing.assert_array_equal(finite.index.to_numpy(dtype=float), out["timeline"])
    if fit["name"] != "closed_as_given":  # its maximiser is not unique (the README's note)
        close(finite.iloc[:, 0], ref["survival_upper"], abs_tol=1e-6, what="upper")
        close(finite.iloc[:, 1], ref["survival_lower"], abs_tol=1e-6, what="lower")
    assert ours.log_likelihood_ >= ref["log_likelihood"] - 1e-6
    # lifelines, at the distance its unconverged EM is from the converged estimate.
    gap = fit["crosscheck"]["survival_max_abs_diff_lifelines_vs_converged"]
    close(sf.to_numpy(), lsf.to_numpy(), abs_tol=2 * gap + 1e-6, what="lifelines")
    assert list(ours.median_survival_time_.columns) == list(theirs.median_survival_time_.columns)


def test_interval_censoring_refuses_what_lifelines_refuses():
    with pytest.raises(ValueError, match="greater than or equal"):
        hs.KaplanMeierFitter().fit_interval_censoring([2.0], [1.0])
    with pytest.raises(ValueError, match="if and only if"):
        hs.KaplanMeierFitter().fit_interval_censoring([1.0, 2.0], [1.0, 3.0], event_observed=[0, 0])
    with pytest.raises(NotImplementedError):
        hs.KaplanMeierFitter().fit_interval_censoring([1.0], [2.0], entry=[0.0])


def test_an_interval_fit_answers_per_curve_and_keeps_only_its_own_attributes():
    t = [2, 3, 3, 5, 6, 8, 9, 12, 15.0]
    kmf = hs.KaplanMeierFitter().fit(t)
    kmf.fit_interval_censoring(t[:7], t[:7])
    assert "7 total observations" in repr(kmf)
    for stale in ("event_table", "durations", "confidence_interval_"):
        assert not hasattr(kmf, stale), stale
    both = kmf.predict([4.0, 7.0])
    # The label of the earlier fit carries over, as in lifelines.
    theirs = lifelines.KaplanMeierFitter().fit(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.fit_interval_censoring(t[:7], t[:7])
    assert list(both.columns) == list(theirs.survival_function_.columns)
    assert list(both.columns) == ["KM_estimate_upper", "KM_estimate_lower"]
    assert list(kmf.percentile(0.5).columns) == list(both.columns)
    with pytest.raises(ValueError, match="two curves"):
        kmf.survival_function_at_times([4.0])
    # Refitting right-censored data drops the interval fit's attributes.
    kmf.fit(t)
    assert not hasattr(kmf, "lower_bound") and "9 total observations" in repr(kmf)


def test_negative_times_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"durations has negative values \(the first at position 2"):
        hs.KaplanMeierFitter().fit([1.0, 2.0, -3.0])
    with pytest.raises(ValueError, match="entry has negative values"):
        hs.KaplanMeierFitter().fit([1.0, 2.0], entry=[0.0, -1.0])
    with pytest.raises(ValueError, match=r"durations has NaN or infinite values \(the first at position 0"):
        hs.NelsonAalenFitter().fit([float("nan"), 2.0])


def test_kaplan_meier_on_two_cores_equals_lifelines():
    # Above the size from which the fit splits its work over the cores: ties, zeros, a
    # user timeline that starts before the first time, alpha and the interval labels.
    rng = np.random.default_rng(7)
    n = 70_000
    d = np.round(rng.weibull(0.8, n) * 100.0, 1)
    d[:50] = 0.0
    e = rng.random(n) < 0.7
    w = rng.integers(1, 3, n)
    for kwargs in (
        dict(durations=d, event_observed=e),
        dict(durations=d, event_observed=e, alpha=0.1, ci_labels=["lo", "hi"]),
        dict(durations=d, event_observed=e, timeline=np.linspace(-5.0, 400.0, 333)),
        dict(durations=d, event_observed=np.ones(n, dtype=bool)),
        dict(durations=d, event_observed=e, weights=w),
    ):
        ours, theirs = fit_both(hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, **kwargs)
        assert_km_equal(ours, theirs)


def test_a_refused_refit_keeps_the_previous_fit():
    kmf = hs.KaplanMeierFitter().fit([1, 2, 2, 3, 5], [1, 0, 1, 1, 0])
    before = kmf.survival_function_.copy()
    with pytest.raises(ValueError, match="events among"):
        kmf.fit([2, 2, 5], [1, 1, 1], entry=[2, 2, 0])
    with pytest.raises(ValueError, match="timeline has NaN"):
        kmf.fit([1, 2], [1, 1], timeline=[0.0, float("nan")])
    assert kmf.survival_function_.equals(before) and len(kmf.durations) == 5
    assert kmf.median_survival_time_ == 3.0
    # The timeline indexes every frame and cannot be changed under them; the flags are the
    # fit's own.
    with pytest.raises(ValueError):
        kmf.timeline[1] = 100.0
    e = np.array([True, False, True])
    kmf.fit([1.0, 2.0, 3.0], e)
    e[:] = False
    assert kmf.event_observed.tolist() == [1, 0, 1]
    with pytest.raises(AttributeError, match="not fitted"):
        hs.KaplanMeierFitter().event_observed


def test_bad_event_flags_and_durations_name_their_argument():
    with pytest.raises(ValueError, match="event_observed has NaN values"):
        hs.KaplanMeierFitter().fit([1.0, 2.0], [1.0, float("nan")])
    with pytest.raises(ValueError, match="durations must be numbers"):
        hs.KaplanMeierFitter().fit(["1", "x"], [1, 1])
    # Two-dimensional input is refused, not flattened (lifelines refuses it too).
    with pytest.raises(ValueError, match=r"durations must be one-dimensional \(got shape \(3, 2\)\)"):
        hs.KaplanMeierFitter().fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="event_observed must be one-dimensional"):
        hs.NelsonAalenFitter().fit([1.0, 2.0], [[1], [1]])
    with pytest.raises(ValueError, match="durations_A must be one-dimensional"):
        hs_stats.logrank_test(np.ones((2, 2)), [1.0])
    # Missing group or stratum labels are refused, not made a group of their own.
    with pytest.raises(ValueError, match="groups has missing labels \\(the first at position 1\\)"):
        hs_stats.multivariate_logrank_test([1, 2, 3, 4], pd.Series([0, np.nan, 1, 1]))
    with pytest.raises(ValueError, match="strata has missing labels"):
        hs_stats.multivariate_logrank_test([1, 2, 3, 4], [0, 0, 1, 1], strata=["a", None, "b", "b"])


def _fit_in_child(queue):
    d = np.arange(1.0, 70_001.0)
    kmf = hs.KaplanMeierFitter().fit(d, d % 3 != 0)
    small = hs.KaplanMeierFitter().fit([1.0, 2.0, 3.0], [1, 0, 1])
    test = hs_stats.logrank_test(d[:500], d[500:1000] + 0.5)
    queue.put((kmf.median_survival_time_, small.median_survival_time_, test.p_value))


def test_a_forked_child_fits_after_its_parent_did():
    # Python's multiprocessing forks on Linux: the child has none of the parent's worker
    # threads, and a fit there must not wait for them.
    import multiprocessing as mp

    d = np.arange(1.0, 70_001.0)
    parent = hs.KaplanMeierFitter().fit(d, d % 3 != 0)
    hs_stats.logrank_test(d[:500], d[500:1000] + 0.5)
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_fit_in_child, args=(queue,))
    child.start()
    child.join(timeout=120)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the forked child's fit did not finish"
    median, small, p = queue.get(timeout=10)
    assert median == parent.median_survival_time_ and small == 3.0 and 0.0 <= p <= 1.0

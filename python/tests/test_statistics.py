"""hazardserve.statistics and hazardserve.utils against lifelines 0.30.3: the log-rank
tests on every golden dataset of ../shared/survival-golden/cases-v2 (logrank_*) and on random
ones, and the restricted mean survival time on the golden rmst_* fits and random ones."""

import json
import math
import warnings

import lifelines
import lifelines.statistics as ls
import lifelines.utils as lu
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hazardserve import statistics as hst
from hazardserve import survival as hs
from hazardserve import utils as hu

from test_survival import GOLDEN, right_censored


def golden(prefix, key):
    files = sorted((GOLDEN / "cases-v2").glob(f"{prefix}*.json"))
    assert files, f"no {prefix} cases in {GOLDEN / 'cases-v2'}"
    out = []
    for f in files:
        doc = json.loads(f.read_text())
        for item in doc[key]:
            out.append(pytest.param(item, id=f"{doc['case']}/{item['name']}"))
    return out


def same_test(ours, theirs):
    assert ours.test_name == theirs.test_name
    assert ours.degrees_of_freedom == theirs.degrees_of_freedom
    assert math.isclose(ours.test_statistic, theirs.test_statistic, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(ours.p_value, theirs.p_value, rel_tol=1e-7, abs_tol=1e-300)
    assert list(ours.summary.columns) == list(theirs.summary.columns)


@pytest.mark.parametrize("dataset", golden("logrank_", "datasets"))
def test_logrank_tests_equal_lifelines_on_every_golden_dataset(dataset):
    inp = dataset["input"]
    d = np.asarray(inp["durations"], dtype=float)
    e = np.asarray(inp["event_observed"])
    g = np.asarray(inp["group"])
    labels = inp.get("group_labels")
    if labels is not None and np.issubdtype(g.dtype, np.integer):
        g = np.asarray(labels)[g]
    ran = 0
    for test in dataset["tests"]:
        w = test.get("weightings")
        if w not in (None, "wilcoxon", "tarone-ware", "peto"):
            continue
        if test["kind"] == "logrank_test":
            a, b = test["groups"]
            ia, ib = g == a, g == b
            args = (d[ia], d[ib], e[ia], e[ib])
            same_test(hst.logrank_test(*args, weightings=w), ls.logrank_test(*args, weightings=w))
        else:
            same_test(
                hst.multivariate_logrank_test(d, g, e, weightings=w),
                ls.multivariate_logrank_test(d, g, e, weightings=w),
            )
        ran += 1
    assert ran > 0


@st.composite
def grouped(draw):
    d, e = draw(right_censored())
    g = draw(st.lists(st.integers(0, 2), min_size=len(d), max_size=len(d)))
    return d, e, g


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grouped(), st.sampled_from([None, "wilcoxon", "tarone-ware", "peto"]))
def test_logrank_tests_equal_lifelines_on_random_data(data, weightings):
    d, e, g = data
    d, e, g = np.asarray(d), np.asarray(e), np.asarray(g)
    if len(set(g.tolist())) < 2 or not e.any():
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ls.multivariate_logrank_test(d, g, e, weightings=weightings)
    ours = hst.multivariate_logrank_test(d, g, e, weightings=weightings)
    if not math.isfinite(theirs.test_statistic) or math.isnan(ours.test_statistic):
        # A singular covariance with observed != expected (the module's note).
        return
    same_test(ours, theirs)
    a, b = g == 0, g == 1
    if a.any() and b.any() and e[a | b].any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t2 = ls.logrank_test(d[a], d[b], e[a], e[b], weightings=weightings)
        o2 = hst.logrank_test(d[a], d[b], e[a], e[b], weightings=weightings)
        if math.isfinite(t2.test_statistic) and not math.isnan(o2.test_statistic):
            same_test(o2, t2)


def test_a_group_against_its_copy_gives_zero_and_unsupported_options_are_refused():
    d = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    r = hst.logrank_test(d, d)
    assert r.test_statistic == pytest.approx(0.0, abs=1e-12) and r.p_value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="t_0"):
        hst.logrank_test(d, d, t_0=5)
    with pytest.raises(ValueError, match="weights"):
        hst.logrank_test(d, d, weights_A=[1] * 8, weights_B=[1] * 8)
    with pytest.raises(ValueError, match="fleming-harrington"):
        hst.logrank_test(d, d, weightings="fleming-harrington")


@pytest.mark.parametrize("fit", golden("rmst_", "fits"))
def test_restricted_mean_equals_lifelines_on_every_golden_fit(fit):
    """The mean equals lifelines'; the variance is exact (the golden reference of lifelines'
    definition), where lifelines' numerical integral of a step function is within 5e-3."""
    for name, inp in fit["input"]["groups"].items():
        kw = dict(durations=inp["durations"], event_observed=inp["event_observed"])
        ours = hs.KaplanMeierFitter().fit(**kw)
        theirs = lifelines.KaplanMeierFitter().fit(**kw)
        ref = fit["reference"]["groups"][name]
        lifelines_variance = fit["output"]["groups"][name]["variance"]
        for k, h in enumerate(fit["horizons"]):
            m, v = hu.restricted_mean_survival_time(ours, t=h, return_variance=True)
            lm = lu.restricted_mean_survival_time(theirs, t=h)
            lv = lifelines_variance[k]
            assert math.isclose(m, lm, rel_tol=1e-12, abs_tol=1e-12), (name, h)
            assert math.isclose(m, ref["rmst"][k], rel_tol=1e-12, abs_tol=1e-10), (name, h)
            exact = ref["variance_lifelines_definition"][k]
            assert math.isclose(v, exact, rel_tol=1e-10, abs_tol=1e-10), (name, h, v, exact)
            assert math.isclose(v, lv, rel_tol=5e-3, abs_tol=1e-9), (name, h, v, lv)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(right_censored(), st.floats(0.0, 60.0))
def test_restricted_mean_equals_lifelines_on_random_data(data, h):
    d, e = data
    d = [abs(x) for x in d]
    ours = hs.KaplanMeierFitter().fit(d, e)
    theirs = lifelines.KaplanMeierFitter().fit(d, e)
    m = hu.restricted_mean_survival_time(ours, t=h)
    assert math.isclose(m, lu.restricted_mean_survival_time(theirs, t=h), rel_tol=1e-12, abs_tol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm, lv = lu.restricted_mean_survival_time(theirs, t=h, return_variance=True)
    om, ov = hu.restricted_mean_survival_time(ours, t=h, return_variance=True)
    # lifelines' second moment is a numerical integral of a step function, good to 5e-3: the
    # variance, a difference of two moments, is compared through the second moment.
    assert math.isclose(ov + om**2, lv + lm**2, rel_tol=5e-3, abs_tol=1e-6)
    # Without a horizon: infinite unless the curve reaches 0, as lifelines.
    assert hu.restricted_mean_survival_time(ours) == pytest.approx(
        lu.restricted_mean_survival_time(theirs), rel=1e-12, abs=1e-12
    )


def test_rmst_refuses_a_meaningless_horizon_and_an_interval_fit():
    kmf = hs.KaplanMeierFitter().fit([2, 3, 5, 8.0])
    for t in (math.nan, -1.0):
        with pytest.raises(ValueError, match="non-negative"):
            hu.restricted_mean_survival_time(kmf, t=t)
    kmf.fit_interval_censoring([1.0, 2.0], [3.0, 2.0])
    with pytest.raises(ValueError, match="two curves"):
        hu.restricted_mean_survival_time(kmf, t=5.0)


def test_one_group_and_result_printing_follow_lifelines(capsys):
    d = [3.0, 1.0, 4.0, 1.0, 5.0]
    ours = hst.multivariate_logrank_test(d, ["a"] * 5)
    theirs = ls.multivariate_logrank_test(d, ["a"] * 5)
    assert (ours.test_statistic, ours.degrees_of_freedom) == (theirs.test_statistic, theirs.degrees_of_freedom)
    assert math.isnan(ours.p_value) and math.isnan(theirs.p_value)
    r = hst.logrank_test(d, [2.0, 6.0, 7.0], event_observed_A=[0.5, 1, 1, 0, 1])
    l2 = ls.logrank_test(d, [2.0, 6.0, 7.0], event_observed_A=[0.5, 1, 1, 0, 1])
    same_test(r, l2)
    r.print_summary()
    out = capsys.readouterr().out
    assert "test_statistic" in out and "logrank_test" in out


def same_pairwise(ours, theirs):
    assert ours.test_name == theirs.test_name
    assert [tuple(p) for p in ours.name] == [tuple(p) for p in theirs.name]
    s, t = ours.summary, theirs.summary
    assert list(s.columns) == list(t.columns)
    assert list(s.index) == list(t.index)
    np.testing.assert_allclose(s["test_statistic"], t["test_statistic"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s["p"], t["p"], rtol=1e-8, atol=1e-300)


@pytest.mark.parametrize("dataset", golden("logrank_", "datasets"))
def test_pairwise_logrank_equals_lifelines_on_every_golden_dataset(dataset):
    inp = dataset["input"]
    d = np.asarray(inp["durations"], dtype=float)
    e = np.asarray(inp["event_observed"])
    g = np.asarray(inp["group"])
    for w in (None, "wilcoxon", "peto"):
        ours = hst.pairwise_logrank_test(d, g, e, weightings=w)
        theirs = ls.pairwise_logrank_test(d, g, e, weightings=w)
        same_pairwise(ours, theirs)
        k = len(np.unique(g))
        assert len(ours.name) == k * (k - 1) // 2


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grouped(), st.sampled_from([None, "tarone-ware"]))
def test_pairwise_logrank_equals_lifelines_on_random_data(data, weightings):
    d, e, g = (np.asarray(x) for x in data)
    if len(set(g.tolist())) < 2:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ls.pairwise_logrank_test(d, g, e, weightings=weightings)
    ours = hst.pairwise_logrank_test(d, g, e, weightings=weightings)
    assert list(ours.summary.index) == list(theirs.summary.index)
    # NaN only where the pair's covariance is singular: no event time at which both groups
    # are at risk (the module's note; lifelines answers with a pseudo-inverse there).
    for (a, b), stat in zip(ours.name, ours.summary["test_statistic"]):
        if np.isnan(stat):
            ia, ib = g == a, g == b
            both = min(d[ia].max(), d[ib].max())
            assert not (e[ia | ib].astype(bool) & (d[ia | ib] <= both)).any(), (a, b)
    finite = np.isfinite(theirs.summary["test_statistic"].to_numpy()) & ~np.isnan(
        ours.summary["test_statistic"].to_numpy()
    )
    np.testing.assert_allclose(
        ours.summary["test_statistic"][finite], theirs.summary["test_statistic"][finite], rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(ours.summary["p"][finite], theirs.summary["p"][finite], rtol=1e-8, atol=1e-300)


def test_a_pairwise_result_prints_one_row_per_pair(capsys):
    r = hst.pairwise_logrank_test([1, 2, 3, 4, 5, 6], ["x", "y", "z", "x", "y", "z"], [1, 1, 1, 1, 0, 1])
    assert r.name == [("x", "y"), ("x", "z"), ("y", "z")]
    r.print_summary()
    out = capsys.readouterr().out
    assert "test_name = logrank_test" in out and out.count("\n") >= 9
    assert "3 comparisons" in repr(r)
    one = hst.pairwise_logrank_test([1, 2, 3], ["a", "a", "a"], [1, 1, 1])
    assert one.summary.empty and one.test_name == "pairwise_logrank_test"
    one.print_summary()
    with pytest.raises(ValueError, match="t_0"):
        hst.pairwise_logrank_test([1, 2], ["a", "b"], t_0=1.0)
    with pytest.raises(ValueError, match="groups has 1 values"):
        hst.pairwise_logrank_test([1, 2], ["a"])


def test_the_stratified_test_sums_each_stratum_and_ignores_how_groups_spread_over_strata():
    from hazardserve.statistics import multivariate_logrank_test

    rng = np.random.default_rng(5)
    # Two strata with very different lifetimes; group 1 lives mostly in the short stratum.
    # Within each stratum the groups are alike: the stratified test sees no difference,
    # the plain one a large one.
    n = 4000
    stratum = rng.integers(0, 2, n)
    group = np.where(stratum == 0, rng.random(n) < 0.8, rng.random(n) < 0.2).astype(int)
    d = rng.exponential(np.where(stratum == 0, 10.0, 100.0))
    e = rng.random(n) < 0.9
    plain = multivariate_logrank_test(d, group, e)
    strat = multivariate_logrank_test(d, group, e, strata=stratum)
    assert plain.p_value < 1e-6 and strat.p_value > 0.01
    # Observed and expected are the per-stratum tests' sums.
    parts = [multivariate_logrank_test(d[stratum == s], group[stratum == s], e[stratum == s])
             for s in (0, 1)]
    for col in ("observed", "expected"):
        want = sum(getattr(p, col).to_numpy() for p in parts)
        assert np.allclose(getattr(strat, col).to_numpy(), want, rtol=1e-12)
    # One stratum is the plain test.
    one = multivariate_logrank_test(d, group, e, strata=np.zeros(n))
    assert one.test_statistic == pytest.approx(plain.test_statistic, rel=1e-12)
    with pytest.raises(ValueError, match="strata has 3 values, event_durations 4000"):
        multivariate_logrank_test(d, group, e, strata=[0, 1, 0])


def test_bad_durations_and_events_name_the_argument():
    from hazardserve.statistics import logrank_test

    with pytest.raises(ValueError, match=r"durations_A has negative values \(the first at position 1"):
        logrank_test([1.0, -2.0], [3.0])
    with pytest.raises(ValueError, match="event_observed_B has 1 values, durations_B 2"):
        logrank_test([1.0], [3.0, 4.0], [1], [1])
    with pytest.raises(ValueError, match="event_observed_A has NaN values"):
        logrank_test([1.0], [3.0], [float("nan")], [1])

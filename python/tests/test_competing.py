"""hazardserve.survival.AalenJohansenFitter against the competing-risks golden cases of
../shared/survival-golden/cases-v2 (``cr_*``: the golden ``output``, lifelines' own floats or
the exact estimate where lifelines' result is an artefact of its jitter, its entry ties or its
events at the origin) and against lifelines 0.30.3 itself on random data without ties between
causes (where lifelines does not jitter), at that README's tolerances."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lifelines

from hazardserve import survival as hs

from test_survival import close, golden_fits


def nan(values):
    """A golden column (``null`` is NaN) as floats."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


@pytest.mark.parametrize("fit", golden_fits("cases-v2", "cr_"))
def test_incidence_variance_and_interval_equal_the_golden_output(fit):
    inp, out = fit["input"], fit["output"]
    assert out["causes"], "a golden fit with no cause"
    for code, want in out["causes"].items():
        ajf = hs.AalenJohansenFitter().fit(
            inp["durations"], inp["causes"], event_of_interest=int(code), entry=inp["entry"]
        )
        np.testing.assert_array_equal(ajf.timeline, out["timeline"])
        cif = ajf.cumulative_density_[f"CIF_{code}"].to_numpy()
        close(cif, want["cif"], abs_tol=1e-12, rel_tol=1e-12, what=f"cause {code} CIF")
        close(ajf.variance_.to_numpy(), nan(want["variance"]), abs_tol=1e-15, rel_tol=1e-10, what=f"cause {code} variance")
        lower = ajf.confidence_interval_["AJ_estimate_lower_0.95"].to_numpy()
        upper = ajf.confidence_interval_["AJ_estimate_upper_0.95"].to_numpy()
        close(lower, nan(want["ci_lower"]), abs_tol=1e-15, rel_tol=1e-10, what=f"cause {code} lower")
        close(upper, nan(want["ci_upper"]), abs_tol=1e-15, rel_tol=1e-10, what=f"cause {code} upper")
        np.testing.assert_array_equal(ajf.event_table[f"observed_{code}"].to_numpy(), want["n_event"])
        np.testing.assert_array_equal(ajf.event_table["observed"].to_numpy(), out["n_event_any"])
        np.testing.assert_array_equal(ajf.event_table["censored"].to_numpy(), out["n_censored"])
        np.testing.assert_array_equal(ajf.event_table["entrance"].to_numpy(), out["n_entered"])
        np.testing.assert_array_equal(
            ajf.event_table["at_risk"].to_numpy(), out["n_at_risk_lifelines_event_table"]
        )
        assert not (lower > upper).any(), "the interval columns hold what their names say"


def lifelines_aj(d, causes, k, entry=None, alpha=None):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a jitter warning would make the comparison moot
        return lifelines.AalenJohansenFitter().fit(d, causes, event_of_interest=k, entry=entry, alpha=alpha)


def assert_aj_equal(ours, theirs, k, alpha=0.05):
    cif, lcif = ours.cumulative_density_, theirs.cumulative_density_
    assert list(cif.columns) == list(lcif.columns) == [f"CIF_{k}"]
    assert cif.index.name == lcif.index.name == "event_at"
    np.testing.assert_array_equal(cif.index.to_numpy(), lcif.index.to_numpy())
    close(cif.to_numpy(), lcif.to_numpy(), abs_tol=1e-12, rel_tol=1e-12, what="CIF")
    close(ours.variance_.to_numpy(), theirs.variance_.to_numpy(), abs_tol=1e-15, rel_tol=1e-10, what="variance")
    # Same column names; lifelines 0.30.3 fills the one named upper with the lower bound.
    ci, lci = ours.confidence_interval_, theirs.confidence_interval_
    assert set(ci.columns) == set(lci.columns)
    lo, up = f"AJ_estimate_lower_{1 - alpha:g}", f"AJ_estimate_upper_{1 - alpha:g}"
    close(ci[lo].to_numpy(), lci[up].to_numpy(), abs_tol=1e-15, rel_tol=1e-10, what="lower")
    close(ci[up].to_numpy(), lci[lo].to_numpy(), abs_tol=1e-15, rel_tol=1e-10, what="upper")
    for col in ("removed", "observed", f"observed_{k}", "censored", "entrance", "at_risk"):
        np.testing.assert_array_equal(
            ours.event_table[col].to_numpy(), theirs.event_table[col].to_numpy(), err_msg=col
        )
    np.testing.assert_array_equal(ours.timeline, theirs.timeline)


@st.composite
def competing(draw):
    """Durations with a cause each (0 censored, 1-3 causes) and no time shared by two
    different causes (lifelines would jitter it)."""
    n = draw(st.integers(1, 50))
    d = draw(st.lists(st.integers(1, 30).map(float), min_size=n, max_size=n))
    c = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    first = {}
    for i, (t, k) in enumerate(zip(d, c)):
        if k:
            c[i] = first.setdefault(t, k)
    return d, c


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(competing(), st.integers(1, 3), st.sampled_from([0.05, 0.1]))
def test_aalen_johansen_equals_lifelines_on_random_data_without_cross_cause_ties(data, k, alpha):
    d, c = data
    ours = hs.AalenJohansenFitter(alpha=alpha).fit(d, c, event_of_interest=k)
    theirs = lifelines_aj(d, c, k, alpha=alpha)
    assert_aj_equal(ours, theirs, k, alpha)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 12).map(float), st.integers(0, 3)), min_size=1, max_size=40)
)
def test_incidences_and_survival_sum_to_one_with_ties_kept(rows):
    d = [t for t, _ in rows]
    c = [k for _, k in rows]
    total = None
    for k in (1, 2, 3):
        ajf = hs.AalenJohansenFitter().fit(d, c, event_of_interest=k)
        f = ajf.cumulative_density_[f"CIF_{k}"].to_numpy()
        assert (np.diff(f) >= -1e-15).all(), "an incidence never falls"
        total = f if total is None else total + f
    km = hs.KaplanMeierFitter().fit(d, [int(k != 0) for k in c])
    close(total + km.survival_function_.iloc[:, 0].to_numpy(), np.ones_like(total), abs_tol=1e-12, what="sum")


def test_ties_across_causes_are_kept_where_lifelines_jitters():
    d, c = [1.0, 2.0, 2.0, 3.0], [1, 1, 2, 0]
    ours = hs.AalenJohansenFitter().fit(d, c, event_of_interest=1)
    # At 2, one of 3 at risk ends of cause 1 after S(1) = 3/4: F = 1/4 + 3/4 * 1/3.
    assert ours.cumulative_density_["CIF_1"].tolist() == [0.0, 0.25, 0.5, 0.5]
    with pytest.warns(Warning, match="jitter"):
        lifelines.AalenJohansenFitter(seed=1).fit(d, c, event_of_interest=1)


def test_an_event_at_the_origin_counts_where_lifelines_drops_it():
    ours = hs.AalenJohansenFitter().fit([0, 1, 2, 3], [1, 0, 2, 0], event_of_interest=1)
    assert ours.cumulative_density_["CIF_1"].tolist() == [0.25] * 4
    theirs = lifelines_aj([0, 1, 2, 3], [1, 0, 2, 0], 1)
    assert theirs.cumulative_density_["CIF_1"].tolist() == [0.0] * 4


def test_truncation_that_empties_the_risk_set_stops_the_incidences_as_kaplan_meier_does():
    # Only the first observation is at risk at 1: survival is 0 from there on.
    d, c, entry = [1, 5, 6], [1, 2, 1], [0, 3, 3]
    one = hs.AalenJohansenFitter().fit(d, c, event_of_interest=1, entry=entry)
    two = hs.AalenJohansenFitter().fit(d, c, event_of_interest=2, entry=entry)
    assert one.cumulative_density_["CIF_1"].iloc[-1] == 1.0
    assert (two.cumulative_density_["CIF_2"] == 0).all()
    km = hs.KaplanMeierFitter().fit(d, [1, 1, 1], entry=entry)
    assert km.survival_function_.iloc[-1, 0] == 0.0


def test_a_cause_that_never_occurs_has_no_incidence():
    ajf = hs.AalenJohansenFitter().fit([1, 2, 3], [1, 0, 1], event_of_interest=2)
    assert (ajf.cumulative_density_["CIF_2"] == 0).all()
    assert ajf.event_table["observed_2"].sum() == 0


def test_arguments_attributes_and_bad_input_as_lifelines_names_them():
    ajf = hs.AalenJohansenFitter(calculate_variance=False).fit(
        [1, 2, 3, 4], [1, 2, 1, 0], event_of_interest=1, timeline=[0, 2.5, 10], label="x"
    )
    assert ajf.variance_ is None and ajf.confidence_interval_ is None
    assert ajf.cumulative_density_["CIF_1"].tolist() == [0.0, 0.25, 0.5]
    assert ajf.label == "x" and ajf.event_of_interest == 1
    assert ajf.event_observed.tolist() == [1, 0, 1, 0]
    # predict reads the estimate on the fit's timeline.
    assert ajf.predict(3.0) == 0.25 and ajf.predict(10.0) == 0.5
    assert "fitted with 4 total observations" in repr(ajf)
    with pytest.raises(ValueError, match="whole cause codes"):
        hs.AalenJohansenFitter().fit([1, 2], [1, -1], event_of_interest=1)
    with pytest.raises(ValueError, match="whole cause codes"):
        hs.AalenJohansenFitter().fit([1, 2], [1, 1.5], event_of_interest=1)
    with pytest.raises(ValueError, match="event_of_interest"):
        hs.AalenJohansenFitter().fit([1, 2], [1, 2], event_of_interest=0)
    with pytest.raises(ValueError, match="weights"):
        hs.AalenJohansenFitter().fit([1, 2], [1, 2], event_of_interest=1, weights=[1, 1])
    with pytest.raises(ValueError, match="event_observed has 1 values"):
        hs.AalenJohansenFitter().fit([1, 2], [1], event_of_interest=1)
    with pytest.raises(ValueError, match="NaN"):
        hs.AalenJohansenFitter().fit([1, float("nan")], [1, 2], event_of_interest=1)
    with pytest.raises(ValueError, match="below 2\\*\\*32"):
        hs.AalenJohansenFitter().fit([1, 2], [1, 2], event_of_interest=2**40)
    with pytest.raises(ValueError, match="numeric cause codes"):
        hs.AalenJohansenFitter().fit([1, 2], ["1", "2"], event_of_interest=1)
    with pytest.raises(TypeError):
        hs.AalenJohansenFitter(calculate_varaince=False)

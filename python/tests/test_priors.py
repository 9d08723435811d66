"""hazardserve.priors: an exported priors document read by the replay's own loader, its curves
checked against the schema's formula (docs/priors.schema.json), on a hand-written document and,
when the integration test passes one (HAZARDSERVE_PRIORS_EXPORT), on a real export."""

import copy
import json
import math
import os

import numpy as np
import pytest

from hazardserve.priors import Priors, load_priors

DOC = {
    "schema_version": 1,
    "source": "hand",
    "generated_by": "hazardserve 0.1.0",
    "estimator": "beta",
    "parameters": {"m": 4.0},
    "cutoff_s": 86400.0,
    "time_base": "relative",
    "pooled": {
        "steps": {"t": [100.0, 400.0, 1000.0], "s": [0.9, 0.6, 0.5]},
        "counts": {"n": 20, "events": 12},
        "tail_rate_per_s": 1e-3,
        "parametric": None,
    },
    "nodes": [
        {
            "node_id": "a",
            "sessions": 5,
            "events": 4,
            "age_at_cutoff_s": 250.0,
            "steps": {"t": [50.0, 300.0], "s": [0.8, 0.2]},
            "tail_rate_per_s": 2e-3,
        },
        {
            "node_id": "b",
            "sessions": 3,
            "events": 0,
            "age_at_cutoff_s": None,
            "steps": {"t": [], "s": []},
            "tail_rate_per_s": 0.0,
        },
    ],
}


def schema_survival(steps, tail, x):
    """The schema's formula: 1 before the first step, the step's value from its time on, the
    last value decaying at the tail rate after the last step (from 0 without steps)."""
    t, s = steps["t"], steps["s"]
    out = []
    for v in np.atleast_1d(x):
        if not t:
            out.append(math.exp(-tail * v))
        elif v < t[0]:
            out.append(1.0)
        else:
            i = int(np.searchsorted(t, v, side="right")) - 1
            out.append(s[i] if i < len(t) - 1 else s[-1] * math.exp(-tail * (v - t[-1])))
    return np.asarray(out, dtype=float)


def check_curves(doc, priors):
    x = np.array([0.0, 49.0, 50.0, 99.9, 100.0, 250.0, 300.0, 399.0, 400.0, 999.0, 1000.0, 1500.0, 1e5])
    pooled = priors.curve()
    np.testing.assert_allclose(
        pooled.survival_function(x),
        schema_survival(doc["pooled"]["steps"], doc["pooled"]["tail_rate_per_s"], x),
        rtol=1e-12,
        atol=1e-15,
    )
    assert pooled.tail_hazard == doc["pooled"]["tail_rate_per_s"]
    for node in doc["nodes"][:50]:
        curve = priors.curve(node["node_id"])
        want = schema_survival(node["steps"], node["tail_rate_per_s"], x)
        np.testing.assert_allclose(curve.survival_function(x), want, rtol=1e-12, atol=1e-15)
        for age in (0.0, 75.0, 350.0):
            s_age = schema_survival(node["steps"], node["tail_rate_per_s"], [age])[0]
            if s_age <= 0:
                continue
            got = curve.conditional_survival(age, x)
            full = schema_survival(node["steps"], node["tail_rate_per_s"], age + x) / s_age
            np.testing.assert_allclose(got[x > 0], np.clip(full, 0, 1)[x > 0], rtol=1e-12, atol=1e-15)
            assert got[0] == 1.0


def test_a_hand_written_document_reads_as_the_schema_says():
    priors = Priors.from_json(json.dumps(DOC))
    assert (priors.source, priors.estimator, priors.time_base) == ("hand", "beta", "relative")
    assert priors.cutoff_s == 86400.0
    assert priors.node_ids == ["a", "b"]
    assert priors.age_at_cutoff_s("a") == 250.0 and priors.age_at_cutoff_s("b") is None
    check_curves(DOC, priors)
    # An unknown node carries the pooled curve, as the replay loads it.
    x = [10.0, 500.0]
    np.testing.assert_array_equal(priors.curve("nope").survival_function(x), priors.curve().survival_function(x))


def test_a_real_export_reads_as_the_schema_says():
    path = os.environ.get("HAZARDSERVE_PRIORS_EXPORT")
    if not path:
        pytest.skip("set HAZARDSERVE_PRIORS_EXPORT to a priors export (the integration test does)")
    doc = json.loads(open(path).read())
    priors = load_priors(path)
    assert priors.node_ids == [n["node_id"] for n in doc["nodes"]]
    assert len(priors.node_ids) > 0
    check_curves(doc, priors)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(schema_version=2), "schema"),
        (lambda d: d["pooled"]["steps"].update(s=[0.5, 0.6, 0.4]), "pooled"),
        (lambda d: d["nodes"][0]["steps"].update(t=[300.0, 50.0]), "a"),
        (lambda d: d["nodes"].append(copy.deepcopy(d["nodes"][0])), "a"),
    ],
)
def test_a_bad_document_is_refused_naming_the_problem(edit, message, tmp_path):
    doc = copy.deepcopy(DOC)
    edit(doc)
    with pytest.raises(ValueError, match=message):
        Priors.from_json(json.dumps(doc))
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="bad.json"):
        load_priors(f)
    with pytest.raises(ValueError):
        Priors.from_json("{not json")


def test_bad_times_ages_and_files_are_refused_and_a_scalar_gives_a_float(tmp_path):
    curve = Priors.from_json(json.dumps(DOC)).curve("a")
    for bad in ([-60.0], [math.nan]):
        with pytest.raises(ValueError, match="non-negative"):
            curve.survival_function(bad)
        with pytest.raises(ValueError, match="non-negative"):
            curve.conditional_survival(100.0, bad)
    for age in (-1.0, math.nan, [1.0, 2.0]):
        with pytest.raises(ValueError, match="age"):
            curve.conditional_survival(age, [10.0])
    assert isinstance(curve.survival_function(60.0), float)
    assert curve.survival_function(60.0) == 0.8
    with pytest.raises(ValueError, match="nope.json: cannot read"):
        load_priors(tmp_path / "nope.json")

"""hazardserve.policy: the hazard-aware policy as a class.

Parity: every decision of a replay's decision log (``replay --decision-log``, both engines,
written by the integration test into HAZARDSERVE_DECISION_LOGS) taken again by the class gives
the replay's choice and the same numbers, to the bit. Then the class on its own: ``E = T + L``,
``T`` from the node's fields or a given forecast, the choice the least ``E``, risk priced by
each node's curve, the migration trigger and its guards, and bad input as ``ValueError``s
naming the argument.
"""

import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hazardserve.policy import (
    HazardAwarePolicy,
    MigrationDecision,
    Node,
    Request,
    replay_decision_log,
)
from hazardserve.priors import Priors, SurvivalCurve

from test_priors import DOC


def _same(a, b) -> bool:
    a = math.nan if a is None else float(a)
    b = math.nan if b is None else float(b)
    return a == b or (math.isnan(a) and math.isnan(b))


def _logs():
    paths = os.environ.get("HAZARDSERVE_DECISION_LOGS")
    if not paths:
        pytest.skip("HAZARDSERVE_DECISION_LOGS is not set (the integration test sets it)")
    return [Path(p) for p in paths.split(os.pathsep)]


def test_every_logged_decision_is_the_same_from_the_class():
    for path in _logs():
        seen = set()
        n = 0
        for d in replay_decision_log(path):
            what = f"{path.name} line {d.line}: {d.policy} {d.decision}"
            L = d.logged
            assert d.chosen == L.get("chosen"), what
            assert d.got.outcome == L["outcome"], what
            assert _same(d.got.t_s, L["t"]), f"{what}: T {d.got.t_s} vs {L['t']}"
            assert _same(d.got.l_s, L["l"]), f"{what}: L {d.got.l_s} vs {L['l']}"
            assert _same(d.got.e_s, L["e"]), f"{what}: E {d.got.e_s} vs {L['e']}"
            if d.decision == "place":
                assert [c["node"] for c in d.logged_candidates] == list(d.candidates["node"]), what
                for k, c in enumerate(d.logged_candidates):
                    assert _same(d.candidates["e_s"][k], c["e"]), f"{what}: candidate {k} E"
                    assert _same(d.candidates["l_s"][k], c["l"]), f"{what}: candidate {k} L"
                    assert _same(d.candidates["t_s"][k], c["t"]), f"{what}: candidate {k} T"
            else:
                assert isinstance(d.got, MigrationDecision)
                for mine, theirs in [
                    (d.got.risk_gain_s, "risk_gain"),
                    (d.got.dt_s, "dt"),
                    (d.got.c_planned_s, "c_planned"),
                    (d.got.t_j_s, "t_j"),
                    (d.got.l_j_s, "l_j"),
                ]:
                    assert _same(mine, L[theirs]), f"{what}: {theirs} {mine} vs {L[theirs]}"
            seen.add((d.policy, d.decision, L["outcome"]))
            n += 1
        assert n >= 1000, f"{path}: only {n} decisions"
        for want in [
            ("hazard", "place", "placed"),
            ("hazard", "place", "no_feasible_node"),
            ("hazard", "migrate", "stay"),
            ("hazard", "migrate", "min_remaining"),
            ("memoryless", "place", "placed"),
            ("oracle", "place", "placed"),
            ("least-loaded", "place", "placed"),
        ]:
            assert want in seen, f"{path}: no {want} decision in the log"


def test_a_changed_answer_shows_in_the_parity():
    """The parity check can fail: the same decisions with one node's age changed (a
    mutation of the inputs) give other costs."""
    path = _logs()[0]
    import hazardserve.policy as P

    original = P._logged_value
    try:
        P._logged_value = lambda node, name: (
            original(node, name) * 2 + 1000.0 if name == "age_s" else original(node, name)
        )
        differ = sum(
            1
            for d in replay_decision_log(path)
            if d.decision == "place"
            and d.policy == "hazard"
            and not _same(d.got.l_s, d.logged["l"])
        )
    finally:
        P._logged_value = original
    assert differ > 100


def _exp(mean_s):
    return SurvivalCurve.from_spec({"kind": "exponential", "mean_s": mean_s})


def _nodes(**over):
    base = dict(
        age_s=[100.0, 100.0, 100.0],
        slots=[4, 4, 4],
        decode_tok_s=[40.0, 40.0, 40.0],
        prefill_tok_s=[4000.0, 4000.0, 4000.0],
        queue_wait_s=[0.0, 0.0, 0.0],
        bandwidth_bytes_s=[1.25e9] * 3,
        curve=[0, 1, 2],
    )
    base.update(over)
    return base


def test_e_is_t_plus_l_t_from_the_fields_and_l_from_each_curve():
    # Node 0 fails every 60 s on average, node 1 every day, node 2 never.
    p = HazardAwarePolicy(curves=[_exp(60.0), _exp(86400.0), _exp(None)], forecast="own")
    req = Request(prompt_tokens=2000, est_output_tokens=400)
    s = p.score(_nodes(), req).set_index("node")
    want_t = 2000 / 4000 + 400 / 40
    assert np.allclose(s["t_s"], want_t, rtol=1e-12)
    assert np.allclose(s["e_s"], s["t_s"] + s["l_s"], rtol=1e-12)
    assert s.loc[0, "l_s"] > s.loc[1, "l_s"] > s.loc[2, "l_s"] == 0.0
    assert s["chosen"].sum() == 1 and s.loc[2, "chosen"]
    c = p.choose(_nodes(), req)
    assert c.node == 2 and c.outcome == "placed" and c.e_s == s.loc[2, "e_s"]
    assert 0 < p.choose(_nodes(curve=[0, 0, 0]), req).p_interrupt < 1
    # Much faster, a risky node still wins; a little faster, it loses to a safe node, which
    # its hazard-blind twin does not see.
    assert p.choose(_nodes(decode_tok_s=[80.0, 40.0, 40.0], curve=[0, 2, 2]), req).node == 0
    near = _nodes(decode_tok_s=[40.4, 40.0, 40.0], curve=[0, 2, 2])
    assert p.choose(near, req).node == 1
    blind = HazardAwarePolicy(
        curves=[_exp(60.0), _exp(86400.0), _exp(None)], policy="fastest", forecast="own"
    )
    assert blind.choose(near, req).node == 0


def test_a_given_forecast_prices_t_and_the_stall_penalty_prices_l():
    p = HazardAwarePolicy(curves=[_exp(600.0)], forecast="stationary")
    req = Request(prompt_tokens=1000, est_output_tokens=100)
    nodes = _nodes(
        curve=[0, 0, 0],
        decode_tok_s=[40.0, 40.0, 5.0],
        forecast_start_s=[0.5, 0.2, None],
        forecast_total_s=[9.0, 3.0, None],
        forecast_imposed_s=[0.0, 1.5, None],
    )
    s = p.score(nodes, req).set_index("node")
    assert s.loc[0, "t_s"] == 9.0 and s.loc[1, "t_s"] == 3.0
    assert s.loc[2, "t_s"] == pytest.approx(1000 / 4000 + 100 / 5)  # no answer: the fields
    # The delay imposed on the node's requests counts in the ranking (3 + 1.5 < 9).
    assert p.choose(nodes, req).node == 1
    assert p.choose(nodes, req).imposed_s == 1.5
    calm = HazardAwarePolicy(curves=[_exp(600.0)], stall_penalty_s=0.0, forecast="own")
    loud = HazardAwarePolicy(curves=[_exp(600.0)], stall_penalty_s=30.0, forecast="own")
    a, b = calm.score(_nodes(curve=[0, 0, 0]), req), loud.score(_nodes(curve=[0, 0, 0]), req)
    assert (b["l_s"] > a["l_s"]).all()


def test_only_nodes_that_can_admit_are_priced():
    p = HazardAwarePolicy(curves=[_exp(3600.0)])
    req = Request(prompt_tokens=1000, est_output_tokens=100)
    nodes = _nodes(
        up=[False, True, True],
        slots_used=[0, 4, 0],
        kv_capacity_tokens=[10**6, 10**6, 500],
        curve=[0, 0, 0],
    )
    assert len(p.score(nodes, req)) == 0
    assert p.choose(nodes, req).node is None
    assert p.choose(nodes, req).outcome == "no_feasible_node"
    nodes["kv_capacity_tokens"] = [10**6, 10**6, 10**6]
    assert list(p.score(nodes, req)["node"]) == [2]


def test_a_node_list_and_priors_work_as_columns_do():
    priors = Priors.from_json(__import__("json").dumps(DOC))
    p = HazardAwarePolicy(priors, forecast="own")
    req = {"prompt_tokens": 500, "est_output_tokens": 50}
    nodes = [
        Node(node_id="a", age_s=10.0, slots=2, decode_tok_s=30.0, prefill_tok_s=3000.0),
        Node(node_id="b", age_s=10.0, slots=2, decode_tok_s=30.0, prefill_tok_s=3000.0),
        Node(node_id="unknown", age_s=10.0, slots=2, decode_tok_s=30.0, prefill_tok_s=3000.0),
    ]
    s = p.score(nodes, req, output="numpy")
    assert list(s["node"]) == [0, 1, 2]
    # Each node reads its own curve (the unknown one the pooled curve): different risks.
    assert len(set(np.round(s["l_s"], 15))) == 3
    pooled = HazardAwarePolicy(curves=[priors.curve(None, linear=True)], forecast="own")
    q = pooled.score([Node(age_s=10.0, slots=2, decode_tok_s=30.0, prefill_tok_s=3000.0)], req)
    assert q["l_s"][0] == s["l_s"][2]
    pl = pytest.importorskip("polars")
    assert isinstance(p.score(nodes, req, output="polars"), pl.DataFrame)
    assert "hazard" in repr(p) and p.policy == "hazard" and p.params["forecast"] == "own"


def test_the_migration_trigger_and_its_guards():
    # The request runs on a node that fails every 30 s on average; an idle, equally fast,
    # never-failing node is a LAN hop away.
    p = HazardAwarePolicy(curves=[_exp(30.0), _exp(None)], forecast="own", hysteresis_s=1.0)
    nodes = _nodes(
        age_s=[100.0, 100.0],
        slots=[4, 4],
        slots_used=[1, 0],
        decode_tok_s=[40.0, 40.0],
        prefill_tok_s=[4000.0, 4000.0],
        queue_wait_s=[0.0, 0.0],
        bandwidth_bytes_s=[1.25e9] * 2,
        curve=[0, 1],
    )
    running = Request(
        prompt_tokens=2000, est_output_tokens=4000, done_tokens=200, node=0, resident_tokens=2200
    )
    m = p.should_migrate(nodes, running, 0)
    assert m.move and m.target == 1 and m.outcome == "migrate"
    assert m.risk_gain_s > m.hysteresis_s and m.dt_s < m.hysteresis_s
    assert m.c_planned_s == min(m.c_transfer_s, m.c_recompute_s)
    assert m.method in ("transfer", "recompute")
    hopped = Request(**{**running.__dict__, "planned_hops": 2})
    assert p.should_migrate(nodes, hopped, 0).outcome == "max_hops"
    short = Request(**{**running.__dict__, "est_output_tokens": 210})
    assert p.should_migrate(nodes, short, 0).outcome == "min_remaining"
    safe = p.should_migrate({**nodes, "curve": [1, 1]}, running, 0)
    assert not safe.move and safe.outcome == "stay"
    never = HazardAwarePolicy(curves=[_exp(30.0), _exp(None)], policy="fastest")
    assert never.should_migrate(nodes, running, 0).outcome == "migration_disabled"


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    policy=st.sampled_from(["hazard", "memoryless", "fastest", "hazard-nomigrate"]),
)
def test_the_choice_is_the_least_e_among_the_priced(n, seed, policy):
    rng = np.random.default_rng(seed)
    curves = [_exp(m) for m in (30.0, 600.0, 86400.0)] + [
        SurvivalCurve.from_spec({"kind": "weibull", "shape": 0.5, "scale_s": 900.0})
    ]
    p = HazardAwarePolicy(curves=curves, policy=policy, forecast="own")
    nodes = {
        "age_s": rng.uniform(0, 5000, n),
        "slots": rng.integers(1, 4, n).astype("uint32"),
        "slots_used": rng.integers(0, 3, n).astype("uint32"),
        "decode_tok_s": rng.uniform(10, 80, n),
        "prefill_tok_s": rng.uniform(500, 8000, n),
        "queue_wait_s": rng.uniform(0, 3, n),
        "exp_rate_per_s": rng.uniform(0, 1e-2, n),
        "curve": rng.integers(0, len(curves), n).astype("uint32"),
    }
    req = Request(prompt_tokens=int(rng.integers(1, 5000)), est_output_tokens=int(rng.integers(1, 800)))
    s = p.score(nodes, req, output="numpy")
    feasible = nodes["slots_used"] < nodes["slots"]
    assert sorted(s["node"]) == list(np.flatnonzero(feasible))
    c = p.choose(nodes, req)
    if len(s["node"]) == 0:
        assert c.node is None
        return
    best = s["t_s"] if policy == "fastest" else s["e_s"]
    assert c.node in s["node"][best == best.min()]
    assert np.all(s["t_s"] > 0)
    if policy != "fastest":  # the hazard-blind rule prices no L
        assert np.all(s["l_s"] >= 0)


def test_bad_input_is_a_value_error_naming_the_argument():
    p = HazardAwarePolicy(curves=[_exp(60.0)])
    req = Request(prompt_tokens=10, est_output_tokens=10)
    with pytest.raises(ValueError, match="decode_tok_s has 3 values, but others have 2"):
        p.score({"age_s": [1.0, 2.0], "decode_tok_s": [1.0, 2.0, 3.0]}, req)
    with pytest.raises(ValueError, match="age_s of node 1 is NaN"):
        p.score({"age_s": [1.0, math.nan]}, req)
    with pytest.raises(ValueError, match="decode_tok_s of node 0 is negative"):
        p.score({"decode_tok_s": [-1.0]}, req)
    with pytest.raises(ValueError, match="slots of node 0 must be a non-negative whole number"):
        p.score({"slots": [1.5]}, req)
    with pytest.raises(ValueError, match="names curve 3, but the policy has 1 curves"):
        p.score({"curve": [3]}, req)
    with pytest.raises(ValueError, match="from_node: 5 is not one of the 1 nodes"):
        p.should_migrate({"age_s": [1.0]}, req, 5)
    with pytest.raises(ValueError, match="request: unknown field"):
        p.score({"age_s": [1.0]}, {"prompt_tokens": 1, "est_output_tokens": 1, "colour": 2})
    with pytest.raises(ValueError, match="est_sigma"):
        p.score({"age_s": [1.0]}, Request(prompt_tokens=1, est_output_tokens=1, est_sigma=-1))
    with pytest.raises(ValueError, match="policy: unknown policy"):
        HazardAwarePolicy(curves=[_exp(60.0)], policy="clairvoyant")
    with pytest.raises(ValueError, match="unknown parameter.*stal_penalty_s"):
        HazardAwarePolicy(curves=[_exp(60.0)], stal_penalty_s=3.0)
    with pytest.raises(ValueError, match="params: unknown variant"):
        HazardAwarePolicy(curves=[_exp(60.0)], forecast="psychic")
    with pytest.raises(ValueError, match="exactly one of priors and curves"):
        HazardAwarePolicy()
    with pytest.raises(ValueError, match="output"):
        p.score({"age_s": [1.0]}, req, output="excel")
    with pytest.raises(ValueError, match="curve spec"):
        SurvivalCurve.from_spec({"kind": "steps", "times": [5.0, 1.0], "values": [0.9, 0.8],
                                 "tail_rate_per_s": 0.0})

    with pytest.raises(ValueError, match="forecast_total_s of node 0 is negative"):
        p.score({"age_s": [1.0], "forecast_start_s": [0.0], "forecast_total_s": [-5.0]}, req)
    with pytest.raises(ValueError, match=r"the answer to stationary on node 0 is \(0, -5, 0\): times"):
        p.score({"age_s": [1.0]}, req, forecast=lambda *a: (0.0, -5.0, 0.0))
    with pytest.raises(ValueError, match="hysteresis_s must be a non-negative number"):
        HazardAwarePolicy(curves=[_exp(60.0)], hysteresis_s=-1.0)
    with pytest.raises(ValueError, match="stall_penalty_s must be a non-negative number"):
        HazardAwarePolicy(curves=[_exp(60.0)], stall_penalty_s=math.nan)
    with pytest.raises(ValueError, match="request: prompt_tokens must be a non-negative whole number"):
        p.score({"age_s": [1.0]}, Request(prompt_tokens=-5, est_output_tokens=1))
    with pytest.raises(ValueError, match="request: prompt_tokens must be a non-negative whole number, got 5.7"):
        p.score({"age_s": [1.0]}, Request(prompt_tokens=5.7, est_output_tokens=1))
    with pytest.raises(ValueError, match="curve of node 0 must be a non-negative whole number"):
        p.score({"age_s": [1.0], "curve": [0.7]}, req)
    two = {"age_s": [1.0, 2.0]}
    with pytest.raises(ValueError, match="request: node 1 is not from_node 0"):
        p.should_migrate(two, Request(prompt_tokens=5, est_output_tokens=9, node=1), 0)
    with pytest.raises(ValueError, match="from_node: expected a node index, got True"):
        p.should_migrate(two, req, True)
    # A running request without a node runs on from_node.
    assert p.should_migrate(two, Request(prompt_tokens=5, est_output_tokens=9), 0).outcome

    def broken(ask, node, newcomer, rid):
        raise RuntimeError("the host's forecast is down")

    with pytest.raises(RuntimeError, match="forecast is down"):
        p.score({"age_s": [1.0]}, req, forecast=broken)
    with pytest.raises(ValueError, match=r"must return \(start_s, total_s, imposed_s\)"):
        p.score({"age_s": [1.0]}, req, forecast=lambda *a: "soon")


def test_a_curve_round_trips_through_its_spec():
    priors = Priors.from_json(__import__("json").dumps(DOC))
    for linear in (False, True):
        c = priors.curve("a", linear=linear)
        back = SurvivalCurve.from_spec(c.spec())
        t = np.array([0.0, 10.0, 60.0, 299.0, 5000.0])
        assert np.array_equal(back.conditional_survival(25.0, t), c.conditional_survival(25.0, t))
        assert back.spec() == c.spec()
        assert c.spec()["kind"] == ("linear" if linear else "steps")

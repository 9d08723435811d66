"""hazardserve.vidur_plugin against the real Vidur (0.0.26, pinned by
python/constraints.txt): the policy places Vidur's requests over replicas whose
availability comes from a trace clock. A down replica is never scheduled; during a full outage
requests wait for the next recovery; requests caught by a replica's end are accounted as
interrupted; every placement is the policy's own; the hazard term avoids a replica that fails
(positive control) and changes nothing where every replica looks alike (negative control). The
execution-time predictor is the stand-in (Vidur's kernel profiles come from a model hub this
machine does not reach)."""

import math

import numpy as np
import pytest

vidur_plugin = pytest.importorskip("hazardserve.vidur_plugin")

from hazardserve.policy import HazardAwarePolicy, Request  # noqa: E402
from hazardserve.priors import SurvivalCurve  # noqa: E402

Availability = vidur_plugin.Availability
simulate = vidur_plugin.simulate

RISKY = SurvivalCurve.from_spec({"kind": "exponential", "mean_s": 3.0})
SAFE = SurvivalCurve.from_spec({"kind": "exponential", "mean_s": None})


def trace(n=160, every=0.05):
    return [(round(every * i, 3), 128 + 64 * (i % 8), 16 + 8 * (i % 5)) for i in range(n)]


def test_no_down_replica_is_scheduled_and_a_full_outage_is_waited_out():
    avail = Availability([
        [(0.0, 2.0), (3.0, math.inf)],
        [(0.0, 2.5), (3.5, math.inf)],
        [(0.5, 2.2), (4.0, math.inf)],
    ])
    policy = HazardAwarePolicy(curves=[SAFE])
    df, sched = simulate(trace(), avail, policy)
    assert df["completed_s"].notna().all()
    for row in df.itertuples():
        assert avail.session(row.replica, row.dispatched_s) is not None, row
        assert row.dispatched_s >= row.arrival_s
    # Every replica is down in [2.5, 3.0): those arrivals wait for replica 0's recovery.
    outage = df[(df["arrival_s"] >= 2.5) & (df["arrival_s"] < 3.0)]
    assert len(outage) > 0
    assert (outage["dispatched_s"] == 3.0).all() and (outage["replica"] == 0).all()
    assert (df.loc[df["arrival_s"] < 2.0, "held_s"] == 0).all()


def test_requests_caught_by_a_replica_end_are_interrupted():
    # Replica 0 ends at 1.0 s (back at 1.2 s); replica 1 never ends.
    avail = Availability([[(0.0, 1.0), (1.2, math.inf)], [(0.0, math.inf)]])
    policy = HazardAwarePolicy(curves=[SAFE], policy="fastest")
    df, _ = simulate(trace(60, every=0.02), avail, policy)
    caught = (df["replica"] == 0) & (df["dispatched_s"] < 1.0) & (df["completed_s"] > 1.0)
    assert caught.sum() > 0
    assert df["interrupted"].tolist() == caught.tolist()


def test_vidur_is_restored_after_a_run():
    from vidur.execution_time_predictor import ExecutionTimePredictorRegistry
    from vidur.scheduler import GlobalSchedulerRegistry
    from vidur.events.global_schedule_event import GlobalScheduleEvent
    from vidur.types import ExecutionTimePredictorType, GlobalSchedulerType

    before = (
        GlobalSchedulerRegistry.get_class(GlobalSchedulerType.LOR),
        ExecutionTimePredictorRegistry.get_class(ExecutionTimePredictorType.RANDOM_FORREST),
        GlobalScheduleEvent.handle_event,
    )
    simulate(trace(5), Availability([[(0.0, math.inf)]]), HazardAwarePolicy(curves=[SAFE]))
    after = (
        GlobalSchedulerRegistry.get_class(GlobalSchedulerType.LOR),
        ExecutionTimePredictorRegistry.get_class(ExecutionTimePredictorType.RANDOM_FORREST),
        GlobalScheduleEvent.handle_event,
    )
    assert after == before
    assert before[0].__module__.startswith("vidur.")


def test_every_placement_is_the_policy_s_own():
    avail = Availability([[(0.0, math.inf)], [(0.0, math.inf)], [(0.3, math.inf)]])
    policy = HazardAwarePolicy(curves=[RISKY, SAFE])
    df, sched = simulate(trace(80), avail, policy, curve_ids=[0, 1, 1])
    lengths = df.set_index("request")
    assert len(sched.decisions) == len(df)
    for nodes, rid, choice in sched.decisions:
        r = Request(id=rid, prompt_tokens=int(lengths.loc[rid, "prompt_tokens"]),
                    est_output_tokens=int(lengths.loc[rid, "output_tokens"]))
        assert policy.choose(nodes, r).node == choice


def test_the_hazard_term_avoids_a_failing_replica():
    # Replica 0 fails every few seconds and its curve says so; the others never fail.
    sessions0 = [(3.0 * k, 3.0 * k + 2.0) for k in range(10)]
    avail = Availability([sessions0, [(0.0, math.inf)], [(0.0, math.inf)]])
    out = {}
    for kind in ("hazard", "fastest"):
        policy = HazardAwarePolicy(curves=[RISKY, SAFE], policy=kind)
        df, _ = simulate(trace(400), avail, policy, curve_ids=[0, 1, 1])
        out[kind] = (int((df["replica"] == 0).sum()), int(df["interrupted"].sum()))
    assert out["hazard"][0] < out["fastest"][0], out
    assert out["hazard"][1] < out["fastest"][1], out


def test_where_every_replica_looks_alike_the_hazard_term_changes_nothing():
    avail = Availability([[(0.0, math.inf)]] * 3)
    got = {}
    for kind in ("hazard", "fastest"):
        policy = HazardAwarePolicy(curves=[RISKY], policy=kind)
        df, _ = simulate(trace(120), avail, policy)
        got[kind] = df["replica"].tolist()
    assert got["hazard"] == got["fastest"]


def test_the_stand_in_predictor_serves_a_lone_request():
    avail = Availability([[(0.0, math.inf)]])
    df, _ = simulate([(0.0, 128, 16)], avail, HazardAwarePolicy(curves=[SAFE]))
    P = vidur_plugin.StandInPredictor
    prefill = P.OVERHEAD_MS + P.PREFILL_MS_PER_TOKEN * 128
    decode = sum(P.OVERHEAD_MS + P.DECODE_MS_PER_KV_TOKEN * (128 + k) for k in range(1, 16))
    assert df["e2e_s"][0] == pytest.approx((prefill + decode) / 1000, rel=0.01)


def test_bad_availability_is_refused():
    with pytest.raises(ValueError, match="replica 0, session 0"):
        Availability([[(2.0, 1.0)]])
    with pytest.raises(ValueError, match="overlap"):
        Availability([[(0.0, 2.0), (1.0, 3.0)]])
    a = Availability([[(0.0, 1.0), (2.0, math.inf)], [(0.5, 1.5)]])
    assert a.session(0, 1.0) is None and a.session(0, 2.0) == (2.0, math.inf)
    assert a.next_recovery(1.0) == 2.0 and a.next_recovery(2.0) is None

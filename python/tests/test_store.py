"""hazardserve.store: the store, its named queries and SQL, a replay and a sweep from Python,
each answer a DataFrame read from the Parquet the binary writes. Runs on a copy of the demo
store (HAZARDSERVE_STORE_COPY) with the binary (HAZARDSERVE_BIN), which the integration test
passes; the numbers are checked against the binary's own JSON output."""

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from hazardserve.store import HazardserveError, Run, Store, find_binary


@pytest.fixture(scope="module")
def store():
    path = os.environ.get("HAZARDSERVE_STORE_COPY")
    if not path or not os.environ.get("HAZARDSERVE_BIN"):
        pytest.skip("HAZARDSERVE_STORE_COPY and HAZARDSERVE_BIN are not set (the integration test sets them)")
    return Store(path, progress=False)


def cli_json(store, *args):
    out = subprocess.run(
        [store.binary, "--store", str(store.path), *args, "--format", "json"],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def test_the_store_and_its_named_queries(store):
    sources = store.sources()
    assert isinstance(sources, pd.DataFrame)
    assert {"sample-spot", "sample-requests"} <= set(sources["source"])
    queries = store.queries()
    assert "availability" in set(queries["name"])
    avail = store.query("availability", source="sample-spot", k=1)
    want = cli_json(store, "query", "availability", "--param", "source=sample-spot", "--param", "k=1")
    assert len(avail) == len(want) and list(avail.columns) == list(want[0])
    assert avail["available_share"].tolist() == pytest.approx([r["available_share"] for r in want])
    n = store.sql("select count(*) as n from sessions where source = 'sample-spot'")["n"][0]
    assert n == sources.set_index("source").loc["sample-spot", "sessions"]
    pl = pytest.importorskip("polars")
    assert isinstance(store.sources(output="polars"), pl.DataFrame)
    with pytest.raises(HazardserveError, match="no_such_table|no-such-table|Catalog Error|not exist"):
        store.sql("select * from no_such_table")


def test_a_replay_its_comparison_requests_and_calibration(store):
    lines = []
    run = store.replay(source="sample-spot", workload="sample-requests",
                       policies=["hazard", "fastest"], windows=2, progress=lines.append)
    assert isinstance(run, Run) and run.run_id and run.run_id.startswith("run-")
    assert any(l.startswith("replaying ") for l in lines), lines
    assert not any("hazardserve-" in l and l.startswith("wrote") for l in lines)
    cmp = run.comparison.set_index("policy")
    want = {r["policy"]: r for r in cli_json(store, "compare", run.run_id)}
    assert set(cmp.index) == set(want)
    for policy, r in want.items():
        assert cmp.loc[policy, "mean_completion_s"] == pytest.approx(r["mean_completion_s"])
        assert cmp.loc[policy, "requests"] == r["requests"]
    assert cmp.loc["hazard", "vs_fastest_mean_completion_s_ci_lo"] <= cmp.loc["hazard", "vs_fastest_mean_completion_s"]
    assert {"forecast_t_ratio_median", "forecast_interruption_brier"} <= set(run.calibration.columns)
    arrow = Store(store.path, output="arrow", progress=False).run(run.run_id)
    assert "forecast_interruption_brier" in arrow.calibration.column_names
    req = run.requests()
    assert set(req["run_id"]) == {run.run_id}
    # The comparison's request count is the scored requests of one policy's runs.
    scored = req[(req["policy"] == "fastest")]
    assert len(scored) >= cmp.loc["fastest", "requests"]
    again = store.run(run.run_id)
    assert again.comparison.shape == run.comparison.shape
    assert store.run().run_id == run.run_id  # the latest
    assert run.run_id in set(store.runs()["run_id"])
    unsaved = store.replay(source="sample-spot", workload="sample-requests",
                           policies=["fastest"], windows=1, save=False)
    assert unsaved.run_id is None
    with pytest.raises(ValueError, match="not stored"):
        unsaved.requests()


def test_a_sweep_slice_and_its_summary(store):
    grid = Path(os.environ.get("HAZARDSERVE_GRIDS", "reports/sweeps")) / "demo.toml"
    summary = store.sweep(grid, id="py-slice", where={"nodes.source": "sample-spot",
                                                      "hardware.preset": "phone"})
    assert len(summary) == 2  # two loads
    assert set(summary["hardware.preset"]) == {"phone"}
    want = cli_json(store, "sweep", "summary", "py-slice")
    key = lambda load: str(float(load))
    by_load = {key(r["workload.load"]): r for r in want}
    for _, row in summary.iterrows():
        r = by_load[key(row["workload.load"])]
        assert row["hazard_term"] == r["hazard_term"]
        assert row["vs_fastest_mean_completion_s"] == pytest.approx(
            r["hazard_vs_fastest"]["mean_completion_s"]["diff"]
        )
    assert "py-slice" in set(store.sweeps()["sweep_id"])


def test_errors_name_the_problem(store):
    with pytest.raises(HazardserveError, match='no source "nope"'):
        store.replay(source="nope", workload="sample-requests", windows=1)
    with pytest.raises(ValueError, match="--bogus-flag"):
        store.replay(source="sample-spot", bogus_flag=3)
    with pytest.raises(ValueError, match="output"):
        Store(store.path, output="excel")
    with pytest.raises(FileNotFoundError, match="binary: /no/such/hazardserve"):
        find_binary("/no/such/hazardserve")

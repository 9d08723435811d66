"""HazardAwarePolicy.score and .choose over many nodes: the median of `--repeat` calls.

    python python/bench/bench_policy.py [--nodes 1000] [--repeat 200]
"""

import argparse
import time

import numpy as np

from hazardserve.policy import HazardAwarePolicy, Node, Request
from hazardserve.priors import SurvivalCurve


def median_ms(f, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000, help="nodes (default 1000)")
    ap.add_argument("--repeat", type=int, default=200, help="calls (default 200)")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    n = args.nodes
    # Eight Weibull curves (decreasing hazard, as the spot and volunteer traces fit).
    curves = [
        SurvivalCurve.from_spec({"kind": "weibull", "shape": 0.6, "scale_s": 3600.0 * (k + 1)})
        for k in range(8)
    ]
    nodes = {
        "age_s": rng.uniform(0, 1e5, n),
        "slots": np.full(n, 8, dtype=np.uint32),
        "slots_used": rng.integers(0, 8, n).astype(np.uint32),
        "kv_capacity_tokens": np.full(n, 200_000, dtype=np.uint64),
        "kv_used_tokens": rng.integers(0, 100_000, n).astype(np.uint64),
        "queue_wait_s": rng.uniform(0, 2, n),
        "decode_tok_s": rng.uniform(20, 60, n),
        "prefill_tok_s": rng.uniform(2000, 8000, n),
        "bandwidth_bytes_s": np.full(n, 1.25e9),
        "curve": rng.integers(0, 8, n).astype(np.uint32),
    }
    policy = HazardAwarePolicy(curves=curves)
    req = Request(prompt_tokens=2000, est_output_tokens=300)
    as_nodes = [
        Node(**{k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in nodes.items()})
        for i in range(n)
    ]
    print(f"{n:,} nodes, median of {args.repeat} calls")
    for name, f in [
        ("score (numpy)", lambda: policy.score(nodes, req, output="numpy")),
        ("score (pandas)", lambda: policy.score(nodes, req)),
        ("choose", lambda: policy.choose(nodes, req)),
        ("score (Node list)", lambda: policy.score(as_nodes, req, output="numpy")),
    ]:
        print(f"{name:<18} {median_ms(f, args.repeat):>8.3f} ms")


if __name__ == "__main__":
    main()

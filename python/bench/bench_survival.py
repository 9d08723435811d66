"""Kaplan-Meier, Nelson-Aalen and Aalen-Johansen fits and the two-sample log-rank test,
hazardserve against lifelines 0.30.3 in the same process on the same data: the median of
`--repeat` runs each, and the speed-up. Durations are Weibull (shape 0.8, scale 100 s) rounded
to `--decimals` places (3: about 320,000 distinct times in 1e6; 0: whole seconds, as the
availability traces record them). The
Aalen-Johansen fit (three competing causes, variance and interval included, as both default
to) runs on `--aj-n` observations with untied times (lifelines jitters tied times of
different causes, and its variance loop is per row in Python).

    python python/bench/bench_survival.py [--n 1000000] [--aj-n 100000] [--repeat 5] [--decimals 3]
"""

import argparse
import time
import warnings

import numpy as np

import lifelines
import lifelines.statistics
from hazardserve import statistics as hs_stats
from hazardserve import survival as hs


def median_time(f, repeat):
    """The median wall time of ``repeat`` runs of ``f``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000, help="observations (default 1e6)")
    ap.add_argument("--aj-n", type=int, default=100_000, help="Aalen-Johansen observations (default 1e5)")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each fit (default 5)")
    ap.add_argument("--decimals", type=int, default=3, help="durations rounded to (default 3)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    d = np.round(rng.weibull(0.8, args.n) * 100.0, args.decimals)
    e = rng.random(args.n) < 0.7
    entry = np.round(d * rng.random(args.n) * 0.3, 3)
    warnings.simplefilter("ignore")
    cases = [
        ("Kaplan-Meier", hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, {}),
        ("Kaplan-Meier, left-truncated", hs.KaplanMeierFitter, lifelines.KaplanMeierFitter, {"entry": entry}),
        ("Nelson-Aalen", hs.NelsonAalenFitter, lifelines.NelsonAalenFitter, {}),
    ]
    print(f"n = {args.n:,}, {len(np.unique(d)):,} distinct times, median of {args.repeat}")
    print(f"{'fit':<30} {'hazardserve':>12} {'lifelines':>12} {'speed-up':>9}")
    for name, ours, theirs, kw in cases:
        a = median_time(lambda: ours().fit(d, e, **kw), args.repeat)
        b = median_time(lambda: theirs().fit(d, e, **kw), args.repeat)
        print(f"{name:<30} {a:>11.3f}s {b:>11.3f}s {b / a:>8.1f}x")
    g = rng.random(args.n) < 0.5
    da, db, ea, eb = d[g], d[~g], e[g], e[~g]
    name = "log-rank test (two groups)"
    a = median_time(lambda: hs_stats.logrank_test(da, db, ea, eb), args.repeat)
    b = median_time(lambda: lifelines.statistics.logrank_test(da, db, ea, eb), args.repeat)
    print(f"{name:<30} {a:>11.3f}s {b:>11.3f}s {b / a:>8.1f}x")
    aj_d = rng.weibull(0.8, args.aj_n) * 100.0
    aj_c = rng.integers(0, 4, args.aj_n)
    name = f"Aalen-Johansen (n = {args.aj_n:,})"
    a = median_time(lambda: hs.AalenJohansenFitter().fit(aj_d, aj_c, event_of_interest=1), args.repeat)
    b = median_time(lambda: lifelines.AalenJohansenFitter().fit(aj_d, aj_c, event_of_interest=1), args.repeat)
    print(f"{name:<30} {a:>11.3f}s {b:>11.3f}s {b / a:>8.1f}x")


if __name__ == "__main__":
    main()

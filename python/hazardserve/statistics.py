"""Group tests with lifelines' functions and result object, computed in Rust:
``logrank_test``, ``multivariate_logrank_test`` and ``pairwise_logrank_test`` (log-rank,
Wilcoxon, Tarone-Ware and Peto weightings) return a :class:`StatisticalResult` with
``test_statistic``, ``p_value``, ``degrees_of_freedom`` and ``summary`` as lifelines' do
(checked against lifelines 0.30.3 by ``python/tests/test_statistics.py``); a pairwise result
holds one row per pair of groups, named by the pair.

Not supported, and refused with a ``ValueError`` rather than ignored: ``t_0`` other than -1,
case weights, and the Fleming-Harrington weighting. Where the covariance is singular (no event
time with more than one group at risk) and observed differs from expected, the statistic and
p-value are NaN; lifelines inverts the covariance by pseudo-inverse there.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Optional

import numpy as np
import pandas as pd

from . import _native
from .survival import _flags, _floats

__all__ = ["StatisticalResult", "logrank_test", "multivariate_logrank_test", "pairwise_logrank_test"]


class StatisticalResult:
    """A test's result, as lifelines' ``StatisticalResult`` (``p_value``, ``test_statistic``,
    ``test_name``, ``degrees_of_freedom``, ``summary``, ``print_summary``, ``to_ascii``). In
    addition to lifelines' attributes, a log-rank result carries ``observed`` and ``expected``
    per group: events, weighted by the weighting when there is one."""

    def __init__(self, p_value: float, test_statistic: float, test_name: str, **kwargs: Any) -> None:
        self.p_value = p_value
        self.test_statistic = test_statistic
        self.test_name = test_name
        self.name = None
        self.degrees_of_freedom = kwargs.pop("degrees_of_freedom")
        self.null_distribution = "chi squared"
        self.t_0 = -1
        self._kwargs = kwargs
        for k, v in kwargs.items():
            setattr(self, k, v)

    @property
    def summary(self) -> pd.DataFrame:
        """``test_statistic``, ``p`` and ``-log2(p)``: one row, or one per named comparison
        (a pairwise test's pairs, as a ``MultiIndex``)."""
        p = np.atleast_1d(np.asarray(self.p_value, dtype=float))
        stat = np.atleast_1d(np.asarray(self.test_statistic, dtype=float))
        with np.errstate(divide="ignore", invalid="ignore"):
            log2 = np.where(p > 0, -np.log2(np.where(p > 0, p, 1.0)), np.where(np.isnan(p), np.nan, math.inf))
        index = None
        if self.name is not None:
            index = pd.MultiIndex.from_tuples(self.name) if self.name else pd.Index([])
        return pd.DataFrame({"test_statistic": stat, "p": p, "-log2(p)": log2}, index=index)

    def to_ascii(self, decimals: int = 2) -> str:
        """The result as text: its settings, then the summary table."""
        head = "\n".join(
            f"{k:>17} = {v}"
            for k, v in (
                ("t_0", self.t_0),
                ("null_distribution", self.null_distribution),
                ("degrees_of_freedom", self.degrees_of_freedom),
                ("test_name", self.test_name),
            )
        )
        table = self.summary.to_string(
            float_format=lambda x: f"{x:.{decimals}f}", index=self.name is not None
        )
        return f"{head}\n\n---\n{table}"

    def print_summary(self, decimals: int = 2, **kwargs: Any) -> None:
        """Prints :meth:`to_ascii`."""
        print(self.to_ascii(decimals))

    def __repr__(self) -> str:
        if self.name is not None:
            return f"<hazardserve.statistics.StatisticalResult: {self.test_name}, {len(self.name)} comparisons>"
        return (
            f"<hazardserve.statistics.StatisticalResult: {self.test_name}, "
            f"test_statistic = {self.test_statistic:.4g}, p = {self.p_value:.4g}, "
            f"degrees_of_freedom = {self.degrees_of_freedom}>"
        )


_WEIGHTING_NAMES = {"wilcoxon": "Wilcoxon", "tarone-ware": "Tarone-Ware", "peto": "Peto"}


def _refuse(t_0, weights, weightings) -> Optional[str]:
    if t_0 != -1:
        raise ValueError("t_0 is not supported (the test uses every event time)")
    if weights is not None:
        raise ValueError("case weights are not supported by the log-rank test here")
    if weightings not in (None, "wilcoxon", "tarone-ware", "peto"):
        raise ValueError(
            f'weightings must be None, "wilcoxon", "tarone-ware" or "peto", got {weightings!r}'
        )
    return weightings


def _events(event_observed, n: int, name: str, of: str) -> np.ndarray:
    """Event flags (all observed by default), one per duration of ``of``, none NaN."""
    if event_observed is None:
        return np.ones(n, dtype=bool)
    raw = np.asarray(event_observed).reshape(-1)
    if raw.shape[0] != n:
        raise ValueError(f"{name} has {raw.shape[0]} values, {of} {n}")
    if raw.dtype.kind == "f" and np.isnan(raw).any():
        k = int(np.flatnonzero(np.isnan(raw))[0])
        raise ValueError(f"{name} has NaN values (the first at position {k})")
    return raw if raw.dtype == bool else raw.astype(bool)


def _grouped(event_durations, groups, event_observed):
    """Durations (float64), group labels and event flags (bool; all observed by default),
    checked to have one value per duration."""
    d = _floats(event_durations, "event_durations", non_negative=True)
    n = d.shape[0]
    labels = _labels(groups, "groups", n)
    return d, labels, _events(event_observed, n, "event_observed", "event_durations")


def _labels(values, name: str, n: int) -> np.ndarray:
    """Group or stratum labels, one per duration, none missing (NaN or None)."""
    labels = np.asarray(values)
    if labels.ndim > 1:
        raise ValueError(f"{name} must be one-dimensional (got shape {labels.shape})")
    labels = labels.reshape(-1)
    if labels.shape[0] != n:
        raise ValueError(f"{name} has {labels.shape[0]} values, event_durations {n}")
    missing = pd.isna(labels)
    if missing.any():
        k = int(np.flatnonzero(missing)[0])
        raise ValueError(f"{name} has missing labels (the first at position {k})")
    return labels


def multivariate_logrank_test(
    event_durations,
    groups,
    event_observed=None,
    weights=None,
    t_0: float = -1,
    weightings: Optional[str] = None,
    strata=None,
    **kwargs: Any,
) -> StatisticalResult:
    """The k-group log-rank test (lifelines' arguments): ``groups`` labels each duration.
    ``strata`` (not in lifelines) labels each duration's stratum: observed, expected and
    their covariance are computed within each stratum and summed before the statistic, as
    R's ``survdiff(... + strata(s))`` does, so that a difference that only reflects how the
    groups spread over the strata is not counted."""
    weightings = _refuse(t_0, weights, weightings)
    d, labels, e = _grouped(event_durations, groups, event_observed)
    strata_index = None
    if strata is not None:
        s = _labels(strata, "strata", d.shape[0])
        strata_index = np.unique(s, return_inverse=True)[1]
    test_name = kwargs.pop("test_name", "multivariate_logrank_test")
    if weightings is not None:
        # lifelines names a weighted test after its weighting.
        test_name = test_name.replace("logrank", _WEIGHTING_NAMES[weightings])
    names, index = np.unique(labels, return_inverse=True)
    return _grouped_test(d, e, index, names, weightings, test_name, kwargs, strata_index)


def _grouped_test(
    d, e, index, names, weightings, test_name, kwargs, strata=None
) -> StatisticalResult:
    """The k-group test of durations ``d`` with events ``e`` in groups ``index`` (0 to
    ``len(names) - 1``), named by ``names``, within ``strata`` (indices) when given. With
    ``index`` ``None``, ``d`` and ``e`` are lists of one array per group."""
    if len(names) < 2:
        # Nothing to compare, as lifelines answers it.
        return StatisticalResult(math.nan, 0.0, test_name, degrees_of_freedom=0, **kwargs)
    stat, p, dof, observed, expected = _native.logrank_test(
        d if isinstance(d, list) else np.asarray(d, dtype=np.float64),
        [_flags(x) for x in e] if isinstance(e, list) else _flags(e),
        None if index is None else np.asarray(index, dtype=np.uint32),
        len(names),
        weightings,
        None if strata is None else np.asarray(strata, dtype=np.uint32),
    )
    o, x = np.frombuffer(observed), np.frombuffer(expected)
    if math.isnan(stat) and np.allclose(o, x, rtol=0.0, atol=1e-12):
        # No event where the groups overlap and nothing observed beyond the expected: no
        # difference (lifelines' pseudo-inverse gives 0 too).
        stat, p = 0.0, 1.0
    return StatisticalResult(
        p,
        stat,
        test_name,
        degrees_of_freedom=dof,
        observed=pd.Series(o, index=names),
        expected=pd.Series(x, index=names),
        **kwargs,
    )


def logrank_test(
    durations_A,
    durations_B,
    event_observed_A=None,
    event_observed_B=None,
    t_0: float = -1,
    weights_A=None,
    weights_B=None,
    weightings: Optional[str] = None,
    **kwargs: Any,
) -> StatisticalResult:
    """The two-sample log-rank test (lifelines' arguments)."""
    a = _floats(durations_A, "durations_A", non_negative=True)
    b = _floats(durations_B, "durations_B", non_negative=True)
    ea = _events(event_observed_A, a.shape[0], "event_observed_A", "durations_A")
    eb = _events(event_observed_B, b.shape[0], "event_observed_B", "durations_B")
    weights = None if weights_A is None and weights_B is None else (weights_A, weights_B)
    weightings = _refuse(t_0, weights, weightings)
    test_name = kwargs.pop("test_name", "logrank_test")
    if weightings is not None:
        # lifelines names a weighted test after its weighting.
        test_name = test_name.replace("logrank", _WEIGHTING_NAMES[weightings])
    # Group A is 0 and B is 1 (lifelines' observed and expected are indexed so): the native
    # test takes the two samples as the parts of one column, a group each.
    # An empty group leaves nothing to compare (as the k-group test's labels would).
    names = np.array([g for g, m in ((0, a.shape[0]), (1, b.shape[0])) if m > 0])
    return _grouped_test([a, b], [ea, eb], None, names, weightings, test_name, kwargs)


def pairwise_logrank_test(
    event_durations,
    groups,
    event_observed=None,
    t_0: float = -1,
    weightings: Optional[str] = None,
    **kwargs: Any,
) -> StatisticalResult:
    """The two-sample log-rank test for every pair of groups (lifelines' arguments): one row
    per pair, in the order of the sorted group labels, named by the pair."""
    _refuse(t_0, None, weightings)
    d, labels, e = _grouped(event_durations, groups, event_observed)
    pairs = list(combinations(np.unique(labels).tolist(), 2))
    stats, ps, test_name = [], [], "pairwise_logrank_test"
    for g1, g2 in pairs:
        a, b = labels == g1, labels == g2
        r = logrank_test(d[a], d[b], e[a], e[b], weightings=weightings)
        stats.append(r.test_statistic)
        ps.append(r.p_value)
        test_name = r.test_name
    result = StatisticalResult(
        np.asarray(ps, dtype=float),
        np.asarray(stats, dtype=float),
        test_name,
        degrees_of_freedom=1,
        **kwargs,
    )
    result.name = pairs
    return result

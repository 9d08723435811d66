"""Survival estimators with lifelines' classes, arguments and attributes, fitted in Rust.

``from hazardserve.survival import KaplanMeierFitter`` replaces the lifelines import for the
estimators here: the same ``fit`` arguments, the same attribute and column names
(``survival_function_``, ``confidence_interval_``, ``median_survival_time_``,
``event_table``, ``predict``, ...) and the same numbers, at the tolerances of the golden cases
(``python/tests/test_survival.py`` checks them against lifelines 0.30.3 itself).

Differences from lifelines, on purpose:

* ``weights`` must be whole numbers (lifelines warns and goes on with fractional weights,
  whose naive variance is biased); a fractional weight raises ``ValueError``.
* Left truncation that empties the risk set early is fitted (the estimate is 0 from there)
  instead of raising lifelines' ``StatError``.
* Nelson-Aalen adds nothing at a time whose risk set is empty (lifelines' smoothed estimator
  adds a harmonic sum there, its discrete one does not).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from . import _native

__all__ = ["KaplanMeierFitter", "NelsonAalenFitter"]


def _z(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def _floats(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} has NaN or infinite values")
    return a


def _columns(durations, event_observed, entry, weights):
    """The estimator's inputs as arrays, checked as lifelines checks them: durations and entry
    as float64, events as bool, weights as uint32 (or ``None``)."""
    d = _floats(durations, "durations")
    n = d.shape[0]
    if event_observed is None:
        e = np.ones(n, dtype=bool)
    else:
        raw = np.asarray(event_observed).reshape(-1)
        if raw.shape[0] != n:
            raise ValueError(f"event_observed has {raw.shape[0]} values, durations {n}")
        e = raw.astype(int) != 0
    en = None
    if entry is not None:
        en = _floats(entry, "entry")
        if en.shape[0] != n:
            raise ValueError(f"entry has {en.shape[0]} values, durations {n}")
    w = None
    if weights is not None:
        wf = _floats(weights, "weights")
        if wf.shape[0] != n:
            raise ValueError(f"weights has {wf.shape[0]} values, durations {n}")
        if (wf != np.round(wf)).any() or (wf < 0).any() or (wf > 2**32 - 1).any():
            raise ValueError("weights must be non-negative whole numbers")
        w = wf.astype(np.uint32)
    return d, e, en, w


def _native_args(d, e, en, w):
    """The arrays as the native module reads them: native-endian bytes, one copy each."""
    return (
        np.ascontiguousarray(d, dtype=np.float64).tobytes(),
        np.ascontiguousarray(e, dtype=np.uint8).tobytes(),
        None if en is None else np.ascontiguousarray(en, dtype=np.float64).tobytes(),
        None if w is None else np.ascontiguousarray(w, dtype=np.uint32).tobytes(),
    )


def _arrays(cols: dict) -> dict:
    """The native module's columns (float64 bytes) as read-only arrays, without a copy."""
    return {k: np.frombuffer(v, dtype=np.float64) for k, v in cols.items()}


def _event_table(cols: dict, with_entry: bool) -> pd.DataFrame:
    """lifelines' event table: removed, observed, censored, entrance, at_risk by ``event_at``
    (at_risk counts the entrants of the row, as lifelines does)."""
    observed = np.asarray(cols["observed"])
    censored = np.asarray(cols["censored"])
    entrance = np.asarray(cols["entrance"])
    at_risk = np.asarray(cols["at_risk"]).copy()
    if with_entry and at_risk.shape[0] > 1:
        at_risk[1:] += entrance[1:]
    table = pd.DataFrame(
        {
            "removed": (observed + censored).astype(int),
            "observed": observed.astype(int),
            "censored": censored.astype(int),
            "entrance": entrance.astype(int),
            "at_risk": at_risk.astype(int),
        },
        index=pd.Index(np.asarray(cols["timeline"], dtype=float), name="event_at"),
    )
    return table


def _on_timeline(values: pd.DataFrame, timeline: Optional[Any]) -> pd.DataFrame:
    """The estimate at the user's ``timeline`` (the last value at or before each time), as
    lifelines reindexes it."""
    if timeline is None:
        return values
    t = np.sort(_floats(timeline, "timeline"))
    out = values.reindex(t, method="pad").ffill()
    out.index.name = values.index.name
    return out


def _qth_survival_time(q: float, sf: pd.DataFrame) -> float:
    """First time with survival at or below ``q`` (lifelines' ``qth_survival_time``)."""
    s = sf.iloc[:, 0].to_numpy()
    below = np.nonzero(s <= q)[0]
    if below.size == 0:
        return float("inf")
    return float(sf.index[below[0]])


class _Univariate:
    """What the univariate fitters share: labels, alpha, the timeline and ``predict``."""

    _default_label = "estimate"
    _estimate_attr = ""

    def __init__(self, alpha: float = 0.05, label: Optional[str] = None) -> None:
        _z(alpha)
        self.alpha = alpha
        self._label = label

    def _labels(self, label, alpha, ci_labels) -> Tuple[str, float, Sequence[str]]:
        label = label if label is not None else (self._label or self._default_label)
        alpha = alpha if alpha else self.alpha
        if ci_labels is None:
            ci_labels = [f"{label}_lower_{1 - alpha:g}", f"{label}_upper_{1 - alpha:g}"]
        if len(ci_labels) != 2:
            raise ValueError("ci_labels must hold two names")
        return label, alpha, ci_labels

    @property
    def label(self) -> str:
        return self._label or self._default_label

    def predict(self, times, interpolate: bool = False):
        """The estimate at ``times`` (a scalar for a scalar): the last value at or before each
        time, or linear between the estimate's times with ``interpolate``."""
        estimate: pd.DataFrame = getattr(self, self._estimate_attr, None)
        if estimate is None:
            raise RuntimeError("fit the estimator before predict")
        scalar = np.ndim(times) == 0
        t = np.atleast_1d(np.asarray(times, dtype=float))
        if interpolate:
            x = estimate.index.to_numpy(dtype=float)
            y = estimate.iloc[:, 0].to_numpy()
            out = pd.Series(np.interp(t, x, y), index=t)
        else:
            out = estimate.iloc[:, 0].asof(t)
        return float(out.iloc[0]) if scalar else out

    def __repr__(self) -> str:
        fitted = getattr(self, self._estimate_attr, None) is not None
        state = f'"{self.label}", fitted with {len(self.durations)} total observations' if fitted else "unfitted"
        return f"<hazardserve.survival.{type(self).__name__}: {state}>"


class KaplanMeierFitter(_Univariate):
    """The Kaplan-Meier estimate of the survival function (lifelines' ``KaplanMeierFitter``):
    right censoring, left truncation (``entry``), whole-number ``weights``; the interval is
    the exponential Greenwood one at ``1 - alpha``.

    >>> kmf = KaplanMeierFitter().fit([1, 2, 3, 4, 5, 6], event_observed=[1, 1, 1, 1, 0, 0])
    >>> kmf.median_survival_time_
    3.0
    """

    _default_label = "KM_estimate"
    _estimate_attr = "survival_function_"

    def fit(
        self,
        durations,
        event_observed=None,
        timeline=None,
        entry=None,
        label: Optional[str] = None,
        alpha: Optional[float] = None,
        ci_labels: Optional[Sequence[str]] = None,
        weights=None,
    ) -> "KaplanMeierFitter":
        """Fits the estimate (lifelines' arguments); returns ``self``."""
        label, alpha, ci_labels = self._labels(label, alpha, ci_labels)
        d, e, en, w = _columns(durations, event_observed, entry, weights)
        raw, _ = _native.kaplan_meier(*_native_args(d, e, en, w), _z(alpha))
        cols = _arrays(raw)
        index = pd.Index(np.asarray(cols["timeline"], dtype=float), name="timeline")
        sf = pd.DataFrame({label: cols["survival"]}, index=index)
        ci = pd.DataFrame(
            {ci_labels[0]: cols["lower"], ci_labels[1]: cols["upper"]}, index=index
        )
        self._label = label
        self.alpha = alpha
        self.durations = d
        self.event_observed = e.astype(int)
        self.entry = en
        self.weights = np.ones(len(d)) if w is None else w.astype(float)
        self.event_table = _event_table(cols, en is not None)
        self.survival_function_ = _on_timeline(sf, timeline)
        self.timeline = self.survival_function_.index.to_numpy(dtype=float)
        # Before the first time the estimate is unknown (NaN) and lifelines' interval is [1, 1].
        ci = _on_timeline(ci, timeline).rename_axis(None).fillna(1.0)
        self.confidence_interval_ = ci
        self.confidence_interval_survival_function_ = ci
        self.cumulative_density_ = 1 - self.survival_function_
        cd_ci = 1 - ci
        cd_ci[:] = np.fliplr(cd_ci.values)
        self.confidence_interval_cumulative_density_ = cd_ci
        self.median_survival_time_ = _qth_survival_time(0.5, self.survival_function_)
        return self

    def survival_function_at_times(self, times, label: Optional[str] = None) -> pd.Series:
        """The survival function at ``times``, as a Series named by the label."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        values = self.predict(t)
        return pd.Series(np.asarray(values), index=t, name=label or self.label)

    def cumulative_density_at_times(self, times, label: Optional[str] = None) -> pd.Series:
        """One minus the survival function at ``times``."""
        s = self.survival_function_at_times(times, label)
        return 1 - s

    def percentile(self, p: float) -> float:
        """The first time the survival function is at or below ``p``."""
        return _qth_survival_time(p, self.survival_function_)


class NelsonAalenFitter(_Univariate):
    """The Nelson-Aalen estimate of the cumulative hazard (lifelines' ``NelsonAalenFitter``):
    ties broken one at a time by default (``nelson_aalen_smoothing``), the interval
    ``H exp(+-z sqrt(V) / H)``."""

    _default_label = "NA_estimate"
    _estimate_attr = "cumulative_hazard_"

    def __init__(
        self, alpha: float = 0.05, nelson_aalen_smoothing: bool = True, label: Optional[str] = None
    ) -> None:
        super().__init__(alpha, label)
        self._nelson_aalen_smoothing = nelson_aalen_smoothing

    def fit(
        self,
        durations,
        event_observed=None,
        timeline=None,
        entry=None,
        label: Optional[str] = None,
        alpha: Optional[float] = None,
        ci_labels: Optional[Sequence[str]] = None,
        weights=None,
    ) -> "NelsonAalenFitter":
        """Fits the estimate (lifelines' arguments); returns ``self``."""
        label, alpha, ci_labels = self._labels(label, alpha, ci_labels)
        d, e, en, w = _columns(durations, event_observed, entry, weights)
        cols = _arrays(_native.nelson_aalen_fit(*_native_args(d, e, en, w), self._nelson_aalen_smoothing))
        index = pd.Index(np.asarray(cols["timeline"], dtype=float), name="timeline")
        h = np.asarray(cols["cumulative_hazard"])
        v = np.asarray(cols["variance"])
        z = _z(alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(h > 0, np.exp(z * np.sqrt(v) / np.where(h > 0, h, 1.0)), 1.0)
        lower = np.where(h > 0, h / f, 0.0)
        upper = np.where(h > 0, h * f, 0.0)
        self._label = label
        self.alpha = alpha
        self.durations = d
        self.event_observed = e.astype(int)
        self.entry = en
        self.weights = np.ones(len(d)) if w is None else w.astype(float)
        self.cumulative_hazard_ = _on_timeline(pd.DataFrame({label: h}, index=index), timeline)
        self.timeline = self.cumulative_hazard_.index.to_numpy(dtype=float)
        ci = pd.DataFrame({ci_labels[0]: lower, ci_labels[1]: upper}, index=index)
        ci = _on_timeline(ci, timeline).rename_axis(None)
        self.confidence_interval_ = ci
        self.confidence_interval_cumulative_hazard_ = ci
        self._cumulative_sq = _on_timeline(pd.DataFrame({label: v}, index=index), timeline)
        return self

    def cumulative_hazard_at_times(self, times, label: Optional[str] = None) -> pd.Series:
        """The cumulative hazard at ``times``, as a Series named by the label."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        return pd.Series(np.asarray(self.predict(t)), index=t, name=label or self.label)

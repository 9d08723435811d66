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
* A time where more events are observed than were at risk (entries equal to their event
  times) raises ``ValueError`` naming the time; lifelines' estimate turns NaN there and is
  carried forward as if nothing happened.
* A time whose observations all have weight 0 is not a row (a weight counts copies of an
  observation, and 0 copies leave nothing); lifelines keeps it as a row without events.
* ``fit_interval_censoring`` solves the NPMLE until its Kuhn-Tucker conditions hold to ``tol``
  (1e-12; lifelines' ``tol`` is a log-likelihood change, 1e-5, which stops up to a few 1e-2
  away on hard data). A fit keeps only its own attributes (lifelines keeps the previous fit's);
  with two curves, ``predict`` and ``percentile`` answer per column and
  ``survival_function_at_times`` raises, as it has no single curve to give.
* ``AalenJohansenFitter`` keeps tied times as ties: the exact estimate on the data as given
  (lifelines warns and jitters tied times of different causes at random, so its values move
  with the jitter; ``jitter_level`` and ``seed`` are accepted and unused). Its interval columns
  hold what their names say (lifelines 0.30.3 puts the lower bound in the column named
  ``..._upper_...`` and the upper in ``..._lower_...``). An observation entering at ``t`` is
  not at risk for an end at ``t`` (the product-limit rule of the other estimators; lifelines'
  AJ counts it). Events at the first time (0, or the smallest duration when one is negative)
  count in the incidence (lifelines sets the incidence there to 0 and drops them). With a
  ``timeline`` the estimate is read at its times (lifelines 0.30.3's AJ keeps its own event
  times and is NaN at the ones the timeline lacks). Left truncation that empties the risk set
  is fitted as Kaplan-Meier's: survival 0 from there, so no incidence grows after it
  (lifelines raises ``StatError``). ``weights`` are not supported (``ValueError``).
* No plotting methods (``plot``, ``plot_cumulative_density``): the estimates are DataFrames
  to plot as one likes.
"""

from __future__ import annotations

from functools import cached_property
from statistics import NormalDist
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from . import _native

__all__ = ["AalenJohansenFitter", "KaplanMeierFitter", "NelsonAalenFitter"]


def _z(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


def _floats(x: Any, name: str, non_negative: bool = False) -> np.ndarray:
    """``x`` as float64, every value finite (and with ``non_negative``, at least 0), else a
    ``ValueError`` naming ``name`` and the first bad value's position."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be numbers: {e}") from None
    if a.ndim > 1:
        raise ValueError(f"{name} must be one-dimensional (got shape {a.shape})")
    a = a.reshape(-1)
    # Two reductions answer the common case without temporaries: NaN and infinities show in
    # the minimum or the maximum.
    lo, hi = (a.min(), a.max()) if a.size else (0.0, 0.0)
    if np.isfinite(lo) and np.isfinite(hi) and (lo >= 0 or not non_negative):
        return a
    if not np.isfinite(a).all():
        k = int(np.flatnonzero(~np.isfinite(a))[0])
        raise ValueError(f"{name} has NaN or infinite values (the first at position {k}: {a[k]})")
    if non_negative and (a < 0).any():
        k = int(np.flatnonzero(a < 0)[0])
        raise ValueError(f"{name} has negative values (the first at position {k}: {a[k]})")
    return a


def _columns(durations, event_observed, entry, weights):
    """The estimator's inputs as arrays, checked as lifelines checks them: durations and entry
    as float64, events as bool, weights as uint32 (or ``None``)."""
    d = _floats(durations, "durations", non_negative=True)
    n = d.shape[0]
    if event_observed is None:
        e = np.ones(n, dtype=bool)
    else:
        raw = np.asarray(event_observed)
        if raw.ndim > 1:
            raise ValueError(f"event_observed must be one-dimensional (got shape {raw.shape})")
        raw = raw.reshape(-1)
        if raw.shape[0] != n:
            raise ValueError(f"event_observed has {raw.shape[0]} values, durations {n}")
        if raw.dtype.kind == "f" and np.isnan(raw).any():
            k = int(np.flatnonzero(np.isnan(raw))[0])
            raise ValueError(f"event_observed has NaN values (the first at position {k})")
        try:
            e = raw if raw.dtype == bool else raw.astype(int) != 0
        except (TypeError, ValueError) as err:
            raise ValueError(f"event_observed must be 0/1 or booleans: {err}") from None
    en = None
    if entry is not None:
        en = _floats(entry, "entry", non_negative=True)
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


def _flags(e: np.ndarray) -> np.ndarray:
    """Event flags as the native module reads them: one byte each (a view of a bool array)."""
    return e.view(np.uint8) if e.dtype == bool else np.asarray(e, dtype=np.uint8)


def _native_args(d, e, en, w):
    """The arrays as the native module reads them (it copies each once)."""
    return (
        np.asarray(d, dtype=np.float64),
        _flags(e),
        None if en is None else np.asarray(en, dtype=np.float64),
        None if w is None else np.asarray(w, dtype=np.uint32),
    )


def _arrays(cols: dict) -> dict:
    """The native module's columns as arrays over their memory, without a copy."""
    return {k: np.asarray(v) for k, v in cols.items()}


def _check_risk_sets(timeline, observed, at_risk) -> None:
    """Refuses a time with more events than at risk (module docs)."""
    bad = np.nonzero(np.asarray(observed) > np.asarray(at_risk))[0]
    if bad.size:
        k = bad[0]
        raise ValueError(
            f"at time {timeline[k]:g}, {float(observed[k]):g} events among "
            f"{float(at_risk[k]):g} at risk: an entry equals its event time (a zero-length "
            "observation)"
        )


def _check_table(table: pd.DataFrame, with_entry: bool) -> None:
    """``_check_risk_sets`` on an event table, whose ``at_risk`` counts each row's entrants
    (who are not at risk there)."""
    at_risk = table["at_risk"].to_numpy()
    if with_entry and at_risk.shape[0] > 1:
        at_risk = at_risk.copy()
        at_risk[1:] -= table["entrance"].to_numpy()[1:]
    _check_risk_sets(table.index, table["observed"].to_numpy(), at_risk)


def _table_block(table, timeline: np.ndarray) -> pd.DataFrame:
    """lifelines' event table from the native module's block of ``int64`` columns (one pandas
    block, no copy)."""
    names = ["removed", "observed", "censored", "entrance", "at_risk"]
    block = np.asarray(table)
    return pd.DataFrame(
        block.T, columns=names, index=pd.Index(timeline, name="event_at"), copy=False
    )


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


def _turnbull_curves(probabilities, left, right, timeline, label) -> pd.DataFrame:
    """The two NPMLE curves as lifelines lays them out: 1 at 0; at each Turnbull interval's
    left end the mass still ahead; at its right end the same (``upper``) or less the
    interval's mass (``lower``); the other times of ``timeline`` take the next value set
    (back-filled), and the remaining mass after the last."""
    upper_label, lower_label = label + "_upper", label + "_lower"
    up: dict = {0.0: 1.0}
    low: dict = {0.0: 1.0}
    running = 1.0
    for p, a, b in zip(probabilities, left, right):
        up[a] = low[a] = running
        if a != b:
            up[b] = running
            low[b] = running - p
        running -= p
    known = np.unique(np.concatenate((left, right, [0.0])))
    frame = pd.DataFrame(
        {upper_label: [up.get(t, np.nan) for t in known], lower_label: [low.get(t, np.nan) for t in known]},
        index=known,
    )
    full = pd.DataFrame(index=np.asarray(timeline, dtype=float), columns=frame.columns)
    out = full.combine_first(frame).astype(float).bfill().fillna(running).clip(lower=0.0)
    return out.loc[np.asarray(timeline, dtype=float)]


class _Univariate:
    """What the univariate fitters share: labels, alpha, the timeline and ``predict``."""

    _default_label = "estimate"
    _estimate_attr = ""

    def __init__(self, alpha: float = 0.05, label: Optional[str] = None) -> None:
        _z(alpha)
        self.alpha = alpha
        self._label = label

    # What a fit sets; a new fit removes what the previous one set.
    _fitted = (
        "durations", "event_observed", "entry", "weights", "event_table", "timeline",
        "survival_function_", "cumulative_density_", "confidence_interval_",
        "confidence_interval_survival_function_", "confidence_interval_cumulative_density_",
        "median_survival_time_", "lower_bound", "upper_bound", "log_likelihood_", "converged_",
        "cumulative_hazard_", "confidence_interval_cumulative_hazard_", "_cumulative_sq",
        "_events", "_weights",
    )

    def _reset(self) -> None:
        for name in self._fitted:
            self.__dict__.pop(name, None)

    def _keep_inputs(self, label, d, e, en, w) -> None:
        """The fit's label and inputs, under lifelines' attribute names."""
        self._reset()
        self._label = label
        self.durations = d
        self.entry = en
        # The flags as given are kept (a copy: one byte each), their 0-1 integers made when
        # first read.
        self._events, self._weights = np.array(e, dtype=bool), w

    def _fitted_input(self, name: str):
        if name not in self.__dict__:
            raise AttributeError(f"{type(self).__name__} is not fitted: fit it before reading it")
        return self.__dict__[name]

    @cached_property
    def event_observed(self) -> np.ndarray:
        """The event flags as 0 and 1 (lifelines' attribute), made when first read."""
        return self._fitted_input("_events").astype(int)

    @cached_property
    def weights(self) -> np.ndarray:
        """Each observation's weight as a float (1 without ``weights``), made when first read."""
        events, w = self._fitted_input("_events"), self.__dict__.get("_weights")
        return np.ones(len(events)) if w is None else w.astype(float)

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
        if estimate.shape[1] > 1:
            # An interval-censored fit's two curves: one column each.
            x = estimate.index.to_numpy(dtype=float)
            cols = {
                c: (np.interp(t, x, estimate[c].to_numpy()) if interpolate else estimate[c].asof(t).to_numpy())
                for c in estimate.columns
            }
            return pd.DataFrame(cols, index=t)
        if interpolate:
            x = estimate.index.to_numpy(dtype=float)
            y = estimate.iloc[:, 0].to_numpy()
            out = pd.Series(np.interp(t, x, y), index=t, name=estimate.columns[0])
        else:
            out = estimate.iloc[:, 0].asof(t)
        return float(out.iloc[0]) if scalar else out

    def __repr__(self) -> str:
        n = None
        for name in ("durations", "lower_bound"):
            if name in self.__dict__:
                n = len(self.__dict__[name])
        state = f'"{self.label}", fitted with {n} total observations' if n is not None else "unfitted"
        return f"<hazardserve.survival.{type(self).__name__}: {state}>"


class KaplanMeierFitter(_Univariate):
    """The Kaplan-Meier estimate of the survival function (lifelines' ``KaplanMeierFitter``):
    right censoring, left truncation (``entry``), whole-number ``weights``; the interval is
    the exponential Greenwood one at ``1 - alpha``. ``fit_interval_censoring`` gives the
    NPMLE of interval-censored data instead.

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
        raw, table, _ = _native.kaplan_meier(*_native_args(d, e, en, w), _z(alpha))
        # The distinct times index every frame: read-only, so no frame's index changes under
        # another (as lifelines' arrays, which are copies).
        times = np.asarray(raw["timeline"])
        times.flags.writeable = False
        event_table = _table_block(table, times)
        if en is not None:
            # Only an entry at an event's own time can put more events than at risk; a refused
            # fit leaves the previous one as it was.
            _check_table(event_table, True)
        if timeline is not None:
            timeline = np.sort(_floats(timeline, "timeline"))
        self._keep_inputs(label, d, e, en, w)
        self.event_table = event_table

        def frame(name: str, columns, index_name: Optional[str]) -> pd.DataFrame:
            # The native block, read in place: one pandas block, no copy.
            return pd.DataFrame(
                np.asarray(raw[name]).T,
                index=pd.Index(times, name=index_name, copy=False),
                columns=list(columns),
                copy=False,
            )

        self.survival_function_ = _on_timeline(frame("survival", [label], "timeline"), timeline)
        self.timeline = self.survival_function_.index.to_numpy(dtype=float)
        self.cumulative_density_ = _on_timeline(frame("density", [label], "timeline"), timeline)
        ci = _on_timeline(frame("interval", ci_labels, None), timeline)
        # The cumulative density's interval: 1 - the interval, its bounds swapped.
        cd_ci = _on_timeline(frame("density_interval", ci_labels, None), timeline)
        if timeline is not None:
            # Before the first time the estimate is unknown (NaN) and lifelines' interval is
            # [1, 1] (the density's [0, 0]).
            ci, cd_ci = ci.fillna(1.0), cd_ci.fillna(0.0)
        self.confidence_interval_ = ci
        self.confidence_interval_survival_function_ = ci
        self.confidence_interval_cumulative_density_ = cd_ci
        self.median_survival_time_ = _qth_survival_time(0.5, self.survival_function_)
        return self

    def fit_interval_censoring(
        self,
        lower_bound,
        upper_bound,
        event_observed=None,
        timeline=None,
        label: Optional[str] = None,
        alpha: Optional[float] = None,
        ci_labels: Optional[Sequence[str]] = None,
        entry=None,
        weights=None,
        tol: float = 1e-12,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> "KaplanMeierFitter":
        """The nonparametric maximum-likelihood estimate (Turnbull) of interval-censored data,
        as lifelines' ``fit_interval_censoring``: each end lies in the closed
        ``[lower_bound, upper_bound]`` (``upper_bound`` infinite: right-censored, equal bounds:
        observed). ``survival_function_`` has the columns ``<label>_upper`` (each Turnbull
        interval's mass at its right end) and ``<label>_lower`` (at its left end) on the
        bounds' distinct values, as lifelines lays it out. The estimate is converged to ``tol``
        (Kuhn-Tucker conditions); lifelines stops its EM at a log-likelihood change of 1e-5,
        which leaves it up to a few 1e-2 away on hard data (the golden cases measure it).
        ``entry`` and ``weights`` are not supported (lifelines: entry raises too). There is no
        confidence interval (lifelines 0.30.3 computes none either)."""
        if entry is not None:
            raise NotImplementedError("entry is not supported by fit_interval_censoring")
        if weights is not None:
            raise ValueError("weights are not supported by fit_interval_censoring here")
        lo = _floats(lower_bound, "lower_bound")
        hi = np.asarray(upper_bound, dtype=float).reshape(-1)
        if hi.shape != lo.shape:
            raise ValueError(f"upper_bound has {hi.shape[0]} values, lower_bound {lo.shape[0]}")
        if np.isnan(hi).any():
            raise ValueError("upper_bound has NaN values")
        if (hi < lo).any():
            raise ValueError(
                "All upper_bound times must be greater than or equal to lower_bound times."
            )
        observed = lo == hi
        if event_observed is not None:
            given = np.asarray(event_observed).reshape(-1).astype(int) != 0
            if given.shape != observed.shape or (given != observed).any():
                raise ValueError(
                    "For all rows, lower_bound == upper_bound if and only if event observed = 1 "
                    "(uncensored). Likewise, lower_bound < upper_bound if and only if event "
                    "observed = 0 (censored)"
                )
        label = label if label is not None else (self._label or "NPMLE_estimate")
        raw, loglik, converged = _native.npmle(
            np.ascontiguousarray(lo).tobytes(), np.ascontiguousarray(hi).tobytes(), tol
        )
        cols = _arrays(raw)
        timeline = (
            np.unique(np.concatenate((hi, lo)))
            if timeline is None
            else np.asarray(timeline, dtype=float)
        )
        self._reset()
        self._label = label
        self.lower_bound, self.upper_bound = lo, hi
        self.event_observed = observed
        self.weights = np.ones(lo.shape[0])
        self.timeline = timeline
        self.log_likelihood_ = loglik
        self.converged_ = converged
        self.survival_function_ = _turnbull_curves(
            cols["probabilities"], cols["left"], cols["right"], timeline, label
        )
        self.cumulative_density_ = 1 - self.survival_function_
        self.median_survival_time_ = pd.DataFrame(
            {c: [_qth_survival_time(0.5, self.survival_function_[[c]])] for c in self.survival_function_},
            index=[0.5],
        )
        return self

    def survival_function_at_times(self, times, label: Optional[str] = None) -> pd.Series:
        """The survival function at ``times``, as a Series named by the label."""
        sf = getattr(self, "survival_function_", None)
        if sf is not None and sf.shape[1] > 1:
            raise ValueError(
                "an interval-censored fit has two curves (upper and lower): use predict(times)"
            )
        t = np.atleast_1d(np.asarray(times, dtype=float))
        values = self.predict(t)
        return pd.Series(np.asarray(values), index=t, name=label or self.label)

    def cumulative_density_at_times(self, times, label: Optional[str] = None) -> pd.Series:
        """One minus the survival function at ``times``."""
        s = self.survival_function_at_times(times, label)
        return 1 - s

    def percentile(self, p: float):
        """The first time the survival function is at or below ``p`` (per curve, as a
        one-row DataFrame, after an interval-censored fit)."""
        sf = self.survival_function_
        if sf.shape[1] > 1:
            return pd.DataFrame({c: [_qth_survival_time(p, sf[[c]])] for c in sf}, index=[p])
        return _qth_survival_time(p, sf)


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
        cols = _arrays(
            _native.nelson_aalen_fit(*_native_args(d, e, en, w), self._nelson_aalen_smoothing)
        )
        _check_risk_sets(cols["timeline"], cols["observed"], cols["at_risk"])
        index = pd.Index(np.asarray(cols["timeline"], dtype=float), name="timeline")
        h = np.asarray(cols["cumulative_hazard"])
        v = np.asarray(cols["variance"])
        z = _z(alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(h > 0, np.exp(z * np.sqrt(v) / np.where(h > 0, h, 1.0)), 1.0)
        lower = np.where(h > 0, h / f, 0.0)
        upper = np.where(h > 0, h * f, 0.0)
        self._keep_inputs(label, d, e, en, w)
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


class AalenJohansenFitter(_Univariate):
    """The Aalen-Johansen estimate of one cause's cumulative incidence among competing causes
    (lifelines' ``AalenJohansenFitter``): ``event_observed`` holds a cause code per duration
    (0 censored), ``event_of_interest`` the code whose incidence is estimated; the other codes
    compete. On the all-cause Kaplan-Meier table (right censoring, left truncation with
    ``entry``); Collett's variance (``variance_``) and the log(-log) interval at ``1 - alpha``
    (NaN where the incidence is 0, and from the first time everyone at risk ends).
    Differences from lifelines: the module's docs.

    >>> ajf = AalenJohansenFitter().fit([1, 2, 3, 4], [1, 2, 1, 0], event_of_interest=1)
    >>> ajf.cumulative_density_["CIF_1"].tolist()
    [0.0, 0.25, 0.25, 0.5, 0.5]
    """

    _default_label = "AJ_estimate"
    _estimate_attr = "cumulative_density_"
    _fitted = _Univariate._fitted + ("variance_", "label_cmprisk", "event_of_interest")

    def __init__(
        self,
        jitter_level: float = 0.0001,
        seed: Optional[int] = None,
        alpha: float = 0.05,
        calculate_variance: bool = True,
        label: Optional[str] = None,
    ) -> None:
        super().__init__(alpha, label)
        self._jitter_level = jitter_level
        self._seed = seed
        self._calc_var = calculate_variance

    def fit(
        self,
        durations,
        event_observed,
        event_of_interest,
        timeline=None,
        entry=None,
        label: Optional[str] = None,
        alpha: Optional[float] = None,
        ci_labels: Optional[Sequence[str]] = None,
        weights=None,
    ) -> "AalenJohansenFitter":
        """Fits the incidence of ``event_of_interest`` (lifelines' arguments); returns
        ``self``."""
        if weights is not None:
            raise ValueError("weights are not supported by AalenJohansenFitter here")
        label, alpha, ci_labels = self._labels(label, alpha, ci_labels)
        raw = np.asarray(event_observed).reshape(-1)
        d, _, en, _ = _columns(durations, raw, entry, None)
        if raw.dtype.kind not in "biuf":
            raise ValueError(f"event_observed must hold numeric cause codes, got {raw.dtype} values")
        codes = np.asarray(raw, dtype=float)
        if not np.isfinite(codes).all() or (codes < 0).any() or (codes != np.round(codes)).any():
            raise ValueError("event_observed must hold non-negative whole cause codes (0: censored)")
        if (codes > 2**32 - 1).any():
            raise ValueError("event_observed has a cause code above 2**32 - 1")
        k = int(event_of_interest)
        if k != event_of_interest or not 0 < k <= 2**32 - 1:
            raise ValueError(
                f"event_of_interest must be a positive whole cause code below 2**32, got {event_of_interest!r}"
            )
        causes = codes.astype(np.uint32)
        cols = _arrays(
            _native.aalen_johansen_fit(
                np.ascontiguousarray(d, dtype=np.float64).tobytes(),
                np.ascontiguousarray(causes).tobytes(),
                k,
                None if en is None else np.ascontiguousarray(en, dtype=np.float64).tobytes(),
            )
        )
        e_any = causes != 0
        km, km_table, _ = _native.kaplan_meier(*_native_args(d, e_any, en, None))
        table = _table_block(km_table, np.asarray(km["timeline"]))
        _check_table(table, en is not None)
        index = pd.Index(np.asarray(cols["timeline"], dtype=float), name="event_at")
        cause_label = f"CIF_{k}"
        self._keep_inputs(label, d, causes == k, en, None)
        self.event_of_interest = k
        self.label_cmprisk = f"observed_{k}"
        table.insert(2, self.label_cmprisk, np.asarray(cols["observed_cause"]).astype(int))
        self.event_table = table
        cif = pd.DataFrame({cause_label: cols["cif"]}, index=index)
        self.cumulative_density_ = _on_timeline(cif, timeline)
        self.timeline = self.cumulative_density_.index.to_numpy(dtype=float)
        if self._calc_var:
            f = np.asarray(cols["cif"])
            v = np.asarray(cols["variance"])
            z = _z(alpha)
            with np.errstate(divide="ignore", invalid="ignore"):
                lf = np.log(-np.log(f))
                se = np.sqrt(v) / (f * np.abs(np.log(f)))
                lower = np.exp(-np.exp(lf + z * se))
                upper = np.exp(-np.exp(lf - z * se))
            undefined = ~(f > 0) | np.isnan(v)
            lower[undefined] = np.nan
            upper[undefined] = np.nan
            self.variance_ = _on_timeline(pd.DataFrame({"variance": v}, index=index), timeline)["variance"]
            ci = pd.DataFrame({ci_labels[0]: lower, ci_labels[1]: upper}, index=index)
            self.confidence_interval_ = _on_timeline(ci, timeline)
        else:
            self.variance_, self.confidence_interval_ = None, None
        self.confidence_interval_cumulative_density_ = self.confidence_interval_
        return self

    def cumulative_density_at_times(self, times, label: Optional[str] = None) -> pd.Series:
        """The cumulative incidence at ``times``, as a Series named by the label."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        return pd.Series(np.asarray(self.predict(t)), index=t, name=label or self.label)

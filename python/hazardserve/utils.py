"""lifelines' ``restricted_mean_survival_time`` for the fitters of :mod:`hazardserve.survival`
(and for a survival function as a DataFrame, as lifelines approximates it)."""

from __future__ import annotations

import math
import warnings
from typing import Tuple, Union

import numpy as np
import pandas as pd

__all__ = ["restricted_mean_survival_time"]


def _steps(model, t: float) -> Tuple[np.ndarray, np.ndarray]:
    """The step function's knots up to ``t`` (lifelines' rows ``sf.loc[:t]`` and the value at
    ``t``) and the survival on each step."""
    sf = model.survival_function_
    times = sf.index.to_numpy(dtype=float)
    values = sf.iloc[:, 0].to_numpy(dtype=float)
    keep = times <= t
    x = np.append(times[keep], t)
    s = np.append(values[keep], model.predict(t))
    return x, s


def restricted_mean_survival_time(
    model_or_survival_function: Union[object, pd.DataFrame],
    t: float = math.inf,
    return_variance: bool = False,
):
    """The restricted mean survival time ``integral_0^t S(u) du`` of a fitted Kaplan-Meier
    model (exact over its steps, as lifelines computes a Kaplan-Meier model's), and with
    ``return_variance`` also the variance of ``min(T, t)``, ``2 integral_0^t u S(u) du - RMST^2``
    (exact over the steps; lifelines integrates it numerically, to 1e-10 relative). A
    survival function given as a DataFrame is integrated by the trapezoid rule, with
    lifelines' warning. ``t`` must be a non-negative horizon (``ValueError`` otherwise; lifelines
    answers NaN horizons and negative ones with numbers that mean nothing)."""
    if math.isnan(t) or t < 0:
        raise ValueError(f"t must be a non-negative horizon, got {t}")
    if isinstance(model_or_survival_function, pd.DataFrame):
        warnings.warn(
            "Approximating RMST using the precomputed survival function. You likely will get a "
            "more accurate estimate if you provide the fitted Model instead of the survival "
            "function.\n"
        )
        sf = model_or_survival_function.loc[:t]
        sf = pd.concat((sf, pd.DataFrame([1], index=[0], columns=sf.columns))).sort_index()
        x = sf.index.to_numpy(dtype=float)
        y = sf.to_numpy(dtype=float)[:, 0]
        mean = float(np.trapezoid(y, x))
        if not return_variance:
            return mean
        sq = 2 * float(np.trapezoid(y * x, x))
        return mean, sq - mean**2
    model = model_or_survival_function
    sf = getattr(model, "survival_function_", None)
    if sf is None:
        raise ValueError(f"Can't compute RMST of object {model!r}")
    if sf.shape[1] != 1:
        raise ValueError(
            "an interval-censored fit has two curves (upper and lower); pass one of them, "
            "model.survival_function_[[column]], to integrate it"
        )
    x, s = _steps(model, t)
    width = np.diff(x)
    with np.errstate(invalid="ignore"):
        # A step of infinite width where the curve is 0 adds nothing (lifelines' NaN, skipped).
        area = np.where(s[:-1] == 0, 0.0, width * s[:-1])
        mean = float(area.sum())
        if not return_variance:
            return mean
        squares = np.where(s[:-1] == 0, 0.0, (x[1:] ** 2 - x[:-1] ** 2) * s[:-1])
    if x[0] > 0:
        # lifelines integrates u S(u) from 0, where a curve that starts later is unknown.
        return mean, math.nan
    return mean, float(squares.sum()) - mean**2

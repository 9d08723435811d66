"""Hazard priors exported by ``hazardserve priors export`` (``docs/priors.schema.json``):
the pooled and per-node survival curves of node up-sessions, read by the same loader the
replay uses, with each node's conditional survival at its age.

>>> priors = load_priors("priors.json")                       # doctest: +SKIP
>>> curve = priors.curve("zone-a/n3")                         # doctest: +SKIP
>>> curve.conditional_survival(age=3600.0, times=[60, 600])   # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Union

import numpy as np

from . import _native

__all__ = ["Priors", "SurvivalCurve", "load_priors"]


def _times(times) -> np.ndarray:
    t = np.ascontiguousarray(np.atleast_1d(np.asarray(times, dtype=float)))
    if t.ndim != 1 or np.isnan(t).any() or (t < 0).any():
        raise ValueError("times must be non-negative numbers (seconds)")
    return t


def _like(times, values: np.ndarray):
    """A float for a scalar ``times``, else the array."""
    return float(values[0]) if np.ndim(times) == 0 else values


class SurvivalCurve:
    """A survival curve of the session age (seconds): right-continuous steps (or read
    linearly between them), then an exponential tail, or any curve a decision log names.
    ``S(x) = 1`` before the first step."""

    def __init__(self, native: "_native.NativeCurve") -> None:
        self._native = native

    @classmethod
    def from_spec(cls, spec) -> "SurvivalCurve":
        """The curve a spec describes: a dict (or its JSON text) as ``replay --decision-log``
        writes curves (``kind``: ``steps``, ``linear``, ``exponential``, ``weibull`` or
        ``weibull-tail``); ``ValueError`` naming the problem."""
        text = spec if isinstance(spec, str) else json.dumps(spec)
        return cls(_native.NativeCurve.from_spec(text))

    def spec(self) -> Optional[dict]:
        """The curve as a spec (``None`` for a curve without one)."""
        text = self._native.spec()
        return None if text is None else json.loads(text)

    @property
    def tail_hazard(self) -> float:
        """The exponential hazard after the last step, per second."""
        return self._native.tail_hazard

    def survival_function(self, times):
        """``S(t)`` at each of ``times`` (seconds, non-negative; a float for a scalar)."""
        return _like(times, np.frombuffer(self._native.survival(_times(times).tobytes())))

    def conditional_survival(self, age: float, times):
        """``S(t | age) = S(age + t) / S(age)``: the chance that a session up for ``age``
        seconds is still up ``t`` seconds later (the tail's where the curve reached 0; a
        float for a scalar ``times``)."""
        if np.ndim(age) != 0 or not np.isfinite(age) or age < 0:
            raise ValueError(f"age must be one non-negative number of seconds, got {age!r}")
        values = np.frombuffer(self._native.conditional(float(age), _times(times).tobytes()))
        return _like(times, values)


class Priors:
    """Exported hazard priors: ``source``, ``estimator``, ``cutoff_s``, ``time_base``,
    ``node_ids``, and each node's :class:`SurvivalCurve` (the pooled one for an unknown
    node)."""

    def __init__(self, native: "_native.NativePriors") -> None:
        self._native = native

    @classmethod
    def from_json(cls, text: str) -> "Priors":
        """Parses and checks a priors document (``ValueError`` naming the problem)."""
        return cls(_native.NativePriors.from_json(text))

    source = property(lambda self: self._native.source, doc="The data the curves were fitted on.")
    estimator = property(lambda self: self._native.estimator, doc="beta, frailty or none.")
    cutoff_s = property(lambda self: self._native.cutoff_s, doc="The training cut (seconds).")
    time_base = property(lambda self: self._native.time_base, doc="utc or relative.")

    @property
    def node_ids(self) -> List[str]:
        """Every node's id, in the export's order."""
        return list(self._native.node_ids)

    def age_at_cutoff_s(self, node_id: str) -> Optional[float]:
        """The age of the node's live session at the training cut (``None``: down, unknown)."""
        return self._native.age_at_cutoff_s(node_id)

    def curve(self, node_id: Optional[str] = None, linear: bool = False) -> SurvivalCurve:
        """The curve of ``node_id``; the pooled curve for ``None`` or an unknown node;
        ``linear``: read linearly between its knots (as the replay's policies read it)."""
        return SurvivalCurve(self._native.curve(node_id, linear))

    def __repr__(self) -> str:
        return (
            f"<hazardserve.priors.Priors: {self.source!r}, {len(self.node_ids)} nodes, "
            f"estimator {self.estimator}>"
        )


def load_priors(path: Union[str, Path]) -> Priors:
    """Reads an exported priors JSON file (``ValueError`` naming the file and the problem)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ValueError(f"{p}: cannot read it ({e.strerror or e})") from None
    try:
        return Priors.from_json(text)
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None

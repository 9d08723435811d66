"""The hazard-aware policy as a class other simulators and routers can call.

``HazardAwarePolicy`` prices each node for a request as the replay does: ``E_i = T_i + L_i``,
``T_i`` the request's completion on the node, ``L_i`` the expected unplanned loss (a 16-cell
Riemann sum of the cost of losing the request over the node's conditional survival curve),
plus the retained-state term ``R_i`` for a conversation when a reuse gap is given. It places
by ``argmin E`` (:meth:`HazardAwarePolicy.choose`), prices every feasible node
(:meth:`HazardAwarePolicy.score`) and decides pre-emptive migration with the design's guards
(:meth:`HazardAwarePolicy.should_migrate`). The numbers are the replay's own: the class runs
the same Rust code, and ``replay_decision_log`` holds it to a replay's logged decisions.

Nodes are columns (a ``pandas``/``polars`` DataFrame, a dict of arrays) or a list of
:class:`Node`; a request is a :class:`Request` or a dict. ``T_i`` comes from the nodes'
fields (queue wait, prefill and decode rates) unless a forecast is given: per-node columns
``forecast_start_s``, ``forecast_total_s`` (and ``forecast_imposed_s``), or a callable.

>>> from hazardserve.policy import HazardAwarePolicy, Node, Request    # doctest: +SKIP
>>> policy = HazardAwarePolicy(load_priors("priors.json"))             # doctest: +SKIP
>>> nodes = [Node(node_id="n1", age_s=3600, decode_tok_s=40, prefill_tok_s=4000)]  # doctest: +SKIP
>>> policy.score(nodes, Request(prompt_tokens=2000, est_output_tokens=300))        # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import operator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native
from .priors import Priors, SurvivalCurve

__all__ = [
    "HazardAwarePolicy",
    "LoggedDecision",
    "MigrationDecision",
    "Node",
    "Placement",
    "Request",
    "replay_decision_log",
]

_U64_MAX = 2**64 - 1


@dataclass
class Node:
    """One node as a decision sees it. ``node_id`` picks its curve from the priors (the
    pooled curve for an unknown id); ``curve`` indexes the policy's curves instead."""

    node_id: Optional[str] = None
    up: bool = True
    age_s: float = 0.0
    slots: int = 1
    slots_used: int = 0
    kv_capacity_tokens: int = _U64_MAX
    kv_used_tokens: int = 0
    queue_wait_s: float = 0.0
    decode_tok_s: float = 1.0
    prefill_tok_s: float = 1.0
    bandwidth_bytes_s: float = 1.0
    exp_rate_per_s: float = 0.0
    cached_tokens: int = 0
    queued: int = 0
    cache_tokens: int = 0
    curve: Optional[int] = None
    remaining_up_s: Optional[float] = None
    unloaded_decode_tok_s: Optional[float] = None
    forecast_start_s: Optional[float] = None
    forecast_total_s: Optional[float] = None
    forecast_imposed_s: Optional[float] = None


@dataclass
class Request:
    """One request: prompt length, the estimate of its output length (``est_sigma``: the
    log-sd of the true length around it), what it generated so far and where its KV is."""

    prompt_tokens: int
    est_output_tokens: int
    id: int = 0
    done_tokens: int = 0
    node: Optional[int] = None
    resident_tokens: int = 0
    planned_hops: int = 0
    est_sigma: float = 0.0
    recovering: bool = False
    conversation: Optional[int] = None

    def _tuple(self):
        for name in ("prompt_tokens", "est_output_tokens", "id", "done_tokens",
                     "resident_tokens", "planned_hops"):
            _whole(f"request: {name}", getattr(self, name))
        for name in ("node", "conversation"):
            v = getattr(self, name)
            if v is not None:
                _whole(f"request: {name}", v)
        if not (isinstance(self.est_sigma, (int, float)) and self.est_sigma >= 0
                and math.isfinite(self.est_sigma)):
            raise ValueError(f"request: est_sigma must be a non-negative number, got {self.est_sigma!r}")
        return (
            int(self.id),
            int(self.prompt_tokens),
            int(self.done_tokens),
            int(self.est_output_tokens),
            None if self.node is None else int(self.node),
            int(self.resident_tokens),
            int(self.planned_hops),
            float(self.est_sigma),
            bool(self.recovering),
            None if self.conversation is None else int(self.conversation),
        )


def _whole(name: str, v) -> None:
    """Refuses anything but a non-negative whole number (booleans included)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise ValueError(f"{name} must be a non-negative whole number, got {v!r}")


_FLOAT = "float64"
_COLUMNS = {
    # name: (dtype, default)
    "up": ("uint8", 1),
    "age_s": (_FLOAT, 0.0),
    "slots": ("uint32", 1),
    "slots_used": ("uint32", 0),
    "kv_capacity_tokens": ("uint64", _U64_MAX),
    "kv_used_tokens": ("uint64", 0),
    "queue_wait_s": (_FLOAT, 0.0),
    "decode_tok_s": (_FLOAT, 1.0),
    "prefill_tok_s": (_FLOAT, 1.0),
    "bandwidth_bytes_s": (_FLOAT, 1.0),
    "exp_rate_per_s": (_FLOAT, 0.0),
    "cached_tokens": ("uint64", 0),
    "queued": ("uint32", 0),
    "cache_tokens": ("uint64", 0),
    "remaining_up_s": (_FLOAT, math.nan),
}
_NON_NEGATIVE = {"age_s", "queue_wait_s", "decode_tok_s", "prefill_tok_s", "bandwidth_bytes_s",
                 "exp_rate_per_s", "remaining_up_s", "unloaded_decode_tok_s", "forecast_start_s",
                 "forecast_total_s", "forecast_imposed_s"}


def _floats(name: str, v, default: float) -> np.ndarray:
    """Column ``name`` as float64 (``None`` entries at ``default``), checked: no NaN where a
    value is required, nothing negative where a rate, an age or a wait is meant."""
    if isinstance(v, np.ndarray) and v.dtype.kind in "fiu":
        a = v.astype(float, copy=False)
    elif isinstance(v, (list, tuple)) and None not in v:
        try:
            a = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"nodes: {name} must hold numbers") from None
    else:
        try:
            a = np.asarray([default if x is None else x for x in v], dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"nodes: {name} must hold numbers") from None
    if not math.isnan(default):
        bad = np.isnan(a)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"nodes: {name} of node {k} is NaN")
    if name in _NON_NEGATIVE:
        bad = a < 0
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"nodes: {name} of node {k} is negative ({a[k]})")
    return a


def _integers(name: str, v, default: int, dtype: str) -> np.ndarray:
    """Column ``name`` as unsigned integers (``None`` entries at ``default``; booleans for
    ``up``), each a whole non-negative number."""
    if not isinstance(v, np.ndarray) and all(type(x) in (int, bool) for x in v):
        # The common case of a list of Python ints, checked as a whole.
        v = np.asarray(v) if len(v) and max(v) < 2**63 else v
    if isinstance(v, np.ndarray) and v.dtype.kind in "biu":
        if v.dtype.kind == "i" and (v < 0).any():
            k = int(np.flatnonzero(v < 0)[0])
            raise ValueError(f"nodes: {name} of node {k} is negative ({v[k]})")
        return v.astype(dtype)
    vals = []
    for k, x in enumerate(v):
        if x is None:
            x = default
        try:
            i = int(x)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"nodes: {name} of node {k} must be a whole number, got {x!r}") from None
        if i != x or i < 0:
            raise ValueError(
                f"nodes: {name} of node {k} must be a non-negative whole number, got {x!r}"
            )
        vals.append(i)
    try:
        return np.asarray(vals, dtype=dtype)
    except OverflowError:
        raise ValueError(f"nodes: {name} holds a number too large for {dtype}") from None



@dataclass
class Placement:
    """A placement: the chosen node (``None``: no node can admit the request) and the
    chosen node's ``T``, ``L``, ``E``, the delay it imposes on the node's other requests
    (``imposed_s``) and its predicted interruption probability."""

    node: Optional[int]
    outcome: str
    t_s: float
    l_s: float
    e_s: float
    imposed_s: float
    p_interrupt: float
    feasible: int


@dataclass
class MigrationDecision:
    """A migration check: ``move`` when the trigger fired (``target`` is the destination);
    ``outcome`` names why not otherwise (``stay``, ``max_hops``, ``min_remaining``,
    ``no_candidate``, ...). The numbers are the source's ``T``, ``L``, ``E`` and, for
    ``target`` (the destination, or the candidate with the largest risk gain), ``T_j``,
    ``l_j``, the move's cost by transfer and by recompute, ``C_planned`` and its method,
    ``risk_gain = L_i - (C + l_j)`` and ``dT = (T_j + C) - T_i``."""

    move: bool
    target: Optional[int]
    outcome: str
    t_s: float
    l_s: float
    e_s: float
    t_j_s: float
    l_j_s: float
    c_transfer_s: float
    c_recompute_s: float
    c_planned_s: float
    method: Optional[str]
    risk_gain_s: float
    dt_s: float
    hysteresis_s: float


def _migration(choice: Optional[int], e: Dict[str, Any]) -> MigrationDecision:
    return MigrationDecision(
        move=choice is not None,
        target=e["target"],
        outcome=e["outcome"],
        t_s=e["t_s"],
        l_s=e["l_s"],
        e_s=e["e_s"],
        t_j_s=e["t_j_s"],
        l_j_s=e["l_j_s"],
        c_transfer_s=e["c_transfer_s"],
        c_recompute_s=e["c_recompute_s"],
        c_planned_s=e["c_planned_s"],
        method=e["method"],
        risk_gain_s=e["risk_gain_s"],
        dt_s=e["dt_s"],
        hysteresis_s=e["hysteresis_s"],
    )


def _is_frame(x) -> bool:
    return hasattr(x, "columns") and hasattr(x, "__len__") and not isinstance(x, Mapping)


def _columns_of(nodes) -> Dict[str, Any]:
    """The node table as a dict of columns (from a DataFrame, a dict or a list of Node)."""
    if isinstance(nodes, Mapping):
        return dict(nodes)
    if _is_frame(nodes):
        return {c: nodes[c].to_numpy() for c in nodes.columns}
    if isinstance(nodes, Sequence):
        if not all(isinstance(n, Node) for n in nodes):
            raise ValueError("nodes: a list of nodes must hold hazardserve.policy.Node values")
        out = {}
        if not nodes:
            return {"age_s": []}
        # Transposed in C: one tuple of values per field; a field every node leaves at its
        # default stays out (it is the default column).
        for f, col in zip(_NODE_FIELDS, zip(*map(_NODE_GETTER, nodes))):
            if f.name == "age_s" or col.count(f.default) != len(col):
                out[f.name] = col
        return out
    raise ValueError(
        "nodes: expected a DataFrame, a dict of columns or a list of hazardserve.policy.Node, "
        f"got {type(nodes).__name__}"
    )


_NODE_FIELDS = fields(Node)
_NODE_GETTER = operator.attrgetter(*(f.name for f in _NODE_FIELDS))


def _request_of(request) -> Request:
    if isinstance(request, Request):
        return request
    if isinstance(request, Mapping):
        known = {f.name for f in fields(Request)}
        unknown = sorted(set(request) - known)
        if unknown:
            raise ValueError(f"request: unknown field(s) {', '.join(unknown)}")
        return Request(**request)
    raise ValueError(f"request: expected a Request or a dict, got {type(request).__name__}")


class HazardAwarePolicy:
    """The replay's hazard-aware policy (or any of its policies: ``policy="memoryless"``,
    ``"fastest"``, ...) as a class.

    ``priors``: exported hazard priors (:func:`hazardserve.priors.load_priors`); each node
    reads its own curve by ``node_id`` (the pooled one for an unknown id), linearly between
    the knots as the replay does unless ``linear=False``. ``curves``: the curves themselves,
    which nodes name by the ``curve`` column (instead of priors). ``reuse_gap``: the gap from
    a conversation's turn to its next, ``(mass, cells)`` as the replay fits it, for the
    retained-state term. Any other keyword is one of the policy's constants
    (``stall_penalty_s``, ``hysteresis_s``, ``max_hops``, ``min_remaining_s``, ``forecast``,
    ``kv_bytes_per_token``, ...; defaults as in the replay).

    Nodes name their curve by ``node_id`` with priors (an unknown id reads the pooled curve,
    as the replay does) or by ``curve`` (an index into ``curves``). ``T`` comes from each
    node's fields (queue wait, prefill and decode rates) unless a forecast is given: the
    columns ``forecast_start_s``, ``forecast_total_s`` (and ``forecast_imposed_s``), one
    answer per node for any question, or ``forecast=``, a callable
    ``forecast(ask, node, newcomer, id)`` returning ``(start_s, total_s, imposed_s)`` or
    ``None`` (no answer: the node's fields price it), asked for each question the decision
    puts: ``ask`` is ``own``, ``marginal`` or ``stationary`` (the request as a newcomer on
    ``node``: ``newcomer`` holds ``kv``, ``prompt``, ``start_s``, ``prefill``, ``stall_s``,
    ``tokens``, ``done``, ``target``, ``cached``), ``resident`` or ``resident-stationary``
    (the running request ``id`` on ``node``), or ``bound`` (a lower bound of the newcomer's
    ``total_s + imposed_s``, for pruning; answer ``None`` when unknown).
    """

    def __init__(
        self,
        priors: Optional[Priors] = None,
        *,
        curves: Optional[Sequence[SurvivalCurve]] = None,
        policy: str = "hazard",
        linear: bool = True,
        reuse_gap: Optional[Sequence] = None,
        **params,
    ) -> None:
        if (priors is None) == (curves is None):
            raise ValueError("HazardAwarePolicy: give exactly one of priors and curves")
        defaults = json.loads(_native.NativePolicy("fastest", "{}", []).params)
        unknown = sorted(set(params) - set(defaults))
        if unknown:
            raise ValueError(
                f"HazardAwarePolicy: unknown parameter(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(defaults))})"
            )
        for k, v in params.items():
            if isinstance(defaults[k], (int, float)) and not isinstance(defaults[k], bool):
                if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) \
                        or not math.isfinite(v) or v < 0:
                    raise ValueError(
                        f"HazardAwarePolicy: {k} must be a non-negative number, got {v!r}"
                    )
        if "length_draws" in params and not 1 <= params["length_draws"] <= 256:
            raise ValueError("HazardAwarePolicy: length_draws must be between 1 and 256")
        self._ids: Dict[str, int] = {}
        if priors is not None:
            natives = [priors._native.curve(None, linear)]
            for i, node_id in enumerate(priors.node_ids):
                natives.append(priors._native.curve(node_id, linear))
                self._ids[node_id] = i + 1
        else:
            natives = [c._native for c in curves]
        self._priors = priors
        reuse = None
        if reuse_gap is not None:
            mass, cells = reuse_gap
            reuse = (float(mass), [float(c) for c in cells])
        try:
            self._native = _native.NativePolicy(policy, json.dumps(params), natives, reuse)
        except ValueError as e:
            raise ValueError(f"HazardAwarePolicy: {e}") from None

    @property
    def policy(self) -> str:
        """The policy's name."""
        return self._native.kind

    @property
    def params(self) -> Dict[str, Any]:
        """The policy's constants."""
        return json.loads(self._native.params)

    # -- the node table -------------------------------------------------------------------

    def _table(self, nodes) -> Dict[str, bytes]:
        cols = _columns_of(nodes)
        n = None
        for k, v in cols.items():
            m = len(v)
            if n is None:
                n = m
            elif m != n:
                raise ValueError(f"nodes: column {k} has {m} values, but others have {n}")
        n = n or 0
        out: Dict[str, bytes] = {}
        for name, (dtype, default) in _COLUMNS.items():
            v = cols.get(name)
            if v is None:
                a = np.full(n, default, dtype=dtype)
            elif dtype == _FLOAT:
                a = _floats(name, v, default)
            else:
                a = _integers(name, v, default, dtype)
            out[name] = np.ascontiguousarray(a, dtype=dtype).tobytes()
        decode = np.frombuffer(out["decode_tok_s"])
        unloaded = cols.get("unloaded_decode_tok_s")
        u = decode if unloaded is None else _floats("unloaded_decode_tok_s", unloaded, math.nan)
        out["unloaded_decode_tok_s"] = np.where(np.isnan(u), decode, u).tobytes()
        out["curve"] = self._curve_column(cols, n)
        start = cols.get("forecast_start_s")
        if start is not None:
            total = cols.get("forecast_total_s")
            if total is None:
                raise ValueError("nodes: forecast_start_s needs forecast_total_s")
            imposed = cols.get("forecast_imposed_s")
            f = np.empty((n, 3))
            f[:, 0] = _floats("forecast_start_s", start, math.nan)
            f[:, 1] = _floats("forecast_total_s", total, math.nan)
            f[:, 2] = 0.0 if imposed is None else _floats("forecast_imposed_s", imposed, 0.0)
            out["forecast"] = np.ascontiguousarray(f).tobytes()
        return out

    def _curve_column(self, cols, n) -> bytes:
        curve = cols.get("curve")
        ids = cols.get("node_id")
        if self._priors is not None:
            if curve is not None and any(c is not None for c in curve):
                raise ValueError("nodes: with priors, nodes name their curve by node_id, not curve")
            if ids is None:
                idx = np.zeros(n, dtype="uint32")
            else:
                idx = np.fromiter((self._ids.get(i, 0) for i in ids), dtype="uint32", count=n)
        else:
            if curve is None:
                idx = np.zeros(n, dtype="uint32")
            else:
                idx = _integers("curve", curve, 0, "uint32")
        return np.ascontiguousarray(idx).tobytes()

    def _decide(self, nodes, request, from_node, forecast, next_turn_s, record):
        table = self._table(nodes)
        req = _request_of(request)
        if forecast is not None and not callable(forecast):
            raise ValueError("forecast: expected a callable (ask, node, newcomer, id) -> "
                             "(start_s, total_s, imposed_s) or None")
        return self._native.decide(table, req._tuple(), from_node, forecast, next_turn_s, record)

    # -- decisions ------------------------------------------------------------------------

    def score(
        self,
        nodes,
        request,
        *,
        forecast: Optional[Callable] = None,
        next_turn_s: Optional[float] = None,
        output: str = "pandas",
    ) -> Any:
        """Every node that can admit the request (up, a free slot, KV room), priced: its
        index, ``t_s``, ``l_s`` and ``e_s``, the score the policy ranks by (``T + L``, plus the
        retained-state term for a conversation when the policy has a reuse gap, and under the
        ``stationary`` or ``marginal`` forecast the delay imposed on the node's requests;
        ``e_s - t_s - l_s`` is their sum), and ``chosen`` (the node the policy places on).
        ``output``: ``pandas`` (default), ``polars`` or ``numpy`` (a dict of arrays)."""
        choice, _, cands = self._decide(nodes, request, None, forecast, next_turn_s, True)
        node = np.frombuffer(cands["node"], dtype="uint64").astype("int64")
        cols = {
            "node": node,
            "t_s": np.frombuffer(cands["t_s"]),
            "l_s": np.frombuffer(cands["l_s"]),
            "e_s": np.frombuffer(cands["e_s"]),
            "chosen": node == (-1 if choice is None else choice),
        }
        if output == "numpy":
            return cols
        if output == "polars":
            import polars as pl

            return pl.DataFrame(cols)
        if output == "pandas":
            import pandas as pd

            return pd.DataFrame(cols)
        raise ValueError(f"output: expected pandas, polars or numpy, got {output!r}")

    def choose(
        self,
        nodes,
        request,
        *,
        forecast: Optional[Callable] = None,
        next_turn_s: Optional[float] = None,
    ) -> Placement:
        """Places the request: the node with the least ``E`` (see :class:`Placement`)."""
        choice, e, _ = self._decide(nodes, request, None, forecast, next_turn_s, False)
        return Placement(
            node=choice,
            outcome=e["outcome"],
            t_s=e["t_s"],
            l_s=e["l_s"],
            e_s=e["e_s"],
            imposed_s=e["imposed_s"],
            p_interrupt=e["p_interrupt"],
            feasible=e["feasible"],
        )

    def should_migrate(
        self,
        nodes,
        request,
        from_node: int,
        *,
        forecast: Optional[Callable] = None,
    ) -> MigrationDecision:
        """The design's Decision 2 for a request running on node ``from_node``: move when
        ``risk_gain > h`` and ``dT < h`` (``h`` the hysteresis), never past ``max_hops``
        planned moves nor with less than ``min_remaining_s`` of work left."""
        if isinstance(from_node, bool) or not isinstance(from_node, (int, np.integer)) \
                or from_node < 0:
            raise ValueError(f"from_node: expected a node index, got {from_node!r}")
        request = _request_of(request)
        if request.node is None:
            request = Request(**{**request.__dict__, "node": int(from_node)})
        elif request.node != from_node:
            raise ValueError(
                f"request: node {request.node} is not from_node {from_node} (the request runs "
                "on the node it migrates from)"
            )
        # Every destination priced (no pruning), so that the target described when none
        # fires is the one with the largest risk gain, with all its numbers.
        choice, e, _ = self._decide(nodes, request, int(from_node), forecast, None, True)
        return _migration(choice, e)

    def __repr__(self) -> str:
        src = f"priors of {self._priors.source!r}" if self._priors is not None else "curves"
        return f"<hazardserve.policy.HazardAwarePolicy {self.policy} over {src}>"


# -- a replay's decision log ----------------------------------------------------------------


def _num(x) -> float:
    """A number of the log (``"inf"``, ``"-inf"``, ``"nan"`` as strings; ``None``: NaN)."""
    return math.nan if x is None else float(x)


@dataclass
class LoggedDecision:
    """One decision of a ``replay --decision-log`` file, taken again by the class: what the
    replay logged (``logged``: its explanation) and what the class gave (``got``)."""

    line: int
    policy: str
    decision: str
    logged: Dict[str, Any]
    got: Union[Placement, MigrationDecision]
    chosen: Optional[int]
    candidates: Dict[str, np.ndarray]
    logged_candidates: List[Dict[str, Any]]


def _answer_table(loads: List[Dict[str, Any]]):
    """The logged forecast's answers by question (ask, node, newcomer, resident id), as the
    replay's forecast gave them."""
    table = {}
    for c in loads:
        newcomer = c.get("newcomer")
        key = (
            c["ask"],
            c["node"],
            None if newcomer is None else tuple(sorted(
                (k, _num(v) if isinstance(v, (str, float)) else v) for k, v in newcomer.items()
            )),
            c.get("id"),
        )
        a = c["answer"]
        table.setdefault(key, None if a is None else tuple(_num(x) for x in a))
    return table


def replay_decision_log(path: Union[str, Path]) -> Iterator[LoggedDecision]:
    """Takes every decision of a ``hazardserve replay --decision-log FILE`` again with
    :class:`HazardAwarePolicy`, over the nodes, curves and forecast answers the log recorded,
    and yields each with what the replay logged, for comparison."""
    path = Path(path)
    run = None
    curves: List[SurvivalCurve] = []
    policies: Dict[Any, HazardAwarePolicy] = {}
    with path.open() as f:
        for n, line in enumerate(f, start=1):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {n}: {e}") from None
            if "run" in doc:
                run = doc["run"]
                curves = []
                for k, spec in enumerate(run["curves"]):
                    if spec is None:
                        raise ValueError(f"{path}: line {n}: curve {k} has no spec")
                    curves.append(SurvivalCurve.from_spec(spec))
                policies = {}
                continue
            d = doc.get("decision")
            if d is None or run is None:
                raise ValueError(f"{path}: line {n}: not a decision after a run line")
            reuse = d["inputs"].get("reuse")
            key = None if reuse is None else (reuse["mass"], tuple(reuse["cells"]))
            policy = policies.get(key)
            if policy is None:
                policy = HazardAwarePolicy(
                    curves=curves,
                    policy=run["policy"],
                    reuse_gap=None if key is None else (key[0], list(key[1])),
                    **run["params"],
                )
                policies[key] = policy
            yield _take_again(policy, d, n)


def _logged_value(node: Dict[str, Any], name: str):
    v = node[name]
    if v is None:
        return math.nan
    if isinstance(v, (bool, int)):
        return v
    return _num(v)


def _take_again(policy: HazardAwarePolicy, d: Dict[str, Any], line: int) -> LoggedDecision:
    inputs = d["inputs"]
    logged = d["explanation"]
    nodes = inputs["nodes"]
    position = {node["idx"]: k for k, node in enumerate(nodes)}
    fleet = [node["idx"] for node in nodes]
    cols: Dict[str, list] = {name: [_logged_value(x, name) for x in nodes] for name in _COLUMNS}
    cols["curve"] = [x["curve"] for x in nodes]
    cols["unloaded_decode_tok_s"] = [_num(x["unloaded_decode_tok_s"]) for x in nodes]
    r = dict(inputs["request"])
    if r.get("node") is not None:
        r["node"] = position[r["node"]]
    table = _answer_table(inputs["loads"])

    def forecast(ask, node, newcomer, rid):
        key = (
            ask,
            fleet[node],
            None if newcomer is None else tuple(sorted(newcomer.items())),
            rid,
        )
        return table.get(key)

    next_turn = inputs.get("next_turn_s")
    next_turn = None if next_turn is None else _num(next_turn)
    frm = inputs.get("from")
    if frm is not None:
        # Every candidate priced, as the replay logs them (the target described when none
        # fires is the one with the largest risk gain over all of them).
        choice, e, _ = policy._decide(cols, r, position[frm], forecast, None, True)
        got = _migration(choice, e)
        chosen = None if choice is None else fleet[choice]
        cands: Dict[str, np.ndarray] = {}
    else:
        choice, e, c = policy._decide(cols, r, None, forecast, next_turn, True)
        got = Placement(
            node=choice, outcome=e["outcome"], t_s=e["t_s"], l_s=e["l_s"], e_s=e["e_s"],
            imposed_s=e["imposed_s"], p_interrupt=e["p_interrupt"], feasible=e["feasible"],
        )
        chosen = None if choice is None else fleet[choice]
        node = np.frombuffer(c["node"], dtype="uint64").astype("int64")
        cands = {
            "node": np.array([fleet[k] for k in node], dtype="int64"),
            "t_s": np.frombuffer(c["t_s"]),
            "l_s": np.frombuffer(c["l_s"]),
            "e_s": np.frombuffer(c["e_s"]),
        }
    return LoggedDecision(
        line=line,
        policy=d["policy"],
        decision=logged["decision"],
        logged=logged,
        got=got,
        chosen=chosen,
        candidates=cands,
        logged_candidates=logged.get("candidates", []),
    )

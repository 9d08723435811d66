"""``HazardAwarePolicy`` as a global scheduler inside Vidur's event loop (the ``vidur`` package
on PyPI, 0.0.26: a later fork of the MLSys '24 LLM inference simulator).

Vidur's replicas never fail and its scheduler types are a closed enum, so the plug-in:

* registers :class:`HazardAwareGlobalScheduler` in ``GlobalSchedulerRegistry`` under an
  existing type (``LOR`` by default), unregistering Vidur's own class there;
* brings node availability from a trace clock (:class:`Availability`: each replica's
  up-sessions on the simulation's clock): a down replica is never scheduled; while every
  replica is down, requests are held and a wake-up is scheduled at the next recovery (Vidur
  calls its global scheduler only when a request arrives, so the plug-in makes
  ``GlobalScheduleEvent`` return a wake-up event at the times the scheduler asks for);
* accounts the requests caught on a replica whose session ends while they run: Vidur goes on
  serving them, the results mark them ``interrupted`` (their completion is not real).

Vidur downloads its kernel profiles from a model hub at run time. :class:`StandInPredictor`
replaces the execution-time predictor with a closed form (a fixed cost per iteration, a cost
per prefill token and per decoding token of KV), registered under ``RANDOM_FORREST``; its
rates are the ones the policy prices nodes with. Run with ``WANDB_MODE=disabled`` (set here
when unset); plots, traces and wandb are off in the configuration :func:`simulate` builds.

>>> from hazardserve.vidur_plugin import Availability, simulate         # doctest: +SKIP
>>> runs = simulate(trace, Availability([[(0, 3600)], [(0, float("inf"))]]), policy)  # doctest: +SKIP
"""

from __future__ import annotations

import bisect
import logging
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .policy import HazardAwarePolicy, Request as PolicyRequest

os.environ.setdefault("WANDB_MODE", "disabled")

try:
    from vidur.config import (
        CacheConfig,
        ClusterConfig,
        LORGlobalSchedulerConfig,
        MetricsConfig,
        RandomForrestExecutionTimePredictorConfig,
        ReplicaConfig,
        SarathiSchedulerConfig,
        SimulationConfig,
        TraceRequestGeneratorConfig,
    )
    from vidur.entities import Replica, Request
    from vidur.events.global_schedule_event import GlobalScheduleEvent
    from vidur.execution_time_predictor import (
        BaseExecutionTimePredictor,
        ExecutionTimePredictorRegistry,
    )
    from vidur.scheduler import BaseGlobalScheduler, GlobalSchedulerRegistry
    from vidur.simulator import Simulator
    from vidur.types import ExecutionTimePredictorType, GlobalSchedulerType
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        "hazardserve.vidur_plugin needs the vidur package (0.0.26): "
        "pip install --no-deps vidur==0.0.26 -c python/constraints.txt plus its "
        f"dependencies (see docs/src/python.md) ({e})"
    ) from None

__all__ = [
    "Availability",
    "HazardAwareGlobalScheduler",
    "StandInPredictor",
    "register",
    "restore",
    "simulate",
]

logging.getLogger("vidur").setLevel(logging.WARNING)


@dataclass
class Availability:
    """Each replica's up-sessions ``(start_s, end_s)`` on the simulation's clock (``end_s``
    infinite: up to the end), non-overlapping; a replica is down outside them."""

    sessions: List[List[Tuple[float, float]]]

    def __post_init__(self) -> None:
        # A sorted copy: the caller's lists (or tuples) are left as they are.
        self.sessions = [sorted((float(a), float(b)) for a, b in ss) for ss in self.sessions]
        for i, ss in enumerate(self.sessions):
            for k, (a, b) in enumerate(ss):
                if not (a < b) or math.isnan(a):
                    raise ValueError(f"availability: replica {i}, session {k}: ({a}, {b}) is empty")
                if k and a < ss[k - 1][1]:
                    raise ValueError(f"availability: replica {i}: sessions {k - 1} and {k} overlap")
        self._starts = [[a for a, _ in ss] for ss in self.sessions]

    def __len__(self) -> int:
        return len(self.sessions)

    def session(self, replica: int, t: float) -> Optional[Tuple[float, float]]:
        """The session replica ``replica`` is up in at ``t``, or ``None`` when it is down."""
        k = bisect.bisect_right(self._starts[replica], t) - 1
        if k >= 0:
            a, b = self.sessions[replica][k]
            if a <= t < b:
                return a, b
        return None

    def next_recovery(self, t: float) -> Optional[float]:
        """The first session start after ``t`` over every replica (``None``: none)."""
        later = [
            ss[k]
            for ss in self._starts
            for k in [bisect.bisect_right(ss, t)]
            if k < len(ss)
        ]
        return min(later) if later else None

    @classmethod
    def from_sessions(cls, sessions, node_ids: Sequence[str], start_s: float) -> "Availability":
        """From a store's sessions table (``node_id``, ``start``, ``end`` seconds, as
        ``hazardserve.store`` reads it) for ``node_ids`` (one replica each, in order), with
        the simulation's time 0 at ``start_s``; a censored session stays up to the end."""
        out = []
        for n in node_ids:
            rows = sessions[sessions["node_id"] == n]
            ss = []
            for a, b, ev in zip(rows["start"], rows["end"], rows["event"]):
                end = b - start_s if ev else math.inf
                if end > 0:
                    ss.append((max(a - start_s, 0.0), end))
            out.append(ss)
        return cls(out)


class StandInPredictor(BaseExecutionTimePredictor):
    """Vidur's execution-time predictor as a closed form, for machines that cannot download
    its kernel profiles: an iteration takes ``OVERHEAD_MS`` plus ``PREFILL_MS_PER_TOKEN`` per
    prefill token and ``DECODE_MS_PER_KV_TOKEN`` per KV token of its decoding requests."""

    OVERHEAD_MS = 3.0
    PREFILL_MS_PER_TOKEN = 0.08
    DECODE_MS_PER_KV_TOKEN = 0.0005

    def __init__(self, predictor_config, replica_config, cache_config):
        super().__init__(predictor_config, replica_config, cache_config)
        self._layers = self._num_layers_per_pipeline_stage

    def _per_layer(self, ms: float) -> float:
        # Vidur multiplies the per-layer times by the layer count.
        return ms / self._layers

    def _get_attention_prefill_execution_time(self, batch):
        return self._per_layer(self.PREFILL_MS_PER_TOKEN * batch.num_prefill_tokens)

    def _get_attention_decode_execution_time(self, batch):
        kv = sum(
            k for r, k in zip(batch.requests, batch.num_kv_tokens) if r.is_prefill_complete
        )
        return self._per_layer(self.DECODE_MS_PER_KV_TOKEN * kv)

    def _get_mlp_layer_up_proj_execution_time(self, batch):
        return self._per_layer(self.OVERHEAD_MS)

    def _zero(self, batch):
        return 0.0

    _get_attention_layer_pre_proj_execution_time = _zero
    _get_attention_layer_post_proj_execution_time = _zero
    _get_attention_rope_execution_time = _zero
    _get_attention_kv_cache_save_execution_time = _zero
    _get_mlp_layer_down_proj_execution_time = _zero
    _get_mlp_layer_act_execution_time = _zero
    _get_tensor_parallel_communication_time = _zero
    _get_pipeline_parallel_communication_time = _zero
    _get_mlp_norm_layer_act_execution_time = _zero
    _get_attn_norm_layer_act_execution_time = _zero
    _get_add_layer_act_execution_time = _zero
    _get_kv_parallel_communication_time = _zero

    def to_dict(self):
        return {"stand_in": True}

    @classmethod
    def rates(cls) -> Tuple[float, float]:
        """The ``(decode_tok_s, prefill_tok_s)`` of a lone request under this predictor."""
        return 1000.0 / cls.OVERHEAD_MS, 1000.0 / cls.PREFILL_MS_PER_TOKEN


class HazardAwareGlobalScheduler(BaseGlobalScheduler):
    """Vidur's global scheduler, placing each request with a :class:`HazardAwarePolicy` over
    the up replicas (see the module docs). :func:`register` binds the policy, the availability
    and the replicas' node ids and rates to a subclass of this class."""

    policy: HazardAwarePolicy
    availability: Availability
    node_ids: Optional[List[str]] = None
    curve_ids: Optional[List[int]] = None
    decode_tok_s: float = 1.0
    prefill_tok_s: float = 1.0
    block_size: int = 16

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.now = 0.0
        self._wakeups: set = set()
        self._asked: set = set()
        self._ids = sorted(self._replica_schedulers, key=lambda r: r.id)
        if len(self._ids) != len(self.availability):
            raise ValueError(
                f"availability: {len(self.availability)} replicas, the cluster has {len(self._ids)}"
            )
        #: request id -> (replica index, dispatch time)
        self.dispatched: Dict[int, Tuple[int, float]] = {}
        #: the node tables and choices of every placement, for inspection
        self.decisions: List[Tuple[Dict[str, np.ndarray], int, int]] = []

    # -- the event hooks ----------------------------------------------------------------
    def set_time(self, t: float) -> None:
        self.now = t

    def pop_wakeups(self) -> List[float]:
        w, self._wakeups = sorted(self._wakeups), set()
        self._asked.update(w)
        return w

    def _wake_at(self, t: float) -> None:
        if t > self.now and t not in self._asked:
            self._wakeups.add(t)

    # -- the node table -------------------------------------------------------------------
    def _nodes(self, extra: Dict[int, int], service_s: float) -> Dict[str, np.ndarray]:
        """The replicas as the policy sees them now, ``extra`` requests already sent to each
        in this call: up and age from the trace clock, the batch cap as slots, the requests
        outstanding beyond it as a queue wait (each a ``service_s`` share of the batch), the
        KV blocks in use and in all, the predictor's rates."""
        n = len(self._ids)
        cols = {k: np.zeros(n) for k in ("age_s", "queue_wait_s")}
        up = np.zeros(n, dtype=np.uint8)
        slots = np.zeros(n, dtype=np.uint32)
        used = np.zeros(n, dtype=np.uint32)
        kv_cap = np.zeros(n, dtype=np.uint64)
        kv_used = np.zeros(n, dtype=np.uint64)
        for k, rid in enumerate(self._ids):
            rs = self._replica_schedulers[rid]
            s = self.availability.session(k, self.now)
            up[k] = s is not None
            cols["age_s"][k] = 0.0 if s is None else self.now - s[0]
            slots[k] = rs._config.batch_size_cap
            outstanding = rs.num_pending_requests + len(rs._allocation_map) + extra.get(k, 0)
            # A replica with a full batch still queues: the policy sees its queue as waiting.
            used[k] = min(outstanding, slots[k] - 1) if up[k] else 0
            cols["queue_wait_s"][k] = max(outstanding - used[k], 0) * service_s / slots[k]
            kv_cap[k] = int(rs._cache_config.num_blocks) * self.block_size
            kv_used[k] = int(rs.num_allocated_blocks) * self.block_size
        table = {
            "up": up,
            "age_s": cols["age_s"],
            "slots": slots,
            "slots_used": used,
            "kv_capacity_tokens": kv_cap,
            "kv_used_tokens": np.minimum(kv_used, kv_cap),
            "queue_wait_s": cols["queue_wait_s"],
            "decode_tok_s": np.full(n, self.decode_tok_s),
            "prefill_tok_s": np.full(n, self.prefill_tok_s),
        }
        if self.node_ids is not None:
            table["node_id"] = list(self.node_ids)
        if self.curve_ids is not None:
            table["curve"] = np.asarray(self.curve_ids, dtype=np.uint32)
        return table

    def schedule(self):
        self.sort_requests()
        out = []
        if not any(self.availability.session(k, self.now) for k in range(len(self._ids))):
            # Every replica is down: hold the requests until the next recovery.
            if self._request_queue:
                t = self.availability.next_recovery(self.now)
                if t is not None:
                    self._wake_at(t)
            return out
        extra: Dict[int, int] = {}
        while self._request_queue:
            req = self._request_queue.pop(0)
            service_s = (
                req.num_prefill_tokens / self.prefill_tok_s
                + req.num_decode_tokens / self.decode_tok_s
            )
            nodes = self._nodes(extra, service_s)
            r = PolicyRequest(
                id=req.id,
                prompt_tokens=int(req.num_prefill_tokens),
                est_output_tokens=int(req.num_decode_tokens),
            )
            choice = self.policy.choose(nodes, r).node
            if choice is None:
                # No up replica has a free slot and room: the least loaded up one queues it.
                ups = [k for k in range(len(self._ids)) if nodes["up"][k]]
                choice = min(ups, key=lambda k: (nodes["queue_wait_s"][k], k))
            self.decisions.append((nodes, req.id, choice))
            extra[choice] = extra.get(choice, 0) + 1
            self.dispatched[req.id] = (choice, self.now)
            out.append((self._ids[choice], req))
        return out


_ORIGINAL_HANDLE = GlobalScheduleEvent.handle_event
# Vidur's own classes under the keys the plug-in takes over, for :func:`restore`.
_ORIGINAL_SCHEDULERS = dict(GlobalSchedulerRegistry._registry)
_ORIGINAL_PREDICTORS = dict(ExecutionTimePredictorRegistry._registry)


def _handle_global_schedule(self, scheduler, metrics_store):
    """``GlobalScheduleEvent.handle_event`` telling the scheduler the time and returning the
    wake-up events it asked for (a scheduler without the hooks is served as before)."""
    if hasattr(scheduler, "set_time"):
        scheduler.set_time(self.time)
    events = _ORIGINAL_HANDLE(self, scheduler, metrics_store)
    if hasattr(scheduler, "pop_wakeups"):
        events = list(events) + [GlobalScheduleEvent(t) for t in scheduler.pop_wakeups()]
    return events


def register(
    policy: HazardAwarePolicy,
    availability: Availability,
    *,
    node_ids: Optional[Sequence[str]] = None,
    curve_ids: Optional[Sequence[int]] = None,
    scheduler_type=GlobalSchedulerType.LOR,
    stand_in_predictor: bool = True,
) -> type:
    """Registers a :class:`HazardAwareGlobalScheduler` bound to ``policy`` and
    ``availability`` (and the replicas' ``node_ids`` in the policy's priors, or their
    ``curve_ids`` among the policy's curves) under
    ``scheduler_type`` in Vidur's registry, and with ``stand_in_predictor`` the
    :class:`StandInPredictor` under ``RANDOM_FORREST``; ``GlobalScheduleEvent`` is made to
    tell the scheduler the time and to return its wake-ups. This changes Vidur for the whole
    process until :func:`restore` (which :func:`simulate` calls when it is done). Returns the
    scheduler class."""
    decode, prefill = StandInPredictor.rates()
    cls = type(
        "BoundHazardAwareGlobalScheduler",
        (HazardAwareGlobalScheduler,),
        {
            "policy": policy,
            "availability": availability,
            "node_ids": None if node_ids is None else list(node_ids),
            "curve_ids": None if curve_ids is None else [int(c) for c in curve_ids],
            "decode_tok_s": decode,
            "prefill_tok_s": prefill,
        },
    )
    if scheduler_type in GlobalSchedulerRegistry._registry:
        GlobalSchedulerRegistry.unregister(scheduler_type)
    GlobalSchedulerRegistry.register(scheduler_type, cls)
    if stand_in_predictor:
        key = ExecutionTimePredictorType.RANDOM_FORREST
        if ExecutionTimePredictorRegistry._registry.get(key) is not StandInPredictor:
            if key in ExecutionTimePredictorRegistry._registry:
                ExecutionTimePredictorRegistry.unregister(key)
            ExecutionTimePredictorRegistry.register(key, StandInPredictor)
    GlobalScheduleEvent.handle_event = _handle_global_schedule
    return cls


def restore() -> None:
    """Puts Vidur back as it was before :func:`register`: its own global schedulers and
    execution-time predictors under their keys, and ``GlobalScheduleEvent``'s handler."""
    GlobalSchedulerRegistry._registry.clear()
    GlobalSchedulerRegistry._registry.update(_ORIGINAL_SCHEDULERS)
    ExecutionTimePredictorRegistry._registry.clear()
    ExecutionTimePredictorRegistry._registry.update(_ORIGINAL_PREDICTORS)
    GlobalScheduleEvent.handle_event = _ORIGINAL_HANDLE


def simulate(
    trace: Iterable[Tuple[float, int, int]],
    availability: Availability,
    policy: HazardAwarePolicy,
    *,
    node_ids: Optional[Sequence[str]] = None,
    curve_ids: Optional[Sequence[int]] = None,
    model: str = "microsoft/phi-2",
    device: str = "a100",
    network_device: str = "a100_pairwise_nvlink",
    max_tokens: int = 2048,
    seed: int = 42,
    workdir: Optional[str] = None,
):
    """Runs Vidur over ``trace`` (``(arrival_s, prompt_tokens, output_tokens)`` rows) on one
    replica per entry of ``availability``, placed by ``policy`` (see :func:`register`; each
    replica's curve by ``node_ids`` or ``curve_ids``), and
    returns ``(requests, scheduler)``: a DataFrame with each request's ``arrival_s``,
    ``replica``, ``dispatched_s``, ``held_s``, ``completed_s``, ``e2e_s`` and
    ``interrupted`` (its replica's session ended between its dispatch and its completion,
    which Vidur does not model), and the scheduler (its ``decisions``). Vidur is restored
    (:func:`restore`) and the working files removed afterwards, whatever happens."""
    import pandas as pd

    rows = list(trace)
    cls = register(policy, availability, node_ids=node_ids, curve_ids=curve_ids)
    own = workdir is None
    work = tempfile.mkdtemp(prefix="hazardserve-vidur-") if own else workdir
    try:
        sched, requests = _run(cls, rows, availability, work, model, device, network_device,
                               max_tokens, seed)
    finally:
        # Vidur is left as it was, and nothing of the run on disk.
        restore()
        if own:
            shutil.rmtree(work, ignore_errors=True)
    out = []
    for r in requests:
        replica, at = sched.dispatched.get(r.id, (None, math.nan))
        done = r._completed_at if r.completed else math.nan
        interrupted = False
        if replica is not None and r.completed:
            s = availability.session(replica, at)
            interrupted = s is None or s[1] < done
        out.append({
            "request": r.id,
            "arrival_s": r.arrived_at,
            "prompt_tokens": r.num_prefill_tokens,
            "output_tokens": r.num_decode_tokens,
            "replica": replica,
            "dispatched_s": at,
            "held_s": at - r.arrived_at,
            "completed_s": done,
            "e2e_s": done - r.arrived_at,
            "interrupted": interrupted,
        })
    return pd.DataFrame(out), sched


def _run(cls, rows, availability, work, model, device, network_device, max_tokens, seed):
    """Builds Vidur's configuration in ``work`` and runs it; returns the scheduler and the
    requests."""
    from vidur.utils.random import set_seeds

    trace_csv = os.path.join(work, "trace.csv")
    with open(trace_csv, "w") as f:
        f.write("Date,Time,PromptTokenCount,CompletionTokenCount\n")
        for t, p, d in rows:
            f.write(f"2023-08-21,{float(t)!r},{int(p)},{int(d)}\n")
    config = SimulationConfig(
        seed=seed,
        log_level="warning",
        time_limit=0,
        cluster_config=ClusterConfig(
            num_replicas=len(availability),
            replica_config=ReplicaConfig(
                model_name=model,
                device=device,
                network_device=network_device,
                tensor_parallel_size=1,
                num_pipeline_stages=1,
            ),
            cache_config=CacheConfig(),
            global_scheduler_config=LORGlobalSchedulerConfig(),
            replica_scheduler_config=SarathiSchedulerConfig(chunk_size=512, batch_size_cap=64),
        ),
        request_generator_config=TraceRequestGeneratorConfig(
            trace_file=trace_csv,
            date="2023-08-21",
            prefill_scale_factor=1.0,
            decode_scale_factor=1.0,
            time_scale_factor=1.0,
            max_tokens=max_tokens,
        ),
        execution_time_predictor_config=RandomForrestExecutionTimePredictorConfig(
            use_native_execution_time_predictor=False,
            cache_dir=os.path.join(work, "cache"),
        ),
        metrics_config=MetricsConfig(
            write_metrics=False,
            write_json_trace=False,
            enable_chrome_trace=False,
            store_plots=False,
            wandb_project=None,
            wandb_group=None,
            save_table_to_wandb=False,
            store_operation_metrics=False,
            store_token_completion_metrics=False,
            store_batch_metrics=False,
            store_utilization_metrics=False,
            output_dir=os.path.join(work, "out"),
        ),
    )
    set_seeds(seed)
    # Entity ids are class-level counters: a second simulation in a process starts again.
    Replica._id = -1
    Request._id = -1
    sim = Simulator(config)
    sched = sim.scheduler
    if not isinstance(sched, cls):
        raise RuntimeError("vidur built another global scheduler than the registered one")
    requests = sorted((ev._request for _, ev in sim._event_queue), key=lambda r: r.id)
    sim.run()
    return sched, requests

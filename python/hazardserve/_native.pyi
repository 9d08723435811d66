"""Type stubs of the native module (checked against it by python/tests/test_survival.py).

The estimators take their columns as numpy arrays of the column's type (``Array``) or as
native-endian bytes: durations and entry times float64, event flags one byte each (non-zero:
observed), weights, groups and strata uint32; the log-rank test also takes one array per
group in a list, without ``groups``. Aalen-Johansen and the NPMLE take bytes. The
estimators return their columns as ``Column`` objects, which ``numpy.asarray`` reads in
place (float64; Kaplan-Meier's event table is one block of int64 columns); the curves return
float64 bytes."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

Array = Union[bytes, np.ndarray]

__version__: str

class Column:
    """Values computed by the native module, read by numpy in place (``numpy.asarray``)."""

    @property
    def __array_interface__(self) -> Dict[str, Any]: ...

def kaplan_meier(
    durations: Array,
    events: Array,
    entry: Optional[Array] = None,
    weights: Optional[Array] = None,
    z: float = 1.959963984540054,
) -> Tuple[Dict[str, Column], Column, float]: ...
def nelson_aalen_fit(
    durations: Array,
    events: Array,
    entry: Optional[Array] = None,
    weights: Optional[Array] = None,
    smoothed: bool = True,
) -> Dict[str, Column]: ...
def aalen_johansen_fit(
    durations: bytes,
    causes: bytes,
    event_of_interest: int,
    entry: Optional[bytes] = None,
) -> Dict[str, Column]: ...
def logrank_test(
    durations: Union[Array, Sequence[Array]],
    events: Union[Array, Sequence[Array]],
    groups: Optional[Array],
    k: int,
    weighting: Optional[str] = None,
    strata: Optional[Array] = None,
) -> Tuple[float, float, int, bytes, bytes]: ...
def npmle(
    lower: bytes, upper: bytes, tol: float = 1e-12, max_iter: int = 20000
) -> Tuple[Dict[str, Column], float, bool]: ...

class NativeCurve:
    tail_hazard: float
    @staticmethod
    def from_spec(json: str) -> "NativeCurve": ...
    def spec(self) -> Optional[str]: ...
    def survival(self, times: bytes) -> bytes: ...
    def conditional(self, age: float, times: bytes) -> bytes: ...

class NativePriors:
    source: str
    estimator: str
    cutoff_s: float
    time_base: str
    node_ids: List[str]
    @staticmethod
    def from_json(text: str) -> "NativePriors": ...
    def age_at_cutoff_s(self, node_id: str) -> Optional[float]: ...
    def curve(self, node_id: Optional[str] = None, linear: bool = False) -> NativeCurve: ...

_RequestTuple = Tuple[
    int, int, int, int, Optional[int], int, int, float, bool, Optional[int]
]

class NativePolicy:
    """Node columns travel as bytes: up uint8; slots, slots_used, queued, curve uint32;
    token counts uint64; the rest float64 (remaining_up_s NaN: unknown); forecast, when
    given, float64 triples (start_s, total_s, imposed_s) per node."""

    kind: str
    params: str
    def __init__(
        self,
        kind: str,
        params: str,
        curves: List[NativeCurve],
        reuse: Optional[Tuple[float, List[float]]] = None,
    ) -> None: ...
    def decide(
        self,
        nodes: Dict[str, bytes],
        request: _RequestTuple,
        from_node: Optional[int] = None,
        forecast: Optional[
            Callable[
                [str, int, Optional[Dict[str, Any]], Optional[int]],
                Optional[Tuple[float, float, float]],
            ]
        ] = None,
        next_turn_s: Optional[float] = None,
        record: bool = True,
    ) -> Tuple[Optional[int], Dict[str, Any], Dict[str, bytes]]: ...

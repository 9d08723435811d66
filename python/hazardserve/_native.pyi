"""Type stubs of the native module (checked against it by python/tests/test_survival.py).

Columns travel as native-endian bytes: durations and entry times float64, event flags one
byte each (non-zero: observed), weights uint32; every returned column is float64 bytes."""

from typing import Any, Callable, Dict, List, Optional, Tuple

__version__: str

def kaplan_meier(
    durations: bytes,
    events: bytes,
    entry: Optional[bytes] = None,
    weights: Optional[bytes] = None,
    z: float = 1.959963984540054,
) -> Tuple[Dict[str, bytes], float]: ...
def nelson_aalen_fit(
    durations: bytes,
    events: bytes,
    entry: Optional[bytes] = None,
    weights: Optional[bytes] = None,
    smoothed: bool = True,
) -> Dict[str, bytes]: ...
def aalen_johansen_fit(
    durations: bytes,
    causes: bytes,
    event_of_interest: int,
    entry: Optional[bytes] = None,
) -> Dict[str, bytes]: ...
def logrank_test(
    durations: bytes,
    events: bytes,
    groups: bytes,
    k: int,
    weighting: Optional[str] = None,
    strata: Optional[bytes] = None,
) -> Tuple[float, float, int, bytes, bytes]: ...
def npmle(
    lower: bytes, upper: bytes, tol: float = 1e-12, max_iter: int = 20000
) -> Tuple[Dict[str, bytes], float, bool]: ...

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

"""Type stubs of the native module (checked against it by python/tests/test_survival.py).

Columns travel as native-endian bytes: durations and entry times float64, event flags one
byte each (non-zero: observed), weights uint32; every returned column is float64 bytes."""

from typing import Dict, List, Optional, Tuple

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
) -> Tuple[float, float, int, bytes, bytes]: ...
def npmle(
    lower: bytes, upper: bytes, tol: float = 1e-12, max_iter: int = 20000
) -> Tuple[Dict[str, bytes], float, bool]: ...

class NativeCurve:
    tail_hazard: float
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
    def curve(self, node_id: Optional[str] = None) -> NativeCurve: ...

"""Type stubs of the native module (checked against it by python/tests/test_survival.py).

Columns travel as native-endian bytes: durations and entry times float64, event flags one
byte each (non-zero: observed), weights uint32; every returned column is float64 bytes."""

from typing import Dict, Optional, Tuple

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

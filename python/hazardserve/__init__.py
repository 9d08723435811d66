"""hazardserve: survival estimators with lifelines' API at Rust speed, from the hazardserve
toolkit for serving LLMs on unreliable nodes.

The estimators live in :mod:`hazardserve.survival` (``KaplanMeierFitter``,
``NelsonAalenFitter``); the native module ``hazardserve._native`` runs the same Rust code as
the ``hazardserve`` command line.
"""

from . import survival
from ._native import __version__

__all__ = ["survival", "__version__"]

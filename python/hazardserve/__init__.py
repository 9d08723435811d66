"""hazardserve: survival estimators with lifelines' API at Rust speed, from the hazardserve
toolkit for serving LLMs on unreliable nodes.

The estimators live in :mod:`hazardserve.survival` (``KaplanMeierFitter``,
``NelsonAalenFitter``), the group tests in :mod:`hazardserve.statistics` (``logrank_test``,
``multivariate_logrank_test``) and ``restricted_mean_survival_time`` in
:mod:`hazardserve.utils`, each with lifelines' names and arguments; the native module ``hazardserve._native`` runs the same Rust code as
the ``hazardserve`` command line.
"""

from . import statistics, survival, utils
from ._native import __version__

__all__ = ["statistics", "survival", "utils", "__version__"]

"""hazardserve: survival estimators with lifelines' API at Rust speed, from the hazardserve
toolkit for serving LLMs on unreliable nodes.

The estimators live in :mod:`hazardserve.survival` (``KaplanMeierFitter``,
``NelsonAalenFitter``, ``AalenJohansenFitter``), the group tests in :mod:`hazardserve.statistics` (``logrank_test``,
``multivariate_logrank_test``, ``pairwise_logrank_test``) and ``restricted_mean_survival_time`` in
:mod:`hazardserve.utils`, each with lifelines' names and arguments; exported hazard priors
and each node's conditional survival in :mod:`hazardserve.priors`; the hazard-aware policy as a
class in :mod:`hazardserve.policy` (``HazardAwarePolicy``); a store, its queries, replays and
sweeps as DataFrames in :mod:`hazardserve.store` (through the ``hazardserve`` binary). The
native module ``hazardserve._native`` runs the same Rust code as the ``hazardserve`` command
line.
"""

from . import policy, priors, statistics, store, survival, utils
from ._native import __version__

__all__ = ["policy", "priors", "statistics", "store", "survival", "utils", "__version__"]

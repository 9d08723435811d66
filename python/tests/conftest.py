"""pytest settings of the package's tests: hypothesis draws the same examples on every run
(derandomised, no example database), so a failure reproduces and CI does not flake; set
HYPOTHESIS_PROFILE=explore to draw new examples."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

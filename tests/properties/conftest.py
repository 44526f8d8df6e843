"""Hypothesis profiles for the property tests (tests/properties).

* ``ci`` (default): deterministic (``derandomize``: the same examples on every run, so a
  failure reproduces), a moderate number of examples, no deadline (the machine is shared and
  its speed varies), no example database (nothing is written into the repository).
* ``thorough``: ten times the examples, fresh random draws on every run; for local hunting:
  ``HYPOTHESIS_PROFILE=thorough .venv/bin/python -m pytest tests/properties``.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow],
}

settings.register_profile("ci", max_examples=25, derandomize=True, **_COMMON)
settings.register_profile("thorough", max_examples=250, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

"""Hypothesis profiles. ``ci`` (the default) derandomizes every property so that a run of the suite is
the same on every machine and every time: CI goes red on a change, never on a draw. ``fuzz``
(benchmarks/fuzz.py sets ``HYPOTHESIS_PROFILE=fuzz``) draws twenty times as many cases at random, to
look for what the fixed draws miss. Tests scale their own example counts by ``max_examples`` over
``DEFAULT_EXAMPLES``. ``conftest.py`` loads the profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEFAULT_EXAMPLES = 100
settings.register_profile("ci", max_examples=DEFAULT_EXAMPLES, derandomize=True, database=None, deadline=None)
settings.register_profile(
    "fuzz",
    max_examples=20 * DEFAULT_EXAMPLES,
    derandomize=False,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def load() -> None:
    """Load the profile ``HYPOTHESIS_PROFILE`` names (``ci`` unless set)."""
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

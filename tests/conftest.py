"""Test-wide settings.

Hypothesis: no per-example deadline (the machines are shared and noisy; timing is never a test
criterion here), and under CI the examples are derandomized so a red run is reproducible from the
commit alone. Local runs keep exploring fresh random examples.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "sqlkv",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "sqlkv-ci",
    parent=settings.get_profile("sqlkv"),
    derandomize=True,
    print_blob=True,
)
settings.load_profile("sqlkv-ci" if os.environ.get("CI") else "sqlkv")

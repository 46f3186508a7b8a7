"""The RSS peak a load holds above what stays (serving/load_peak.py), on this process."""

import time

import numpy as np

from mcp2026ai.policy.memory import release_freed_memory, resident_bytes
from mcp2026ai.serving.load_peak import PeakRss


def test_memory_held_only_during_the_load_is_its_transient() -> None:
    with PeakRss() as peak:
        scratch = np.ones(64 << 20, np.uint8)  # 64 MiB touched, then freed before the load ends
        time.sleep(0.05)
        del scratch
        release_freed_memory()
    after = resident_bytes()
    assert after is not None
    assert peak.transient_bytes(after) > 48 << 20
    assert peak.transient_bytes(None) == 0

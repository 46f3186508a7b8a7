"""The clock seam: components that measure time take a ``Clock`` (seconds, monotonic) so that tests
can inject one that moves only when told to."""

from __future__ import annotations

from collections.abc import Callable

Clock = Callable[[], float]
"""A monotonic source of seconds: ``time.monotonic``, ``time.perf_counter`` or a test's fake."""

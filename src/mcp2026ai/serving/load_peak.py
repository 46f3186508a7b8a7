"""The resident memory a load holds at its peak, above what stays once it is done.

Building a session or an engine holds more than the loaded model keeps: ONNX Runtime's graph
optimisation copies initializers, the language-model builder reads the weights before it packs them.
:class:`PeakRss` samples the process RSS on a thread of its own while a load runs, so that the
memory budget can make room for that transient too, not only for the footprint that stays.
"""

from __future__ import annotations

import threading
from types import TracebackType

from mcp2026ai.policy.memory import resident_bytes

SAMPLE_INTERVAL_S = 0.005


class PeakRss:
    """``with PeakRss() as peak: load()`` then ``peak.peak_bytes`` (0 where /proc is not readable)."""

    def __init__(self, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="mcp-load-peak", daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._take()

    def transient_bytes(self, after: int | None) -> int:
        """How far the peak rose above ``after`` (the RSS once the load was done)."""
        return max(0, self.peak_bytes - after) if after is not None else 0

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def _take(self) -> None:
        now = resident_bytes()
        if now is not None and now > self.peak_bytes:
            self.peak_bytes = now

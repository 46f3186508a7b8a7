"""A trace sampler whose ratio can change while serving (Triton's trace extension sets it).

Imported only where the OpenTelemetry SDK is installed (observability/export.py builds the provider).
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace.sampling import ParentBased, Sampler, SamplingResult, TraceIdRatioBased


class AdjustableRatio(Sampler):  # type: ignore[misc]
    """Samples a share of new traces; :meth:`set_ratio` changes the share for traces started after."""

    def __init__(self, ratio: float) -> None:
        self.ratio = ratio
        self._delegate = TraceIdRatioBased(ratio)

    def set_ratio(self, ratio: float) -> None:
        self.ratio = ratio
        self._delegate = TraceIdRatioBased(ratio)

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return self._delegate.should_sample(*args, **kwargs)

    def get_description(self) -> str:
        return f"AdjustableRatio{{{self.ratio}}}"


ACTIVE: AdjustableRatio | None = None
"""The ratio sampler of the provider this process exports with, if any."""


def parent_based(ratio: float) -> ParentBased:
    """A caller's sampling decision is kept; new traces are sampled by an adjustable ratio."""
    global ACTIVE
    ACTIVE = AdjustableRatio(ratio)
    return ParentBased(ACTIVE)

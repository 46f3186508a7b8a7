"""Shadow diffs aggregated per (model, primary version, shadow version): metrics, catalog, report.

Each diff updates the Prometheus metrics at once and a running :class:`ShadowStats`;
:meth:`ShadowReporter.flush` (called periodically and at shutdown, never per request) appends the
totals since the previous flush as a ``shadow_diff`` annotation. :func:`shadow_report` merges every
stored flush of a model into one summary per version pair, across restarts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from mcp2026ai.observability import metrics
from mcp2026ai.registry.catalog import Catalog
from mcp2026ai.routing.diff import ShadowDiff
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.pending_stats import Pending, PendingStats, write_pending
from mcp2026ai.routing.store import utc_now

SHADOW_DIFF_KIND = "shadow_diff"


@dataclass(frozen=True)
class ShadowKey:
    model: str
    primary: str
    shadow: str


@dataclass
class ShadowStats:
    """Sums and maxima only, so flushes merge exactly."""

    requests: int = 0
    dropped: int = 0
    shadow_errors: int = 0
    status_mismatches: int = 0
    primary_latency_ms_sum: float = 0.0
    shadow_latency_ms_sum: float = 0.0
    outputs_compared: int = 0
    outputs_incomparable: int = 0
    max_abs_diff: float = 0.0
    rel_l2_sum: float = 0.0
    rel_l2_max: float = 0.0
    top1_rows: int = 0
    top1_agreed: int = 0

    def add(self, diff: ShadowDiff) -> None:
        self.requests += 1
        self.shadow_errors += diff.shadow is not Outcome.OK
        self.status_mismatches += not diff.status_match
        self.primary_latency_ms_sum += diff.primary_latency_ms
        self.shadow_latency_ms_sum += diff.shadow_latency_ms
        for output in diff.outputs:
            if output.max_abs_diff is None or output.rel_l2 is None:
                self.outputs_incomparable += 1
                continue
            self.outputs_compared += 1
            self.max_abs_diff = max(self.max_abs_diff, output.max_abs_diff)
            self.rel_l2_sum += output.rel_l2
            self.rel_l2_max = max(self.rel_l2_max, output.rel_l2)
            self.top1_rows += output.top1_rows
            self.top1_agreed += output.top1_agreed

    def merge(self, other: ShadowStats) -> None:
        for item in fields(self):
            mine, theirs = getattr(self, item.name), getattr(other, item.name)
            merged = max(mine, theirs) if item.name in ("max_abs_diff", "rel_l2_max") else mine + theirs
            setattr(self, item.name, merged)

    def summary(self) -> dict[str, float | int | None]:
        def ratio(part: float, whole: float) -> float | None:
            return part / whole if whole else None

        return {
            "requests": self.requests,
            "dropped": self.dropped,
            "shadow_error_rate": ratio(self.shadow_errors, self.requests),
            "status_match_rate": ratio(self.requests - self.status_mismatches, self.requests),
            "primary_latency_ms_mean": ratio(self.primary_latency_ms_sum, self.requests),
            "shadow_latency_ms_mean": ratio(self.shadow_latency_ms_sum, self.requests),
            "outputs_compared": self.outputs_compared,
            "outputs_incomparable": self.outputs_incomparable,
            "max_abs_diff": self.max_abs_diff if self.outputs_compared else None,
            "rel_l2_mean": ratio(self.rel_l2_sum, self.outputs_compared),
            "rel_l2_max": self.rel_l2_max if self.outputs_compared else None,
            "top1_agreement": ratio(self.top1_agreed, self.top1_rows),
        }


class ShadowReporter:
    """Sink of a ShadowMirror: exports metrics per diff, persists aggregated deltas on flush."""

    def __init__(self, catalog: Catalog, wallclock: Callable[[], datetime] = utc_now) -> None:
        self.catalog = catalog
        self._pending: PendingStats[ShadowKey, ShadowStats] = PendingStats(ShadowStats, wallclock)

    def add(self, key: ShadowKey, diff: ShadowDiff) -> None:
        self._pending.of(key).add(diff)
        _export(key, diff)

    def dropped(self, key: ShadowKey) -> None:
        self._pending.of(key).dropped += 1
        metrics.SHADOW_REQUESTS.labels(
            model=key.model, version=key.primary, shadow_version=key.shadow, result="dropped"
        ).inc()

    def flush(self) -> int:
        """Persist what accumulated since the last flush; returns how many pairs were written."""
        return self.write(self.take())

    def take(self) -> Pending[ShadowKey, ShadowStats]:
        """What accumulated since the last take, handed over (the reporter starts afresh)."""
        return self._pending.take()

    def write(self, pending: Pending[ShadowKey, ShadowStats]) -> int:
        """Persist ``pending`` (catalog writes only: any thread may call it); how many pairs were written."""
        return write_pending(self.catalog, SHADOW_DIFF_KIND, pending, _pair_fields)


def _pair_fields(key: ShadowKey) -> dict[str, Any]:
    return {"primary": key.primary, "shadow": key.shadow}


def shadow_report(catalog: Catalog, model: str) -> list[dict[str, Any]]:
    """One summary row per (primary, shadow) pair, merged over every stored flush."""
    merged: dict[tuple[str, str], ShadowStats] = {}
    since: dict[tuple[str, str], datetime] = {}
    until: dict[tuple[str, str], datetime] = {}
    for _, at, payload in catalog.annotations(model, SHADOW_DIFF_KIND):
        pair = (str(payload["primary"]), str(payload["shadow"]))
        merged.setdefault(pair, ShadowStats()).merge(ShadowStats(**dict(payload["stats"])))  # type: ignore[call-overload]
        since.setdefault(pair, at)
        until[pair] = at
    return [
        {
            "model": model,
            "primary": primary,
            "shadow": shadow,
            "first": since[(primary, shadow)].isoformat(),
            "last": until[(primary, shadow)].isoformat(),
            **stats.summary(),
        }
        for (primary, shadow), stats in sorted(merged.items())
    ]


def _export(key: ShadowKey, diff: ShadowDiff) -> None:
    labels = {"model": key.model, "version": key.primary, "shadow_version": key.shadow}
    result = "ok" if diff.shadow is Outcome.OK else "error"
    metrics.SHADOW_REQUESTS.labels(**labels, result=result).inc()
    if not diff.status_match:
        metrics.SHADOW_STATUS_MISMATCHES.labels(**labels).inc()
    metrics.SHADOW_LATENCY.labels(**labels, role="primary").observe(diff.primary_latency_ms / 1000)
    metrics.SHADOW_LATENCY.labels(**labels, role="shadow").observe(diff.shadow_latency_ms / 1000)
    for output in diff.outputs:
        if output.max_abs_diff is not None and output.rel_l2 is not None:
            metrics.SHADOW_MAX_ABS_DIFF.labels(**labels).observe(output.max_abs_diff)
            metrics.SHADOW_REL_L2.labels(**labels).observe(output.rel_l2)
        if output.top1_rows:
            metrics.SHADOW_TOP1_ROWS.labels(**labels, agreed="true").inc(output.top1_agreed)
            metrics.SHADOW_TOP1_ROWS.labels(**labels, agreed="false").inc(output.top1_rows - output.top1_agreed)

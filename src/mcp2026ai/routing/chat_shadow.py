"""Shadow diffs of chats, per prompt: greedy token agreement and the TTFT and ITL deltas.

A rollout's shadow version gets a copy of each sampled chat once the client's answer is complete
(dataplane/chat_shadow.py); :class:`ChatShadowReporter` aggregates each pair of answers per (model,
primary version, shadow version, prompt) and appends the totals to the catalog on flush (a
``chat_shadow`` annotation); :func:`chat_shadow_report` merges every flush into one row per prompt.

A prompt is named by the digest of its token ids (and its length), never by its text: prompts may
hold what a user would not want kept in a model catalog.

Token agreement is counted only when both answers were greedy (temperature 0): the share of
positions, up to the longer answer, where both chose the same token. TTFT and ITL deltas are shadow
minus primary, in milliseconds (ITL: the mean gap between successive tokens of each answer).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from mcp2026ai.registry.catalog import Catalog
from mcp2026ai.routing.pending_stats import Pending, PendingStats, write_pending
from mcp2026ai.routing.store import utc_now
from mcp2026ai.routing.stream_window import StreamSample

CHAT_SHADOW_KIND = "chat_shadow"


@dataclass(frozen=True)
class ChatShadowKey:
    model: str
    primary: str
    shadow: str
    prompt: str
    """The digest of the prompt's token ids (12 hex digits) and its length: ``3f2a...:17``."""


def prompt_key(token_ids: Sequence[int]) -> str:
    digest = hashlib.sha256(",".join(map(str, token_ids)).encode()).hexdigest()[:12]
    return f"{digest}:{len(token_ids)}"


@dataclass(frozen=True)
class ChatAnswer:
    """One side of a mirrored chat: its timing and the first choice's tokens."""

    sample: StreamSample
    token_ids: tuple[int, ...]


@dataclass
class ChatShadowStats:
    """Sums only, so flushes merge exactly."""

    requests: int = 0
    dropped: int = 0
    shadow_errors: int = 0
    greedy_pairs: int = 0
    tokens_compared: int = 0
    tokens_agreed: int = 0
    identical_answers: int = 0
    ttft_pairs: int = 0
    ttft_delta_ms_sum: float = 0.0
    itl_pairs: int = 0
    itl_delta_ms_sum: float = 0.0

    def add(self, primary: ChatAnswer, shadow: ChatAnswer | None, greedy: bool) -> None:
        self.requests += 1
        if shadow is None or shadow.sample.outcome.failed:
            self.shadow_errors += 1
            return
        if greedy:
            longer = max(len(primary.token_ids), len(shadow.token_ids))
            agreed = sum(a == b for a, b in zip(primary.token_ids, shadow.token_ids, strict=False))
            self.greedy_pairs += 1
            self.tokens_compared += longer
            self.tokens_agreed += agreed
            self.identical_answers += primary.token_ids == shadow.token_ids
        if primary.sample.ttft_ms is not None and shadow.sample.ttft_ms is not None:
            self.ttft_pairs += 1
            self.ttft_delta_ms_sum += shadow.sample.ttft_ms - primary.sample.ttft_ms
        primary_itl, shadow_itl = _mean(primary.sample.itl_ms), _mean(shadow.sample.itl_ms)
        if primary_itl is not None and shadow_itl is not None:
            self.itl_pairs += 1
            self.itl_delta_ms_sum += shadow_itl - primary_itl

    def merge(self, other: ChatShadowStats) -> None:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))

    def summary(self) -> dict[str, float | int | None]:
        def ratio(part: float, whole: float) -> float | None:
            return part / whole if whole else None

        return {
            "requests": self.requests,
            "dropped": self.dropped,
            "shadow_error_rate": ratio(self.shadow_errors, self.requests),
            "token_agreement": ratio(self.tokens_agreed, self.tokens_compared),
            "identical_rate": ratio(self.identical_answers, self.greedy_pairs),
            "ttft_delta_ms_mean": ratio(self.ttft_delta_ms_sum, self.ttft_pairs),
            "itl_delta_ms_mean": ratio(self.itl_delta_ms_sum, self.itl_pairs),
        }


class ChatShadowReporter:
    """Aggregates mirrored chats per prompt; persists the deltas since the last take on flush."""

    def __init__(self, catalog: Catalog, wallclock: Callable[[], datetime] = utc_now) -> None:
        self.catalog = catalog
        self._pending: PendingStats[ChatShadowKey, ChatShadowStats] = PendingStats(ChatShadowStats, wallclock)

    def add(self, key: ChatShadowKey, primary: ChatAnswer, shadow: ChatAnswer | None, greedy: bool) -> None:
        self._pending.of(key).add(primary, shadow, greedy)

    def dropped(self, key: ChatShadowKey) -> None:
        self._pending.of(key).dropped += 1

    def take(self) -> Pending[ChatShadowKey, ChatShadowStats]:
        return self._pending.take()

    def write(self, pending: Pending[ChatShadowKey, ChatShadowStats]) -> int:
        """Persist ``pending`` (catalog writes only: any thread may call it); how many rows were written."""
        return write_pending(self.catalog, CHAT_SHADOW_KIND, pending, _prompt_fields)

    def flush(self) -> int:
        return self.write(self.take())


def _prompt_fields(key: ChatShadowKey) -> dict[str, Any]:
    return {"primary": key.primary, "shadow": key.shadow, "prompt": key.prompt}


def chat_shadow_report(catalog: Catalog, model: str) -> list[dict[str, Any]]:
    """One row per (primary, shadow, prompt), merged over every stored flush."""
    merged: dict[tuple[str, str, str], ChatShadowStats] = {}
    for _, _at, payload in catalog.annotations(model, CHAT_SHADOW_KIND):
        key = (str(payload["primary"]), str(payload["shadow"]), str(payload["prompt"]))
        merged.setdefault(key, ChatShadowStats()).merge(ChatShadowStats(**dict(payload["stats"])))  # type: ignore[call-overload]
    return [
        {"kind": "chat", "model": model, "primary": primary, "shadow": shadow, "prompt": prompt, **stats.summary()}
        for (primary, shadow, prompt), stats in sorted(merged.items())
    ]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None

"""Statistics gathered per key between two flushes, then appended to the catalog as annotations.

Both shadow reporters (tensor diffs in routing/report.py, chats in routing/chat_shadow.py) add to a
running statistic per key on the request path, hand the lot over with :meth:`PendingStats.take` (on
the event loop, so nothing is added twice or lost), and write it with :func:`write_pending` from any
thread (catalog writes only). The statistics are sums (and maxima), so stored flushes merge exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from mcp2026ai.registry.catalog import Catalog
from mcp2026ai.routing.store import utc_now


class FlushedStats(Protocol):
    """What a flushed statistic has: a request and a drop count (a dataclass of sums)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    requests: int
    dropped: int


class VersionPairKey(Protocol):
    """A flushed statistic's key names the model and the version pair it compares."""

    @property
    def model(self) -> str: ...

    @property
    def shadow(self) -> str: ...


Key = TypeVar("Key", bound=VersionPairKey)
Stats = TypeVar("Stats", bound=FlushedStats)


@dataclass(frozen=True)
class Pending(Generic[Key, Stats]):
    """Statistics taken from a reporter at ``at``, to be written to the catalog."""

    at: datetime
    stats: dict[Key, Stats]


class PendingStats(Generic[Key, Stats]):
    """The running statistic of each key since the last :meth:`take`."""

    def __init__(self, new_stats: Callable[[], Stats], wallclock: Callable[[], datetime] = utc_now) -> None:
        self._new_stats = new_stats
        self._wallclock = wallclock
        self._stats: dict[Key, Stats] = {}

    def of(self, key: Key) -> Stats:
        """``key``'s running statistic (a new one on its first use)."""
        stats = self._stats.get(key)
        if stats is None:
            stats = self._stats[key] = self._new_stats()
        return stats

    def take(self) -> Pending[Key, Stats]:
        """What accumulated since the last take, handed over (counting starts afresh)."""
        pending, self._stats = Pending(self._wallclock(), self._stats), {}
        return pending


def write_pending(
    catalog: Catalog, kind: str, pending: Pending[Key, Stats], fields_of: Callable[[Key], dict[str, Any]]
) -> int:
    """Append each key's statistic that saw a request or a drop as a ``kind`` annotation of its shadow
    version (``fields_of`` names the key's fields in the payload); how many were written."""
    written = 0
    for key, stats in pending.stats.items():
        if stats.requests or stats.dropped:
            payload: dict[str, object] = {**fields_of(key), "stats": asdict(stats)}
            catalog.annotate(key.model, key.shadow, kind, payload, pending.at)
            written += 1
    return written

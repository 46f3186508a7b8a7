"""Other servers' metric names as aliases of ours, added to a scrape (``mcp serve --metrics-compat``).

An alias is computed from its source family at scrape time (renamed family and samples, the
``model`` label renamed, the source's selector labels matched and dropped), so an alias always
equals its twin: there is nothing to keep in step. The tables themselves are declared with every
other metric in observability/metrics.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client.metrics_core import Metric


@dataclass(frozen=True)
class Alias:
    """``name`` stands for the family ``source``, restricted to the series whose labels include ``match``."""

    name: str
    source: str
    documentation: str
    match: Mapping[str, str] = field(default_factory=dict)


class Collecting(Protocol):
    def collect(self) -> Iterable[Metric]: ...


class WithAliases:
    """A registry's families, then the aliases of those the table names (what the encoders read)."""

    def __init__(self, registry: Collecting, aliases: Iterable[Alias], labels: Mapping[str, str]) -> None:
        self.registry = registry
        self.aliases = tuple(aliases)
        self.labels = dict(labels)

    def collect(self) -> Iterator[Metric]:
        families = list(self.registry.collect())
        yield from families
        by_name = {family.name: family for family in families}
        for alias in self.aliases:
            source = by_name.get(alias.source)
            if source is not None:
                yield self._renamed(alias, source)

    def _renamed(self, alias: Alias, source: Metric) -> Metric:
        renamed = Metric(alias.name, alias.documentation, source.type, source.unit)
        for sample in source.samples:
            if any(sample.labels.get(key) != value for key, value in alias.match.items()):
                continue
            labels = {
                self.labels.get(key, key): value for key, value in sample.labels.items() if key not in alias.match
            }
            name = alias.name + sample.name[len(source.name) :]
            renamed.add_sample(name, labels, sample.value, sample.timestamp, sample.exemplar)
        return renamed

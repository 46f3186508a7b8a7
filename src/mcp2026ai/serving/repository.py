"""Serving a Triton model repository: every version its ``version_policy`` selects is loaded (the
highest one the default), and a model that cannot be served is shown UNAVAILABLE in the repository
index with Triton's "failed to load" reason while the others load."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from mcp2026ai.errors import MCPError
from mcp2026ai.registry import ModelVersion
from mcp2026ai.registry.triton_import import RepositoryImport
from mcp2026ai.registry.versioning import SemVer
from mcp2026ai.serving.models import ServedModels

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RepositoryServing:
    """What a repository asks to serve: versions per model, and the models refused with their reason."""

    versions: dict[str, list[str]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_import(cls, imported: RepositoryImport) -> RepositoryServing:
        versions = {name: [record.version for record in records] for name, records in imported.records.items()}
        failures = {failure.name: failed_to_load(failure.name, failure.reason) for failure in imported.failures}
        return cls(versions, failures)

    @property
    def names(self) -> list[str]:
        return sorted(self.versions)


def failed_to_load(name: str, reason: str) -> str:
    """Triton's wording, which its clients test for."""
    return reason if reason.startswith("failed to load") else f"failed to load '{name}': {reason}"


async def load_repository(models: ServedModels, repository: RepositoryServing) -> list[ModelVersion]:
    """Load every selected version; a model whose load fails is recorded as failed, the others go on."""
    for name, reason in repository.failures.items():
        models.record_failure(name, reason)
        log.error("%s", reason)
    loaded = []
    for name, versions in repository.versions.items():
        ordered = sorted(versions, key=SemVer.parse)
        try:
            for version in ordered:
                served = await models.load(name, version, make_default=version == ordered[-1])
                loaded.append(served.record)
        except MCPError as exc:
            reason = failed_to_load(name, str(exc))
            models.record_failure(name, reason)
            log.error("%s", reason)
    return loaded

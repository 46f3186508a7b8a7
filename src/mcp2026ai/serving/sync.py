"""Keep what is served in step with the registry and rollouts: hot reload, canary loading, ticks.

Tensor models (serving/models.py) and language models (serving/llms.py: one generation engine per
loaded version) are reconciled alike; a language model's retired version finishes its streams,
queued ones included, before its engine is closed and its memory returned.

Every ``interval_s`` the sync (1) re-registers watched model files whose content changed,
(2) re-reads rollouts, and (3) for each served model loads the versions it should serve — the
registry default (highest production, else highest non-archived) or the rollout's stable, plus
canary and shadow — swaps the default atomically, and retires versions no longer wanted after
their in-flight requests finish. Every second it also lets canary analysis roll back a failing
canary. Versions ``pinned`` for a model (a Triton repository's ``version_policy``) stay loaded
beside its default. Errors are logged; serving goes on with what is loaded. Registry and catalog reads run on
worker threads (SQLite, growing with the number of models and the rollout history); only the
resulting changes are made on the event loop, between requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from mcp2026ai.errors import MCPError
from mcp2026ai.registry.store import sha256_of
from mcp2026ai.routing.rollout import Verdict
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.serving.llms import GenerationModels
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.replanning import ReplanSupervisor

log = logging.getLogger(__name__)

HOT_RELOAD_ACTOR = "system:hot-reload"
"""Who the audit log names for a version registered because a watched model file changed."""


class ServingSync:
    """Reconciles ``models`` with the registry and ``traffic``'s rollouts; calls ``tick`` every second
    (the data plane's canary analysis)."""

    def __init__(
        self,
        models: ServedModels,
        traffic: TrafficController,
        tick: Callable[[], None],
        interval_s: float = 2.0,
        watched: dict[str, Path] | None = None,
        replanner: ReplanSupervisor | None = None,
        pinned: Mapping[str, Collection[str]] | None = None,
        llms: GenerationModels | None = None,
    ) -> None:
        self.models = models
        self.llms = llms
        self.pinned = {name: set(versions) for name, versions in (pinned or {}).items()}
        self.traffic = traffic
        self.tick = tick
        self.replanner = replanner
        self.interval_s = interval_s
        self.watched = dict(watched or {})
        self._digests: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="mcp-serving-sync")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        elapsed = self.interval_s
        while True:
            self.tick()
            if elapsed >= self.interval_s:
                elapsed = 0.0
                await self.sync_once()
            await asyncio.sleep(1.0 if self.interval_s >= 1.0 else self.interval_s)
            elapsed += 1.0 if self.interval_s >= 1.0 else self.interval_s

    async def sync_once(self) -> None:
        """One reconciliation pass (also callable directly, e.g. right after a registry change)."""
        await asyncio.to_thread(self._reregister_changed_files)
        await self.traffic.refresh_off_loop()
        if self.replanner is not None:
            await self.replanner.observe()
        names = self.models.loaded_names() + [name for name in self._llm_names() if not self.models.is_loaded(name)]
        defaults = await asyncio.to_thread(self._registry_defaults, names)
        for name in names:
            try:
                await self._reconcile(name, defaults[name])
            except MCPError as exc:
                log.warning("could not sync model %s: %s", name, exc)
            except Exception:
                log.exception("unexpected error while syncing model %s", name)

    def _roll_back_unloadable_canary(self, name: str, version: str, error: MCPError) -> None:
        """A canary that cannot be loaded (its import fails the integrity check, its contract cannot
        be met) breaks its contract before its first request: rolled back, the reason recorded for
        ``mcp rollout show`` and ``mcp policy trace``."""
        reason = f"canary {name}:{version} failed to load: {error}"
        self.traffic.manager.roll_back(name, Verdict(True, reason))
        log.warning("rolled back %s", reason)

    def _llm_names(self) -> list[str]:
        return self.llms.names() if self.llms is not None else []

    def _table(self, name: str) -> ServedModels | GenerationModels:
        """Where ``name``'s versions are served: the generation engines, or the tensor models."""
        if self.llms is not None and self.llms.serves(name) and not self.models.is_loaded(name):
            return self.llms
        return self.models

    async def _load_model(self, name: str) -> None:
        """Load a model not served yet (a rollout's fallback model) where its kind is served."""
        if self.llms is not None and await asyncio.to_thread(self.llms.is_language_model, name):
            await self.llms.load(name)
        else:
            await self.models.load(name)

    def _registry_defaults(self, names: list[str]) -> dict[str, str | MCPError]:
        """Each model's registry default version, or why it has none (registry reads: off the loop)."""
        defaults: dict[str, str | MCPError] = {}
        for name in names:
            try:
                defaults[name] = self.models.registry.resolve(name).version
            except MCPError as exc:
                defaults[name] = exc
        return defaults

    def _reregister_changed_files(self) -> None:
        registry = self.models.registry
        for name, path in self.watched.items():
            if not path.is_file():
                continue
            digest = sha256_of(path)
            if self._digests.get(name) not in (None, digest):
                record = registry.register_or_reuse(name, path, actor=HOT_RELOAD_ACTOR)
                log.info("model file %s changed: registered %s", path, record.ref)
            self._digests[name] = digest

    async def _reconcile(self, name: str, registry_default: str | MCPError) -> None:
        if self.models.serves_upload(name):  # a file: load overrides the registry here until loaded or unloaded again
            return
        models = self._table(name)
        rollout = self.traffic.rollout(name)
        if rollout and rollout.stable:
            default = rollout.stable
        elif isinstance(registry_default, MCPError):
            raise registry_default
        else:
            default = registry_default
        fallback = rollout.fallback_model if rollout else None
        if fallback and not self.models.is_loaded(fallback) and fallback not in self._llm_names():
            try:
                await self._load_model(fallback)  # first: it serves while the versions below fail
            except MCPError as exc:  # the model's own versions are reconciled all the same
                log.warning("fallback model %s of %s cannot be served: %s", fallback, name, exc)
        extras = [rollout.canary, rollout.shadow] if rollout else []
        wanted = {default} | {version for version in extras if version} | self.pinned.get(name, set())
        if isinstance(models, ServedModels):
            wanted |= models.step_versions(name)  # the versions loaded pipelines run as steps
        loaded = {served.record.version for served in models.served_versions(name)}
        for version in sorted(wanted - loaded):
            try:
                await models.load(name, version, make_default=(version == default))
            except MCPError as exc:
                if rollout is None or version != rollout.canary or version == default:
                    raise
                self._roll_back_unloadable_canary(name, version, exc)
                continue
            log.info("loaded %s:%s", name, version)
        if models.default_version(name) != default:
            models.set_default(name, default)
            log.info("%s now serves %s by default", name, default)
        for version in sorted(loaded - wanted):
            if isinstance(models, GenerationModels):  # its streams finish on it: do not hold the sync
                models.retire_version_later(name, version)
            else:
                await models.unload_version(name, version)
            log.info("retiring %s:%s", name, version)

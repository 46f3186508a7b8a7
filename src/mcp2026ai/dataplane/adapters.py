"""Run-time LoRA adapters (vLLM's ``/v1/load_lora_adapter`` and ``/v1/unload_lora_adapter``).

A load registers the folder as a version of ``lora_name`` whose base is the served model (the same
checks as ``mcp model register --adapter``: it is stored by digest with its lineage and takes part in
rollouts like any version) and serves it on that model's engine; loading the same content again
reuses its version. An unload stops serving the name (its running requests finish); the version
stays registered.

What it reads: only folders under the server's ``--lora-allowed-dir`` (none by default: the API then
refuses every path), resolved with symbolic links followed first, two files of at most
``ir/lora_adapter.py``'s size limits. Under ``--require-signed`` a folder cannot be loaded this way
(it carries no signature): register and sign it, then it is served like any signed version.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError, NotFoundError, PermissionDeniedError
from mcp2026ai.registry import ModelVersion
from mcp2026ai.registry.llm_bundle import LORA_FORMAT, read_manifest
from mcp2026ai.registry.lora_bundle import adapter_digest, is_adapter_folder
from mcp2026ai.serving.llms import GenerationModels

RUNTIME_ACTOR = "api:load_lora_adapter"


class AdapterHandlers:
    """Load and unload adapters of the served language models while the server runs."""

    def __init__(self, llms: GenerationModels, allowed_dirs: list[Path]) -> None:
        self.llms = llms
        self.allowed_dirs = [folder.resolve() for folder in allowed_dirs]

    async def load(self, name: str, path: str, base_model: str | None = None) -> ModelVersion:
        """Register (or reuse) ``path`` as a version of ``name`` on ``base_model`` and serve it."""
        if self.llms.trusted_keys is not None:
            raise PermissionDeniedError(
                "this server runs with --require-signed: register and sign the adapter (mcp model register "
                "--adapter), it is then served like any signed version"
            )
        folder = self.confined(path)
        if self.llms.serves(name) and not self._is_adapter(name):
            raise InvalidArgumentError(f"lora_name {name!r} is a served base model, not an adapter")
        base = self.llms.get(self._base_name(base_model))
        record = await asyncio.to_thread(self._register, name, folder, base.record)
        await self.llms.load(name, record.version)
        return record

    async def unload(self, name: str) -> None:
        if not self.llms.serves(name):
            raise NotFoundError(f"adapter {name!r} is not loaded")
        if not self._is_adapter(name):
            raise InvalidArgumentError(
                f"{name!r} is a base model, not a LoRA adapter (unload it from the repository API)"
            )
        await self.llms.unload(name)

    def confined(self, path: str) -> Path:
        """``path`` resolved (links followed), when it lies inside an allowed folder; checked for
        confinement before existence, so a refused path tells nothing of what lies outside."""
        if not self.allowed_dirs:
            raise InvalidArgumentError(
                "loading adapters from paths is off: start the server with --lora-allowed-dir DIR"
            )
        folder = Path(path).resolve()
        if not any(folder == allowed or folder.is_relative_to(allowed) for allowed in self.allowed_dirs):
            raise InvalidArgumentError(f"lora_path {path!r} is outside the folders this server loads adapters from")
        if not folder.is_dir():
            raise NotFoundError(f"lora_path {path!r} is not a folder")
        if not is_adapter_folder(folder):
            raise InvalidArgumentError(f"lora_path {path!r} is not a PEFT adapter folder (no adapter_config.json)")
        return folder

    def _is_adapter(self, name: str) -> bool:
        return any(served.adapter is not None for served in self.llms.served_versions(name))

    def _base_name(self, base_model: str | None) -> str:
        """The named base, else the one served model that runs with LoRA."""
        if base_model is not None:
            return base_model
        candidates = [
            name
            for name in self.llms.names()
            if (served := self.llms.get(name)).adapter is None and served.engine.adapters is not None
        ]
        if len(candidates) != 1:
            names = ", ".join(candidates) or "none"
            raise InvalidArgumentError(f"name the base model (base_model_name): models served with LoRA: {names}")
        return candidates[0]

    def _register(self, name: str, folder: Path, base: ModelVersion) -> ModelVersion:
        registry = self.llms.registry
        source = adapter_digest(folder)
        try:
            versions = registry.versions(name)
        except NotFoundError:
            versions = []
        for record in versions:
            if record.format != LORA_FORMAT:
                raise InvalidArgumentError(f"lora_name {name!r} is a registered model of format {record.format}")
            manifest = read_manifest(registry.store, record.digest)
            if manifest.source_sha256 == source and manifest.base_digest == base.digest:
                return record
        max_rank = self.llms.config.max_lora_rank
        return registry.register(name, folder, base=base, max_lora_rank=max_rank, actor=RUNTIME_ACTOR)

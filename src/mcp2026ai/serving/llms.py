"""The language models a server generates with: one engine per model, loaded from the registry."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from mcp2026ai.errors import ContractError, NotFoundError, SignatureError
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.speculative import DEFAULT_DRAFT_TOKENS
from mcp2026ai.inference import ModelDescription
from mcp2026ai.ir.llm_sampling import read_sampling
from mcp2026ai.policy.generation import PROCESS_OVERHEAD_MB, GenerationPlan, chosen_plan, weights_mb
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.registry.signing import read_verified_artifact, verified_llm_folder
from mcp2026ai.runtime.onnx_decoder import PLATFORM
from mcp2026ai.security.trust import TrustedKeys
from mcp2026ai.serving.llm_config import GenerationDefaults, ServingConfig, stored_config

log = logging.getLogger(__name__)


def engine_config(config: EngineConfig, record: ModelVersion, folder: Path) -> EngineConfig:
    """``config``, with the KV pool sized from the contract's memory budget when it sets one (and the
    server was not given ``kv_cache_mb``): budget - weights - process overhead."""
    budget = record.contract.resources.memory_mb if record.contract else None
    if config.kv_cache_mb is not None or budget is None:
        return config
    weights = weights_mb(folder)
    kv_mb = budget - weights - PROCESS_OVERHEAD_MB
    if kv_mb <= 0:
        raise ContractError(
            f"{record.ref}: resources.memory_mb {budget:g} leaves no KV cache: the weights take {weights:.0f} MiB "
            f"and the process about {PROCESS_OVERHEAD_MB:.0f}"
        )
    return config.model_copy(update={"kv_cache_mb": kv_mb})


def contract_config(config: EngineConfig, record: ModelVersion) -> EngineConfig:
    """``config`` with the limits the contract's ``generation`` section states (max_model_len,
    max_num_seqs): the model's promise wins over the server's defaults."""
    spec = record.contract.generation if record.contract else None
    if spec is None:
        return config
    update = {key: value for key in ("max_model_len", "max_num_seqs") if (value := getattr(spec, key)) is not None}
    return config.model_copy(update=update)


def planned_config(config: EngineConfig, plan: GenerationPlan | None) -> EngineConfig:
    """The server's engine settings with a stored generation plan's threads, sequences, speculation and
    prompt chunks."""
    if plan is None:
        return config
    update = {
        "threads": plan.threads,
        "max_num_seqs": plan.max_num_seqs,
        "speculative_tokens": plan.speculative_tokens,
        "prefill_chunk_tokens": plan.prefill_chunk_tokens,
        "max_num_batched_tokens": plan.max_num_batched_tokens,
    }
    return config.model_copy(update=update)


@dataclass(frozen=True)
class ServedLLM:
    record: ModelVersion
    engine: Engine
    loaded_at: float


class GenerationModels:
    """Engines by model name; the edges reach them through the data plane."""

    def __init__(
        self,
        registry: ModelRegistry,
        config: EngineConfig | None = None,
        trusted_keys: TrustedKeys | None = None,
        model_defaults: bool = True,
    ) -> None:
        self.registry = registry
        self.config = config or EngineConfig()
        self.trusted_keys = trusted_keys
        """``--require-signed``: every version an engine opens is verified as it is opened."""
        self.model_defaults = model_defaults
        """``--generation-config auto``: a model's own sampling defaults (ir/llm_sampling.py) apply."""
        self._served: dict[str, ServedLLM] = {}
        self._defaults: dict[str, GenerationDefaults] = {}
        self._own: dict[str, GenerationDefaults] = {}

    def is_language_model(self, name: str) -> bool:
        """Whether ``name``'s default version in the registry is a language model."""
        try:
            return is_llm_format(self.registry.resolve(name).format)
        except NotFoundError:
            return False

    async def load(self, name: str) -> ModelVersion:
        record = self.registry.resolve(name)
        plan, _artifact, folder = await asyncio.to_thread(self.open_planned, record)  # the plan's precision
        config = planned_config(engine_config(contract_config(self.config, record), record, folder), plan)
        engine = await asyncio.to_thread(build_engine, name, folder, config)
        self._served[name] = ServedLLM(record, engine, time.time())
        self._own[name] = GenerationDefaults(**read_sampling(folder)) if self.model_defaults else GenerationDefaults()
        stored = stored_config(self.registry, record)
        if stored is not None:
            self.configure(stored)
        else:
            self._defaults[name] = GenerationDefaults()
        return record

    def open_planned(self, record: ModelVersion) -> tuple[GenerationPlan | None, ModelVersion, Path]:
        """The plan, the import it runs and that import's files, opened through the one verification
        function under --require-signed: ``record`` (its contract and config drive the engine) and the
        plan's import both verify; a plan whose import does not is not used (logged), ``record`` runs."""
        plan, artifact = self.planned_artifact(record)
        if self.trusted_keys is None:
            return plan, artifact, self.registry.llm_folder(artifact)
        if artifact.digest == record.digest and artifact.version == record.version:
            return plan, record, verified_llm_folder(self.registry, record, self.trusted_keys)
        read_verified_artifact(self.registry, record, self.trusted_keys)
        try:
            return plan, artifact, verified_llm_folder(self.registry, artifact, self.trusted_keys)
        except SignatureError as exc:
            log.warning("%s: not running its generation plan's import (%s); running %s", record.ref, exc, record.ref)
            return None, record, verified_llm_folder(self.registry, record, self.trusted_keys)

    def planned_artifact(self, record: ModelVersion) -> tuple[GenerationPlan | None, ModelVersion]:
        """The stored plan and the import it runs (another precision's version of the same source, or
        ``record`` itself); a plan whose import was deleted since is not used."""
        plan = chosen_plan(self.registry, record)
        if plan is None or not plan.version or plan.version == record.version:
            return plan, record
        try:
            return plan, self.registry.resolve(record.name, plan.version)
        except NotFoundError:
            return None, record

    def defaults(self, name: str) -> GenerationDefaults:
        """The model's generation defaults: its stored ``mcp-config.yaml`` (or the latest applied) over
        the model's own sampling defaults (unless ``--generation-config none``)."""
        configured = self._defaults.get(name) or GenerationDefaults()
        own = self._own.get(name)
        return configured.over(own) if own is not None else configured

    def configure(self, config: ServingConfig) -> None:
        """Apply a config's defaults to the served model it names: requests admitted from now on use
        them; running generations keep the parameters they started with."""
        engine = self.get(config.model).engine  # a model not served is refused, never another substituted
        self._defaults[config.model] = config.inference.parameters
        if "strategy" in config.inference.model_fields_set:  # unset: the server's or the plan's choice stays
            speculative = config.inference.strategy == "speculative_decoding"
            engine.speculative_tokens = (self.config.speculative_tokens or DEFAULT_DRAFT_TOKENS) if speculative else 0

    def get(self, name: str) -> ServedLLM:
        served = self._served.get(name)
        if served is None:
            known = ", ".join(sorted(self._served)) or "none"
            raise NotFoundError(f"model {name!r} is not a served language model (served: {known})")
        return served

    def describe(self, name: str) -> ModelDescription:
        """A language model as Triton's metadata and config endpoints show it (text in, text out)."""
        served = self.get(name)
        engine = served.engine
        return ModelDescription(
            name=name,
            versions=(served.record.version,),
            platform=PLATFORM,
            signature=served.record.signature,
            max_batch_size=0,
            plan=f"continuous batching: {engine.slots.num_slots} sequences x {engine.max_len} tokens, "
            f"{engine.info.precision.value}",
            instance_count=engine.slots.num_slots,
        )

    def serves(self, name: str) -> bool:
        return name in self._served

    def names(self) -> list[str]:
        return sorted(self._served)

    async def close(self) -> None:
        served, self._served = list(self._served.values()), {}
        for model in served:
            await asyncio.to_thread(model.engine.close)

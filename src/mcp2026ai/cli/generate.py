"""``mcp generate``: stream a language model's answer to the terminal (no server)."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.cli import context
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.lora_adapter import AdapterWeights
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import LORA_FORMAT, is_llm_format
from mcp2026ai.registry.lora_bundle import DEFAULT_MAX_RANK, checked_adapter


def generate(
    name: Annotated[str, typer.Option(help="Registered language model.")],
    prompt: Annotated[str, typer.Option(help="The user's message (or the raw text to continue with --raw).")],
    version: Annotated[str | None, typer.Option(help="Version; the default version if omitted.")] = None,
    max_tokens: Annotated[int, typer.Option(min=1, help="Most tokens to generate.")] = 256,
    temperature: Annotated[float, typer.Option(min=0.0, max=2.0, help="0: greedy.")] = 0.0,
    top_p: Annotated[float, typer.Option(min=0.0, max=1.0)] = 1.0,
    seed: Annotated[int | None, typer.Option(min=0, help="Reproducible sampling.")] = None,
    stop: Annotated[list[str] | None, typer.Option(help="Stop string; repeatable.")] = None,
    system: Annotated[str | None, typer.Option(help="System message (chat).")] = None,
    raw: Annotated[bool, typer.Option(help="Continue the prompt text as is, without the chat template.")] = False,
) -> None:
    """Generate text with a registered language model, streaming tokens as they come."""
    registry = context.registry()
    record = registry.resolve(name, version)
    if not is_llm_format(record.format):
        raise InvalidArgumentError(f"{record.ref} is not a language model (format {record.format}): use mcp predict")
    params = SamplingParams(
        max_tokens=max_tokens, temperature=temperature, top_p=max(top_p, 1e-6), seed=seed, stop=tuple(stop or ())
    )
    folder, adapter = _model_files(registry, record)
    ids = _prompt_ids(TextTokenizer(folder), prompt, system, raw)
    length = max(len(ids) + max_tokens, 16)  # the KV slot holds exactly this request
    lora = {"max_loras": 1, "max_lora_rank": adapter.rank} if adapter else {}
    engine = build_engine(name, folder, EngineConfig(max_num_seqs=1, max_model_len=length, **lora))
    if adapter is not None:
        engine.load_adapter(record.ref, adapter)
    try:
        asyncio.run(_stream(engine, ids, params, record.ref if adapter else None))
    finally:
        engine.close()


def _model_files(registry: ModelRegistry, record: ModelVersion) -> tuple[Path, AdapterWeights | None]:
    """The folder of the model to run, and a LoRA adapter version's weights (run on its base version)."""
    if record.format != LORA_FORMAT:
        return registry.llm_folder(record), None
    base_name, _, base_version = (record.parent or "").partition(":")
    base = registry.resolve(base_name, base_version or None)
    folder = registry.llm_folder(base)
    return folder, checked_adapter(registry.llm_folder(record), folder, registry.llm_info(base), DEFAULT_MAX_RANK)


def _prompt_ids(tokenizer: TextTokenizer, prompt: str, system: str | None, raw: bool) -> list[int]:
    if raw:
        return tokenizer.encode(prompt)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return tokenizer.encode(tokenizer.apply_chat_template(messages), add_special_tokens=False)


async def _stream(engine: Engine, ids: list[int], params: SamplingParams, adapter: str | None) -> None:
    started = time.perf_counter()
    first: float | None = None
    stream = engine.submit(GenerationRequest(f"cli-{uuid.uuid4().hex[:8]}", ids, params, adapter=adapter))
    reason = None
    async for delta in stream:
        if first is None:
            first = time.perf_counter()
        sys.stdout.write(delta.text)
        sys.stdout.flush()
        reason = delta.finish_reason or reason
    elapsed = time.perf_counter() - started
    usage = stream.usage
    rate = usage.completion_tokens / (elapsed - ((first or started) - started)) if usage.completion_tokens > 1 else 0
    sys.stdout.write("\n")
    sys.stdout.flush()
    print(
        f"[{usage.prompt_tokens} prompt + {usage.completion_tokens} generated tokens, finish {reason}, "
        f"first token {((first or started) - started) * 1000:.0f} ms, {rate:.0f} tok/s]",
        file=sys.stderr,
    )

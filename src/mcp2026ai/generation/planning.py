"""Plans for a language model (what policy/ does for tensor models): measure candidate engine
settings on this machine against the contract's ``generation`` section and pick one, with reasons.

A candidate is a thread count, ``max_num_seqs`` and speculative decoding on or off, for one
registered version (its precision is the version's: int4 or fp32 are separate imports). Each runs a
short bounded workload on the real engine: ``max_num_seqs`` concurrent greedy requests with a prompt
of its own (half of them copy text from their prompt, where speculation can pay); the figures are
TTFT p99, ITL p99 and aggregate output tokens/s. A quantized version's accuracy is measured, never
assumed: its greedy choice at every position of an fp32 version's answers (teacher-forced, the same
prompts) gives the token agreement, and drift = 1 - agreement. Gates come from what the contract
states: ``generation`` figures, ``precision.allowed`` and ``accuracy.max_drift`` when it sets them.
Among the feasible candidates the objective picks: ``latency`` the lowest ITL p99 (then TTFT),
``throughput`` the most tokens/s, ``memory`` the fewest sequences.

Decisions are stored as catalog annotations; the served engine takes the chosen settings.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.errors import NotFoundError
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.speculative import DEFAULT_DRAFT_TOKENS
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import is_llm_format, read_manifest

DECISION_KIND = "generation-decision"
PROMPT_TEXT = (
    "The keeper climbed the stairs at dusk, lit the great lamp, wound the clockwork that turned the lens, and "
    "wrote in the log that the sea was calm, the wind came from the west and the supply boat would come on Thursday."
)
TASKS = (
    f"Copy this text exactly: {PROMPT_TEXT}",
    "Write a short story about a lighthouse in winter.",
)
OUTPUT_TOKENS = 32
AGREEMENT_TOKENS = 48


class GenerationPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    threads: int = Field(description="onnxruntime intra-op threads.")
    max_num_seqs: int
    speculative_tokens: int = 0

    def describe(self) -> str:
        speculative = f", speculative {self.speculative_tokens}" if self.speculative_tokens else ""
        return f"{self.threads} thread(s), {self.max_num_seqs} sequences{speculative}"


class GenerationEvaluation(BaseModel):
    model_config = ConfigDict(frozen=True)

    plan: GenerationPlan
    ttft_p99_ms: float
    itl_p99_ms: float
    tokens_per_s: float
    feasible: bool
    violations: list[str] = Field(default_factory=list)


class GenerationDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    version: str
    time: datetime
    precision: str
    drift: float | None = Field(None, description="1 - greedy token agreement with the fp32 reference.")
    reference: str | None = Field(None, description="The fp32 version the drift was measured against.")
    evaluations: list[GenerationEvaluation]
    chosen: GenerationEvaluation | None
    reason: str
    planning_s: float


def candidates(contract: InferenceContract, cpus: int | None = None) -> list[GenerationPlan]:
    spec = contract.generation
    cpu_count = cpus or os.cpu_count() or 1
    threads = sorted({1, cpu_count})
    seqs = [spec.max_num_seqs] if spec and spec.max_num_seqs else [1, 8]
    plans = [GenerationPlan(threads=t, max_num_seqs=s) for t in threads for s in seqs]
    plans += [GenerationPlan(threads=t, max_num_seqs=1, speculative_tokens=DEFAULT_DRAFT_TOKENS) for t in threads]
    return list(dict.fromkeys(plans))


def chat_ids(engine: Engine, text: str) -> list[int]:
    prompt = engine.tokenizer.apply_chat_template([{"role": "user", "content": text}])
    return list(engine.tokenizer.encode(prompt, add_special_tokens=False))


async def _workload(engine: Engine, concurrency: int) -> tuple[list[float], list[float], float]:
    """TTFT and inter-token gaps (seconds) of ``concurrency`` concurrent greedy requests, and tokens/s."""
    params = SamplingParams(max_tokens=OUTPUT_TOKENS, temperature=0, ignore_eos=True)
    ttfts: list[float] = []
    gaps: list[float] = []

    async def one(index: int) -> int:
        started = time.perf_counter()
        stream = engine.submit(GenerationRequest(f"plan-{index}", chat_ids(engine, TASKS[index % 2]), params))
        last = None
        count = 0
        async for delta in stream:
            now = time.perf_counter()
            for _ in delta.token_ids:
                if last is None:
                    ttfts.append(now - started)
                else:
                    gaps.append(now - last)
                last = now
                count += 1
        return count

    started = time.perf_counter()
    counts = await asyncio.gather(*(one(index) for index in range(concurrency)))
    return ttfts, gaps, sum(counts) / (time.perf_counter() - started)


def measure(folder: Path, plan: GenerationPlan, contract: InferenceContract) -> tuple[float, float, float]:
    """(TTFT p99 ms, ITL p99 ms, tokens/s) of ``plan`` on the converted model in ``folder``."""
    spec = contract.generation
    config = EngineConfig(
        threads=plan.threads,
        max_num_seqs=plan.max_num_seqs,
        max_model_len=spec.max_model_len if spec and spec.max_model_len else 1024,
        speculative_tokens=plan.speculative_tokens,
        prefix_cache_mb=0,  # every candidate prefills the same prompts: a cache would favour the later ones
    )
    engine = build_engine("plan", folder, config)
    try:
        asyncio.run(_workload(engine, 1))  # warm-up
        ttfts, gaps, rate = asyncio.run(_workload(engine, plan.max_num_seqs))
    finally:
        engine.close()
    return _p99_ms(ttfts), _p99_ms(gaps), rate


def _p99_ms(values: Sequence[float]) -> float:
    return float(np.percentile(values, 99) * 1000) if values else 0.0


def token_agreement(candidate: Path, reference: Path, tokens: int = AGREEMENT_TOKENS) -> float:
    """Share of positions where ``candidate`` greedily picks the token ``reference`` generated there,
    both fed the reference's answer (teacher forcing: one divergence does not spoil the rest)."""
    ref = build_engine("reference", reference, EngineConfig(max_num_seqs=1, max_model_len=1024, prefix_cache_mb=0))
    cand = build_engine("candidate", candidate, EngineConfig(max_num_seqs=1, max_model_len=1024, prefix_cache_mb=0))
    try:
        agreed = total = 0
        for text in TASKS:
            prompt = chat_ids(ref, text)
            answer = asyncio.run(_greedy(ref, prompt, tokens))
            logits = cand.decoder.verify(0, [*prompt, *answer[:-1]], len(prompt) + len(answer) - 1)
            picks = np.argmax(logits[-len(answer) :], axis=1)
            agreed += int(np.sum(picks == np.asarray(answer)))
            total += len(answer)
        return agreed / total if total else 0.0
    finally:
        ref.close()
        cand.close()


async def _greedy(engine: Engine, prompt: list[int], tokens: int) -> list[int]:
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    return (await engine.submit(GenerationRequest("ref", prompt, params)).collect(1))[0].token_ids


def violations(contract: InferenceContract, ttft: float, itl: float, rate: float) -> list[str]:
    spec = contract.generation
    found = []
    if spec and spec.ttft_p99_ms is not None and ttft > spec.ttft_p99_ms:
        found.append(f"TTFT p99 {ttft:.0f} ms > {spec.ttft_p99_ms:g}")
    if spec and spec.itl_p99_ms is not None and itl > spec.itl_p99_ms:
        found.append(f"ITL p99 {itl:.1f} ms > {spec.itl_p99_ms:g}")
    if spec and spec.min_tokens_per_s is not None and rate < spec.min_tokens_per_s:
        found.append(f"{rate:.0f} tokens/s < {spec.min_tokens_per_s:g}")
    return found


def version_gates(contract: InferenceContract, precision: str, drift: float | None) -> list[str]:
    """What rules the whole version out: a precision the contract does not allow, unmeasured or too
    high drift (each only when the contract states it)."""
    found = []
    if "precision" in contract.model_fields_set and Precision(precision) not in contract.precision.allowed:
        allowed = ", ".join(p.value for p in contract.precision.allowed)
        found.append(f"precision {precision} is not allowed ({allowed})")
    if "accuracy" in contract.model_fields_set and precision != Precision.FP32.value:
        if drift is None:
            found.append("drift not measured: register an fp32 version of the same source (--precision fp32)")
        elif drift > contract.accuracy.max_drift:
            found.append(f"drift {drift:.3f} > {contract.accuracy.max_drift:g} (token agreement {1 - drift:.1%})")
    return found


def choose(evaluations: list[GenerationEvaluation], objective: str) -> GenerationEvaluation | None:
    feasible = [e for e in evaluations if e.feasible]
    if not feasible:
        return None
    if objective == "throughput":
        return max(feasible, key=lambda e: (e.tokens_per_s, -e.itl_p99_ms))
    if objective == "memory":
        return min(feasible, key=lambda e: (e.plan.max_num_seqs, e.itl_p99_ms))
    return min(feasible, key=lambda e: (e.itl_p99_ms, e.ttft_p99_ms))


def fp32_reference(registry: ModelRegistry, record: ModelVersion) -> ModelVersion | None:
    """An fp32 version of the same model converted from the same source file, if one is registered."""
    source = read_manifest(registry.store, record.digest).source_sha256
    for other in registry.versions(record.name):
        if other.version != record.version and is_llm_format(other.format):
            manifest = read_manifest(registry.store, other.digest)
            if manifest.info.precision.value == Precision.FP32.value and manifest.source_sha256 == source:
                return other
    return None


def plan_generation(registry: ModelRegistry, record: ModelVersion) -> GenerationDecision:
    """Measure every candidate for ``record``, choose, store the decision."""
    started = time.perf_counter()
    contract = record.contract or InferenceContract()
    folder = registry.llm_folder(record)
    precision = registry.llm_info(record).precision.value
    reference = fp32_reference(registry, record) if precision != Precision.FP32.value else None
    drift = None
    if reference is not None:
        drift = 1.0 - token_agreement(folder, registry.llm_folder(reference))
    gates = version_gates(contract, precision, drift)
    evaluations = []
    for plan in candidates(contract):
        ttft, itl, rate = measure(folder, plan, contract)
        problems = gates + violations(contract, ttft, itl, rate)
        evaluations.append(
            GenerationEvaluation(
                plan=plan,
                ttft_p99_ms=ttft,
                itl_p99_ms=itl,
                tokens_per_s=rate,
                feasible=not problems,
                violations=problems,
            )
        )
    chosen = choose(evaluations, contract.objective)
    reason = (
        f"{chosen.plan.describe()}: best {contract.objective} among {sum(e.feasible for e in evaluations)} "
        f"feasible of {len(evaluations)}"
        if chosen
        else "no candidate meets the contract: " + "; ".join(sorted({v for e in evaluations for v in e.violations}))
    )
    decision = GenerationDecision(
        model=record.name,
        version=record.version,
        time=datetime.now(UTC),
        precision=precision,
        drift=drift,
        reference=reference.ref if reference else None,
        evaluations=evaluations,
        chosen=chosen,
        reason=reason,
        planning_s=time.perf_counter() - started,
    )
    registry.catalog.annotate(
        record.name, record.version, DECISION_KIND, decision.model_dump(mode="json"), decision.time
    )
    return decision


def decisions(registry: ModelRegistry, name: str, version: str | None = None) -> list[GenerationDecision]:
    rows = registry.catalog.annotations(name, DECISION_KIND, version)
    return [GenerationDecision.model_validate(payload) for _version, _at, payload in rows]


def chosen_plan(registry: ModelRegistry, record: ModelVersion) -> GenerationPlan | None:
    """The plan of the latest decision for ``record`` that found one."""
    for decision in reversed(decisions(registry, record.name, record.version)):
        if decision.chosen is not None:
            return decision.chosen.plan
    return None


def last_decision(registry: ModelRegistry, record: ModelVersion) -> GenerationDecision:
    found = decisions(registry, record.name, record.version)
    if not found:
        raise NotFoundError(f"{record.ref} has no generation plan; run `mcp policy plan --model {record.name}`")
    return found[-1]

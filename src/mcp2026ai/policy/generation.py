"""Plans for a language model (what policy/ does for tensor models): measure candidate engine
settings on this machine against the contract's ``generation`` section and pick one, with reasons.

A candidate is a precision, a thread count, ``max_num_seqs`` and speculative decoding on or off. The
precisions are the model's registered imports of the same source file (``mcp model register
--precision fp32|int8|int4``, one version each): a plan names the version whose artifact it runs,
and the server loads that one. Each candidate runs a short bounded workload on the real engine:
``max_num_seqs`` concurrent greedy requests with a prompt of its own (half of them copy text from
their prompt, where speculation can pay); the figures are TTFT p99, ITL p99, aggregate output
tokens/s and the memory the plan reserves (weights + KV pool). A quantized import's accuracy is
measured, never assumed: its greedy choice at every position of the fp32 import's answers
(teacher-forced, the same prompts) gives the token agreement, and drift = 1 - agreement. Gates come
from what the contract states: ``generation`` figures, ``precision.allowed``, ``accuracy.max_drift``
and ``resources.memory_mb`` when it sets them; an import the gates rule out is listed with the
reason and not timed. Among the feasible candidates the objective picks: ``latency`` the lowest ITL
p99 (then TTFT), ``throughput`` the most tokens/s, ``memory`` the least memory.

Decisions are stored as catalog annotations; the served engine takes the chosen settings and artifact.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.errors import NotFoundError, OverloadedError
from mcp2026ai.generation.config import DEFAULT_CHUNK_TOKENS, EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.prefill import CHUNK_ALIGN
from mcp2026ai.generation.speculative import DEFAULT_DRAFT_TOKENS
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage
from mcp2026ai.registry.llm_bundle import is_llm_format, read_manifest
from mcp2026ai.runtime.cpu_affinity import usable_cores

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
PREFILL_RUNS = 3
CHUNK_PROBE_TOKENS = 128
CHUNK_TARGET_MS = 40.0
"""Longest prompt chunk run (hence longest extra wait of a running stream) when the contract sets no ITL."""
MAX_CHUNK_TOKENS = 512
PROCESS_OVERHEAD_MB = 200.0
"""What a memory budget keeps for the process itself and onnxruntime's buffers besides weights and KV."""


class MeasurementBudget(BaseModel):
    """How long each candidate is measured (``mcp policy plan --generation-tokens/--prefill-runs``): fewer
    tokens and runs plan sooner, with figures over fewer inter-token gaps and prompt runs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output_tokens: int = Field(OUTPUT_TOKENS, ge=4, le=256, description="Greedy tokens per request of the burst.")
    prefill_runs: int = Field(PREFILL_RUNS, ge=1, le=10, description="Timed prompt runs; the best sets the rate.")


class GenerationPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    threads: int = Field(description="onnxruntime intra-op threads.")
    max_num_seqs: int
    speculative_tokens: int = 0
    prefill_chunk_tokens: int = Field(
        DEFAULT_CHUNK_TOKENS, description="Longest prompt piece per run (sized from the measured prefill rate)."
    )
    max_num_batched_tokens: int | None = Field(
        None, description="Token budget of one step (decode rows + prompt chunks); None: the engine's default."
    )
    version: str = Field("", description="The registered version whose artifact runs; empty: the planned one.")
    precision: str = Field("", description="That artifact's weight precision (fp32, int8, int4).")

    def settings(self) -> str:
        speculative = f", speculative {self.speculative_tokens}" if self.speculative_tokens else ""
        chunk = f", prompt chunks of {self.prefill_chunk_tokens}" if self.max_num_seqs > 1 else ""
        return f"{self.threads} thread(s), {self.max_num_seqs} sequences{speculative}{chunk}"

    def describe(self) -> str:
        artifact = f"{self.precision}@{self.version}, " if self.version else ""
        return artifact + self.settings()


class Measured(BaseModel):
    """A plan's figures on this machine."""

    model_config = ConfigDict(frozen=True)

    ttft_p99_ms: float
    itl_p99_ms: float
    tokens_per_s: float
    memory_mb: float
    prefill_tokens_per_s: float = 0.0
    """One prompt run of ``CHUNK_PROBE_TOKENS`` on the plan's engine (sizes its prompt chunks)."""
    refused: int = 0
    """Requests of the measured burst the contract's TTFT budget refused (429), as the server would."""


class GenerationEvaluation(BaseModel):
    model_config = ConfigDict(frozen=True)

    plan: GenerationPlan
    ttft_p99_ms: float
    itl_p99_ms: float
    tokens_per_s: float
    memory_mb: float | None = Field(None, description="What the plan reserves: weights + KV pool, MiB.")
    prefill_tokens_per_s: float = 0.0
    refused: int = Field(0, description="Requests of the measured burst refused by the TTFT budget (429).")
    feasible: bool
    violations: list[str] = Field(default_factory=list)

    def measured(self) -> Measured:
        memory = self.memory_mb if self.memory_mb is not None else 0.0
        return Measured(
            ttft_p99_ms=self.ttft_p99_ms,
            itl_p99_ms=self.itl_p99_ms,
            tokens_per_s=self.tokens_per_s,
            memory_mb=memory,
            prefill_tokens_per_s=self.prefill_tokens_per_s,
            refused=self.refused,
        )


class PrecisionVariant(BaseModel):
    """One registered import of the model's source: its precision, measured agreement, and what rules it out."""

    model_config = ConfigDict(frozen=True)

    version: str
    precision: str
    weights_mb: float
    agreement: float | None = Field(None, description="Greedy token agreement with the fp32 import (1 for it).")
    rejected: list[str] = Field(default_factory=list, description="Gates it fails; empty: its plans were timed.")

    @property
    def drift(self) -> float | None:
        return None if self.agreement is None else 1.0 - self.agreement


class GenerationDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    version: str
    time: datetime
    precision: str
    drift: float | None = Field(None, description="1 - greedy token agreement with the fp32 reference.")
    reference: str | None = Field(None, description="The fp32 version the drift was measured against.")
    variants: list[PrecisionVariant] = Field(default_factory=list, description="Every import considered.")
    evaluations: list[GenerationEvaluation]
    chosen: GenerationEvaluation | None
    reason: str
    planning_s: float
    trigger: str = Field("manual", description="manual (`mcp policy plan`) or serve (planned as `mcp serve` started).")


def candidates(contract: InferenceContract, cpus: int | None = None) -> list[GenerationPlan]:
    """Engine settings to time for one artifact: 1 and all cores, the contract's max_num_seqs (else 1
    and 8), and speculation on for a lone sequence."""
    spec = contract.generation
    threads = sorted({1, cpus or usable_cores()})
    seqs = [spec.max_num_seqs] if spec and spec.max_num_seqs else [1, 8]
    plans = [GenerationPlan(threads=t, max_num_seqs=s) for t in threads for s in seqs]
    plans += [GenerationPlan(threads=t, max_num_seqs=1, speculative_tokens=DEFAULT_DRAFT_TOKENS) for t in threads]
    return list(dict.fromkeys(plans))


def chat_ids(engine: Engine, text: str) -> list[int]:
    """One user turn's prompt ids."""
    return engine.tokenizer.chat_ids([{"role": "user", "content": text}])


async def _workload(
    engine: Engine, concurrency: int, budget: float | None = None, tokens: int = OUTPUT_TOKENS
) -> tuple[list[float], list[float], float, int]:
    """TTFT and inter-token gaps (seconds) of ``concurrency`` concurrent greedy requests of ``tokens``
    each, tokens/s, and how many the TTFT budget refused (429, as the server would: the TTFT counts the
    others only)."""
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    ttfts: list[float] = []
    gaps: list[float] = []
    refused = 0

    async def one(index: int) -> int:
        nonlocal refused
        started = time.perf_counter()
        request = GenerationRequest(f"plan-{index}", chat_ids(engine, TASKS[index % 2]), params, ttft_budget_s=budget)
        last = None
        count = 0
        try:
            async for delta in engine.submit(request):
                now = time.perf_counter()
                for _ in delta.token_ids:
                    if last is None:
                        ttfts.append(now - started)
                    else:
                        gaps.append(now - last)
                    last = now
                    count += 1
        except OverloadedError:  # refused at once, or expired in the queue: before its first token
            refused += 1
        return count

    started = time.perf_counter()
    counts = await asyncio.gather(*(one(index) for index in range(concurrency)))
    return ttfts, gaps, sum(counts) / (time.perf_counter() - started), refused


def weights_mb(folder: Path) -> float:
    """The decoder's weights on disk (``.onnx`` and external ``.data`` files), MiB."""
    return sum(f.stat().st_size for f in folder.iterdir() if f.suffix in (".onnx", ".data")) / (1 << 20)


def measure(
    folder: Path, plan: GenerationPlan, contract: InferenceContract, measurement: MeasurementBudget | None = None
) -> Measured:
    """The figures of ``plan`` on the converted model in ``folder``."""
    measurement = measurement or MeasurementBudget()
    spec = contract.generation
    config = EngineConfig(
        threads=plan.threads,
        max_num_seqs=plan.max_num_seqs,
        max_model_len=spec.max_model_len if spec and spec.max_model_len else 1024,
        kv_cache_mb=kv_budget_mb(contract, weights_mb(folder)),
        speculative_tokens=plan.speculative_tokens,
        prefix_cache_mb=0,  # every candidate prefills the same prompts: a cache would favour the later ones
    )
    engine = build_engine("plan", folder, config)
    try:
        tokens = measurement.output_tokens
        asyncio.run(_workload(engine, 1, tokens=tokens))  # warm-up
        budget = spec.ttft_p99_ms / 1000 if spec and spec.ttft_p99_ms else None
        ttfts, gaps, rate, refused = asyncio.run(_workload(engine, plan.max_num_seqs, budget, tokens))
        prefill_rate = _prefill_rate(engine, measurement.prefill_runs)
        kv_mb = engine.blocks.num_blocks * engine.blocks.block_size * engine.decoder.bytes_per_token / (1 << 20)
    finally:
        engine.close()
    memory = weights_mb(folder) + kv_mb
    return Measured(
        ttft_p99_ms=_p99_ms(ttfts),
        itl_p99_ms=_p99_ms(gaps),
        tokens_per_s=rate,
        memory_mb=memory,
        prefill_tokens_per_s=prefill_rate,
        refused=refused,
    )


def _prefill_rate(engine: Engine, runs: int = PREFILL_RUNS) -> float:
    """Prompt tokens/s of one ``CHUNK_PROBE_TOKENS`` run into the idle engine's first slot (best of ``runs``)."""
    ids = chat_ids(engine, TASKS[1] * 8)[:CHUNK_PROBE_TOKENS]
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        engine.decoder.prefill(0, ids)
        best = min(best, time.perf_counter() - started)
    return len(ids) / best


def sized_chunks(plan: GenerationPlan, contract: InferenceContract, figures: Measured) -> GenerationPlan:
    """``plan`` with prompt chunks that run in at most half the contract's ITL p99 (else
    ``CHUNK_TARGET_MS``) at the measured prefill rate, a multiple of 16 in [16, 512], and a step budget of
    one chunk beside every sequence: a prompt arriving while others decode delays their next token by
    at most that."""
    spec = contract.generation
    target_ms = spec.itl_p99_ms / 2 if spec and spec.itl_p99_ms else CHUNK_TARGET_MS
    if figures.prefill_tokens_per_s <= 0:
        return plan
    chunk = int(figures.prefill_tokens_per_s * target_ms / 1000) // CHUNK_ALIGN * CHUNK_ALIGN
    chunk = min(max(chunk, CHUNK_ALIGN), MAX_CHUNK_TOKENS)
    return plan.model_copy(update={"prefill_chunk_tokens": chunk, "max_num_batched_tokens": plan.max_num_seqs + chunk})


def _p99_ms(values: Sequence[float]) -> float:
    return float(np.percentile(values, 99) * 1000) if values else 0.0


AGREEMENT_CONFIG = EngineConfig(max_num_seqs=1, max_model_len=1024, prefix_cache_mb=0)


def reference_answers(reference: Path, tokens: int = AGREEMENT_TOKENS) -> list[tuple[list[int], list[int]]]:
    """``reference``'s greedy answer (``tokens``) to each task: (prompt ids, answer ids)."""
    ref = build_engine("reference", reference, AGREEMENT_CONFIG)
    try:
        prompts = [chat_ids(ref, text) for text in TASKS]
        return [(prompt, asyncio.run(_greedy(ref, prompt, tokens))) for prompt in prompts]
    finally:
        ref.close()


def agreement_with(candidate: Path, answers: Sequence[tuple[list[int], list[int]]]) -> float:
    """Share of positions where ``candidate`` greedily picks the reference's token there, fed the
    reference's answers (teacher forcing: one divergence does not spoil the rest)."""
    cand = build_engine("candidate", candidate, AGREEMENT_CONFIG)
    try:
        agreed = total = 0
        for prompt, answer in answers:
            logits = cand.decoder.verify(0, [*prompt, *answer[:-1]], len(prompt) + len(answer) - 1)
            picks = np.argmax(logits[-len(answer) :], axis=1)
            agreed += int(np.sum(picks == np.asarray(answer)))
            total += len(answer)
        return agreed / total if total else 0.0
    finally:
        cand.close()


def token_agreement(candidate: Path, reference: Path, tokens: int = AGREEMENT_TOKENS) -> float:
    """Share of positions where ``candidate`` greedily picks the token ``reference`` generated there,
    both fed the reference's answer."""
    return agreement_with(candidate, reference_answers(reference, tokens))


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


def kv_budget_mb(contract: InferenceContract, weights: float) -> float | None:
    """The KV pool a memory budget leaves (budget - weights - process overhead), as the server sizes
    it; None without a budget (the engine's default: max_num_seqs x max_model_len tokens)."""
    budget = contract.resources.memory_mb
    return None if budget is None else budget - weights - PROCESS_OVERHEAD_MB


def version_gates(
    contract: InferenceContract, precision: str, drift: float | None, weights: float | None = None
) -> list[str]:
    """What rules a whole import out: a precision the contract does not allow, unmeasured or too high
    drift, weights that leave no KV cache in the memory budget (each only when the contract states it)."""
    found = []
    if "precision" in contract.model_fields_set and Precision(precision) not in contract.precision.allowed:
        allowed = ", ".join(p.value for p in contract.precision.allowed)
        found.append(f"precision {precision} is not allowed ({allowed})")
    if "accuracy" in contract.model_fields_set and precision != Precision.FP32.value:
        if drift is None:
            found.append("drift not measured: register an fp32 version of the same source (--precision fp32)")
        elif drift > contract.accuracy.max_drift:
            found.append(f"drift {drift:.3f} > {contract.accuracy.max_drift:g} (token agreement {1 - drift:.1%})")
    kv = None if weights is None else kv_budget_mb(contract, weights)
    if weights is not None and kv is not None and kv <= 0:
        found.append(
            f"weights {weights:.0f} MiB + process {PROCESS_OVERHEAD_MB:.0f} MiB leave no KV cache in "
            f"resources.memory_mb {contract.resources.memory_mb:g}"
        )
    return found


def choose(evaluations: list[GenerationEvaluation], objective: str) -> GenerationEvaluation | None:
    feasible = [e for e in evaluations if e.feasible]
    if not feasible:
        return None
    if objective == "throughput":
        return max(feasible, key=lambda e: (e.tokens_per_s, -e.itl_p99_ms))
    if objective == "memory":
        return min(feasible, key=lambda e: (e.memory_mb or 0.0, e.plan.max_num_seqs, e.itl_p99_ms))
    return min(feasible, key=lambda e: (e.itl_p99_ms, e.ttft_p99_ms))


def imports(registry: ModelRegistry, record: ModelVersion) -> list[ModelVersion]:
    """``record`` and the model's other registered imports of the same source file, one per artifact
    (versions sharing a digest are one import: the planned version stands for its own; archived
    versions are not candidates)."""
    source = read_manifest(registry.store, record.digest).source_sha256
    found = {record.digest: record}
    for other in registry.versions(record.name):
        live = other.stage != Stage.ARCHIVED and is_llm_format(other.format)
        same_source = live and other.digest not in found
        if same_source and read_manifest(registry.store, other.digest).source_sha256 == source:
            found[other.digest] = other
    return list(found.values())


def fp32_reference(registry: ModelRegistry, record: ModelVersion) -> ModelVersion | None:
    """An fp32 import of the same model and source file, if one is registered."""
    return next((v for v in imports(registry, record) if _precision(registry, v) == Precision.FP32.value), None)


def _precision(registry: ModelRegistry, record: ModelVersion) -> str:
    return registry.llm_info(record).precision.value


def assess(registry: ModelRegistry, record: ModelVersion, contract: InferenceContract) -> list[PrecisionVariant]:
    """Every import of ``record``'s source, its agreement with the fp32 import measured (unless the
    contract rules its precision out anyway) and the gates it fails. The fp32 import's answers are
    generated once for all the quantized imports."""
    reference = fp32_reference(registry, record)
    answers: list[tuple[list[int], list[int]]] | None = None
    variants = []
    for version in imports(registry, record):
        precision, folder = _precision(registry, version), registry.llm_folder(version)
        weights = weights_mb(folder)
        agreement: float | None = None
        if precision == Precision.FP32.value:
            agreement = 1.0
        elif reference is not None and not version_gates(contract, precision, 0.0):
            answers = answers or reference_answers(registry.llm_folder(reference))
            agreement = agreement_with(folder, answers)
        drift = None if agreement is None else 1.0 - agreement
        variants.append(
            PrecisionVariant(
                version=version.version,
                precision=precision,
                weights_mb=weights,
                agreement=agreement,
                rejected=version_gates(contract, precision, drift, weights),
            )
        )
    return variants


def evaluate(contract: InferenceContract, plan: GenerationPlan, figures: Measured) -> GenerationEvaluation:
    """A measured plan against the contract's generation figures."""
    problems = violations(contract, figures.ttft_p99_ms, figures.itl_p99_ms, figures.tokens_per_s)
    return GenerationEvaluation(plan=plan, **figures.model_dump(), feasible=not problems, violations=problems)


def judge(contract: InferenceContract, decision: GenerationDecision) -> GenerationDecision:
    """``decision``'s measurements judged under ``contract`` (pure: no timing, no agreement measured
    again): which imports it rules out, which plans it allows, which one its objective takes."""
    variants = [
        v.model_copy(update={"rejected": version_gates(contract, v.precision, v.drift, v.weights_mb)})
        for v in decision.variants
    ]
    timed = {v.version for v in variants if not v.rejected}
    evaluations = [evaluate(contract, e.plan, e.measured()) for e in decision.evaluations if e.plan.version in timed]
    chosen = choose(evaluations, contract.objective)
    update = {"variants": variants, "evaluations": evaluations, "chosen": chosen}
    return decision.model_copy(update=update | {"reason": _reason(chosen, evaluations, variants, contract.objective)})


def _reason(
    chosen: GenerationEvaluation | None,
    evaluations: list[GenerationEvaluation],
    variants: list[PrecisionVariant],
    objective: str,
) -> str:
    if chosen is not None:
        feasible = sum(e.feasible for e in evaluations)
        return f"best {objective} among {feasible} feasible of {len(evaluations)}"
    misses = {v for e in evaluations for v in e.violations} | {
        f"{v.precision}@{v.version}: {r}" for v in variants for r in v.rejected
    }
    return "no candidate meets the contract: " + "; ".join(sorted(misses))


def plan_generation(
    registry: ModelRegistry,
    record: ModelVersion,
    trigger: str = "manual",
    measurement: MeasurementBudget | None = None,
) -> GenerationDecision:
    """Measure every candidate of every admissible import of ``record``'s source, choose, store the decision."""
    started = time.perf_counter()
    contract = record.contract or InferenceContract()
    variants = assess(registry, record, contract)
    evaluations = []
    for variant in variants:
        if variant.rejected:
            continue
        folder = registry.llm_folder(registry.resolve(record.name, variant.version))
        for settings in candidates(contract):
            plan = settings.model_copy(update={"version": variant.version, "precision": variant.precision})
            figures = measure(folder, plan, contract, measurement)
            evaluations.append(evaluate(contract, sized_chunks(plan, contract, figures), figures))
    chosen = choose(evaluations, contract.objective)
    planned = variants[0]  # imports() lists the planned version first
    reference = fp32_reference(registry, record)
    decision = GenerationDecision(
        model=record.name,
        version=record.version,
        time=datetime.now(UTC),
        precision=planned.precision,
        drift=planned.drift if planned.precision != Precision.FP32.value else None,
        reference=reference.ref if reference is not None and planned.precision != Precision.FP32.value else None,
        variants=variants,
        evaluations=evaluations,
        chosen=chosen,
        reason=_reason(chosen, evaluations, variants, contract.objective),
        planning_s=time.perf_counter() - started,
        trigger=trigger,
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


def ensure_generation_plan(registry: ModelRegistry, record: ModelVersion) -> tuple[GenerationDecision | None, bool]:
    """The decision the server runs ``record`` with, and whether it was measured just now: None for a
    model whose contract has no ``generation`` section (the engine's settings stand); the latest
    decision that found a plan; else one measured now (trigger ``serve``)."""
    if record.contract is None or record.contract.generation is None:
        return None, False
    for decision in reversed(decisions(registry, record.name, record.version)):
        if decision.chosen is not None:
            return decision, False
    return plan_generation(registry, record, trigger="serve"), True

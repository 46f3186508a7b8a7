"""Precision as a plan dimension: a language model's registered imports of one source file (fp32,
int8, int4) are each gated on their measured token agreement with the fp32 import and timed; the
contract picks the version/precision, and the server loads that import.

Measured on a one-core affinity (candidates: plain and speculative decoding, 1 thread) and a small
measurement budget (``QUICK``: 8 tokens per request instead of 32, one timed prompt run instead of 3;
the agreement keeps its 48 tokens) to keep each test bounded; the figures are re-judged under other
contracts by the pure ``judge``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mcp2026ai.contract import parse_contract
from mcp2026ai.policy.generation import (
    GenerationDecision,
    MeasurementBudget,
    PrecisionVariant,
    chosen_plan,
    judge,
    last_decision,
    plan_generation,
    version_gates,
)
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.serving.llms import GenerationModels
from tests.support.cli import run_main
from tests.support.llm import register_smollm2

pytestmark = pytest.mark.timeout(300)
SETTINGS = "generation: {max_num_seqs: 1, max_model_len: 256}\n"
QUICK = MeasurementBudget(output_tokens=8, prefill_runs=1)
QUICK_FLAGS = ["--generation-tokens", "8", "--prefill-runs", "1"]


def register_imports(
    home: Path, gguf: Path, contract: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> ModelRegistry:
    """smollm2 1.0.0 int4, 1.1.0 fp32, 1.2.0 int8 and 2.0.0 (the int4 import again, the default
    version) with ``contract``, in the CLI's registry at ``home``."""
    registry = register_smollm2(home, gguf)
    for args in (
        ["--version", "1.1.0", "--precision", "fp32"],
        ["--version", "1.2.0", "--precision", "int8"],
        ["--version", "2.0.0", "--contract", str(contract)],
    ):
        done = run_main(["model", "register", "--name", "smollm2", "--path", str(gguf), *args], capsys, monkeypatch)
        assert done.code == 0, done.err
    return registry


def variant(decision: GenerationDecision, precision: str) -> PrecisionVariant:
    return next(v for v in decision.variants if v.precision == precision)


def best_rate(decision: GenerationDecision, precisions: set[str]) -> float:
    return max(e.tokens_per_s for e in decision.evaluations if e.plan.precision in precisions)


def test_gates_of_a_whole_import() -> None:
    budget = parse_contract({"resources": {"memory_mb": 600}})
    assert version_gates(budget, "int4", None, weights=86) == []
    assert version_gates(budget, "fp32", None, weights=519) == [
        "weights 519 MiB + process 200 MiB leave no KV cache in resources.memory_mb 600"
    ]


def test_the_contract_picks_the_precision_from_measured_figures(
    tmp_path: Path,
    smollm2_gguf: Path,
    smollm2_int4: Path,
    smollm2_int8: Path,
    smollm2_fp32: Path,
    llm_cache: Path,
    mcp_home: Path,
    one_core: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    contract = tmp_path / "contract.yaml"
    contract.write_text("objective: latency\nprecision: {allowed: [fp32, int8, int4]}\n" + SETTINGS)
    registry = register_imports(mcp_home, smollm2_gguf, contract, capsys, monkeypatch)
    planned = run_main(["policy", "plan", "--model", "smollm2", *QUICK_FLAGS], capsys, monkeypatch)
    assert planned.code == 0, planned.err
    decision = last_decision(registry, registry.resolve("smollm2"))
    assert {(v.version, v.precision) for v in decision.variants} == {
        ("2.0.0", "int4"),
        ("1.1.0", "fp32"),
        ("1.2.0", "int8"),
    }
    int4, int8 = variant(decision, "int4"), variant(decision, "int8")
    assert int4.agreement is not None and int8.agreement is not None
    assert int8.agreement >= 0.9, f"int8 offered as correct, but agrees at {int8.agreement:.1%}"
    assert {e.plan.precision for e in decision.evaluations} == {"fp32", "int8", "int4"}
    assert all(e.plan.threads == 1 for e in decision.evaluations)
    assert "1.2.0" in planned.out and f"{int8.agreement:.1%}" in planned.out

    only_fp32 = judge(parse_contract({"precision": {"allowed": ["fp32"]}}), decision)
    assert only_fp32.chosen is not None and only_fp32.chosen.plan.precision == "fp32"
    assert variant(only_fp32, "int4").rejected == ["precision int4 is not allowed (fp32)"]

    tight = min(int4.drift or 1.0, int8.drift or 1.0) / 2
    strict = judge(parse_contract({"accuracy": {"max_drift": tight}}), decision)
    assert strict.chosen is not None and strict.chosen.plan.precision == "fp32"
    assert variant(strict, "int4").rejected[0].startswith(f"drift {int4.drift:.3f} > {tight:g}")

    # Which is faster on one core is the host's: the quantized imports on AVX-512/AMX hosts, fp32 on the AVX2
    # hosts measured so far (int4 30 vs fp32 36 tok/s, on 39d6862 too). A speed floor between the two picks
    # the faster kind and rules the other out, on either.
    fp32_best, quantized_best = best_rate(decision, {"fp32"}), best_rate(decision, {"int4", "int8"})
    assert quantized_best != fp32_best
    faster = {"int4", "int8"} if quantized_best > fp32_best else {"fp32"}
    floor = (fp32_best + quantized_best) / 2
    fast = judge(parse_contract({"generation": {"min_tokens_per_s": floor}}), decision)
    assert fast.chosen is not None and fast.chosen.plan.precision in faster
    assert all(not e.feasible for e in fast.evaluations if e.plan.precision not in faster)
    gated = judge(parse_contract({"generation": {"min_tokens_per_s": floor}, "accuracy": {"max_drift": 0.1}}), decision)
    for quantized in (int4, int8):  # a drift above the gate rules the import out, whatever its speed
        assert bool(variant(gated, quantized.precision).rejected) == ((quantized.drift or 0.0) > 0.1)
    if gated.chosen is not None:
        assert (variant(gated, gated.chosen.plan.precision).drift or 0.0) <= 0.1
        assert gated.chosen.tokens_per_s >= floor

    traced = run_main(["policy", "trace", "--model", "smollm2", "--last", "1h", "--json"], capsys, monkeypatch)
    assert [d["trigger"] for d in json.loads(traced.out)] == ["manual"]
    summary = run_main(["policy", "trace", "--model", "smollm2"], capsys, monkeypatch)
    assert summary.code == 0 and "generation plan decisions for smollm2" in " ".join(summary.out.split())

    explained = run_main(["policy", "explain", "--model", "smollm2"], capsys, monkeypatch)
    assert explained.code == 0, explained.err
    assert "Pareto front of 6 measured plans" in " ".join(explained.out.split())
    front = json.loads(run_main(["policy", "explain", "--model", "smollm2", "--json"], capsys, monkeypatch).out)[
        "pareto"
    ]
    taken = [point for point in front if point["chosen"]]
    assert len(taken) == 1 and taken[0]["why"] == "taken: best latency among the feasible plans"
    assert decision.chosen is not None and taken[0]["plan"] == decision.chosen.plan.model_dump(mode="json")
    for point in front:  # nothing measured is better on every axis than a point of the front
        mine = (point["ttft_p99_ms"], point["itl_p99_ms"], -point["tokens_per_s"], point["memory_mb"])
        for other in decision.evaluations:
            theirs = (other.ttft_p99_ms, other.itl_p99_ms, -other.tokens_per_s, other.memory_mb or 0.0)
            assert not (all(t <= m for t, m in zip(theirs, mine, strict=True)) and theirs != mine)


def test_the_server_loads_the_chosen_precision(
    tmp_path: Path,
    smollm2_gguf: Path,
    smollm2_int4: Path,
    smollm2_int8: Path,
    smollm2_fp32: Path,
    llm_cache: Path,
    mcp_home: Path,
    one_core: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    contract = tmp_path / "contract.yaml"
    contract.write_text("precision: {allowed: [fp32]}\n" + SETTINGS)
    registry = register_imports(mcp_home, smollm2_gguf, contract, capsys, monkeypatch)
    record = registry.resolve("smollm2")
    assert (record.version, registry.llm_info(record).precision.value) == ("2.0.0", "int4")
    registry.promote("smollm2", "1.2.0", Stage.ARCHIVED)  # an archived import is no candidate
    decision = plan_generation(registry, record, measurement=QUICK)
    assert [v.precision for v in decision.variants] == ["int4", "fp32"]
    assert [v.precision for v in decision.variants if not v.rejected] == ["fp32"]
    assert all(v.agreement is None for v in decision.variants if v.rejected)  # ruled out: not measured
    plan = chosen_plan(registry, record)
    assert plan is not None and (plan.version, plan.precision) == ("1.1.0", "fp32")

    async def served_precision() -> tuple[str, str]:
        models = GenerationModels(registry)
        try:
            loaded = await models.load("smollm2")
            return loaded.version, models.get("smollm2").engine.info.precision.value
        finally:
            await models.close()

    assert asyncio.run(served_precision()) == ("2.0.0", "fp32")

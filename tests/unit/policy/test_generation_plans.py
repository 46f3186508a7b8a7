"""Generation plans: candidates, gates from what the contract states, choice by objective; and a
real plan of SmolLM2 (int4 against an fp32 reference) stored, shown and used when serving."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.contract import parse_contract
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir import Signature
from mcp2026ai.policy.generation import (
    OUTPUT_TOKENS,
    PREFILL_RUNS,
    GenerationEvaluation,
    GenerationPlan,
    Measured,
    MeasurementBudget,
    candidates,
    choose,
    chosen_plan,
    sized_chunks,
    version_gates,
    violations,
)
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage
from mcp2026ai.serving.llms import contract_config, planned_config
from tests.support.cli import run_main
from tests.support.llm import LLM_CACHE, register_smollm2

pytestmark = pytest.mark.timeout(300)


def evaluation(threads: int, seqs: int, ttft: float, itl: float, rate: float, ok: bool = True) -> GenerationEvaluation:
    plan = GenerationPlan(threads=threads, max_num_seqs=seqs)
    return GenerationEvaluation(plan=plan, ttft_p99_ms=ttft, itl_p99_ms=itl, tokens_per_s=rate, feasible=ok)


def test_candidates_follow_the_contract() -> None:
    plans = candidates(parse_contract({}), cpus=2)
    assert {(p.threads, p.max_num_seqs, p.speculative_tokens) for p in plans} == {
        (1, 1, 0),
        (1, 8, 0),
        (2, 1, 0),
        (2, 8, 0),
        (1, 1, 4),
        (2, 1, 4),
    }
    fixed = candidates(parse_contract({"generation": {"max_num_seqs": 4}}), cpus=1)
    assert {p.max_num_seqs for p in fixed} == {4, 1} and {p.threads for p in fixed} == {1}


def test_gates_come_from_what_the_contract_states() -> None:
    loose = parse_contract({})
    assert version_gates(loose, "int4", None) == []  # nothing stated: nothing assumed either way
    strict = parse_contract({"accuracy": {"max_drift": 0.1}, "precision": {"allowed": ["fp32"]}})
    gates = version_gates(strict, "int4", None)
    assert "precision int4 is not allowed (fp32)" in gates
    assert any("drift not measured" in gate for gate in gates)
    allowed = parse_contract({"accuracy": {"max_drift": 0.1}, "precision": {"allowed": ["int4", "fp32"]}})
    assert version_gates(allowed, "int4", 0.05) == []
    assert version_gates(allowed, "int4", 0.2) == ["drift 0.200 > 0.1 (token agreement 80.0%)"]
    spec = parse_contract({"generation": {"ttft_p99_ms": 100, "itl_p99_ms": 20, "min_tokens_per_s": 50}})
    assert violations(spec, 150, 10, 60) == ["TTFT p99 150 ms > 100"]
    assert violations(spec, 50, 30, 40) == ["ITL p99 30.0 ms > 20", "40 tokens/s < 50"]


def test_the_objective_picks_among_feasible_plans() -> None:
    found = [evaluation(1, 1, 50, 8, 100), evaluation(2, 8, 300, 20, 400), evaluation(2, 1, 40, 6, 150, ok=False)]
    assert choose(found, "latency") == found[0]
    assert choose(found, "throughput") == found[1]
    assert choose(found, "memory") == found[0]
    assert choose([found[2]], "latency") is None
    fp32, int4 = (evaluation(1, 1, 50, 8, 100).model_copy(update={"memory_mb": mb}) for mb in (540.0, 95.0))
    assert choose([fp32, int4], "memory") == int4  # the memory objective: the fewest MiB reserved


def test_a_stored_plan_sets_the_engine() -> None:
    plan = GenerationPlan(threads=1, max_num_seqs=4, speculative_tokens=4)
    config = planned_config(EngineConfig(max_num_seqs=8, threads=0), plan)
    assert (config.threads, config.max_num_seqs, config.speculative_tokens) == (1, 4, 4)
    assert planned_config(EngineConfig(), None) == EngineConfig()


def test_prompt_chunks_are_sized_from_the_measured_prefill_rate_and_the_itl_promise() -> None:
    plan = GenerationPlan(threads=2, max_num_seqs=8)
    figures = Measured(ttft_p99_ms=1, itl_p99_ms=1, tokens_per_s=1, memory_mb=1, prefill_tokens_per_s=1600)
    tight = sized_chunks(plan, parse_contract({"generation": {"itl_p99_ms": 50}}), figures)
    assert (tight.prefill_chunk_tokens, tight.max_num_batched_tokens) == (32, 40)  # 1600/s x 25 ms = 40 -> 32
    loose = sized_chunks(plan, parse_contract({}), figures)
    assert loose.prefill_chunk_tokens == 64  # 1600/s x the default 40 ms
    fast = figures.model_copy(update={"prefill_tokens_per_s": 1e6})
    assert sized_chunks(plan, parse_contract({}), fast).prefill_chunk_tokens == 512  # at most 512
    config = planned_config(EngineConfig(), tight)
    assert (config.prefill_chunk_tokens, config.step_tokens) == (32, 40)


def test_the_contract_limits_set_the_engine() -> None:
    record = ModelVersion(
        name="m",
        version="1.0.0",
        stage=Stage.DEV,
        format="gguf",
        digest="ab" * 32,
        signature=Signature(inputs=[], outputs=[]),
        contract=parse_contract({"generation": {"max_model_len": 256}}),
    )
    config = contract_config(EngineConfig(max_num_seqs=8, max_model_len=2048), record)
    assert (config.max_model_len, config.max_num_seqs) == (256, 8)
    assert contract_config(EngineConfig(), record.model_copy(update={"contract": None})) == EngineConfig()


def test_plan_a_real_model_with_a_measured_accuracy_gate(
    tmp_path: Path,
    smollm2_gguf: Path,
    smollm2_int4: Path,
    smollm2_fp32: Path,
    one_core: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    contract = tmp_path / "contract.yaml"
    contract.write_text(
        "objective: throughput\naccuracy: {max_drift: 0.5}\nprecision: {allowed: [int4, fp32]}\n"
        "generation: {max_num_seqs: 2, max_model_len: 256, itl_p99_ms: 100000}\n"
    )
    monkeypatch.setenv("MCP_HOME", str(home))
    monkeypatch.setenv("MCP_LLM_CACHE", str(LLM_CACHE))
    registry = register_smollm2(home, smollm2_gguf)  # int4, 1.0.0, no contract
    for args in (["--version", "2.0.0", "--contract", str(contract)], ["--version", "9.0.0", "--precision", "fp32"]):
        done = run_main(
            ["model", "register", "--name", "smollm2", "--path", str(smollm2_gguf), *args], capsys, monkeypatch
        )
        assert done.code == 0, done.err
    quick = ["--generation-tokens", "8", "--prefill-runs", "1"]  # a small measurement budget: bounded on one core
    planned = run_main(["policy", "plan", "--model", "smollm2", "--version", "2.0.0", *quick], capsys, monkeypatch)
    assert planned.code == 0, planned.err
    assert "generation plans for smollm2:2.0.0 (int4)" in planned.out and "(chosen)" in planned.out
    assert "token agreement" in planned.out and "smollm2:9.0.0" in planned.out
    record = registry.resolve("smollm2", "2.0.0")
    plan = chosen_plan(registry, record)
    assert plan is not None and plan.max_num_seqs in (1, 2)
    explained = run_main(["policy", "explain", "--model", "smollm2", "--version", "2.0.0"], capsys, monkeypatch)
    assert explained.code == 0 and "ITL p99 ms" in explained.out and "contract <= 100000" in explained.out
    traced = run_main(["policy", "trace", "--model", "smollm2", "--version", "2.0.0", "--json"], capsys, monkeypatch)
    assert traced.code == 0 and '"precision": "int4"' in traced.out


def test_the_measurement_budget_flags_are_for_language_models_and_bounded(
    mcp_home: Path, mlp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ModelRegistry(mcp_home).register("mlp", mlp_path)
    tensor = run_main(["policy", "plan", "--model", "mlp", "--generation-tokens", "8"], capsys, monkeypatch)
    assert tensor.code != 0 and "--generation-tokens and --prefill-runs apply to language models" in tensor.err
    assert "Traceback" not in tensor.err and len(tensor.err.strip().splitlines()) == 1
    too_few = run_main(["policy", "plan", "--model", "mlp", "--generation-tokens", "2"], capsys, monkeypatch)
    assert too_few.code == 2 and "--generation-tokens" in too_few.err and "Traceback" not in too_few.err
    assert MeasurementBudget() == MeasurementBudget(output_tokens=OUTPUT_TOKENS, prefill_runs=PREFILL_RUNS)

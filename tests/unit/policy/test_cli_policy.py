"""``mcp probe`` and ``mcp policy plan|trace|explain`` through the real CLI entry point."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.cli import context
from mcp2026ai.cli.main import main
from mcp2026ai.contract import InferenceContract
from mcp2026ai.policy.candidates import instance_splits, thread_counts
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.runtime.catalog import installed_runtimes
from mcp2026ai.runtime.cpu_affinity import usable_cores

FAST = ["--seconds-per-plan", "0.02", "--total-seconds", "5"]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlp_path: Path) -> Iterator[Path]:
    home = tmp_path / "mcp-home"
    monkeypatch.setenv("MCP_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "200")  # tables unwrapped
    context.settings.cache_clear()
    registry = ModelRegistry(home)
    relaxed = InferenceContract.model_validate({"latency": {"p99_ms": 1000}, "batching": {"max_batch_size": 4}})
    registry.register("mlp", mlp_path, contract=relaxed)
    impossible = InferenceContract.model_validate({"latency": {"p99_ms": 0.0001}, "batching": {"max_batch_size": 2}})
    registry.register("tight", mlp_path, contract=impossible)
    yield home
    context.settings.cache_clear()


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["mcp", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_probe_json_and_table(home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(capsys, monkeypatch, "probe", "--json")
    profile = json.loads(out)
    assert code == 0 and profile["logical_cores"] >= 1 and "cpu" in profile["providers"]
    assert {"cpu_model", "cpu_flags", "numa_nodes", "memory_total_mb", "ort_providers", "gpus"} <= set(profile)
    code, out, _ = run(capsys, monkeypatch, "probe")
    assert code == 0 and "numa nodes" in out and "ort providers" in out
    assert profile["runtimes"] == installed_runtimes() and profile["runtimes"][0] == "onnxruntime"
    assert "runtimes" in out and "onnxruntime 1." in out


def test_plan_trace_explain(home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(capsys, monkeypatch, "policy", "plan", "--model", "mlp", *FAST, "--json")
    assert code == 0, err
    decision = json.loads(out)
    assert decision["trigger"] == "manual" and decision["chosen"] is not None
    runtimes = len(installed_runtimes())  # onnxruntime, and OpenVINO where installed
    settings = len(thread_counts(usable_cores())) + len(instance_splits(usable_cores()))
    assert len(decision["evaluations"]) == settings * 3 * runtimes  # x batch 1/2/4
    code, out, _ = run(capsys, monkeypatch, "policy", "trace", "--model", "mlp", "--last", "5m")
    assert code == 0
    assert (
        "policy decisions for mlp in the last 5m" in out and "manual" in out and "chosen:" in out and "reason:" in out
    )
    code, out, _ = run(capsys, monkeypatch, "policy", "trace", "--model", "mlp", "--json")
    assert [d["id"] for d in json.loads(out)] == [decision["id"]]
    code, out, _ = run(capsys, monkeypatch, "policy", "explain", "--model", "mlp")
    runtime = decision["chosen"]["candidate"]["plan"]["runtime"]  # whichever measured faster here
    prefix = "" if runtime == "onnxruntime" else f"{runtime}:"
    assert code == 0 and f"mlp:1.0.0 runs {prefix}cpu/fp32" in out
    assert "latency.p99_ms" in out and "throughput.min_rps" in out
    assert ("optimized model cached" in out) == (runtime == "onnxruntime")  # onnxruntime's graphs only
    measured = sum(1 for evaluation in decision["evaluations"] if evaluation["figures"] is not None)
    assert f"Pareto front of {measured} measured plans" in out  # all of them, unless a loaded host spent the budget
    assert "taken: best latency among the feasible plans" in out and "rounds the plan was measured in" in out
    code, out, _ = run(capsys, monkeypatch, "policy", "explain", "--model", "mlp", "--json")
    explained = json.loads(out)
    assert explained["plan"]["decision_id"] == decision["id"]
    assert {row["ok"] for row in explained["constraints"]} == {"yes"}
    front = explained["pareto"]
    assert [point["chosen"] for point in front].count(True) == 1
    assert all(point["on_front"] or point["chosen"] for point in front)


def test_impossible_contract_exits_2_naming_the_nearest_plan(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "policy", "plan", "--model", "tight", *FAST)
    assert code == 2
    assert err.count("\n") == 1 and "no plan meets the contract of tight:1.0.0" in err
    assert "nearest: cpu/fp32" in err and "latency.p99_ms by" in err
    assert "candidates for tight:1.0.0" in out  # the measured table still printed
    code, _, err = run(capsys, monkeypatch, "policy", "explain", "--model", "tight")
    assert code == 2 and "tight:1.0.0 has no stored plan: the last decision" in err
    code, out, _ = run(capsys, monkeypatch, "policy", "trace", "--model", "tight", "--last", "1h")
    assert code == 0 and "none" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["policy", "trace", "--model", "mlp", "--last", "5x"], "--last '5x': expected a positive duration"),
        (["policy", "trace", "--model", "nope"], "unknown model 'nope'"),
        (["policy", "explain", "--model", "mlp"], "mlp:1.0.0 has no stored plan; run `mcp policy plan --model mlp`"),
        (["policy", "plan", "--model", "mlp", "--shape", "x=2y3"], "--shape 'x=2y3'"),
    ],
)
def test_errors_are_one_line_and_exit_2(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    code, _, err = run(capsys, monkeypatch, *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_trace_with_no_decisions(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "policy", "trace", "--model", "mlp", "--last", "2d")
    assert code == 0 and "no policy decisions for mlp in the last 2d" in out

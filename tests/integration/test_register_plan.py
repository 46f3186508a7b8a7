"""`mcp model register --plan`: a contract no plan can meet refuses the version with a clear line.

Bounded: both contracts cap batches at 1, so the policy measures one batch size per runtime setting
(about a second each) instead of four within its 15 s budget, and the commands run through the CLI's
``main()`` in this process (each console script's start cost seconds of CPU on two shared cores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.cli import context
from tests.support.cli import run_main

pytestmark = pytest.mark.timeout(180)
ONE_ROW = "batching:\n  max_batch_size: 1\n"


def test_register_with_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "home"))
    context.settings.cache_clear()

    def mcp(*args: str) -> tuple[int, str, str]:
        done = run_main(list(args), capsys, monkeypatch)
        return done.code, done.out, done.err

    impossible = tmp_path / "impossible.yaml"
    impossible.write_text("latency:\n  p99_ms: 0.001\n" + ONE_ROW)
    model = str(bundled_model_path("ocr-cls"))
    code, _, err = mcp("model", "register", "--name", "cls", "--path", model, "--contract", str(impossible), "--plan")
    assert code == 2
    assert "no plan meets the contract of cls:1.0.0" in err
    assert "misses latency.p99_ms by" in err and "Traceback" not in err
    assert mcp("model", "list", "--json")[1].strip() == "[]"
    feasible = tmp_path / "ok.yaml"
    feasible.write_text("latency:\n  p99_ms: 2000\n" + ONE_ROW)
    code, out, err = mcp("model", "register", "--name", "cls", "--path", model, "--contract", str(feasible), "--plan")
    assert code == 0, err
    assert "plan: " in out
    trace = mcp("policy", "trace", "--model", "cls", "--last", "1h", "--json")
    assert '"trigger": "register"' in trace[1]

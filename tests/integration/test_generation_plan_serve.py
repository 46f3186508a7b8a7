"""`mcp serve` of a language model whose contract has a generation section and no stored plan: the
plan is measured as the server starts (in a child process, as for tensor models), logged, stored,
and the server runs the chosen import (precision) and settings; a second start reuses it.

One import (int4) is registered: the plan measures its two candidates (plain and speculative, on one
core) and no fp32 reference, whose load and token agreement doubled the time. Choosing among
precisions is tested in tests/unit/policy/test_generation_precisions.py (the measured choice, and the
server loading the chosen import)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from mcp2026ai.policy.generation import decisions
from mcp2026ai.registry import ModelRegistry
from tests.support.cli import run_main
from tests.support.llm import register_smollm2

from .conftest import mcp_command

pytestmark = pytest.mark.timeout(240)
CONTRACT = "objective: latency\nprecision: {allowed: [int4]}\ngeneration: {max_num_seqs: 1, max_model_len: 256}\n"


@contextmanager
def mcp_serve(home: Path) -> Iterator[tuple[str, list[str]]]:
    """`mcp serve --name smollm2` on an ephemeral port: yields (http host:port, the lines before `listening`)."""
    process = subprocess.Popen(
        [*mcp_command(), "serve", "--name", "smollm2", "--port", "0", "--grpc-port", "-1", "--drain-timeout", "5"],
        env={**os.environ, "MCP_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        before = []
        for line in process.stdout:
            if line.startswith("listening"):
                match = re.search(r"http=(\d+)", line)
                assert match, line
                yield f"127.0.0.1:{match.group(1)}", before
                break
            before.append(line.strip())
        else:
            pytest.fail(f"mcp serve ended before listening: {before} {process.stderr.read() if process.stderr else ''}")
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def served_plan(http: str) -> str:
    """What the served engine runs, as Triton's config endpoint shows it (sequences, length, precision)."""
    config = httpx.get(f"http://{http}/v2/models/smollm2/config", timeout=10).json()
    return str(config["parameters"]["mcp_plan"]["string_value"])


def test_serve_plans_a_language_model_then_reuses_the_plan(
    tmp_path: Path,
    smollm2_gguf: Path,
    smollm2_int4: Path,
    llm_cache: Path,
    one_core: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("MCP_HOME", str(home))
    contract = tmp_path / "contract.yaml"
    contract.write_text(CONTRACT)
    registry: ModelRegistry = register_smollm2(home, smollm2_gguf)  # 1.0.0, int4
    args = ["--version", "2.0.0", "--contract", str(contract)]
    done = run_main(["model", "register", "--name", "smollm2", "--path", str(smollm2_gguf), *args], capsys, monkeypatch)
    assert done.code == 0, done.err

    with mcp_serve(home) as (http, log):
        stored = decisions(registry, "smollm2", "2.0.0")
        assert len(stored) == 1 and stored[0].trigger == "serve" and stored[0].chosen is not None
        chosen = stored[0].chosen.plan
        assert any(line.startswith("plan for smollm2: ") and "measured in" in line for line in log), log
        expected = f"continuous batching: {chosen.max_num_seqs} sequences x 256 tokens, {chosen.precision}"
        assert served_plan(http) == expected  # the engine runs the chosen import and settings
        client = openai.OpenAI(base_url=f"http://{http}/v1", api_key="unused", max_retries=0)
        answer = client.completions.create(model="smollm2", prompt="The lighthouse", max_tokens=4, temperature=0)
        assert answer.usage is not None and answer.usage.completion_tokens == 4

    with mcp_serve(home) as (http, log):
        assert any(line.startswith("plan for smollm2: ") and "(stored " in line for line in log), log
        assert len(decisions(registry, "smollm2", "2.0.0")) == 1  # reused, not measured again
        assert served_plan(http) == expected

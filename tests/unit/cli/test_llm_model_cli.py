"""``mcp bundled smollm2`` and ``mcp model register/show`` of a language model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Invoke, ok

pytestmark = pytest.mark.usefixtures("llm_cache")


def test_bundled_finds_the_gguf_file(cli: Invoke) -> None:
    path = Path(ok(cli("bundled", "smollm2")).strip())
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90_000_000
    assert "smollm2" in ok(cli("bundled")).split()


def test_register_and_show_print_the_language_model(cli: Invoke, smollm2_gguf: Path) -> None:
    out = ok(cli("model", "register", "--name", "smollm2", "--path", smollm2_gguf))
    assert out.startswith("registered smollm2:1.0.0 (dev, sha256 ")
    shown = ok(cli("model", "show", "--name", "smollm2"))
    for line in ("architecture", "llama"), ("context_length", "8192"), ("vocabulary", "49152"), ("precision", "int4"):
        assert any(line[0] in row and line[1] in row for row in shown.splitlines()), shown
    document = json.loads(ok(cli("model", "show", "--name", "smollm2", "--json")))
    assert document["format"] == "gguf" and document["llm"]["precision"] == "int4"
    assert document["llm"]["context_length"] == 8192


def test_an_unknown_precision_is_refused_with_those_offered(cli: Invoke, smollm2_gguf: Path) -> None:
    result = cli("model", "register", "--name", "x", "--path", smollm2_gguf, "--precision", "int2")
    assert result.exit_code == 2 and "'int2' is not one of 'int4', 'int8', 'fp32'" in result.output


def test_generate_streams_the_answer(cli: Invoke, smollm2_gguf: Path) -> None:
    ok(cli("model", "register", "--name", "smollm2", "--path", smollm2_gguf))
    result = cli("generate", "--name", "smollm2", "--prompt", "What is the capital of France?", "--max-tokens", "12")
    assert result.exit_code == 0, result.output
    assert "Paris" in result.stdout
    assert "prompt + 12 generated tokens, finish length" in result.stderr


def test_generate_refuses_a_tensor_model_and_an_over_long_request(
    cli: Invoke, smollm2_gguf: Path, mlp_path: Path
) -> None:
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    result = cli("generate", "--name", "mlp", "--prompt", "hi")
    assert "mlp:1.0.0 is not a language model" in str(result.exception)
    ok(cli("model", "register", "--name", "smollm2", "--path", smollm2_gguf))
    result = cli("generate", "--name", "smollm2", "--prompt", "hi", "--max-tokens", "9000")
    assert "9000 in the completion" in str(result.exception)
    assert "maximum context length is 8192 tokens" in str(result.exception)

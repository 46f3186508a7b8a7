"""``mcp model register --adapter DIR --base MODEL``: a LoRA adapter version and its parent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import Invoke, ok
from tests.support.lora import make_adapter

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("llm_cache")]


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory, smollm2_hf: Path) -> Path:
    return make_adapter(smollm2_hf, tmp_path_factory.mktemp("adapter") / "sql", seed=1)


def test_the_cli_registers_an_adapter_and_shows_its_parent(cli: Invoke, smollm2_gguf: Path, adapter: Path) -> None:
    ok(cli("model", "register", "--name", "smollm2", "--path", smollm2_gguf))
    out = ok(cli("model", "register", "--name", "smollm2-sql", "--adapter", adapter, "--base", "smollm2"))
    assert out.startswith("registered smollm2-sql:1.0.0 (dev, sha256 ")
    shown = json.loads(ok(cli("model", "show", "--name", "smollm2-sql", "--json")))
    assert shown["format"] == "lora" and shown["parent"] == "smollm2:1.0.0"
    args = ("--name", "big", "--adapter", adapter, "--base", "smollm2", "--max-lora-rank", "4")
    refused = cli("model", "register", *args)
    assert refused.exit_code != 0 and "adapter rank 8 is over the limit --max-lora-rank 4" in str(refused.exception)


def test_an_adapter_without_a_base_is_refused(cli: Invoke, adapter: Path) -> None:
    refused = cli("model", "register", "--name", "x", "--adapter", adapter)
    assert refused.exit_code != 0 and "needs --name, --adapter DIR and --base MODEL" in str(refused.exception)

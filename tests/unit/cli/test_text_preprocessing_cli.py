"""``mcp model register --preprocessing`` with a ``text`` section: the tokenizer.json it names (relative
to the YAML) is stored content-addressed and the record keeps its digest (registry/text_encoder.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.text_encoder import tokenizer_json
from tests.support.cli import Invoke, ok

TOKENIZER = '{"version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}'


def test_the_tokenizer_is_stored_by_digest(
    cli: Invoke, mlp_path: Path, registry: ModelRegistry, tmp_path: Path
) -> None:
    folder = tmp_path / "encoder"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(TOKENIZER)
    (folder / "prep.yaml").write_text("text:\n  tokenizer: tokenizer.json\n  max_length: 128\n  pooling: cls\n")
    out = ok(
        cli("model", "register", "--name", "enc", "--path", mlp_path, "--preprocessing", folder / "prep.yaml", "--json")
    )
    text = json.loads(out)["preprocessing"]["text"]
    assert text["tokenizer"] == hashlib.sha256(TOKENIZER.encode()).hexdigest()
    assert text["max_length"] == 128 and text["pooling"] == "cls" and text["normalize"] is True
    assert tokenizer_json(registry.store, text["tokenizer"]) == TOKENIZER


def test_a_missing_tokenizer_is_refused_naming_it(cli: Invoke, mlp_path: Path, tmp_path: Path) -> None:
    (tmp_path / "prep.yaml").write_text("text:\n  tokenizer: nowhere.json\n")
    result = cli("model", "register", "--name", "enc", "--path", mlp_path, "--preprocessing", tmp_path / "prep.yaml")
    assert isinstance(result.exception, InvalidArgumentError)
    assert "nowhere.json: text.tokenizer file not found" in str(result.exception)

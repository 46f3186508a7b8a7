"""What a killed registration leaves behind is removed on the next start, and nothing else is."""

from __future__ import annotations

import os
import time
from pathlib import Path

from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.registry.leftovers import remove_leftovers
from mcp2026ai.registry.records import TextPreprocessing
from mcp2026ai.registry.text_encoder import TOKENIZER_SUFFIX
from tests.support.models import mlp_model


def aged(path: Path, hours: float = 2.0) -> Path:
    then = time.time() - hours * 3600
    os.utime(path, (then, then))
    return path


def test_old_temp_files_and_unreferenced_artifacts_go_registered_ones_stay(
    registry: ModelRegistry, mlp_path: Path, tmp_path: Path
) -> None:
    kept = registry.register("mlp", mlp_path)
    kept_path = aged(registry.store.path_for(kept.digest))
    orphan_digest = registry.store.put(mlp_model(tmp_path / "other.onnx", seed=3))  # killed before the catalog row
    orphan = aged(registry.store.path_for(orphan_digest))
    half_copied = orphan.parent / ".incoming-abc123"
    half_copied.write_bytes(b"x" * 1000)
    aged(half_copied)
    (registry.home / "tmp").mkdir(exist_ok=True)
    converted = registry.home / "tmp" / "model-1234.onnx"
    converted.write_bytes(b"y" * 10)
    aged(converted)
    (registry.home / "cache").mkdir(exist_ok=True)
    optimizing = registry.home / "cache" / ".optimizing-xyz.onnx"
    optimizing.write_bytes(b"z")
    aged(optimizing)
    in_progress = orphan.parent / ".incoming-now"  # another process is registering right now
    in_progress.write_bytes(b"w")

    leftovers = remove_leftovers(registry)

    assert set(leftovers.files) == {orphan, half_copied, converted, optimizing}
    assert leftovers.bytes > 1000
    assert kept_path.exists() and in_progress.exists()
    assert registry.artifact_path(kept) == kept_path  # still intact and loadable
    assert remove_leftovers(registry).files == ()


def test_a_sentence_encoder_s_tokenizer_stays(registry: ModelRegistry, mlp_path: Path, tmp_path: Path) -> None:
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text('{"version": "1.0"}')
    text = TextPreprocessing(tokenizer=str(tokenizer))
    record = registry.register("encoder", mlp_path, preprocessing=Preprocessing(text=text))
    assert record.preprocessing is not None and record.preprocessing.text is not None
    stored = aged(registry.store.path_for(record.preprocessing.text.tokenizer, TOKENIZER_SUFFIX))
    aged(registry.store.path_for(record.digest))
    assert remove_leftovers(registry).files == () and stored.exists()

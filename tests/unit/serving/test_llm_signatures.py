"""Signatures cover everything a language model's engine opens (finding 5 of the security review):
under --require-signed the import a stored generation plan names is verified as it is opened, not
only the default version; a manifest cannot name files outside the model's folder; decrypted weights
are owner-only and checked again at every load."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp2026ai.policy.generation import (
    DECISION_KIND,
    GenerationDecision,
    GenerationEvaluation,
    GenerationPlan,
)
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import LLMManifest, _put_manifest, materialize, read_manifest
from mcp2026ai.registry.signing import sign_version
from mcp2026ai.security import KeyRing, TrustedKeys
from mcp2026ai.security.encryption import ArtifactCipher
from mcp2026ai.security.paths import PathEscapeError
from mcp2026ai.serving.llms import GenerationModels

pytestmark = pytest.mark.usefixtures("llm_cache")


def plan_runs(registry: ModelRegistry, record: ModelVersion, version: str) -> None:
    """What a catalog writer who cannot sign does: a generation decision running another import."""
    plan = GenerationPlan(threads=1, max_num_seqs=1, version=version, precision="int4")
    chosen = GenerationEvaluation(plan=plan, ttft_p99_ms=1, itl_p99_ms=1, tokens_per_s=1, feasible=True)
    decision = GenerationDecision(
        model=record.name, version=record.version, time=datetime.now(UTC), precision="int4",
        evaluations=[chosen], chosen=chosen, reason="written by hand", planning_s=0,
    )  # fmt: skip
    registry.catalog.annotate(
        record.name, record.version, DECISION_KIND, decision.model_dump(mode="json"), decision.time
    )


def test_the_plans_unsigned_import_is_not_opened_under_require_signed(
    registry: ModelRegistry, smollm2_gguf: Path
) -> None:
    signed = registry.register("smollm2", smollm2_gguf)
    key = KeyRing(registry.home / "keys").create("release")
    sign_version(registry, signed, key)  # the documented `mcp model sign --name smollm2`: the default only
    unsigned = registry.register("smollm2", smollm2_gguf, version="2.0.0")  # another import, unsigned
    plan_runs(registry, signed, unsigned.version)
    record = registry.resolve("smollm2", signed.version)
    assert GenerationModels(registry).open_planned(record)[1].version == unsigned.version  # the plan is real
    plan, artifact, folder = GenerationModels(registry, trusted_keys=TrustedKeys([key.public])).open_planned(record)
    assert (plan, artifact.version) == (None, signed.version)
    assert (folder / "model.onnx").is_file()


def test_an_unsigned_default_is_refused_when_opened(registry: ModelRegistry, smollm2_gguf: Path) -> None:
    from mcp2026ai.errors import SignatureError

    record = registry.register("smollm2", smollm2_gguf)
    trusted = TrustedKeys([KeyRing(registry.home / "keys").create("release").public])
    with pytest.raises(SignatureError, match=r"smollm2:1\.0\.0 is not signed"):
        GenerationModels(registry, trusted_keys=trusted).open_planned(record)


def test_a_manifest_cannot_name_a_file_outside_the_models_folder(
    registry: ModelRegistry, smollm2_gguf: Path, tmp_path: Path
) -> None:
    record = registry.register("smollm2", smollm2_gguf)
    manifest = read_manifest(registry.store, record.digest)
    member = manifest.files["genai_config.json"]
    evil = LLMManifest(files={"../../../escaped.pth": member}, info=manifest.info, source_sha256="0" * 64)
    digest = _put_manifest(registry.store, evil)
    with pytest.raises(PathEscapeError, match=r"'\.\./\.\./\.\./escaped\.pth' climbs out"):
        materialize(registry.store, digest, tmp_path / "a" / "b" / "llm")
    assert not list(tmp_path.rglob("escaped.pth"))


def test_decrypted_weights_are_owner_only_and_checked_at_every_load(mcp_home: Path, smollm2_gguf: Path) -> None:
    registry = ModelRegistry(mcp_home, ArtifactCipher(os.urandom(32)))
    record = registry.register("smollm2", smollm2_gguf)
    folder = registry.llm_folder(record)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files and {stat.S_IMODE(path.stat().st_mode) for path in files} == {0o600}
    config = folder / "genai_config.json"
    original = config.read_bytes()
    config.write_text(json.dumps({"swapped": True}))  # a plaintext file changed while the server was down
    assert registry.llm_folder(record) == folder and config.read_bytes() == original

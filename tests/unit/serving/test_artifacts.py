"""Backends from artifact bytes: signature-verified (no swap between check and load) and decrypted."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import ModelNotReadyError, SignatureError
from mcp2026ai.policy.candidates import Candidate
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.probe import HardwareProfile
from mcp2026ai.policy.profiler import Figures, Measurement
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.signing import sign_version
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.security import KeyRing, SigningKey, TrustedKeys
from mcp2026ai.security.encryption import ArtifactCipher
from mcp2026ai.serving.artifacts import ArtifactBackends

X = np.arange(8, dtype=np.float32).reshape(2, 4) / 8


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return KeyRing(tmp_path / "keys").create("release")


@pytest.fixture
def trusted(key: SigningKey) -> TrustedKeys:
    return TrustedKeys([key.public])


def _infer(backend: OnnxRuntimeBackend) -> np.ndarray:
    backend.load()
    try:
        return backend.infer({"x": X})["y"]
    finally:
        backend.unload()


def _overwrite(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)  # the store keeps artifacts read-only; the service's own user can undo that
    path.write_bytes(data)


def test_a_backend_built_from_bytes_matches_the_file_and_releases_them(registry, mlp_path: Path) -> None:
    record = registry.register("mlp", mlp_path)
    from_file = OnnxRuntimeBackend(mlp_path, record.signature)
    from_bytes = OnnxRuntimeBackend(mlp_path.read_bytes(), record.signature, label="mlp:1.0.0")
    assert from_bytes.model_path is None
    np.testing.assert_array_equal(_infer(from_bytes), _infer(from_file))
    with pytest.raises(ModelNotReadyError, match=r"mlp:1\.0\.0: model bytes were released"):
        from_bytes.load()


def test_a_verified_backend_runs_the_bytes_that_were_checked(
    registry: ModelRegistry, mlp_path: Path, other_mlp_path: Path, key: SigningKey, trusted: TrustedKeys
) -> None:
    record = registry.register("mlp", mlp_path)
    sign_version(registry, record, key)
    expected = _infer(OnnxRuntimeBackend(mlp_path, record.signature))
    backend = ArtifactBackends(registry, trusted)(record)
    assert backend.model_path is None and backend.label == record.ref
    # swapping the file after the check cannot change what is loaded
    _overwrite(registry.store.path_for(record.digest), other_mlp_path.read_bytes())
    np.testing.assert_array_equal(_infer(backend), expected)
    with pytest.raises(SignatureError, match=r"mlp:1\.0\.0: artifact .* was modified on disk"):
        ArtifactBackends(registry, trusted)(record)


def test_unsigned_and_untrusted_versions_are_refused(
    registry: ModelRegistry, mlp_path: Path, tmp_path: Path, trusted: TrustedKeys
) -> None:
    record = registry.register("mlp", mlp_path)
    with pytest.raises(SignatureError, match=r"mlp:1\.0\.0 is not signed"):
        ArtifactBackends(registry, trusted)(record)
    stranger = KeyRing(tmp_path / "other-keys").create("stranger")
    sign_version(registry, record, stranger)
    with pytest.raises(SignatureError, match=r"signed only by untrusted key"):
        ArtifactBackends(registry, trusted)(record)


def test_without_trusted_keys_plain_artifacts_load_from_their_file(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register("mlp", mlp_path)
    backend = ArtifactBackends(registry)(record)
    assert backend.model_path == registry.store.path_for(record.digest)
    assert _infer(backend).shape == (2, 3)


def test_an_encrypted_artifact_is_served_from_memory(mcp_home: Path, mlp_path: Path) -> None:
    registry = ModelRegistry(mcp_home, ArtifactCipher(os.urandom(32)))
    record = registry.register("mlp", mlp_path)
    assert registry.store.is_encrypted(record.digest)
    assert not registry.store.path_for(record.digest).exists()  # no plaintext on disk
    expected = _infer(OnnxRuntimeBackend(mlp_path, record.signature))
    backend = ArtifactBackends(registry)(record)
    assert backend.model_path is None
    np.testing.assert_array_equal(_infer(backend), expected)


class FixedMeasurer:
    """Every candidate measures the same: the orchestrator then picks by its tie-breaks."""

    def __call__(self, record: ModelVersion, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        figures = Figures(p50_ms=1, p95_ms=1, p99_ms=1, batch_p95_ms=1, batch_p99_ms=1, throughput_rps=1000)
        return dict.fromkeys(candidates, Measurement(figures=figures))


def test_signed_serving_with_the_policy_runs_the_stored_plan_from_verified_bytes(
    registry: ModelRegistry, mlp_path: Path, key: SigningKey, trusted: TrustedKeys
) -> None:
    record = registry.register("mlp", mlp_path)
    sign_version(registry, record, key)
    hardware = HardwareProfile(cpu_model="m", logical_cores=2, online_cpus=2, ort_providers=["CPUExecutionProvider"])
    planner = PolicyOrchestrator(registry, hardware=hardware, measurer=FixedMeasurer())
    backend = ArtifactBackends(registry, trusted, planner)(record)
    stored = planner.stored(record)
    assert stored is not None and backend.plan == stored.plan
    assert backend.model_path is None  # not the unsigned optimized-graph cache
    assert _infer(backend).shape == (2, 3)


def _plan_naming(
    registry: ModelRegistry, planner: PolicyOrchestrator, record: ModelVersion, other: ModelVersion
) -> None:
    """What a catalog writer who cannot sign does (finding 10): point ``record``'s stored plan at ``other``."""
    stored = planner.ensure_plan(record)
    variant = stored.variant.model_copy(update={"name": other.name, "version": other.version, "digest": other.digest})
    planner.log.store_plan(record.name, record.version, stored.model_copy(update={"variant": variant}))


def test_a_stored_plan_cannot_make_one_model_serve_another_models_artifact(
    registry: ModelRegistry, mlp_path: Path, other_mlp_path: Path, key: SigningKey, trusted: TrustedKeys
) -> None:
    served = registry.register("mlp", mlp_path)
    other = registry.register("other", other_mlp_path)
    for record in (served, other):
        sign_version(registry, record, key)  # both validly signed, each under its own name
    hardware = HardwareProfile(cpu_model="m", logical_cores=2, online_cpus=2, ort_providers=["CPUExecutionProvider"])
    planner = PolicyOrchestrator(registry, hardware=hardware, measurer=FixedMeasurer())
    _plan_naming(registry, planner, served, other)
    with pytest.raises(SignatureError, match=r"mlp:1\.0\.0: its stored plan runs other:1\.0\.0, another model's"):
        ArtifactBackends(registry, trusted, planner)(served)
    # a child that declares this version its parent is still refused under --require-signed (the link is unsigned)
    child = registry.register("child", other_mlp_path, parent=served.ref)
    sign_version(registry, child, key)
    _plan_naming(registry, planner, served, child)
    with pytest.raises(SignatureError, match="another model's artifact"):
        ArtifactBackends(registry, trusted, planner)(served)

"""Content-addressed artifacts are checked against their address before they are used."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import IntegrityError
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.profiler import ProfileBudget
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.serving.models import ServedModels
from support.cli import run_main
from tests.unit.policy.test_cache import flip_byte

QUICK_PLAN = ProfileBudget(
    seconds_per_plan=0.02, latency_runs=8, batch_runs=4, warmup_runs=1, min_runs=2, total_seconds=5, heavy_load=1.0
)
"""A small measurement budget: the tests need a stored plan and its optimized copy, not good figures."""
RACERS = 6


def corrupt(registry: ModelRegistry, record: ModelVersion, at: float = 0.5) -> None:
    path = registry.store.path_for(record.digest)
    flip_byte(path, int(path.stat().st_size * at))


def test_a_flipped_byte_is_refused_by_path_and_by_bytes(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register("mlp", mlp_path)
    assert registry.artifact_path(record).exists()
    corrupt(registry, record)
    with pytest.raises(IntegrityError, match=f"no longer matches its sha256 {record.digest[:12]}"):
        registry.artifact_path(record)
    with pytest.raises(IntegrityError):
        registry.artifact_bytes(record)


@pytest.mark.parametrize("where", [0.5, 0.0])  # a weight byte (wrong answers before), a header byte (a traceback)
def test_mcp_predict_refuses_a_corrupted_artifact_in_one_line(
    registry: ModelRegistry,
    mlp_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: float,
) -> None:
    record = registry.register("mlp", mlp_path)
    np.save(tmp_path / "x.npy", np.zeros((1, 32), np.float32))
    corrupt(registry, record, where)
    outcome = run_main(["predict", "--name", "mlp", "--input", str(tmp_path / "x.npy")], capsys, monkeypatch)
    assert outcome.code == 2 and "no longer matches its sha256" in outcome.err
    assert len(outcome.err.strip().splitlines()) == 1 and "Traceback" not in outcome.err


@pytest.mark.parametrize("with_policy", [False, True])
def test_serving_refuses_a_corrupted_artifact_and_says_why(
    registry: ModelRegistry, mlp_path: Path, with_policy: bool
) -> None:
    import asyncio

    from mcp2026ai.serving.artifacts import ArtifactBackends

    record = registry.register("mlp", mlp_path)
    planner = PolicyOrchestrator(registry, budget=QUICK_PLAN) if with_policy else None
    if planner is not None:
        planner.ensure_plan(record)  # a stored plan and an optimized copy exist before the corruption
    corrupt(registry, record)
    models = ServedModels(registry, backend_factory=ArtifactBackends(registry, planner=planner))
    with pytest.raises(IntegrityError):
        asyncio.run(models.load("mlp"))
    [row] = models.index()
    assert row["state"] == "UNAVAILABLE" and "no longer matches its sha256" in row["reason"]


def test_concurrent_registrations_get_unique_versions_and_aliases(tmp_path: Path, mlp_path: Path) -> None:
    """Six processes register the same name at once, three with their own version and three with the
    automatic one: all succeed, and no two versions share a version string or an integer alias. (Six,
    not ten: each process imports the CLI, about a second of CPU, and the race needs only a few.)"""
    import os
    import subprocess
    import sys

    from tests.support import REPO_ROOT

    home = tmp_path / "home"
    ModelRegistry(home)  # the catalog exists before the race
    env = {**os.environ, "MCP_HOME": str(home), "PYTHONPATH": str(REPO_ROOT / "src")}
    commands = [
        [sys.executable, "-m", "mcp2026ai.cli", "model", "register", "--name", "race", "--path", str(mlp_path)]
        + (["--version", f"{index + 1}.0.0"] if index % 2 else [])
        for index in range(RACERS)
    ]
    processes = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in commands]
    errors = [p.communicate(timeout=120)[1].decode() for p in processes]
    assert [p.returncode for p in processes] == [0] * RACERS, errors
    records = ModelRegistry(home).versions("race")
    assert len(records) == RACERS
    assert len({r.version for r in records}) == RACERS
    assert sorted(r.number for r in records) == list(range(1, RACERS + 1))

"""Serving a Triton repository: versions its policy selects, its configs in force, refusals in the index."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import InvalidArgumentError, ModelNotReadyError, NotFoundError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.triton_import import import_repository
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.overrides import ConfigOverride, parse_config_override
from mcp2026ai.serving.repository import RepositoryServing, load_repository
from mcp2026ai.serving.sync import ServingSync
from tests.support.triton_repository import BROKEN_CONFIG, add_sub, add_sub_config, write_model

CONFIG = add_sub_config("simple") + (
    "version_policy: { latest: { num_versions: 2 } }\n"
    "instance_group [ { count: 2 kind: KIND_CPU } ]\n"
    "dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 500 priority_levels: 2 }\n"
)


@pytest.fixture
def served(registry: ModelRegistry, tmp_path: Path) -> RepositoryServing:
    source = add_sub(tmp_path / "sources" / "simple.onnx")
    root = tmp_path / "repo"
    write_model(root, "simple", CONFIG, dict.fromkeys((1, 2, 3), source))
    write_model(root, "broken_dims", BROKEN_CONFIG, {1: source})
    return RepositoryServing.from_import(import_repository(registry, root, tmp_path / "work", all_or_nothing=False))


def test_selected_versions_load_with_the_config_in_force(registry: ModelRegistry, served: RepositoryServing) -> None:
    async def scenario() -> None:
        models = ServedModels(registry)
        loaded = await load_repository(models, served)
        assert [record.ref for record in loaded] == ["simple:2.0.0", "simple:3.0.0"]
        assert models.default_version("simple") == "3.0.0" and models.get("simple", "2").record.number == 2
        batching = models.get("simple").batching
        assert batching is not None
        assert (batching.max_batch_size, batching.max_concurrent_batches) == (8, 2)
        assert (batching.max_queue_delay_ms, batching.preferred_batch_sizes) == (0.5, [4])
        levels = {1: SLAClass.LATENCY_CRITICAL, 2: SLAClass.BEST_EFFORT}
        assert models.get("simple").priority_classes == levels  # a request's priority picks its class queue
        index = {(row["name"], row["version"]): row for row in models.index()}
        assert index["broken_dims", ""]["state"] == "UNAVAILABLE"
        assert index["broken_dims", ""]["reason"].startswith("failed to load 'broken_dims': ")
        assert models.knows("broken_dims") and not models.knows("ghost")
        with pytest.raises(ModelNotReadyError, match=r"failed to load 'broken_dims'"):
            await models.load("broken_dims")
        with pytest.raises(NotFoundError, match=r"failed to load 'ghost': unknown model 'ghost'"):
            await models.load("ghost")
        sync = ServingSync(models, TrafficController(registry), lambda: None, pinned=served.versions)
        await sync.sync_once()  # the policy's versions stay loaded beside the default
        assert sorted(m.record.version for m in models.served_versions("simple")) == ["2.0.0", "3.0.0"]
        reloaded = await models.load("simple", "3.0.0", override=ConfigOverride(max_batch_size=4))
        assert reloaded.batching is not None and reloaded.batching.max_concurrent_batches == 2  # stored, then given
        assert reloaded.batching.max_batch_size == 4
        await models.unload_all()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "text", ['"parameters": {"config": {{"max_batch_size": "16"}}}', '{"bogus": 1}', '{"max_batch_size": "x"}']
)
def test_bad_load_overrides_say_failed_to_load(text: str) -> None:
    """Triton's model-control clients look for these words."""
    with pytest.raises(InvalidArgumentError, match=r"^failed to load 'simple': "):
        parse_config_override(text, "simple")


def test_max_batch_size_zero_never_merges_requests(registry: ModelRegistry, tmp_path: Path) -> None:
    """Triton's max_batch_size 0: the model's first dimension is its own (dims [-1, 16]), not a batch."""
    unbatched = (
        add_sub_config("simple").replace("max_batch_size: 8", "max_batch_size: 0").replace("[ 16 ]", "[ -1, 16 ]")
    )
    write_model(tmp_path / "repo", "simple", unbatched, {1: add_sub(tmp_path / "sources" / "simple.onnx")})
    served = RepositoryServing.from_import(import_repository(registry, tmp_path / "repo", tmp_path / "work"))

    async def scenario() -> None:
        models = ServedModels(registry)
        await load_repository(models, served)
        batching = models.get("simple").batching
        assert batching is not None and not batching.batch_dim and not batching.batching
        assert DataPlane(models).describe("simple").max_batch_size == 0  # /config says so, as Triton's does
        await models.unload_all()

    asyncio.run(scenario())
    assert parse_config_override('{"max_batch_size": 0}', "simple").batch_dim is False

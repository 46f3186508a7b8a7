"""Host tuning (scheduling/host.py): every knob off by default, a preset, and applying it in one place."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.scheduling import BatchingExecutor
from mcp2026ai.scheduling.gil import SWITCH_INTERVAL
from mcp2026ai.scheduling.host import FULL_COLLECTION_AFTER, HostTuning, apply_host_tuning, settle_startup_heap
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer


@pytest.fixture()
def interpreter_state() -> Iterator[None]:
    """Put the collector and the switch back as they were, whatever a test applied."""
    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    apply_host_tuning(HostTuning())
    assert sys.getswitchinterval() == interval


def test_every_knob_is_off_by_default_and_off_changes_nothing(interpreter_state: None) -> None:
    assert ServerConfig().host_tuning == HostTuning() and HostTuning().changes() == {}
    threshold, interval, frozen = gc.get_threshold(), sys.getswitchinterval(), gc.get_freeze_count()
    apply_host_tuning(HostTuning())
    settle_startup_heap(HostTuning())
    assert (gc.get_threshold(), sys.getswitchinterval(), gc.get_freeze_count()) == (threshold, interval, frozen)
    assert SWITCH_INTERVAL.short_s is None


def test_the_latency_preset_turns_on_what_the_overload_measured_and_fields_override_it() -> None:
    latency = HostTuning(preset="latency")
    assert latency.changes() == {
        "gil_switch_interval_ms": 0.5,
        "bulk_batch_nice": 10,
        "freeze_startup_heap": True,
        "full_collection_after": FULL_COLLECTION_AFTER,
        "lone_session_plan": True,
    }
    assert HostTuning.model_validate("latency") == latency  # a bare preset name, as a config file may say
    tuned = HostTuning.model_validate({"preset": "latency", "bulk_batch_nice": None, "lone_session_plan": False})
    assert tuned.bulk_batch_nice is None and not tuned.lone_session_plan and tuned.freeze_startup_heap
    assert HostTuning.model_validate_json(latency.model_dump_json()) == latency  # a dump reads back the same


def test_a_bad_knob_or_preset_is_refused() -> None:
    with pytest.raises(ValidationError, match="preset"):
        HostTuning.model_validate({"preset": "fastest"})
    with pytest.raises(ValidationError, match="extra"):
        HostTuning.model_validate({"gil_interval": 1})
    with pytest.raises(ValidationError, match="bulk_batch_nice"):
        HostTuning(bulk_batch_nice=0)


def test_applied_the_collector_and_the_switch_change_as_asked(interpreter_state: None) -> None:
    young, middle, _ = gc.get_threshold()
    tuning = HostTuning(preset="latency")
    apply_host_tuning(tuning)
    assert gc.get_threshold() == (young, middle, FULL_COLLECTION_AFTER)
    assert SWITCH_INTERVAL.short_s == pytest.approx(0.0005)
    settle_startup_heap(tuning)
    assert gc.get_freeze_count() > 0  # modules, models and sessions out of the collector's reach


def test_every_entry_point_applies_it_where_it_builds_its_plane(
    registry: ModelRegistry, mlp_path: Path, interpreter_state: None
) -> None:
    """`mcp serve`, its workers, Ray replicas and the test servers all build their plane in app.build_plane,
    and load in app.load_models: the tuning is applied there, the heap settled once the models are loaded."""
    registry.register("mlp", mlp_path)
    config = ServerConfig(http_port=0, grpc_port=0, host_tuning=HostTuning(preset="latency", lone_session_plan=False))
    with BackgroundServer(registry, ["mlp"], config) as server:
        assert SWITCH_INTERVAL.short_s == pytest.approx(0.0005)
        assert gc.get_threshold()[2] == FULL_COLLECTION_AFTER and gc.get_freeze_count() > 0
        executor = server.plane.models.get("mlp").executor
        assert isinstance(executor, BatchingExecutor) and executor.config.bulk_nice == 10

"""The mirror never delays or changes the primary; real onnxruntime sessions on both sides."""

import asyncio
from collections.abc import Mapping

import numpy as np
import pytest

from mcp2026ai.errors import InferenceFailedError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing.diff import Observation, ShadowDiff
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.report import ShadowKey
from mcp2026ai.routing.shadow import ShadowMirror
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend

KEY = ShadowKey("clf", "1.0.0", "1.1.0")
INPUTS = {"x": np.arange(8, dtype=np.float32).reshape(2, 4) / 8}


class Collector:
    def __init__(self) -> None:
        self.diffs: list[ShadowDiff] = []
        self.drops = 0

    def add(self, key: ShadowKey, diff: ShadowDiff) -> None:
        assert key == KEY
        self.diffs.append(diff)

    def dropped(self, key: ShadowKey) -> None:
        self.drops += 1


def backend(registry: ModelRegistry, version: str) -> OnnxRuntimeBackend:
    record = registry.resolve("clf", version)
    runtime = OnnxRuntimeBackend(registry.artifact_path(record), record.signature)
    runtime.load()
    return runtime


async def serve(mirror: ShadowMirror, primary: OnnxRuntimeBackend, shadow_call: object) -> dict[str, np.ndarray]:
    """What the data plane does: run the primary, hand it to the mirror, return the primary."""
    outputs = await asyncio.to_thread(primary.infer, INPUTS)
    mirror.mirror(KEY, Observation(Outcome.OK, 3.0, outputs), shadow_call)  # type: ignore[arg-type]
    return outputs


def test_shadow_diff_of_two_real_versions(registry: ModelRegistry) -> None:
    primary, shadow = backend(registry, "1.0.0"), backend(registry, "1.1.0")
    sink = Collector()

    async def scenario() -> dict[str, np.ndarray]:
        mirror = ShadowMirror(sink)
        outputs = await serve(mirror, primary, lambda: asyncio.to_thread(shadow.infer, INPUTS))
        await mirror.drain(timeout_s=30)
        return outputs

    outputs = asyncio.run(scenario())
    np.testing.assert_array_equal(outputs["scores"], primary.infer(INPUTS)["scores"])
    [diff] = sink.diffs
    [scores] = diff.outputs
    expected = shadow.infer(INPUTS)["scores"].astype(np.float64) - outputs["scores"]
    assert diff.status_match and scores.comparable
    assert scores.max_abs_diff == pytest.approx(float(np.abs(expected).max()))
    assert scores.max_abs_diff > 0 and scores.top1_rows == 2


def test_failing_shadow_does_not_affect_primary(registry: ModelRegistry) -> None:
    primary = backend(registry, "1.0.0")
    sink = Collector()

    async def broken() -> Mapping[str, np.ndarray]:
        raise InferenceFailedError("shadow crashed")

    async def scenario() -> tuple[dict[str, np.ndarray], ShadowMirror]:
        mirror = ShadowMirror(sink)
        outputs = await serve(mirror, primary, broken)
        await mirror.drain(timeout_s=30)
        return outputs, mirror

    outputs, mirror = asyncio.run(scenario())
    np.testing.assert_array_equal(outputs["scores"], primary.infer(INPUTS)["scores"])
    assert mirror.stats.shadow_failures == 1
    assert sink.diffs[0].shadow is Outcome.SERVER_ERROR and not sink.diffs[0].status_match


def test_hanging_shadow_does_not_delay_primary(registry: ModelRegistry) -> None:
    primary = backend(registry, "1.0.0")
    sink = Collector()
    release = asyncio.Event()

    async def hangs() -> Mapping[str, np.ndarray]:
        await release.wait()
        return {"scores": np.zeros((2, 3), np.float32)}

    async def scenario() -> None:
        mirror = ShadowMirror(sink)
        outputs = await serve(mirror, primary, hangs)
        # The primary came back while the shadow is still waiting: nothing awaited it.
        assert mirror.in_flight == 1 and not release.is_set() and sink.diffs == []
        np.testing.assert_array_equal(outputs["scores"], primary.infer(INPUTS)["scores"])
        await mirror.drain(timeout_s=0.01)  # shutdown cancels what never finished
        assert mirror.in_flight == 0

    asyncio.run(scenario())


def test_at_capacity_mirrors_are_dropped_not_queued() -> None:
    sink = Collector()

    async def scenario() -> ShadowMirror:
        gate = asyncio.Event()

        async def waits() -> Mapping[str, np.ndarray]:
            await gate.wait()
            return {}

        mirror = ShadowMirror(sink, max_in_flight=2)
        primary = Observation(Outcome.OK, 1.0, {})
        results = [mirror.mirror(KEY, primary, waits) for _ in range(4)]
        assert results == [True, True, False, False]
        gate.set()
        await mirror.drain(timeout_s=5)
        return mirror

    mirror = asyncio.run(scenario())
    assert (mirror.stats.scheduled, mirror.stats.completed, mirror.stats.dropped, sink.drops) == (2, 2, 2, 2)


def test_a_failing_sink_is_contained() -> None:
    class Broken:
        def add(self, key: ShadowKey, diff: ShadowDiff) -> None:
            raise RuntimeError("sink down")

        def dropped(self, key: ShadowKey) -> None:
            raise RuntimeError("sink down")

    async def ok() -> Mapping[str, np.ndarray]:
        return {}

    async def scenario() -> ShadowMirror:
        mirror = ShadowMirror(Broken(), max_in_flight=1)
        assert mirror.mirror(KEY, Observation(Outcome.OK, 1.0, {}), ok)
        assert not mirror.mirror(KEY, Observation(Outcome.OK, 1.0, {}), ok)
        await mirror.drain(timeout_s=5)
        return mirror

    assert asyncio.run(scenario()).stats.sink_failures == 2

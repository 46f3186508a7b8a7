"""A tensor model whose circuit is open and whose fallback model is not served: one clear error (503,
naming the fallback), not a 404 for a model the caller never asked for."""

import asyncio

import numpy as np
import pytest

from mcp2026ai.dataplane.gate import AcceptGate
from mcp2026ai.dataplane.inference import InferenceHandlers
from mcp2026ai.errors import ModelNotReadyError
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing import BreakerSpec, RolloutConfig
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.serving.executors import direct_executor
from mcp2026ai.serving.models import ServedModels


def test_an_open_circuit_with_an_unserved_fallback_is_a_503_naming_it(registry: ModelRegistry) -> None:
    async def scenario() -> None:
        models = ServedModels(registry, executor_factory=direct_executor)
        await models.load("clf")
        traffic = TrafficController(registry)
        breaker = BreakerSpec(min_requests=2, failure_rate=0.5, cooldown_s=300)
        traffic.manager.set(RolloutConfig(name="clf", fallback_model="clf-small", breaker=breaker))
        circuit = traffic.breakers.get("clf", "1.0.0", breaker)
        for _ in range(3):  # the stable version fails: its circuit opens
            circuit.record(False)
        handlers = InferenceHandlers(models, traffic, AcceptGate())
        request = InferenceRequest("clf", {"x": np.ones((1, 4), np.float32)})
        with pytest.raises(ModelNotReadyError, match="fallback model 'clf-small' is not served"):
            await handlers.infer(request)
        await models.load("clf-small")
        answer = await handlers.infer(InferenceRequest("clf", {"x": np.ones((1, 4), np.float32)}))
        assert answer.outputs  # served by the fallback once it is loaded

    asyncio.run(scenario())

"""Load shedding is not a fault of the version: it never opens a circuit."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.errors import (
    DeadlineExceededError,
    InferenceFailedError,
    InvalidInputError,
    MCPError,
    ModelNotReadyError,
    OverloadedError,
)
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing.breaker import BreakerState
from mcp2026ai.routing.outcome import Outcome, classify
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.routing.window import SlidingWindow
from tests.support.clock import FakeClock


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (None, Outcome.OK),
        (OverloadedError("best-effort queue is full", 1.0), Outcome.SHED),
        (DeadlineExceededError("request timeout expired"), Outcome.SHED),
        (InvalidInputError("bad shape"), Outcome.CLIENT_ERROR),
        (ModelNotReadyError("not loaded"), Outcome.SERVER_ERROR),
        (InferenceFailedError("onnxruntime failed"), Outcome.SERVER_ERROR),
    ],
)
def test_classify(error: MCPError | None, outcome: Outcome) -> None:
    assert classify(error) is outcome


def test_shed_requests_count_as_errors_but_not_server_errors() -> None:
    window = SlidingWindow(span_s=10)
    for outcome in (Outcome.OK, Outcome.SHED, Outcome.SHED, Outcome.CLIENT_ERROR, Outcome.SERVER_ERROR):
        window.add(1.0, outcome)
    figures = window.counts(1.0)
    assert (figures.requests, figures.errors, figures.server_errors) == (5, 4, 1)


def _observe(traffic: TrafficController, error: MCPError | None) -> None:
    request = InferenceRequest(model="clf", inputs={"x": np.ones((1, 4), np.float32)})
    choice = traffic.choose(request, "1.0.0")
    traffic.observe(choice, "clf", "1.0.0", error, 1.0)


def test_overload_rejections_never_open_the_circuit(registry: ModelRegistry, clock: FakeClock) -> None:
    traffic = TrafficController(registry, clock)
    for _ in range(100):
        _observe(traffic, OverloadedError("best-effort queue is full", 1.0))
        _observe(traffic, DeadlineExceededError("request timeout expired"))
    assert traffic.breakers.states().get(("clf", "1.0.0"), BreakerState.CLOSED) is BreakerState.CLOSED
    for _ in range(20):  # real faults still open it (20 requests, all failed)
        _observe(traffic, InferenceFailedError("onnxruntime failed"))
    assert traffic.breakers.states()[("clf", "1.0.0")] is BreakerState.OPEN

from collections import Counter

import numpy as np
import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.observability.metrics import REGISTRY
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.router import RouteDecision, Router, RouteReason, bucket, count_route

CONFIG = RolloutConfig(name="clf", stable="1.0.0", canary="1.1.0", weight=20)


def request(user: str | None = None, *, version: str | None = None, header: str | None = None) -> InferenceRequest:
    headers = {}
    if user is not None:
        headers["x-user-id"] = user
    if header is not None:
        headers["x-model-version"] = header
    return InferenceRequest(model="clf", inputs={"x": np.zeros((1, 4), np.float32)}, version=version, headers=headers)


def never() -> float:
    raise AssertionError("the random source must not be consulted")


def test_sticky_per_user_across_calls() -> None:
    router = Router(never)
    for user in (f"user-{i}" for i in range(200)):
        first = router.route(request(user), CONFIG)
        assert all(router.route(request(user), CONFIG) == first for _ in range(3))
        expected = "1.1.0" if bucket("clf", user) < 20 else "1.0.0"
        assert first.version == expected


def test_weight_share_over_many_users() -> None:
    router = Router(never)
    counts = Counter(router.route(request(f"user-{i}"), CONFIG).reason for i in range(10_000))
    assert 1800 <= counts[RouteReason.CANARY] <= 2200, counts
    assert counts[RouteReason.CANARY] + counts[RouteReason.STABLE] == 10_000


@pytest.mark.parametrize("weight", [0, 100])
def test_weight_bounds(weight: int) -> None:
    config = CONFIG.model_copy(update={"weight": weight})
    versions = {Router(never).route(request(f"u{i}"), config).version for i in range(500)}
    assert versions == ({"1.0.0"} if weight == 0 else {"1.1.0"})


def test_request_id_is_the_key_without_a_user_header() -> None:
    router = Router(never)
    ids = [InferenceRequest(model="clf", inputs={}, id=f"req-{i}") for i in range(2000)]
    canary = sum(router.route(req, CONFIG).version == "1.1.0" for req in ids)
    assert canary == sum(bucket("clf", f"req-{i}") < 20 for i in range(2000))
    assert 300 <= canary <= 500


def test_header_and_url_force_the_version() -> None:
    router = Router(never)
    user_in_stable = next(f"u{i}" for i in range(1000) if bucket("clf", f"u{i}") >= 20)
    assert router.route(request(user_in_stable, header="1.1"), CONFIG) == RouteDecision("1.1.0", RouteReason.HEADER)
    pinned = router.route(request(user_in_stable, version="1.2.0", header="1.1.0"), CONFIG)
    assert pinned == RouteDecision("1.2.0", RouteReason.PINNED)
    assert router.route(request(header="1.2.0"), None) == RouteDecision("1.2.0", RouteReason.HEADER)


def test_no_rollout_means_the_default_version() -> None:
    assert Router(never).route(request("u"), None) == RouteDecision(None, RouteReason.DEFAULT)


def test_bad_version_header_is_a_caller_error() -> None:
    with pytest.raises(InvalidArgumentError, match="X-Model-Version header 'latest' is not a semantic version"):
        Router(never).route(request(header="latest"), CONFIG)


def test_shadow_sampling_uses_the_random_source() -> None:
    config = CONFIG.model_copy(update={"shadow": "1.2.0", "shadow_percent": 10.0})
    draws = iter([0.05, 0.5, 0.0999, 0.1])
    router = Router(lambda: next(draws))
    shadows = [router.route(request(f"u{i}"), config).shadow_version for i in range(4)]
    assert shadows == ["1.2.0", None, "1.2.0", None]


def test_no_shadow_of_a_request_already_served_by_the_shadow() -> None:
    config = CONFIG.model_copy(update={"shadow": "1.2.0", "shadow_percent": 100.0})
    router = Router(lambda: 0.0)
    assert router.route(request(header="1.2.0"), config).shadow_version is None
    assert router.route(request("u"), config).shadow_version == "1.2.0"


def test_bucket_is_stable_and_salted_by_model() -> None:
    assert bucket("clf", "alice") == bucket("clf", "alice")
    assert all(0 <= bucket("clf", f"k{i}") < 100 for i in range(500))
    assert [bucket("a", f"k{i}") for i in range(50)] != [bucket("b", f"k{i}") for i in range(50)]


def test_count_route_metric() -> None:
    labels = {"model": "clf-metric", "version": "1.1.0", "reason": "canary"}
    before = REGISTRY.get_sample_value("mcp_route_decisions_total", labels) or 0.0
    count_route("clf-metric", RouteDecision("1.1.0", RouteReason.CANARY), "1.1.0")
    assert REGISTRY.get_sample_value("mcp_route_decisions_total", labels) == before + 1

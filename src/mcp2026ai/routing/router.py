"""Pick the version that serves a request: pinned, forced by header, canary or stable; plus shadow.

:meth:`Router.route` is pure: the same request, config and random draw give the same decision.
Canary membership is sticky: ``bucket(model, user key) < weight`` where the bucket is a stable hash
of the user key mod 100 and the user key is the ``X-User-Id`` header, else the request id.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.observability.metrics import ROUTE_DECISIONS, child
from mcp2026ai.registry.versioning import SemVer
from mcp2026ai.routing.config import RolloutConfig

USER_HEADER = "x-user-id"
VERSION_HEADER = "x-model-version"


class RouteReason(StrEnum):
    PINNED = "pinned"
    """The URL named the version (``/v2/models/{name}/versions/{v}``)."""
    HEADER = "header"
    """The ``X-Model-Version`` header named it."""
    CANARY = "canary"
    STABLE = "stable"
    DEFAULT = "default"
    """No rollout for the model: the registry's default version (``version`` is None)."""


@dataclass(frozen=True)
class RouteDecision:
    version: str | None
    """The version to serve; None means the registry's default version."""
    reason: RouteReason
    shadow_version: str | None = None
    """Also mirror this request to that version (fire-and-forget), or None."""


class Router:
    """Stateless version choice; ``random`` returns floats in [0, 1) and decides shadow sampling."""

    def __init__(self, random_source: Callable[[], float] = random.random) -> None:
        self._random = random_source

    def route(self, request: InferenceRequest, config: RolloutConfig | None) -> RouteDecision:
        version, reason = self._primary(request, config)
        return RouteDecision(version, reason, self._shadow(version, config))

    def _primary(self, request: InferenceRequest, config: RolloutConfig | None) -> tuple[str | None, RouteReason]:
        if request.version:
            return _normalized(request.version, "version"), RouteReason.PINNED
        header = request.headers.get(VERSION_HEADER, "").strip()
        if header:
            return _normalized(header, "X-Model-Version header"), RouteReason.HEADER
        if config is None:
            return None, RouteReason.DEFAULT
        if config.canary_active and bucket(config.name, user_key(request)) < config.weight:
            return config.canary, RouteReason.CANARY
        return config.stable, RouteReason.STABLE

    def _shadow(self, version: str | None, config: RolloutConfig | None) -> str | None:
        if config is None or config.shadow is None or config.shadow == version or config.shadow_percent <= 0:
            return None
        return config.shadow if self._random() * 100.0 < config.shadow_percent else None


def user_key(request: InferenceRequest) -> str:
    return request.headers.get(USER_HEADER, "").strip() or request.id


def bucket(model: str, key: str) -> int:
    """0..99, stable across processes and releases (blake2b, salted with the model name)."""
    digest = hashlib.blake2b(f"{model}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 100


def count_route(model: str, decision: RouteDecision, version: str) -> None:
    """Count a decision once the caller has resolved the concrete ``version`` it serves."""
    child(ROUTE_DECISIONS, model, version, decision.reason.value).inc()


def _normalized(text: str, what: str) -> str:
    try:
        return str(SemVer.parse(text))
    except InvalidArgumentError:
        raise InvalidArgumentError(f"{what} {text!r} is not a semantic version like 1.2.0") from None

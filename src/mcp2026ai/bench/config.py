"""What a bench run was asked to do: target, load shape, tensors; validated, with bounds.

The target URL may be a base (``http://host:8080``, ``host:8081``) or an infer URL
(``http://host:8080/infer``, ``http://host:8080/v2/models/mlp/infer``): the base is kept, and a model
named in the path is used when ``--model`` is not given.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp2026ai.errors import InvalidArgumentError

Protocol = Literal["http", "grpc"]
MAX_REQUESTS = 10_000_000
MAX_CONCURRENCY = 10_000
MAX_DURATION_S = 24 * 3600.0

_MODEL_IN_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?/infer/?$")
_SHAPE = re.compile(r"^([^:]+):(\d+(?:,\d+)*)$")


class Target(BaseModel):
    """Where to send requests: host, port and (optionally) the model the URL names."""

    model_config = ConfigDict(frozen=True)

    host: str
    port: int
    model: str | None = None
    version: str | None = None


def parse_target(url: str, protocol: Protocol) -> Target:
    """``-u``: base or infer URL, with or without scheme; the default port is 8080 (HTTP) / 8081 (gRPC)."""
    text = url.strip()
    if "://" not in text:
        text = f"{protocol}://{text}"
    parts = urlsplit(text)
    if parts.scheme not in ("http", "grpc") or not parts.hostname:
        raise InvalidArgumentError(f"-u {url!r}: expected host:port or http://host:port[/v2/models/M/infer]")
    try:
        port = parts.port or (8080 if protocol == "http" else 8081)
    except ValueError:
        raise InvalidArgumentError(f"-u {url!r}: the port is not a number in 0-65535") from None
    match = _MODEL_IN_PATH.search(parts.path)
    model, version = (match.group(1), match.group(2)) if match else (None, None)
    return Target(host=parts.hostname, port=port, model=model, version=version)


def parse_shapes(items: list[str]) -> dict[str, list[int]]:
    """``--shape name:d1,d2,...`` (repeatable), as perf_analyzer: dims without the batch dimension."""
    shapes: dict[str, list[int]] = {}
    for item in items:
        match = _SHAPE.match(item.strip())
        if match is None:
            raise InvalidArgumentError(f"--shape {item!r}: expected NAME:D1,D2,... with positive integers")
        dims = [int(dim) for dim in match.group(2).split(",")]
        if any(dim <= 0 for dim in dims):
            raise InvalidArgumentError(f"--shape {item!r}: every dimension must be positive")
        shapes[match.group(1)] = dims
    return shapes


class BenchConfig(BaseModel):
    """One bench run. Closed loop unless ``rate`` is set (then Poisson arrivals at that rate)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field("localhost:8080", description="Server base URL or infer URL.")
    protocol: Protocol = Field("http", description="http or grpc.")
    model: str | None = Field(None, description="Model name; default: the URL's, else the only model served.")
    version: str | None = Field(None, description="Model version; default: the server's default.")
    concurrency: int = Field(1, ge=1, le=MAX_CONCURRENCY, description="Closed loop: requests kept in flight.")
    requests: int | None = Field(None, ge=1, le=MAX_REQUESTS, description="Requests to send in total.")
    rate: float | None = Field(None, gt=0, le=1e6, description="Open loop: mean arrivals per second (Poisson).")
    max_in_flight: int = Field(64, ge=1, le=MAX_CONCURRENCY, description="Open loop: connections/requests at most.")
    duration_s: float | None = Field(None, gt=0, le=MAX_DURATION_S, description="Stop sending after this long.")
    batch_size: int = Field(1, ge=1, le=65536, description="Rows per request for batchable models.")
    shapes: dict[str, list[int]] = Field(default_factory=dict, description="Dims (without batch) per input.")
    binary: bool = Field(True, description="Binary tensor data (HTTP extension / gRPC raw) instead of JSON lists.")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers / gRPC metadata to send.")
    timeout_s: float = Field(30.0, gt=0, le=3600, description="Per-request timeout.")
    seed: int = Field(0, description="Seed of input data and Poisson arrivals.")
    start_at_unix: float | None = Field(
        None,
        gt=0,
        description="Begin sending at this Unix time, once the connections are open: clients started together "
        "load the server from the same instant (one whose connections open later begins at once).",
    )

    @model_validator(mode="after")
    def _bounded(self) -> BenchConfig:
        if self.requests is None and self.duration_s is None:
            self.requests = 1000
        return self

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    def target(self) -> Target:
        return parse_target(self.url, self.protocol)

"""KServe v2 over HTTP/REST with httpx: a blocking client and an asyncio one with the same methods.

Both build requests and read replies with the same functions (:mod:`mcp2026ai.protocol.v2_json`
for the bodies, :mod:`mcp2026ai.client.errors` for refusals), so they cannot drift apart::

    with V2HttpClient("http://127.0.0.1:8000") as client:
        response = client.infer("resnet", {"data": batch})
        scores = response.outputs["resnetv17_dense0_fwd"]
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import orjson

from mcp2026ai.client.errors import from_http
from mcp2026ai.errors import MCPError, UnavailableError
from mcp2026ai.inference import InferenceResponse
from mcp2026ai.protocol import v2_json

HEADER_LENGTH = "Inference-Header-Content-Length"


def model_path(model: str, version: str | None = None) -> str:
    return f"/v2/models/{model}/versions/{version}" if version else f"/v2/models/{model}"


@dataclass(frozen=True)
class Call:
    """One prepared HTTP call."""

    method: str
    path: str
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


def infer_call(
    model: str,
    inputs: Mapping[str, np.ndarray],
    outputs: Sequence[str] = (),
    version: str | None = None,
    binary: bool = True,
    headers: Mapping[str, str] | None = None,
) -> Call:
    # binary: every output comes back as raw bytes too (binary_data_output covers the unnamed ones)
    parameters = {"binary_data_output": True} if binary and not outputs else None
    body, header_length = v2_json.encode_request(inputs, outputs, binary, parameters)
    sent = dict(headers or {})
    sent["Content-Type"] = "application/json" if header_length is None else "application/octet-stream"
    if header_length is not None:
        sent[HEADER_LENGTH] = str(header_length)
    return Call("POST", model_path(model, version) + "/infer", body, sent)


def image_call(model: str, image: bytes, top_k: int = 5, version: str | None = None) -> Call:
    document: dict[str, Any] = {"model": model, "image": base64.b64encode(image).decode("ascii"), "top_k": top_k}
    if version:
        document["version"] = version
    return Call("POST", "/v1/infer", orjson.dumps(document), {"Content-Type": "application/json"})


def checked(response: httpx.Response, where: str) -> httpx.Response:
    """The response if it is a success; the domain error the server's refusal stands for otherwise."""
    if response.status_code >= 400:
        raise from_http(response.status_code, response.content, response.headers.get("retry-after"), where)
    return response


def infer_response(response: httpx.Response) -> InferenceResponse:
    return v2_json.decode_response(response.content, response.headers.get(HEADER_LENGTH.lower()))


def _default_headers(token: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    sent = dict(headers or {})
    if token:
        sent["Authorization"] = f"Bearer {token}"
    return sent


def _unreachable(base_url: str, call: Call, error: httpx.TransportError) -> UnavailableError:
    return UnavailableError(f"cannot reach {base_url} ({call.method} {call.path}): {type(error).__name__}: {error}")


class V2HttpClient:
    """Blocking v2 client (one connection pool); every failure is an :class:`MCPError`."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``headers`` go with every request (an SLA class, a tenant)."""
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, headers=_default_headers(token, headers), timeout=timeout_s)

    def send(self, call: Call) -> httpx.Response:
        try:
            response = self._http.request(call.method, call.path, content=call.content, headers=call.headers)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, call, exc) from None
        return checked(response, f"{call.method} {call.path}")

    def _ok(self, path: str) -> bool:
        try:
            return self.send(Call("GET", path)).status_code == 200
        except MCPError:
            return False

    def live(self) -> bool:
        return self._ok("/v2/health/live")

    def ready(self) -> bool:
        return self._ok("/v2/health/ready")

    def model_ready(self, model: str, version: str | None = None) -> bool:
        return self._ok(model_path(model, version) + "/ready")

    def server_metadata(self) -> dict[str, Any]:
        return dict(self.send(Call("GET", "/v2")).json())

    def model_metadata(self, model: str, version: str | None = None) -> dict[str, Any]:
        return dict(self.send(Call("GET", model_path(model, version))).json())

    def model_config(self, model: str, version: str | None = None) -> dict[str, Any]:
        return dict(self.send(Call("GET", model_path(model, version) + "/config")).json())

    def repository_index(self) -> list[dict[str, Any]]:
        return list(self.send(Call("POST", "/v2/repository/index", b"{}")).json())

    def infer(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        outputs: Sequence[str] = (),
        version: str | None = None,
        binary: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> InferenceResponse:
        return infer_response(self.send(infer_call(model, inputs, outputs, version, binary, headers)))

    def predict_image(self, model: str, image: bytes, top_k: int = 5, version: str | None = None) -> dict[str, Any]:
        """``POST /v1/infer``: an encoded image in, the model's top-k classes out."""
        return dict(self.send(image_call(model, image, top_k, version)).json())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> V2HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncV2HttpClient:
    """The asyncio twin of :class:`V2HttpClient`."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``headers`` go with every request (an SLA class, a tenant)."""
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=_default_headers(token, headers), timeout=timeout_s
        )

    async def send(self, call: Call) -> httpx.Response:
        try:
            response = await self._http.request(call.method, call.path, content=call.content, headers=call.headers)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, call, exc) from None
        return checked(response, f"{call.method} {call.path}")

    async def _ok(self, path: str) -> bool:
        try:
            return (await self.send(Call("GET", path))).status_code == 200
        except MCPError:
            return False

    async def live(self) -> bool:
        return await self._ok("/v2/health/live")

    async def ready(self) -> bool:
        return await self._ok("/v2/health/ready")

    async def model_ready(self, model: str, version: str | None = None) -> bool:
        return await self._ok(model_path(model, version) + "/ready")

    async def model_metadata(self, model: str, version: str | None = None) -> dict[str, Any]:
        return dict((await self.send(Call("GET", model_path(model, version)))).json())

    async def model_config(self, model: str, version: str | None = None) -> dict[str, Any]:
        return dict((await self.send(Call("GET", model_path(model, version) + "/config"))).json())

    async def repository_index(self) -> list[dict[str, Any]]:
        return list((await self.send(Call("POST", "/v2/repository/index", b"{}"))).json())

    async def infer(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        outputs: Sequence[str] = (),
        version: str | None = None,
        binary: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> InferenceResponse:
        return infer_response(await self.send(infer_call(model, inputs, outputs, version, binary, headers)))

    async def predict_image(
        self, model: str, image: bytes, top_k: int = 5, version: str | None = None
    ) -> dict[str, Any]:
        return dict((await self.send(image_call(model, image, top_k, version))).json())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncV2HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

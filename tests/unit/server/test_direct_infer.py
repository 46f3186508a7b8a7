"""The direct v2 infer route (server/http/direct.py): which requests it takes, and that its answers
are the ones the Starlette app would give (status, v2 error JSON, gzip)."""

from __future__ import annotations

import asyncio
import gzip
import logging

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp2026ai.errors import NotFoundError
from mcp2026ai.server.http.direct import DirectInfer
from mcp2026ai.server.http.paths import infer_target

SEEN: list[dict[str, str]] = []


async def echo_infer(request: Request) -> Response:
    SEEN.append(dict(request.path_params))
    if request.path_params["model"] == "missing":
        raise NotFoundError("model 'missing' is not served")
    if request.path_params["model"] == "broken":
        raise RuntimeError("a bug")
    return JSONResponse({"model": request.path_params["model"], "data": [0.5] * (await request.body())[0]})


async def starlette_route(request: Request) -> Response:
    return JSONResponse({"route": "starlette"})


APP = Starlette(routes=[Route("/{path:path}", starlette_route, methods=["GET", "POST"])])


def call(method: str, path: str, **kwargs: object) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=DirectInfer(APP, echo_infer, gzip_minimum_bytes=100))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, path, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(send())


IDENTITY = {"accept-encoding": "identity"}


def test_infer_paths_are_recognised_with_and_without_a_version() -> None:
    assert infer_target("/v2/models/m/infer") == ("m", None)
    assert infer_target("/v2/models/m/versions/3/infer") == ("m", "3")
    for other in ("/v2/models/m", "/v2/models/m/ready", "/v2/models//infer", "/v2/models/a/b/infer", "/infer"):
        assert infer_target(other) is None, other


def test_a_post_to_an_infer_path_goes_straight_to_the_handler_with_its_path_parameters() -> None:
    SEEN.clear()
    answer = call("POST", "/v2/models/m/versions/2/infer", content=b"\x03", headers=IDENTITY)
    assert answer.status_code == 200 and answer.json() == {"model": "m", "data": [0.5] * 3}
    assert SEEN == [{"model": "m", "version": "2"}]
    assert call("POST", "/v2/models/m/infer", content=b"\x01", headers=IDENTITY).json()["model"] == "m"
    assert SEEN[-1] == {"model": "m"}


@pytest.mark.parametrize(("method", "path"), [("GET", "/v2/models/m/infer"), ("POST", "/v2/models/m/ready")])
def test_everything_else_goes_to_the_app(method: str, path: str) -> None:
    SEEN.clear()
    assert call(method, path).json() == {"route": "starlette"}
    assert SEEN == []


def test_a_domain_error_is_answered_with_its_status_and_the_v2_error_json() -> None:
    answer = call("POST", "/v2/models/missing/infer", content=b"\x01")
    assert answer.status_code == 404
    assert answer.json() == {"error": "model 'missing' is not served"}


def test_an_unexpected_error_is_a_logged_500_with_the_v2_error_json(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="mcp2026ai.server.http.errors"):
        answer = call("POST", "/v2/models/broken/infer", content=b"\x01")
    assert answer.status_code == 500
    assert answer.json() == {"error": "internal server error: RuntimeError"}
    assert "unexpected error on POST /v2/models/broken/infer" in caplog.text
    assert "a bug" in caplog.text  # the traceback is in the log, never in the answer


def test_responses_are_gzipped_for_clients_that_accept_it_and_large_enough() -> None:
    async def raw(accept: str, rows: int) -> tuple[dict[str, str], bytes]:
        transport = httpx.ASGITransport(app=DirectInfer(APP, echo_infer, gzip_minimum_bytes=100))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            headers = {"accept-encoding": accept}
            async with client.stream("POST", "/v2/models/m/infer", content=bytes([rows]), headers=headers) as answer:
                return dict(answer.headers), b"".join([chunk async for chunk in answer.aiter_raw()])

    headers, body = asyncio.run(raw("gzip, deflate", 100))
    assert headers["content-encoding"] == "gzip"
    assert gzip.decompress(body).startswith(b'{"model":"m"')
    headers, body = asyncio.run(raw("gzip", 1))  # under the minimum: as is
    assert "content-encoding" not in headers and body.startswith(b'{"model"')
    headers, body = asyncio.run(raw("identity", 100))
    assert "content-encoding" not in headers and body.startswith(b'{"model"')

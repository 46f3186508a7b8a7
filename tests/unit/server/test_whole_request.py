"""plain_post: a read is taken as one whole request only when no parser could frame it differently;
everything else is left to httptools (None)."""

from __future__ import annotations

import httptools
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp2026ai.server.http.connection.whole_request import PlainPost, plain_post

BODY = b'{"inputs": []}'
HOST = ((b"host", b"test"),)


def request(
    headers: str = "", body: bytes = BODY, line: str = "POST /v2/models/m/infer HTTP/1.1", length: str | None = None
) -> bytes:
    framing = f"Content-Length: {len(body) if length is None else length}\r\n"
    return f"{line}\r\nHost: test\r\n{framing}{headers}\r\n".encode("latin-1") + body


class Recorder:
    """What httptools makes of the same bytes: the requests it completes."""

    def __init__(self) -> None:
        self.completed = 0
        self.url = b""

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_message_complete(self) -> None:
        self.completed += 1


def httptools_requests(data: bytes) -> int:
    recorder = Recorder()
    httptools.HttpRequestParser(recorder).feed_data(data)
    return recorder.completed


def test_a_whole_plain_post_gives_its_path_class_and_credentials() -> None:
    data = request("X-SLA-Class:  best-effort \r\nAuthorization: Bearer abc\r\nContent-Type: application/json\r\n")
    assert plain_post(data) == PlainPost("/v2/models/m/infer", b"best-effort", b"Bearer abc", HOST)
    assert httptools_requests(data) == 1


def test_header_names_are_matched_without_regard_to_case() -> None:
    data = request("x-sla-CLASS: latency-critical\r\n").replace(b"Content-Length", b"CONTENT-length")
    assert plain_post(data) == PlainPost("/v2/models/m/infer", b"latency-critical", None, HOST)


def test_absent_or_repeated_class_and_credentials_are_none() -> None:
    assert plain_post(request()) == PlainPost("/v2/models/m/infer", None, None, HOST)
    repeated = request("X-SLA-Class: best-effort\r\nX-SLA-Class: latency-critical\r\n")
    assert plain_post(repeated) == PlainPost("/v2/models/m/infer", None, None, HOST)


def test_the_site_guards_headers_come_along_and_a_repeated_one_is_left_to_the_parser() -> None:
    data = request("Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n")
    expected = (*HOST, (b"origin", b"http://evil.example"), (b"sec-fetch-site", b"cross-site"))
    assert plain_post(data) == PlainPost("/v2/models/m/infer", None, None, expected)
    assert plain_post(request("Origin: http://a.example\r\nOrigin: http://b.example\r\n")) is None
    assert plain_post(request("Host: other\r\n")) is None


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(request(line="GET /v2/models/m/infer HTTP/1.1"), id="not POST"),
        pytest.param(request(line="POST /v2/models/m/infer HTTP/1.0"), id="HTTP/1.0"),
        pytest.param(request(line="POST /v2/models/m/infer?x=1 HTTP/1.1"), id="query"),
        pytest.param(request(line="POST /v2/models/m%20n/infer HTTP/1.1"), id="percent-encoded"),
        pytest.param(request(line="POST http://host/v2/models/m/infer HTTP/1.1"), id="absolute form"),
        pytest.param(request(line="POST /v2/models/m/infer  HTTP/1.1"), id="two spaces"),
        pytest.param(request("Transfer-Encoding: chunked\r\n"), id="transfer-encoding"),
        pytest.param(request("Expect: 100-continue\r\n"), id="expect"),
        pytest.param(request("Connection: close\r\n"), id="connection"),
        pytest.param(request("Upgrade: websocket\r\n"), id="upgrade"),
        pytest.param(request("Content-Length: 14\r\n"), id="two content-lengths"),
        pytest.param(request(length="+14"), id="signed length"),
        pytest.param(request(length="14, 14"), id="list length"),
        pytest.param(request(length="15"), id="body shorter than announced"),
        pytest.param(request(length="13"), id="bytes after the body"),
        pytest.param(request() + request(), id="pipelined"),
        pytest.param(request("X-A: 1\r\n folded\r\n"), id="folded line"),
        pytest.param(request("X-A: 1\nX-B: 2\r\n"), id="bare LF"),
        pytest.param(request("X-A: 1\rX-B: 2\r\n"), id="bare CR"),
        pytest.param(request("X-A : 1\r\n"), id="blank before the colon"),
        pytest.param(request("X-A: \x01\r\n"), id="control character"),
        pytest.param(request()[:30], id="headers not complete"),
        pytest.param(b"POST /v2/models/m/infer HTTP/1.1\r\n\r\n", id="no content-length"),
    ],
)
def test_anything_but_one_whole_plain_post_is_left_to_the_parser(data: bytes) -> None:
    assert plain_post(data) is None


def test_the_header_block_is_searched_only_so_far() -> None:
    padding = "".join(f"X-Pad-{n}: {'a' * 100}\r\n" for n in range(200))  # 21 KB of headers
    assert plain_post(request(padding)) is None


HEADER_LINES = st.sampled_from(
    [
        "Content-Length: 14",
        "content-length: 13",
        "Content-Length: 14, 14",
        "X-SLA-Class: best-effort",
        "x-sla-class:latency-critical ",
        "Authorization: Bearer t",
        "Transfer-Encoding: chunked",
        "Connection: keep-alive",
        "Content-Type: application/json",
        " folded",
        "X-A: \t1",
        "X-B:",
        "Bad Name: 1",
        "X-C: caf\xe9",
    ]
)
LINE_ENDS = st.sampled_from(["\r\n"] * 6 + ["\n", "\r"])


@settings(max_examples=500, deadline=None)
@given(
    line=st.sampled_from(["POST /v2/models/m/infer HTTP/1.1", "POST /a/b HTTP/1.1", "POST / HTTP/1.1"]),
    before=st.lists(st.tuples(HEADER_LINES, LINE_ENDS), max_size=3),
    after=st.lists(st.tuples(HEADER_LINES, LINE_ENDS), max_size=3),
    body=st.sampled_from([BODY, BODY[:13], BODY + b"x", BODY + b"POST / HTTP/1.1\r\n\r\n"]),
)
def test_what_plain_post_takes_httptools_frames_as_that_one_request(
    line: str, before: list[tuple[str, str]], after: list[tuple[str, str]], body: bytes
) -> None:
    """Header blocks around a correct Content-Length, some of them odd: whenever plain_post takes the
    bytes, httptools reads exactly one request with that path from them, and nothing else."""
    lines = [*before, (f"Content-Length: {len(BODY)}", "\r\n"), *after]
    data = (line + "\r\n" + "".join(text + end for text, end in lines) + "\r\n").encode("latin-1") + body
    found = plain_post(data)
    if found is None:
        return
    recorder = Recorder()
    httptools.HttpRequestParser(recorder).feed_data(data)  # raises on what it would refuse
    assert recorder.completed == 1 and recorder.url.decode() == found.path

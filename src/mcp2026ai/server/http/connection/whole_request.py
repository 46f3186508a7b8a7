"""Recognising a read that holds exactly one plain ``POST`` request, without an HTTP parser's callbacks.

Under overload most requests are refused from their headers (early.py), and for those the work of
uvicorn's protocol is most of the cost: a Python callback per header, the ASGI scope, a request cycle
with its event, a keep-alive timer, each touching per-connection objects that thousands of connections
have long evicted from the CPU's caches. A refusal needs only the path, the SLA class and the
credentials, so :func:`plain_post` finds them with a few byte searches when, and only when, the read is
one whole request whose framing no parser could read differently:

- the request line is ``POST <path> HTTP/1.1`` with a path of plain characters (no query, no
  percent-encoding, no spaces);
- the header block ends in the read, every line of it is ``name: value`` by RFC 9110's syntax (no
  folded lines, no bare CR or LF, no control characters), and it names none of
  ``Transfer-Encoding``, ``Expect``, ``Connection`` or ``Upgrade``;
- exactly one ``Content-Length``, all digits, and the read holds exactly that many bytes after the
  header block (nothing pipelined behind it, nothing still to come);
- at most one each of ``Host``, ``Origin`` and ``Sec-Fetch-Site`` (what the site guard reads: they
  come along as :attr:`PlainPost.site_headers`).

Anything else returns None and goes to httptools as before (the HTTP protocol feeds it the same
bytes), so this only ever decides for requests that httptools would frame the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_START = b"POST /"
_VERSION = b" HTTP/1.1"
_HEAD_END = b"\r\n\r\n"
_MAX_HEAD = 16 * 1024
_PATH = re.compile(rb"/[!$&-\x3e@-~]*")
"""An origin-form path of printable ASCII without a query, a fragment, percent-encoding or quotes."""
_SITE_HEADERS = (b"host", b"origin", b"sec-fetch-site")
_HEADER_LINES = re.compile(rb"(?:\r\n[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*)*\r\n")
"""CRLF, then lines of ``token: value`` each followed by CRLF: RFC 9110's field syntax, so no folded
line, no bare CR or LF, no control character and no blank before the colon."""


@dataclass(frozen=True, slots=True)
class PlainPost:
    """The parts of a whole plain POST that refusing it needs."""

    path: str
    sla_class: bytes | None
    authorization: bytes | None
    site_headers: tuple[tuple[bytes, bytes], ...] = ()
    """``Host``, ``Origin`` and ``Sec-Fetch-Site`` as given (lower-case names), for the site guard."""


def plain_post(data: bytes) -> PlainPost | None:
    """The request's path and headers when ``data`` is exactly one plain, complete POST; None otherwise."""
    if not data.startswith(_LINE_START):
        return None
    head_end = data.find(_HEAD_END, 0, _MAX_HEAD)
    line_end = data.find(b"\r\n", 0, head_end + 1)
    if head_end < 0 or not data.endswith(_VERSION, 0, line_end):
        return None
    path = data[5 : line_end - len(_VERSION)]
    if _PATH.fullmatch(path) is None:
        return None
    head = data[line_end : head_end + 2]  # "\r\n" + each header line + "\r\n"
    lowered = head.lower()
    if _HEADER_LINES.fullmatch(head) is None or _names_framing(lowered):
        return None
    length = _single_value(head, lowered, b"\r\ncontent-length:")
    if length is None or not length.isdigit() or len(data) - head_end - 4 != int(length):
        return None
    site_headers = []
    for name in _SITE_HEADERS:
        found = lowered.count(b"\r\n" + name + b":")
        if found > 1:
            return None
        if found:
            site_headers.append((name, _single_value(head, lowered, b"\r\n" + name + b":") or b""))
    return PlainPost(
        path=path.decode("ascii"),
        sla_class=_single_value(head, lowered, b"\r\nx-sla-class:"),
        authorization=_single_value(head, lowered, b"\r\nauthorization:"),
        site_headers=tuple(site_headers),
    )


def _names_framing(lowered: bytes) -> bool:
    """A header that changes how the message is framed or answered (the full parser handles those)."""
    return (
        b"\ntransfer-encoding:" in lowered
        or b"\nexpect:" in lowered
        or b"\nconnection:" in lowered
        or b"\nupgrade:" in lowered
    )


def _single_value(head: bytes, lowered: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (given with its leading CRLF), without surrounding blanks; None when
    it is absent or given more than once (the full parser decides those)."""
    start = lowered.find(name)
    if start < 0 or lowered.find(name, start + 1) >= 0:
        return None
    value_start = start + len(name)
    return head[value_start : head.index(b"\r\n", value_start)].strip(b" \t")

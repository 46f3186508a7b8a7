"""Model files registered from a URL: ``s3://bucket/key`` (or ``s3://bucket/prefix/`` for a folder,
such as a Hugging Face model) and ``https://...`` are downloaded to a local folder, then imported,
hashed and stored like any file. Locations are quoted only as :func:`redacted_url` writes them.

Plain ``http://`` is accepted for loopback hosts only (a local mirror, the tests).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from mcp2026ai.errors import InvalidArgumentError, NotFoundError, UnavailableError
from mcp2026ai.registry.artifacts.s3_client import S3Location, s3_call, s3_client
from mcp2026ai.registry.redaction import redacted_url
from mcp2026ai.security.paths import confined_path

Progress = Callable[[int, int | None], None]
"""``progress(bytes_so_far, total_or_None)``."""

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_CHUNK = 1 << 20


def is_remote(source: str) -> bool:
    return source.startswith(("s3://", "https://", "http://"))


def download(source: str, folder: Path, progress: Progress | None = None) -> Path:
    """Fetch ``source`` into ``folder``; returns the local file (or folder, for an ``s3://.../`` prefix)."""
    folder.mkdir(parents=True, exist_ok=True)
    report = progress or (lambda done, total: None)
    if source.startswith("s3://"):
        return _from_s3(source, folder, report)
    parts = urlsplit(source)
    _check_scheme(parts.scheme, parts.hostname, source)
    return _from_http(source, folder / _file_name(parts.path, source), report)


def _check_scheme(scheme: str, host: str | None, url: str) -> None:
    """https://, or plain http:// to a loopback host; checked for the URL and for every redirect."""
    if scheme == "http" and host not in _LOOPBACK:
        raise InvalidArgumentError(f"{redacted_url(url)}: use https:// (plain http is for loopback hosts only)")


def _check_hop(request: object) -> None:
    url = request.url  # type: ignore[attr-defined]
    _check_scheme(url.scheme, url.host, str(url))


def _file_name(path: str, source: str) -> str:
    name = PurePosixPath(unquote(path)).name
    if not name or name in {".", ".."}:
        raise InvalidArgumentError(f"{redacted_url(source)}: the URL names no file (expected .../model.onnx)")
    return name


def _from_http(source: str, target: Path, report: Progress) -> Path:
    import httpx

    shown = redacted_url(source)
    try:
        with (
            httpx.Client(timeout=30, follow_redirects=True, event_hooks={"request": [_check_hop]}) as client,
            client.stream("GET", source) as response,
        ):
            if response.status_code == httpx.codes.NOT_FOUND:
                raise NotFoundError(f"{shown}: not found (HTTP 404)")
            if response.status_code != httpx.codes.OK:
                raise UnavailableError(f"{shown}: download refused (HTTP {response.status_code})")
            total = int(response.headers["content-length"]) if "content-length" in response.headers else None
            done = 0
            with target.open("wb") as handle:
                for chunk in response.iter_bytes(_CHUNK):
                    handle.write(chunk)
                    done += len(chunk)
                    report(done, total)
    except httpx.HTTPError as exc:
        raise UnavailableError(f"{shown}: download failed ({type(exc).__name__})") from None
    return target


def _from_s3(source: str, folder: Path, report: Progress) -> Path:
    where = S3Location.parse(source)
    client = s3_client()
    if source.endswith("/"):
        return _s3_folder(client, where, folder / PurePosixPath(where.prefix.rstrip("/")).name, report)
    key = where.prefix.rstrip("/")
    target = folder / _file_name(key, source)
    _s3_object(client, where, key, target, report)
    return target


def _s3_object(client: object, where: S3Location, key: str, target: Path, report: Progress) -> int:
    done = [0]

    def advanced(count: int) -> None:
        done[0] += count
        report(done[0], None)

    with s3_call(where, key, missing_is_error=True, label="source"):
        client.download_file(where.bucket, key, str(target), Callback=advanced)  # type: ignore[attr-defined]
    return done[0]


def _s3_folder(client: object, where: S3Location, folder: Path, report: Progress) -> Path:
    with s3_call(where, where.prefix, missing_is_error=True, label="source"):
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=where.bucket, Prefix=where.prefix)  # type: ignore[attr-defined]
        keys = [str(item["Key"]) for page in pages for item in page.get("Contents", [])]
    if not keys:
        raise NotFoundError(f"{where.url}/: no objects under this prefix")
    targets = {key: confined_path(folder, key.removeprefix(where.prefix), f"{where.url}/: object key") for key in keys}
    for key, target in targets.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        _s3_object(client, where, key, target, report)
    return folder

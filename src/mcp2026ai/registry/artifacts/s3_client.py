"""One boto3 S3 client, ``s3://bucket/prefix`` locations, and boto3's errors as domain errors.

The endpoint and credentials come from boto3's own sources (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, profiles); messages name the bucket, the endpoint
and S3's error code, never a key or a secret.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mcp2026ai.errors import (
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnavailableError,
)
from mcp2026ai.extras import require

_MISSING = {"404", "NoSuchKey", "NotFound"}
_BAD_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "AuthFailure"}
_DENIED = {"AccessDenied", "AllAccessDisabled"}


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str
    """Empty, or ending in ``/``."""

    @classmethod
    def parse(cls, url: str) -> S3Location:
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not url.startswith("s3://") or not bucket:
            raise InvalidArgumentError(f"{url!r} is not an s3://bucket/prefix location")
        prefix = prefix.strip("/")
        return cls(bucket, f"{prefix}/" if prefix else "")

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"


def s3_client() -> Any:
    """A client with short connect timeouts and few retries: an unreachable store fails in seconds."""
    boto3 = require("boto3", "S3 artifact storage (MCP_ARTIFACT_URL=s3://...)")
    from botocore.config import Config

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    config = Config(connect_timeout=5, read_timeout=60, retries={"max_attempts": 2, "mode": "standard"})
    return boto3.session.Session().client("s3", region_name=region, config=config)


class _Outcome:
    """Truthy when the object turned out not to exist."""

    def __init__(self) -> None:
        self.missing = False

    def __bool__(self) -> bool:
        return self.missing


@contextmanager
def s3_call(
    where: S3Location, name: str, missing_is_error: bool = False, label: str = "artifact store"
) -> Iterator[_Outcome]:
    """Run boto3 calls; a missing object sets the yielded outcome (or raises NotFoundError), every other
    failure becomes one domain error naming the ``label`` and location."""
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    outcome = _Outcome()
    try:
        yield outcome
    except NoCredentialsError:
        raise UnauthenticatedError(
            f"{label} {where.url}: no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        ) from None
    except (ClientError, S3UploadFailedError) as exc:
        error = exc if isinstance(exc, ClientError) else exc.__context__
        code = _code(error) if isinstance(error, ClientError) else ""
        if code in _MISSING and not missing_is_error:
            outcome.missing = True
            return
        raise _client_error(where, name, code, exc, label) from None
    except BotoCoreError as exc:
        raise UnavailableError(f"{label} {where.url} unreachable at {_endpoint()}: {exc}") from None


def _code(error: Any) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _client_error(where: S3Location, name: str, code: str, exc: Exception, label: str) -> Exception:
    if code in _BAD_CREDENTIALS:
        return UnauthenticatedError(
            f"{label} {where.url} at {_endpoint()} refused the credentials ({code}): "
            "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if code == "403":  # a HEAD's answer has no body to tell bad keys from a refused policy
        return PermissionDeniedError(
            f"{label} {where.url} at {_endpoint()} refused the request (HTTP 403): wrong credentials or "
            "no access; check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy"
        )
    if code in _DENIED:
        return PermissionDeniedError(f"{label} {where.url}: access denied ({code}) to {name}")
    if code == "NoSuchBucket":
        return NotFoundError(f"{label} {where.url}: bucket {where.bucket!r} does not exist at {_endpoint()}")
    if code in _MISSING:
        return NotFoundError(f"{label} {where.url}: no object {name}")
    return UnavailableError(f"{label} {where.url} at {_endpoint()} failed: {code or type(exc).__name__}")


def _endpoint() -> str:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or "the AWS default endpoint"

"""Python client of the management API (``/v2/manage/``, server/http/manage.py): register, list, show,
promote, archive, signature status, rollouts, plan explanations and the audit log, against a running
server with a ``manage`` token and no registry credentials.

    from mcp2026ai.client import Management

    with Management("http://127.0.0.1:8000", token=os.environ["MCP_TOKEN"]) as manage:
        record = manage.register("mlp", "mlp.onnx", stage="staging")
        manage.promote("mlp", record.version, "production")
        manage.set_rollout("mlp", {"canary": "1.1.0", "weight": 10})
        print(manage.audit_entries(last=5))

Records come back as :class:`~mcp2026ai.registry.ModelVersion`; everything else as the JSON
documents ``mcp ... --json`` prints. A refusal raises the :mod:`mcp2026ai.errors` class the server
raised (NotFoundError, PermissionDeniedError...), with the server's message.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import orjson

from mcp2026ai.client.errors import error_message, from_http
from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import MCPError, OverloadedError, UnavailableError
from mcp2026ai.registry import ModelVersion, Stage

PREFIX = "/v2/manage"
REMOTE_SCHEMES = ("https://", "s3://", "http://")
TIMEOUT_S = 600.0
"""A registration imports (and may download) the model before it answers."""


class Management:
    def __init__(self, url: str, token: str | None = None, timeout_s: float = TIMEOUT_S, verify: Any = True) -> None:
        base = url if "://" in url else f"http://{url}"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=base.rstrip("/"), headers=headers, timeout=timeout_s, verify=verify)

    def __enter__(self) -> Management:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **request: Any) -> Any:
        try:
            response = self._http.request(method, PREFIX + path, **request)
        except httpx.HTTPError as exc:
            raise UnavailableError(f"{self._http.base_url}: {exc}") from None
        if response.status_code >= 400:
            raise _refusal(response)
        return orjson.loads(response.content)

    # models ----------------------------------------------------------------------------------
    def versions(self, name: str | None = None) -> list[ModelVersion]:
        params = {"name": name} if name else {}
        return [ModelVersion.model_validate(item) for item in self._call("GET", "/models", params=params)]

    def show(self, name: str, version: str | None = None) -> dict[str, Any]:
        return dict(self._call("GET", f"/models/{name}", params=_present(version=version)))

    def register(
        self,
        name: str,
        source: str | Path,
        *,
        version: str | None = None,
        stage: Stage | str = Stage.DEV,
        tags: dict[str, str] | None = None,
        contract: InferenceContract | None = None,
    ) -> ModelVersion:
        """Upload a model file, or have the server fetch ``source`` when it is an https:// or s3:// URL."""
        if isinstance(source, str) and source.startswith(REMOTE_SCHEMES):
            body = {"url": source, "version": version, "stage": Stage(stage).value, "tags": tags or {}}
            if contract is not None:
                body["contract"] = contract.model_dump(mode="json")
            return ModelVersion.model_validate(self._call("POST", f"/models/{name}/register", json=body))
        path = Path(source)
        params: dict[str, Any] = _present(filename=path.name, version=version, stage=Stage(stage).value)
        params["tag"] = [f"{key}={value}" for key, value in (tags or {}).items()]
        if contract is not None:
            params["contract"] = contract.model_dump_json()
        with path.open("rb") as file:
            headers = {"Content-Type": "application/octet-stream"}
            document = self._call("POST", f"/models/{name}/upload", params=params, content=file, headers=headers)
        return ModelVersion.model_validate(document)

    def promote(self, name: str, version: str, stage: Stage | str) -> ModelVersion:
        body = {"stage": Stage(stage).value}
        return ModelVersion.model_validate(self._call("POST", f"/models/{name}/versions/{version}/promote", json=body))

    def archive(self, name: str, version: str) -> ModelVersion:
        return ModelVersion.model_validate(self._call("POST", f"/models/{name}/versions/{version}/archive"))

    def signature(self, name: str, version: str | None = None) -> dict[str, Any]:
        """The trusted signature of a version, checked by the server (SignatureError if none)."""
        return dict(self._call("GET", f"/models/{name}/signature", params=_present(version=version)))

    # rollouts, plans, audit ------------------------------------------------------------------
    def rollout(self, name: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/rollouts/{name}"))

    def set_rollout(self, name: str, changes: dict[str, Any], interval_s: float | None = None) -> dict[str, Any]:
        """Change the named fields (stable, canary, weight, shadow, shadow_percent, fallback_model)."""
        body = {**changes, **_present(interval_s=interval_s)}
        configs = self._call("PUT", f"/rollouts/{name}", json=body)
        return dict(configs[0])

    def clear_rollout(self, name: str) -> None:
        self._call("DELETE", f"/rollouts/{name}")

    def plan_explain(self, name: str, version: str | None = None) -> dict[str, Any]:
        return dict(self._call("GET", f"/plans/{name}/explain", params=_present(version=version)))

    def plan_trace(self, name: str, last: str | None = None, version: str | None = None) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/plans/{name}/trace", params=_present(last=last, version=version)))

    def audit_entries(self, last: int = 20) -> list[dict[str, Any]]:
        return list(self._call("GET", "/audit", params={"last": last}))


def _present(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _refusal(response: httpx.Response) -> MCPError:
    """The domain error the server raised, with its own message (as the local command would print it)."""
    mapped = from_http(response.status_code, response.content, response.headers.get("retry-after"), "")
    if isinstance(mapped, OverloadedError):
        return mapped
    return type(mapped)(error_message(response.content))

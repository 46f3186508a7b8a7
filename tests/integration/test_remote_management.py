"""Management over HTTP against a running server with ``--auth``: ``mcp --server URL --token T`` and
the :class:`mcp2026ai.client.Management` SDK, from a client with no registry (its MCP_HOME empty),
answering as the local CLI does and audited under the token's name."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mcp2026ai.cli import context
from mcp2026ai.cli.main import main
from mcp2026ai.client import Management
from mcp2026ai.errors import InvalidArgumentError, PermissionDeniedError
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.security import AuthConfig, Scope, ServingSecurity, TokenStore
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

pytestmark = pytest.mark.timeout(180)


@dataclass(frozen=True)
class Setup:
    server: BackgroundServer
    home: Path  # the server's registry
    client_home: Path  # the client's MCP_HOME: nothing in it
    manage: str
    infer: str
    models: Path

    @property
    def url(self) -> str:
        return f"http://{self.server.http_url}"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("remote")
    home, models = root / "home", root / "models"
    models.mkdir()
    registry = ModelRegistry(home)
    registry.register("mlp", mlp_model(models / "mlp.onnx"))
    tokens = TokenStore(home / "tokens.json")
    manage = tokens.create("ops", frozenset({Scope.MANAGE})).token
    infer = tokens.create("app", frozenset({Scope.INFER})).token
    security = ServingSecurity(auth=AuthConfig(enabled=True, tokens_file=tokens.path), audit_log=home / "audit.jsonl")
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=5, security=security)
    with BackgroundServer(registry, ["mlp"], config) as server:
        yield Setup(server, home, root / "client-home", manage, infer, models)


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """``mcp ARGS`` in-process (the console script's error handling) with MCP_HOME=home: (code, out, err)."""

    def invoke(home: Path, *args: str) -> tuple[int, str, str]:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MCP_HOME", str(home))
            patch.setenv("COLUMNS", "200")
            patch.delenv("MCP_TOKEN", raising=False)
            patch.setattr(sys, "argv", ["mcp", *args])
            context.settings.cache_clear()
            capsys.readouterr()
            with pytest.raises(SystemExit) as exited:
                main()
            captured = capsys.readouterr()
        context.settings.cache_clear()
        return int(exited.value.code or 0), captured.out, captured.err

    return invoke


def remote(setup: Setup, token: str | None = None) -> list[str]:
    return ["--server", setup.url, "--token", token or setup.manage]


def test_cli_against_the_server_answers_as_the_local_cli(setup: Setup, run: Run) -> None:
    call = run
    new = mlp_model(setup.models / "mlp-next.onnx", seed=7)
    code, out, err = call(setup.client_home, *remote(setup), "model", "register", "--name", "mlp", "--path", str(new))
    assert code == 0, err
    assert out.startswith("registered mlp:1.1.0 (dev, sha256 ")
    steps = [
        ["model", "promote", "--name", "mlp", "--version", "1.1.0", "--stage", "staging"],
        ["rollout", "set", "--name", "mlp", "--stable", "1.0.0", "--canary", "1.1.0", "--weight", "10"],
    ]
    outputs = []
    for step in steps:
        code, out, err = call(setup.client_home, *remote(setup), *step)
        assert code == 0, err
        outputs.append(out)
    assert outputs[0] == "mlp:1.1.0 is now staging\n"
    assert outputs[1] == "rollout of mlp set: stable 1.0.0, canary 1.1.0 at 10%\n"
    reads = [
        ["model", "list"],
        ["model", "list", "--json"],
        ["model", "show", "--name", "mlp", "--version", "1.1.0"],
        ["model", "show", "--name", "mlp", "--json"],
        ["rollout", "show", "--name", "mlp"],
        ["rollout", "show", "--name", "mlp", "--json"],
        ["audit", "show", "--last", "3", "--json"],
        ["policy", "trace", "--model", "mlp", "--json"],
        ["policy", "explain", "--model", "mlp"],  # no stored plan: the same one-line error either way
        ["model", "verify", "--name", "mlp"],  # unsigned: the same refusal either way
    ]
    for args in reads:
        there = call(setup.client_home, *remote(setup), *args)
        here = call(setup.home, *args)
        assert there == here, args
        refused = args[1] in ("explain", "verify")
        assert there[0] == (2 if refused else 0), there
        assert (there[2] != "") == refused, there
    entries = json.loads(call(setup.client_home, *remote(setup), "audit", "show", "--last", "3", "--json")[1])
    assert [(e["action"], e["actor"], e["target"]) for e in entries] == [
        ("model.register", "token:ops", "mlp:1.1.0"),
        ("model.promote", "token:ops", "mlp:1.1.0"),
        ("rollout.set", "token:ops", "mlp"),
    ]
    assert entries[1]["details"] == {"stage": "staging"}
    assert setup.server.plane.traffic.manager.config("mlp").canary == "1.1.0"  # served from then on
    assert not setup.client_home.exists(), "the client touched no registry of its own"


def test_sdk_registers_promotes_sets_a_canary_and_reads_the_audit_log(setup: Setup) -> None:
    with Management(setup.url, token=setup.manage) as manage:
        record = manage.register("sdk-mlp", mlp_model(setup.models / "sdk.onnx"), tags={"team": "ml"})
        assert (record.ref, record.tags) == ("sdk-mlp:1.0.0", {"team": "ml"})
        second = manage.register("sdk-mlp", mlp_model(setup.models / "sdk2.onnx", seed=3), stage="staging")
        assert manage.promote("sdk-mlp", record.version, Stage.PRODUCTION).stage is Stage.PRODUCTION
        config = manage.set_rollout("sdk-mlp", {"canary": second.version, "weight": 25})
        assert (config["canary"], config["weight"]) == ("1.1.0", 25)
        assert manage.rollout("sdk-mlp")["rollout"]["canary"] == "1.1.0"
        assert manage.archive("sdk-mlp", second.version).stage is Stage.ARCHIVED
        manage.clear_rollout("sdk-mlp")
        assert manage.rollout("sdk-mlp")["rollout"] is None
        assert manage.versions("sdk-mlp") == ModelRegistry(setup.home).versions("sdk-mlp")
        entries = manage.audit_entries(last=6)
    assert [(entry["action"], entry["actor"]) for entry in entries] == [
        ("model.register", "token:ops"),
        ("model.register", "token:ops"),
        ("model.promote", "token:ops"),
        ("rollout.set", "token:ops"),
        ("model.promote", "token:ops"),  # archive: a promotion to archived, as `mcp model promote` records it
        ("rollout.clear", "token:ops"),
    ]


def test_a_token_without_manage_is_refused(setup: Setup, run: Run) -> None:
    call = run
    response = httpx.get(f"{setup.url}/v2/manage/models", headers={"Authorization": f"Bearer {setup.infer}"})
    assert response.status_code == 403
    assert httpx.get(f"{setup.url}/v2/manage/audit").status_code == 401
    with Management(setup.url, token=setup.infer) as manage, pytest.raises(PermissionDeniedError, match="manage"):
        manage.versions()
    code, out, err = call(setup.client_home, *remote(setup, setup.infer), "model", "list")
    assert code == 2 and out == ""
    assert "lacks the 'manage' scope" in err and "Traceback" not in err


def test_bad_input_is_a_400_naming_the_field(setup: Setup) -> None:
    headers = {"Authorization": f"Bearer {setup.manage}"}
    for url in ("https://127.0.0.1/m.onnx", "http://example.com/m.onnx", "https://169.254.169.254/m.onnx"):
        response = httpx.post(f"{setup.url}/v2/manage/models/x/register", json={"url": url}, headers=headers)
        assert response.status_code == 400, url
        assert response.json()["error"].startswith("url: "), response.text
    promote = httpx.post(
        f"{setup.url}/v2/manage/models/mlp/versions/1.0.0/promote", json={"stage": "gold"}, headers=headers
    )
    assert promote.status_code == 400 and "stage" in promote.json()["error"]
    upload = httpx.post(f"{setup.url}/v2/manage/models/x/upload?filename=m.exe", content=b"MZ", headers=headers)
    assert upload.status_code == 400 and "filename" in upload.json()["error"]
    rollout = httpx.put(f"{setup.url}/v2/manage/rollouts/mlp", json={"wieght": 5}, headers=headers)
    assert rollout.status_code == 400 and "wieght" in rollout.json()["error"]
    with Management(setup.url, token=setup.manage) as manage, pytest.raises(InvalidArgumentError):
        manage.register("x", "https://10.0.0.1/m.onnx")

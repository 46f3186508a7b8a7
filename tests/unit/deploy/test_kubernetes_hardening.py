"""Deployments that are safe as generated (finding 1 of the security review): the rendered server runs
--auth with tokens from a Secret volume, --require-signed with keys from a ConfigMap or Secret,
optionally TLS, on a read-only root filesystem, without the service-account token, behind a
NetworkPolicy; an unauthenticated render needs --insecure and says so in every file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp2026ai.contract import load_contract
from mcp2026ai.deploy.kubernetes import Rendered
from mcp2026ai.deploy.kubernetes.hardening import INSECURE_NOTE
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry
from tests.support.cli import CONTRACT, run_main
from tests.unit.deploy.k8s_checks import errors, kserve_validator, load, validate_builtin
from tests.unit.deploy.test_kubernetes_render import BUILTIN, KSERVE, deploy, register_ocr, wheel  # noqa: F401

SECURE = {"auth_secret": "mcp-tokens", "trusted_keys": "configmap/mcp-trusted", "tls_secret": "mcp-tls"}


def entrypoint(out: Path) -> list[str]:
    line = next(line for line in (out / "Dockerfile").read_text().splitlines() if line.startswith("ENTRYPOINT "))
    command: list[str] = json.loads(line.removeprefix("ENTRYPOINT "))
    return command


@pytest.fixture
def secure(registry: ModelRegistry, tmp_path: Path, wheel: Path) -> Rendered:  # noqa: F811
    register_ocr(registry, load_contract(CONTRACT))
    return deploy(registry, tmp_path / "out", wheel, namespace="vision", client_namespaces=["apps"], **SECURE)


def pod_spec(rendered: Rendered) -> dict[str, Any]:
    spec: dict[str, Any] = load(rendered.out / "kubernetes/deployment.yaml")["spec"]["template"]["spec"]
    return spec


def test_the_entrypoint_runs_auth_signatures_and_tls(secure: Rendered) -> None:
    command = entrypoint(secure.out)
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert "--auth" in command and "--require-signed" in command and "--allow-unauthenticated" not in command
    assert command[command.index("--tls-cert") + 1] == "/etc/mcp/tls/tls.crt"
    dockerfile = (secure.out / "Dockerfile").read_text()
    assert (
        "MCP_TOKENS_FILE=/etc/mcp/auth/tokens.json" in dockerfile and "MCP_TRUSTED_KEYS=/etc/mcp/trusted" in dockerfile
    )
    assert "INSECURE" not in dockerfile


def test_the_pod_mounts_its_secrets_read_only_on_a_read_only_root(secure: Rendered) -> None:
    spec = pod_spec(secure)
    assert spec["automountServiceAccountToken"] is False
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert volumes["auth"]["secret"]["secretName"] == "mcp-tokens"
    assert volumes["trusted-keys"]["configMap"]["name"] == "mcp-trusted"
    assert volumes["tls"]["secret"]["secretName"] == "mcp-tls"
    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {}} and "emptyDir" in volumes["tmp"]
    for container in [*spec["initContainers"], *spec["containers"]]:
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, container["name"]
    (server,) = spec["containers"]
    mounts = {mount["name"]: mount for mount in server["volumeMounts"]}
    assert all(mounts[name]["readOnly"] for name in ("auth", "trusted-keys", "tls"))
    assert mounts["scratch"]["mountPath"] == {e["name"]: e["value"] for e in server["env"]}["MCP_HOME"]
    assert server["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"  # TLS: the probes speak it too
    (copy,) = spec["initContainers"]
    assert copy["command"][:2] == ["cp", "-R"]  # the baked registry into the writable scratch MCP_HOME


def test_a_network_policy_admits_the_clients_and_prometheus_only(secure: Rendered) -> None:
    policy = load(secure.out / "kubernetes/networkpolicy.yaml")
    deployment = load(secure.out / "kubernetes/deployment.yaml")
    assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    clients, scraper = policy["spec"]["ingress"]
    assert clients["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "apps"}}, "podSelector": {}}
    ]
    assert sorted(port["port"] for port in clients["ports"]) == [8000, 8001]
    assert scraper["from"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "monitoring"}
    assert scraper["ports"] == [{"protocol": "TCP", "port": 8000}]


@pytest.mark.parametrize("relative", BUILTIN)
def test_secured_manifests_still_pass_strict_validation(secure: Rendered, relative: str) -> None:
    validate_builtin(load(secure.out / relative))


@pytest.mark.parametrize("relative", KSERVE)
def test_secured_kserve_objects_match_kserves_schemas(secure: Rendered, relative: str) -> None:
    manifest = load(secure.out / relative)
    assert errors(kserve_validator(manifest), manifest) == []


def test_the_kserve_runtime_has_the_same_flags_and_mounts(secure: Rendered) -> None:
    runtime = load(secure.out / "kserve/servingruntime.yaml")
    (container,) = runtime["spec"]["containers"]
    assert "--auth" in container["args"] and "--require-signed" in container["args"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"auth", "trusted-keys", "tls", "scratch", "tmp"} <= {v["name"] for v in runtime["spec"]["volumes"]}


def test_an_unauthenticated_render_is_refused_unless_insecure(
    registry: ModelRegistry,
    tmp_path: Path,
    wheel: Path,  # noqa: F811
) -> None:
    register_ocr(registry, load_contract(CONTRACT))
    with pytest.raises(InvalidArgumentError, match=r"^--auth-secret: needed .* pass --insecure"):
        deploy(registry, tmp_path / "refused", wheel, auth_secret=None)
    assert not (tmp_path / "refused" / "Dockerfile").exists()
    with pytest.raises(InvalidArgumentError, match="--insecure: conflicts with --auth-secret"):
        deploy(registry, tmp_path / "both", wheel, insecure=True)
    with pytest.raises(InvalidArgumentError, match="--trusted-keys: 'vault/x' is not configmap/NAME"):
        deploy(registry, tmp_path / "bad", wheel, trusted_keys="vault/x")


def test_the_cli_refusal_is_one_line(
    registry: ModelRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    register_ocr(registry, load_contract(CONTRACT))
    done = run_main(["deploy", "kubernetes", "--name", "ocr-cls", "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert done.code == 2 and done.err.count("\n") == 1, done.err
    assert done.err.startswith("error: --auth-secret: needed") and "--insecure" in done.err


def test_an_insecure_render_says_so_in_every_file(registry: ModelRegistry, tmp_path: Path, wheel: Path) -> None:  # noqa: F811
    register_ocr(registry, load_contract(CONTRACT))
    rendered = deploy(registry, tmp_path / "out", wheel, auth_secret=None, insecure=True)
    command = entrypoint(rendered.out)
    assert "--allow-unauthenticated" in command and "--auth" not in command
    assert INSECURE_NOTE in (rendered.out / "Dockerfile").read_text()
    for relative in rendered.manifests:
        assert INSECURE_NOTE in (rendered.out / relative).read_text(), relative
    annotations = load(rendered.out / "kubernetes/deployment.yaml")["metadata"]["annotations"]
    assert annotations["mcp2026ai.dev/security"] == INSECURE_NOTE
    validate_builtin(load(rendered.out / "kubernetes/deployment.yaml"))

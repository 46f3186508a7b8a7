"""`mcp deploy kubernetes --stores-secret NAME`: pods read the shared stores (a PostgreSQL catalog and
an S3 bucket on real servers here) with settings from a Secret, instead of a registry baked into the
image. The manifests pass the same offline checks as the baked mode (`--validate`: Kubernetes 1.37
schemas, strict; KServe's CRD subsets)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from mcp2026ai.contract import load_contract
from mcp2026ai.deploy.kubernetes import Rendered, render
from mcp2026ai.deploy.kubernetes.dockerfile import SCRATCH_HOME
from mcp2026ai.deploy.kubernetes.options import KubernetesOptions
from mcp2026ai.deploy.kubernetes.stores import SECRET_KEYS
from mcp2026ai.deploy.kubernetes.validate import validate_rendered
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.registry.triton_repository import read_config
from mcp2026ai.registry.versioning import triton_number
from mcp2026ai.security import Scope, TokenStore
from tests.integration.conftest import listening_line, mcp_command
from tests.support.cli import CONTRACT, run_console_script
from tests.support.stores import Backend
from tests.unit.deploy.k8s_checks import errors, kserve_validator, load
from tests.unit.deploy.test_kubernetes_render import register_ocr, wheel  # noqa: F401 (fixture)

SECRET = "mcp-stores"


@pytest.fixture
def shared(shared_stores: Backend) -> ModelRegistry:
    registry = shared_stores.registry()
    register_ocr(registry, load_contract(CONTRACT))
    return registry


@pytest.fixture
def rendered(shared: ModelRegistry, tmp_path: Path, wheel: Path) -> Rendered:  # noqa: F811
    options = KubernetesOptions(
        name="ocr-cls", out=tmp_path / "out", wheel=wheel, stores_secret=SECRET, auth_secret="t"
    )
    return render(shared, options)


def secret_refs(container: dict[str, object]) -> dict[str, dict[str, object]]:
    env = container["env"]
    assert isinstance(env, list)
    return {item["name"]: item["valueFrom"]["secretKeyRef"] for item in env}


def test_pods_take_the_stores_from_the_secret_and_nothing_is_baked(rendered: Rendered) -> None:
    out = rendered.out
    assert not (out / "registry").exists()
    assert ".dockerignore" in {p.name for p in out.iterdir()} and "registry" not in (out / ".dockerignore").read_text()
    dockerfile = (out / "Dockerfile").read_text()
    assert "COPY --chown" not in dockerfile and f"MCP_HOME={SCRATCH_HOME}" in dockerfile
    assert "[s3,postgres]'" in dockerfile  # the image can reach both stores
    pod = load(out / "kubernetes/deployment.yaml")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    refs = secret_refs(container)
    assert set(refs) == set(SECRET_KEYS) and {ref["name"] for ref in refs.values()} == {SECRET}
    assert {key for key, ref in refs.items() if not ref.get("optional")} == {k for k, req in SECRET_KEYS.items() if req}
    assert container["volumeMounts"][0] == {"name": "scratch", "mountPath": SCRATCH_HOME}
    assert pod["volumes"][0] == {"name": "scratch", "emptyDir": {}}
    assert "initContainers" not in pod  # nothing baked to copy
    text = "".join(path.read_text() for path in out.rglob("*.yaml")) + dockerfile
    assert "postgresql://" not in text and "AKIA" not in text  # no store URL or key in any file


def test_the_manifests_validate_as_in_the_baked_mode(rendered: Rendered) -> None:
    lines = validate_rendered(rendered.out, rendered.manifests)
    assert sum(line.startswith("valid ") for line in lines) == 7, lines  # with the NetworkPolicy
    runtime = load(rendered.out / "kserve/servingruntime.yaml")
    assert errors(kserve_validator(runtime), runtime) == []
    (container,) = runtime["spec"]["containers"]
    assert set(secret_refs(container)) == set(SECRET_KEYS) and runtime["spec"]["volumes"][0]["name"] == "scratch"
    isvc = load(rendered.out / "kserve/inferenceservice.yaml")
    assert errors(kserve_validator(isvc), isvc) == []


def test_mistakes_are_named(shared: ModelRegistry, tmp_path: Path, wheel: Path, shared_stores: Backend) -> None:  # noqa: F811
    def deploy(**options: object) -> Rendered:
        return render(
            shared,
            KubernetesOptions(name="ocr-cls", out=tmp_path / "o", wheel=wheel, **{"auth_secret": "t", **options}),
        )

    with pytest.raises(InvalidArgumentError, match=r"--stores-secret: 'Bad_Name' is not a valid Secret name"):
        deploy(stores_secret="Bad_Name")
    register_ocr(shared, load_contract(CONTRACT), "2.0.0")
    shared.promote("ocr-cls", "1.0.0", Stage.PRODUCTION)
    with pytest.raises(InvalidArgumentError, match=r"pods serve ocr-cls's default version \(ocr-cls:1\.0\.0\)"):
        deploy(stores_secret=SECRET, version="2.0.0")
    assert not (tmp_path / "o" / "Dockerfile").exists()


def test_the_cli_refuses_a_local_registry_in_one_line(tmp_path: Path) -> None:
    args = ["deploy", "kubernetes", "--name", "ocr-cls", "--out", str(tmp_path / "o"), "--stores-secret", SECRET]
    done = run_console_script(args, tmp_path, {"MCP_HOME": str(tmp_path / "home")})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --stores-secret: this registry is local; set MCP_CATALOG_URL (postgresql://) and MCP_ARTIFACT_URL "
        "(s3://) to the stores the pods will read, or copy it there with `mcp registry migrate`"
    ]


def test_kserve_downloads_the_model_from_its_storage_uri(
    shared: ModelRegistry,
    tmp_path: Path,
    wheel: Path,  # noqa: F811
    shared_stores: Backend,
) -> None:
    """--storage-uri: the model's Triton repository is uploaded there, the InferenceService names it
    (storageUri) under a ServiceAccount carrying the Secret and KServe's S3 annotations, and the runtime
    serves what KServe's storage initializer downloads into /mnt/models."""
    uri = f"s3://{shared_stores.bucket}/kserve/ocr-cls"
    options = KubernetesOptions(
        name="ocr-cls", out=tmp_path / "o", wheel=wheel, stores_secret=SECRET, storage_uri=uri, auth_secret="t"
    )
    rendered = render(shared, options)
    out = rendered.out
    predictor = load(out / "kserve/inferenceservice.yaml")["spec"]["predictor"]
    assert predictor["model"]["storageUri"] == uri
    assert predictor["serviceAccountName"] == "mcp2026ai-ocr-cls-storage"
    account = load(out / "kserve/serviceaccount.yaml")
    assert account["metadata"]["name"] == predictor["serviceAccountName"] and account["secrets"] == [{"name": SECRET}]
    endpoint = shared_stores.env["AWS_ENDPOINT_URL"].removeprefix("http://")
    region = os.environ.get("AWS_REGION") or os.environ["AWS_DEFAULT_REGION"]
    assert account["metadata"]["annotations"] == {
        "serving.kserve.io/s3-endpoint": endpoint,
        "serving.kserve.io/s3-usehttps": "0",  # moto's server on loopback speaks plain HTTP
        "serving.kserve.io/s3-region": region,
    }
    (container,) = load(out / "kserve/servingruntime.yaml")["spec"]["containers"]
    assert container["command"] + container["args"][:2] == ["mcp", "serve", "--model-repository", "/mnt/models"]
    assert "env" not in container  # the runtime reaches no store: the repository is on its disk
    lines = validate_rendered(out, rendered.manifests)
    assert "valid kserve/serviceaccount.yaml: Kubernetes 1.37 schema, strict" in lines, lines
    for manifest in ("kserve/inferenceservice.yaml", "kserve/servingruntime.yaml"):
        assert errors(kserve_validator(load(out / manifest)), load(out / manifest)) == []

    # what KServe's storage initializer downloads: a Triton repository serving the default version
    keys = shared_stores.object_keys()
    assert sorted(rendered.uploaded) == sorted(key for key in keys if key.startswith("kserve/ocr-cls/"))
    assert rendered.uploaded[-1] == "kserve/ocr-cls/ocr-cls/config.pbtxt"  # the config last
    downloaded = tmp_path / "mnt-models"
    client = shared_stores.s3.client() if shared_stores.s3 else None
    assert client is not None
    for key in rendered.uploaded:
        path = downloaded / key.removeprefix("kserve/ocr-cls/")
        path.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(shared_stores.bucket, key, str(path))
    config = read_config(downloaded / "ocr-cls" / "config.pbtxt")
    number = triton_number(shared.resolve("ocr-cls").version)
    assert config.name == "ocr-cls" and list(config.version_policy.specific.versions or [number]) == [number]
    model = (downloaded / "ocr-cls" / str(number) / "model.onnx").read_bytes()
    assert hashlib.sha256(model).hexdigest() == shared.resolve("ocr-cls").digest
    default = shared.resolve("ocr-cls").version  # Triton's 10000099 read back as the registry's 1.0.0
    assert serves_ready(downloaded, tmp_path / "scratch", container["args"]) == {"ocr-cls": [default]}


def serves_ready(repository: Path, home: Path, args: list[str]) -> dict[str, list[str]]:
    """The runtime's own arguments (its ports ephemeral, no store in its environment) on the downloaded
    repository: each ready model's versions."""
    args = [str(repository) if arg == "/mnt/models" else arg for arg in args]
    args[args.index("--port") + 1], args[args.index("--grpc-port") + 1] = "0", "-1"
    env = {key: value for key, value in os.environ.items() if key not in SECRET_KEYS} | {"MCP_HOME": str(home)}
    token = TokenStore(home / "tokens.json").create("reader", frozenset({Scope.INFER})).token  # the runtime runs --auth
    command = [*mcp_command(), "serve", *args]  # the container's command is `mcp serve`
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        port = re.search(r"http=(\d+)", line)
        if port is None:
            process.kill()
            raise AssertionError(f"{line!r}: {process.communicate(timeout=30)[1]}")
        url = f"http://127.0.0.1:{port.group(1)}/v2/repository/index"
        assert httpx.post(url, json={"ready": True}).status_code == 401
        index = httpx.post(url, json={"ready": True}, headers={"Authorization": f"Bearer {token}"}).json()
        return {entry["name"]: [entry["version"]] for entry in index}
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


def test_storage_uri_mistakes_are_named(shared: ModelRegistry, tmp_path: Path, wheel: Path) -> None:  # noqa: F811
    def deploy(**options: object) -> Rendered:
        return render(
            shared,
            KubernetesOptions(name="ocr-cls", out=tmp_path / "o", wheel=wheel, **{"auth_secret": "t", **options}),
        )

    with pytest.raises(InvalidArgumentError, match=r"^--storage-uri: needs --stores-secret"):
        deploy(storage_uri="s3://models/ocr-cls")
    with pytest.raises(InvalidArgumentError, match=r"^--storage-uri: 'gs://models/x' is not an s3://bucket/prefix"):
        deploy(stores_secret=SECRET, storage_uri="gs://models/x")
    with pytest.raises(InvalidArgumentError, match=r"^--storage-uri: 's3://models' names a whole bucket"):
        deploy(stores_secret=SECRET, storage_uri="s3://models")
    assert not (tmp_path / "o" / "Dockerfile").exists()

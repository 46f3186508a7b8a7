"""`mcp deploy kubernetes` rendering from a real registered model (PaddleOCR's direction classifier)
and its contract: every manifest checked offline against the Kubernetes 1.37 schemas, KServe's CRD
schemas and the rendered ModelService CRD."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

import mcp2026ai
from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.contract import InferenceContract, load_contract, parse_contract
from mcp2026ai.deploy.kubernetes import KubernetesOptions, Rendered, render
from mcp2026ai.deploy.kubernetes.apply import Flavour, kubectl_steps
from mcp2026ai.deploy.kubernetes.dockerfile import serve_command
from mcp2026ai.deploy.kubernetes.kserve import runtime_name
from mcp2026ai.deploy.kubernetes.structural import structural_problems
from mcp2026ai.deploy.kubernetes.validate import validate_rendered
from mcp2026ai.deploy.kubernetes.wheel import provide_wheel
from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.profiler import ProfileBudget
from mcp2026ai.registry import ModelRegistry, Preprocessing, audit_trail
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.store import RolloutStore
from mcp2026ai.security import AuditLog
from mcp2026ai.security.encryption import ArtifactCipher
from tests.support.cli import CONTRACT
from tests.unit.deploy.k8s_checks import crd_schema, errors, kserve_validator, load, openapi_validator, validate_builtin

BUILTIN = ["kubernetes/deployment.yaml", "kubernetes/service.yaml", "kubernetes/hpa.yaml", "kubernetes/pdb.yaml",
           "kubernetes/networkpolicy.yaml", "crd/modelservice-crd.yaml"]  # fmt: skip
QUICK_PLAN = ProfileBudget(
    seconds_per_plan=0.05,
    latency_runs=8,
    batch_runs=4,
    warmup_runs=1,
    min_runs=2,
    total_seconds=5,
    rounds=2,
    heavy_load=1.0,
)
"""Enough to store a plan whose thread count the manifests follow (figures are not checked here)."""
KSERVE = ["kserve/servingruntime.yaml", "kserve/inferenceservice.yaml"]
SCALING = {"replicas": {"min": 2, "max": 5}, "memory_mb": 300,
           "autoscale": {"target_ongoing_requests": 1.5, "upscale_delay_s": 5, "downscale_delay_s": 60}}  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mcp2026ai wheel, built once from this checkout the way the command builds it."""
    dist = tmp_path_factory.mktemp("dist")
    return dist / provide_wheel(None, dist)


def register_ocr(registry: ModelRegistry, contract: InferenceContract | None, version: str | None = None) -> None:
    preprocessing = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    path = bundled_model_path("ocr-cls")
    registry.register("ocr-cls", path, contract=contract, preprocessing=preprocessing, version=version)


def deploy(registry: ModelRegistry, out: Path, wheel: Path, **options: Any) -> Rendered:
    options = {"auth_secret": "mcp-tokens", **options}
    return render(registry, KubernetesOptions(name="ocr-cls", out=out, wheel=wheel, **options))


@pytest.fixture
def rendered(registry: ModelRegistry, tmp_path: Path, wheel: Path) -> Rendered:
    register_ocr(registry, load_contract(CONTRACT))
    return deploy(registry, tmp_path / "out", wheel, namespace="vision")


def test_the_wheel_is_built_from_this_checkout(wheel: Path) -> None:
    assert wheel.name == f"mcp2026ai-{mcp2026ai.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"mcp2026ai-{mcp2026ai.__version__}.dist-info/METADATA").decode()
        entry_points = archive.read(f"mcp2026ai-{mcp2026ai.__version__}.dist-info/entry_points.txt").decode()
    assert "mcp2026ai/deploy/kubernetes/render.py" in names and "mcp2026ai/server/http/app.py" in names
    assert "Name: mcp2026ai" in metadata
    assert "mcp = mcp2026ai.cli.main:main" in entry_points  # the image's entrypoint is this console script


@pytest.mark.parametrize("relative", BUILTIN)
def test_builtin_kinds_are_valid_kubernetes_1_37(rendered: Rendered, relative: str) -> None:
    validate_builtin(load(rendered.out / relative))


def test_strict_validation_catches_a_misspelt_field(rendered: Rendered) -> None:
    deployment = load(rendered.out / "kubernetes/deployment.yaml")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_builtin(deployment)


@pytest.mark.parametrize("relative", KSERVE)
def test_kserve_objects_match_kserves_crd_schemas(rendered: Rendered, relative: str) -> None:
    manifest = load(rendered.out / relative)
    assert errors(kserve_validator(manifest), manifest) == []
    manifest["spec"]["unknownField"] = 1  # the subset is strict: a field KServe lacks fails
    assert errors(kserve_validator(manifest), manifest)


def test_the_deployment_probes_ports_and_resources(rendered: Rendered) -> None:
    deployment = load(rendered.out / "kubernetes/deployment.yaml")
    assert deployment["metadata"]["namespace"] == "vision"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "mcp2026ai/ocr-cls:1.0.0" and "command" not in container  # the image's entrypoint
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": "http"}
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [("http", 8000), ("grpc", 8001)]
    # memory: the server's 512 MiB + the contract's resources.memory_mb (1024); no stored plan: one CPU
    assert container["resources"]["requests"] == container["resources"]["limits"] == {"cpu": "1", "memory": "1536Mi"}
    assert container["securityContext"]["runAsNonRoot"] is True and container["securityContext"]["runAsUser"] != 0
    assert pod["terminationGracePeriodSeconds"] > 30  # longer than mcp serve's drain
    service = load(rendered.out / "kubernetes/service.yaml")
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("http", 8000, "http"), ("grpc", 8001, "grpc")]  # fmt: skip
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_cpu_follows_the_threads_of_the_stored_plan(registry: ModelRegistry, tmp_path: Path, wheel: Path) -> None:
    """Planned on a small measurement budget (QUICK_PLAN): only the stored plan's thread count matters here,
    not its figures (the call took 15 s on the default budget, 6 s on this one, on a shared 2-core host)."""
    register_ocr(registry, parse_contract({"latency": {"p99_ms": 1000}, "batching": {"max_batch_size": 1}}))
    plan = PolicyOrchestrator(registry, budget=QUICK_PLAN).plan_for(registry.resolve("ocr-cls")).chosen
    assert plan is not None
    rendered = deploy(registry, tmp_path / "out", wheel)
    container = load(rendered.out / "kubernetes/deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["cpu"] == str(plan.plan.intra_op_threads or 1)
    assert rendered.target.cpu_source.startswith("stored plan")


def test_replicas_and_autoscaling_come_from_the_contract(registry: ModelRegistry, tmp_path: Path, wheel: Path) -> None:
    register_ocr(registry, parse_contract({"resources": SCALING}))
    rendered = deploy(registry, tmp_path / "out", wheel)
    hpa = load(rendered.out / "kubernetes/hpa.yaml")
    validate_builtin(hpa)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
    pods = next(m["pods"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods")
    assert pods == {
        "metric": {"name": "mcp_requests_in_flight"},
        "target": {"type": "AverageValue", "averageValue": "1500m"},
    }
    assert hpa["spec"]["behavior"] == {"scaleUp": {"stabilizationWindowSeconds": 5},
                                       "scaleDown": {"stabilizationWindowSeconds": 60}}  # fmt: skip
    deployment = load(rendered.out / "kubernetes/deployment.yaml")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "812Mi"
    predictor = load(rendered.out / "kserve/inferenceservice.yaml")["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"], predictor["scaleMetric"], predictor["scaleTarget"]) == (
        2, 5, "concurrency", 2)  # fmt: skip
    pdb = load(rendered.out / "kubernetes/pdb.yaml")
    assert pdb["spec"]["maxUnavailable"] == 1 and pdb["spec"]["selector"] == deployment["spec"]["selector"]


@pytest.mark.parametrize(
    ("resources", "fixed", "expected"),
    [({"min_replicas": 3}, None, (3, 3)), ({"replicas": {"min": 0, "max": 4}}, None, (1, 4)),
     (SCALING, 4, (4, 4)), ({}, None, (1, 1))],
)  # fmt: skip
def test_replica_counts(
    registry: ModelRegistry, tmp_path: Path, wheel: Path, resources: dict[str, Any], fixed: int | None,
    expected: tuple[int, int],
) -> None:  # fmt: skip
    register_ocr(registry, parse_contract({"resources": resources}))
    hpa = load(deploy(registry, tmp_path / "out", wheel, replicas=fixed).out / "kubernetes/hpa.yaml")
    validate_builtin(hpa)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == expected


def test_the_kserve_runtime_and_inference_service(rendered: Rendered) -> None:
    runtime = load(rendered.out / "kserve/servingruntime.yaml")
    assert runtime["spec"]["protocolVersions"] == ["v2", "grpc-v2"]
    assert [f["name"] for f in runtime["spec"]["supportedModelFormats"]] == ["onnx"]
    (container,) = runtime["spec"]["containers"]
    # the baked registry is copied into the writable scratch MCP_HOME, then `mcp serve` replaces the shell
    command = container["command"] + container["args"]
    assert command[:2] == ["/bin/sh", "-c"] and command[2].endswith('&& exec "$@"')
    assert command[4:] == serve_command(rendered.target, 8080, 9000)
    isvc = load(rendered.out / "kserve/inferenceservice.yaml")
    model = isvc["spec"]["predictor"]["model"]
    assert model["modelFormat"]["name"] == "onnx" and model["runtime"] == runtime["metadata"]["name"]
    assert runtime["metadata"]["name"] == runtime_name(rendered.target) == "mcp2026ai-ocr-cls-1-0-0"
    assert "canaryTrafficPercent" not in isvc["spec"]["predictor"]


def test_a_canary_version_gets_the_rollout_weight(registry: ModelRegistry, tmp_path: Path, wheel: Path) -> None:
    contract = load_contract(CONTRACT)
    register_ocr(registry, contract, "1.0.0")
    register_ocr(registry, contract, "1.1.0")
    RolloutStore(registry).put(RolloutConfig(name="ocr-cls", stable="1.0.0", canary="1.1.0", weight=5))
    canary = deploy(registry, tmp_path / "canary", wheel, version="1.1.0")
    isvc = load(canary.out / "kserve/inferenceservice.yaml")
    assert isvc["spec"]["predictor"]["canaryTrafficPercent"] == 5
    assert errors(kserve_validator(isvc), isvc) == []
    example = load(canary.out / "crd/modelservice.yaml")["spec"]
    assert (example["version"], example["image"]) == ("1.0.0", "mcp2026ai/ocr-cls:1.0.0")
    assert example["canary"] == {"version": "1.1.0", "image": "mcp2026ai/ocr-cls:1.1.0", "weight": 5}
    stable = deploy(registry, tmp_path / "stable", wheel, version="1.0.0")
    assert "canaryTrafficPercent" not in load(stable.out / "kserve/inferenceservice.yaml")["spec"]["predictor"]


def test_the_crd_is_structural_and_the_example_validates(rendered: Rendered) -> None:
    crd = load(rendered.out / "crd/modelservice-crd.yaml")
    schema = crd_schema(crd)
    assert structural_problems(schema) == []
    example = load(rendered.out / "crd/modelservice.yaml")
    assert example["apiVersion"] == f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}"
    assert example["kind"] == crd["spec"]["names"]["kind"]
    validator = openapi_validator(schema)
    assert errors(validator, example) == []
    assert InferenceContract.model_validate(example["spec"]["contract"]) == load_contract(CONTRACT)
    for broken in ({"p99_ms": -5}, {"p99": 5}):
        bad = json.loads(json.dumps(example))
        bad["spec"]["contract"]["latency"] = broken
        assert errors(validator, bad)


def test_the_registry_export_holds_the_version_alone(rendered: Rendered, registry: ModelRegistry) -> None:
    exported = ModelRegistry(rendered.out / "registry")
    (record,) = exported.versions()
    original = registry.resolve("ocr-cls")
    assert record.model_dump(exclude={"number"}) == original.model_dump(exclude={"number"})
    assert exported.artifact_path(record).read_bytes() == bundled_model_path("ocr-cls").read_bytes()
    contract = yaml.safe_load((rendered.out / "registry/contract.yaml").read_text())
    assert InferenceContract.model_validate(contract) == original.contract
    log = AuditLog(rendered.out / "registry" / "audit.jsonl")  # the image's `mcp audit verify` passes
    assert log.verify().ok and audit_trail.unaudited_versions(exported.catalog, log) == []


def test_the_dockerfile_is_multi_stage_and_non_root(rendered: Rendered) -> None:
    text = (rendered.out / "Dockerfile").read_text()
    froms = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert froms == ["FROM ${BASE_IMAGE} AS builder", "FROM ${BASE_IMAGE} AS runtime"]
    assert f"COPY dist/{rendered.wheel} /tmp/dist/" in text and (rendered.out / "dist" / rendered.wheel).is_file()
    assert "COPY --chown=10001:10001 registry/ /home/mcp/registry/" in text and "MCP_HOME=/home/mcp/registry" in text
    runtime_stage = text.split("AS runtime", 1)[1]
    assert "USER 10001:10001" in runtime_stage and "pip install" not in runtime_stage
    entrypoint = next(line for line in text.splitlines() if line.startswith("ENTRYPOINT "))
    assert json.loads(entrypoint.removeprefix("ENTRYPOINT ")) == serve_command(rendered.target)
    assert (rendered.out / ".dockerignore").read_text().splitlines() == ["*", "!dist/", "!registry/"]


def test_rendering_again_replaces_the_export(rendered: Rendered, registry: ModelRegistry, wheel: Path) -> None:
    again = deploy(registry, rendered.out, wheel, namespace="vision")
    assert len(ModelRegistry(again.out / "registry").versions()) == 1
    assert sorted(p.name for p in (again.out / "dist").iterdir()) == [wheel.name]


def test_bad_requests_are_named(registry: ModelRegistry, tmp_path: Path, wheel: Path) -> None:
    register_ocr(registry, None)
    with pytest.raises(NotFoundError, match="nope"):
        render(registry, KubernetesOptions(name="nope", out=tmp_path / "o", wheel=wheel))
    with pytest.raises(InvalidArgumentError, match=r"--namespace: 'Bad_NS'"):
        deploy(registry, tmp_path / "o", wheel, namespace="Bad_NS")
    with pytest.raises(InvalidArgumentError, match=r"--wheel: .* is not an mcp2026ai wheel"):
        deploy(registry, tmp_path / "o", tmp_path / "missing.whl")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgumentError, match=r"--out: .* is a file"):
        deploy(registry, tmp_path / "file", wheel)
    (tmp_path / "taken" / "registry").mkdir(parents=True)
    with pytest.raises(InvalidArgumentError, match="not a registry export"):
        deploy(registry, tmp_path / "taken", wheel)


def test_validate_names_the_file_and_field_of_a_broken_manifest(rendered: Rendered) -> None:
    lines = validate_rendered(rendered.out, rendered.manifests)
    assert sum(line.startswith("valid ") for line in lines) == 7  # six kinds and the NetworkPolicy
    path = rendered.out / "kubernetes/deployment.yaml"
    deployment = load(path)
    deployment["spec"]["replicas"] = "two"
    path.write_text(yaml.safe_dump(deployment))
    with pytest.raises(InvalidArgumentError, match=r"^kubernetes/deployment.yaml: spec.replicas: 'two' is not"):
        validate_rendered(rendered.out, rendered.manifests)
    example = rendered.out / "crd/modelservice.yaml"
    path.write_text(yaml.safe_dump(load(rendered.out / "kubernetes/service.yaml")))  # a valid object again
    broken = load(example)
    broken["spec"]["contract"]["latency"]["p99_ms"] = 0
    example.write_text(yaml.safe_dump(broken))
    with pytest.raises(InvalidArgumentError, match=r"^crd/modelservice.yaml: spec.contract.latency.p99_ms: 0 is less"):
        validate_rendered(rendered.out, rendered.manifests)


def test_an_encrypted_artifact_is_exported_in_plaintext_and_said_so(
    mcp_home: Path, tmp_path: Path, wheel: Path
) -> None:
    registry = ModelRegistry(mcp_home, ArtifactCipher(os.urandom(32)))
    register_ocr(registry, None)
    assert registry.store.is_encrypted(registry.resolve("ocr-cls").digest)
    rendered = deploy(registry, tmp_path / "out", wheel)
    assert rendered.decrypted
    exported = ModelRegistry(rendered.out / "registry")
    assert (
        exported.artifact_path(exported.resolve("ocr-cls")).read_bytes() == bundled_model_path("ocr-cls").read_bytes()
    )


def test_apply_creates_the_crd_before_the_objects_of_the_flavour(tmp_path: Path) -> None:
    steps = [" ".join(step) for step in kubectl_steps(tmp_path, Flavour.KSERVE)]
    assert steps == [
        f"apply -f {tmp_path}/crd/modelservice-crd.yaml",
        "wait --for=condition=Established crd/modelservices.mcp2026ai.dev --timeout=30s",
        f"apply -f {tmp_path}/kserve",
        f"apply -f {tmp_path}/crd/modelservice.yaml",
    ]
    assert kubectl_steps(tmp_path, Flavour.PLAIN)[2] == ["apply", "-f", str(tmp_path / "kubernetes")]

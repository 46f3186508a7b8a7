"""Ray Serve deployment options from `--replicas` and the contracts' resources (no Ray needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp2026ai.contract import InferenceContract, parse_contract
from mcp2026ai.deploy.ray import RayServeOptions, deployment_options, max_replicas
from mcp2026ai.deploy.ray_front import front_options
from mcp2026ai.errors import ContractError
from support.cli import run_main


def contract(resources: dict[str, object]) -> InferenceContract:
    return parse_contract({"resources": resources})


def test_a_fixed_replica_count_wins_over_the_contract() -> None:
    chosen = deployment_options(RayServeOptions(replicas=3), [contract({"replicas": {"min": 1, "max": 5}})])
    assert chosen["num_replicas"] == 3 and "autoscaling_config" not in chosen


def test_without_scaling_in_any_contract_one_replica_runs() -> None:
    assert deployment_options(RayServeOptions(), [None, contract({})])["num_replicas"] == 1


def test_a_replica_range_becomes_an_autoscaling_config() -> None:
    resources = {"replicas": {"min": 1, "max": 4}, "autoscale": {"target_ongoing_requests": 3, "upscale_delay_s": 1}}
    scaling = deployment_options(RayServeOptions(), [contract(resources)])["autoscaling_config"]
    assert (scaling["min_replicas"], scaling["max_replicas"], scaling["initial_replicas"]) == (1, 4, 1)
    assert scaling["target_ongoing_requests"] == 3 and scaling["upscale_delay_s"] == 1


def test_the_seed_min_replicas_with_a_gpu_target_is_accepted_on_a_cpu_host(caplog: pytest.LogCaptureFixture) -> None:
    seed = contract({"min_replicas": 2, "autoscale": {"target_gpu_utilization": 0.75}})
    scaling = deployment_options(RayServeOptions(), [seed])["autoscaling_config"]
    assert (scaling["min_replicas"], scaling["max_replicas"]) == (2, 2)
    assert "target_gpu_utilization is ignored" in caplog.text


def test_several_models_take_the_widest_range_and_the_tightest_target() -> None:
    a = contract({"replicas": {"min": 1, "max": 2}, "autoscale": {"target_ongoing_requests": 4}})
    b = contract({"replicas": {"min": 2, "max": 3}, "autoscale": {"target_ongoing_requests": 2}})
    scaling = deployment_options(RayServeOptions(), [a, b])["autoscaling_config"]
    assert (scaling["min_replicas"], scaling["max_replicas"], scaling["target_ongoing_requests"]) == (2, 3, 2)


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"replicas": {"min": 3, "max": 2}}, "replicas.min (3) must not exceed replicas.max (2)"),
        ({"min_replicas": 1, "replicas": {"min": 2, "max": 2}}, "min_replicas (1) and replicas.min (2) disagree"),
        ({"autoscale": {"target_ongoing_requests": 0}}, "resources.autoscale.target_ongoing_requests"),
    ],
)
def test_bad_scaling_fields_name_the_field(resources: dict[str, object], message: str) -> None:
    with pytest.raises(ContractError, match=message.replace("(", r"\(").replace(")", r"\)")):
        contract(resources)


def test_without_ray_installed_serve_replicas_says_which_extra(
    tmp_path: Path, mlp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_main(["model", "register", "--name", "mlp", "--path", str(mlp_path)], capsys, monkeypatch).code == 0
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` does when it is not installed
    outcome = run_main(["serve", "--name", "mlp", "--replicas", "2", "--no-policy"], capsys, monkeypatch)
    assert outcome.code != 0
    assert "pip install 'mcp2026ai[ray]'" in outcome.err and "Traceback" not in outcome.err
    assert len(outcome.err.strip().splitlines()) == 1, outcome.err


def test_the_front_runs_once_on_the_head_node_and_takes_every_replicas_requests() -> None:
    chosen = deployment_options(RayServeOptions(), [contract({"replicas": {"min": 1, "max": 4}})])
    front = front_options(chosen["max_ongoing_requests"] * max_replicas(chosen))
    assert front["num_replicas"] == 1 and front["max_ongoing_requests"] == 4 * chosen["max_ongoing_requests"]
    assert front["ray_actor_options"] == {"num_cpus": 0, "resources": {"node:__internal_head__": 0.001}}
    assert RayServeOptions().failover and not RayServeOptions(failover=False).failover

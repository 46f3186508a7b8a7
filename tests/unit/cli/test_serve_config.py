"""``mcp serve``'s options generated from ServerConfig, and ``--config serve.yaml`` (cli/serve_flags.py,
cli/serve_config.py): one default per setting, file then flags, bad keys refused with file, key and value."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mcp2026ai.cli.serve_flags import BUILT, NO_FLAG, flag_names
from mcp2026ai.server.config import ServerConfig
from tests.support.cli import Invoke, ok, run_main

LEGACY_FLAGS = [
    "--name", "--model-path", "--model-repository", "--host", "--port", "--grpc-port", "--max-request-mb",
    "--drain-timeout", "--workers", "--replicas", "--ray", "--ray-address", "--ray-failover", "--grpc-acceptors",
    "--policy", "--no-policy", "--backend", "--sync-interval", "--max-num-seqs", "--max-model-len", "--kv-cache-mb",
    "--speculative-tokens", "--prefix-cache-mb", "--limit", "--stream-buffer-tokens", "--log-level", "--config",
    "--header-timeout", "--keep-alive", "--listen-backlog", "--loop", "--gil-switch-interval-ms",
    "--bulk-batch-nice", "--max-connections", "--trusted-proxy", "--require-signed", "--trusted-key", "--auth",
    "--tls-cert", "--tls-key", "--tls-ca", "--tls-require-client-cert", "--trace", "--trace-endpoint",
    "--trace-sample-ratio", "--metrics-compat",
]  # fmt: skip
"""Every flag `mcp serve` had before its options were generated (tests and docs use them)."""


def effective(cli: Invoke, *args: str | Path) -> dict[str, object]:
    document = yaml.safe_load(ok(cli("serve", "--print-config", *args)))
    assert isinstance(document, dict)
    return document


def test_a_file_equal_to_the_defaults_gives_the_same_configuration_as_no_file(cli: Invoke, tmp_path: Path) -> None:
    defaults = effective(cli)
    dumped = tmp_path / "serve.yaml"
    dumped.write_text(yaml.safe_dump(defaults))
    assert effective(cli, "--config", dumped) == defaults
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert effective(cli, "--config", empty) == defaults
    in_code = ServerConfig(plan_with_policy=True).model_dump(mode="json", exclude=NO_FLAG | BUILT)
    assert {key: defaults[key] for key in in_code} == in_code, "each default is the model's (--policy aside)"


def test_flags_override_the_file_and_the_file_overrides_the_defaults(cli: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text("http_port: 9000\ngrpc_port: null\nhost_tuning: latency\ngeneration: {max_num_seqs: 16}\n")
    from_file = effective(cli, "--config", path)
    assert (from_file["http_port"], from_file["grpc_port"]) == (9000, None)
    assert from_file["generation"]["max_num_seqs"] == 16  # type: ignore[index]
    assert from_file["host_tuning"]["bulk_batch_nice"] == 10  # type: ignore[index]
    both = effective(cli, "--config", path, "--port", "9100", "--bulk-batch-nice", "off", "--max-request-mb", "2")
    assert (both["http_port"], both["max_request_bytes"], both["grpc_port"]) == (9100, 2 << 20, None)
    tuning = both["host_tuning"]
    assert isinstance(tuning, dict) and tuning["bulk_batch_nice"] is None and tuning["freeze_startup_heap"] is True
    assert effective(cli, "--grpc-port", "-1")["grpc_port"] is None  # the older spelling of off still works


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("http_port: 9000\nhttp_prot: 9001\n", "{path}: http_prot: unknown key (value: 9001)"),
        ("host_tuning: {gil_interval: 1}\n", "{path}: host_tuning.gil_interval: unknown key (value: 1)"),
        ("keep_alive_s: -3\n", "{path}: keep_alive_s: Input should be greater than or equal to 1 (value: -3)"),
        ("peer_dir: /tmp/x\n", "{path}: peer_dir: set by mcp serve itself (value: '/tmp/x')"),
        ("- 1\n", "{path}: expected a mapping of ServerConfig keys, got list"),
    ],
)
def test_a_bad_file_is_refused_in_one_line_naming_file_key_and_value(
    document: str,
    expected: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(document)
    outcome = run_main(["serve", "--config", str(path), "--print-config"], capsys, monkeypatch)
    assert outcome.code == 2 and "Traceback" not in outcome.err
    assert outcome.err.strip() == "error: " + expected.format(path=path)


def test_a_bad_flag_value_names_the_flag(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_main(["serve", "--keep-alive", "0", "--print-config"], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.err.strip() == "error: --keep-alive: Input should be greater than or equal to 1 (value: 0)"


def test_every_field_has_its_flag_and_every_older_flag_still_exists(cli: Invoke) -> None:
    names = dict(flag_names())
    assert set(ServerConfig.model_fields) - BUILT - NO_FLAG <= {key.split(".")[0] for key in names}
    assert names["max_json_bytes"] == "--max-json-bytes", "a field without a line in FLAGS: its own name"
    text = ok(cli("serve", "--help"))
    missing = [flag for flag in LEGACY_FLAGS if flag not in text]
    assert not missing
    for panel in ("Network", "Limits", "Models and plans", "Language models", "Security", "Host tuning"):
        assert panel in text, f"--help groups the options: {panel}"

"""``mcp serve --config FILE``: a server configuration file (ServerConfig's fields, in YAML or JSON), or a
language model's mcp-config.yaml (a file with a top-level ``model``, serving/llm_config.py).

    # serve.yaml: every key is a ServerConfig field (docs/serving.md "Configuration file")
    http_port: 9000
    grpc_port: null          # off
    host_tuning: latency     # or {preset: latency, bulk_batch_nice: 5}
    generation: {max_num_seqs: 16}

A key ServerConfig does not know, or a bad value, is refused with the file, the key and the value (one
line, exit 2). Flags given on the command line override the file (cli/serve_flags.py has the order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcp2026ai.cli.serve_flags import NO_FLAG, flag_names, flag_values, merged
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.messages import read_yaml_file
from mcp2026ai.server.config import ServerConfig


@dataclass
class ConfigFiles:
    """The ``--config`` files of one ``mcp serve``, by kind."""

    server: Path | None = None
    document: dict[str, Any] = field(default_factory=dict)
    """The server file's keys (relative paths resolved against its folder)."""
    language_models: list[Path] = field(default_factory=list)


def read_config_files(paths: list[Path]) -> ConfigFiles:
    """Sort ``paths`` into the one server configuration and the language models' files."""
    files = ConfigFiles()
    for path in paths:
        document = read_yaml_file(path, "configuration")
        if isinstance(document, dict) and "model" in document:
            files.language_models.append(path.resolve())
            continue
        if files.server is not None:
            raise InvalidArgumentError(f"{path}: a second server configuration (the first: {files.server})")
        if document is None:
            document = {}
        if not isinstance(document, dict):
            raise InvalidArgumentError(
                f"{path}: expected a mapping of ServerConfig keys, got {type(document).__name__}"
            )
        internal = sorted(set(document) & NO_FLAG)
        if internal:
            key = internal[0]
            raise InvalidArgumentError(f"{path}: {key}: set by mcp serve itself (value: {document[key]!r})")
        files.server, files.document = path, _normalized(document, path.resolve().parent)
    return files


def _normalized(document: dict[str, Any], folder: Path) -> dict[str, Any]:
    document = dict(document)
    if isinstance(document.get("host_tuning"), str):  # a bare preset name
        document["host_tuning"] = {"preset": document["host_tuning"]}
    if isinstance(document.get("generation_configs"), list):
        document["generation_configs"] = [str(folder / str(item)) for item in document["generation_configs"]]
    return document


def server_config(
    options: dict[str, Any],
    given: Callable[[str], bool],
    files: ConfigFiles,
    built: dict[str, tuple[Any, bool]],
) -> ServerConfig:
    """The effective configuration: the fields' defaults, the flags' own defaults, the file, the flags given.
    ``built``: field -> (value, whether one of its flags was given) for the fields several flags build
    (security, limits): a given flag's value wins, then the file's, then the value the flags' defaults build."""
    defaults, chosen = flag_values(options, given)
    if files.server is not None:
        _validate(merged(defaults, files.document), str(files.server))
    layers = merged(defaults, files.document, chosen)
    for key, (value, flag_given) in built.items():
        if flag_given or key not in files.document:
            layers[key] = value
    return _validate(layers, "mcp serve")


def dump(config: ServerConfig) -> dict[str, Any]:
    """What ``--print-config`` prints: a file that gives this configuration (less what the server sets itself)."""
    return config.model_dump(mode="json", exclude=NO_FLAG)


def _validate(document: dict[str, Any], source: str) -> ServerConfig:
    try:
        return ServerConfig.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "(top level)"
        where = f"{source}: {key}" if source != "mcp serve" else dict(flag_names()).get(key, key)
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        raise InvalidArgumentError(f"{where}: {message} (value: {error['input']!r})") from None

"""``mcp serve``'s options, generated from :class:`ServerConfig`: each default is written once, in the model.

How a ServerConfig field becomes a flag:

- Every top-level field gets one by being declared: ``max_json_bytes`` -> ``--max-json-bytes``; its type
  and default are the field's, its help the field's description. A ``bool`` is ``--x/--no-x``, a
  ``list`` is repeatable, a ``Literal`` a choice, and a value that may be ``None`` also takes ``off``
  (None: the one spelling of off).
- :data:`FLAGS` lists the exceptions, one :class:`Flag` each: an older name kept (``http_port`` ->
  ``--port``), a unit the flag is given in (``--max-request-mb``), the help panel, and the fields of a
  nested model (``generation.max_num_seqs``) that have a flag of their own; nested fields not listed are
  set only in a ``--config`` file.
- :data:`BUILT` names the fields that several flags build together in code of their own (security,
  per-request limits, the language models' config files); :data:`NO_FLAG` those the server sets itself.

Precedence: the field's default, then a flag default that differs (only ``--policy``: ``mcp serve``
measures plans, a ServerConfig built in code does not), then the ``--config`` file, then the flags given.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mcp2026ai.server.api_groups import GROUPS
from mcp2026ai.server.config import ServerConfig

MIB = 1 << 20
ApiGroup = StrEnum("ApiGroup", {group.replace("-", "_").upper(): group for group in GROUPS})  # type: ignore[misc]
"""The management API groups ``--disable-api`` takes (server/api_groups.py)."""
UNSET: Any = object()
"""A flag default that is the field's own."""


@dataclass(frozen=True)
class Flag:
    """One ``mcp serve`` option and the ServerConfig field (a dotted path) it sets."""

    key: str
    name: str | None = None
    """The option's name, e.g. ``--port`` (``--a/--no-a`` for a switch); None: from the field's name."""
    panel: str = "Server"
    to_config: Callable[[Any], Any] | None = None
    """The option's value as the field's (a unit, a legacy spelling of off)."""
    from_config: Callable[[Any], Any] | None = None
    """The field's default as the option's."""
    option_type: Any = UNSET
    """The option's type where it is not the field's (with to_config)."""
    default: Any = UNSET
    """An option default that differs from the field's, documented where it is set."""

    @property
    def param(self) -> str:
        return self.key.replace(".", "__")


NETWORK, LIMITS, MODELS, LLM, TRACING, TUNING = (
    "Network",
    "Limits",
    "Models and plans",
    "Language models",
    "Tracing",
    "Host tuning",
)

FLAGS: list[Flag] = [
    Flag("host", panel=NETWORK),
    Flag("http_port", "--port", NETWORK),
    Flag("grpc_port", panel=NETWORK, to_config=lambda port: None if port is not None and port < 0 else port),
    Flag("grpc_acceptors", panel=NETWORK),
    Flag("header_timeout_s", "--header-timeout", NETWORK),
    Flag("keep_alive_s", "--keep-alive", NETWORK),
    Flag("listen_backlog", panel=NETWORK),
    Flag("event_loop", "--loop", NETWORK),
    Flag("trusted_proxies", "--trusted-proxy", NETWORK),
    Flag("drain_timeout_s", "--drain-timeout", NETWORK),
    Flag("allowed_hosts", "--allowed-host", NETWORK),
    Flag("allow_unauthenticated", panel="Security"),
    Flag(
        "disabled_apis",
        "--disable-api",
        "Security",
        to_config=lambda groups: [str(group) for group in groups] if groups else [],
        option_type=list[ApiGroup],
    ),
    Flag("body_timeout_s", "--body-timeout", LIMITS),
    Flag(
        "max_request_bytes",
        "--max-request-mb",
        LIMITS,
        to_config=lambda mib: int(mib * MIB),
        from_config=lambda size: size / MIB,
        option_type=float,
    ),
    Flag("max_json_bytes", panel=LIMITS),
    Flag("max_inflight_body_bytes", panel=LIMITS),
    Flag("max_connections", panel=LIMITS),
    Flag("plan_with_policy", "--policy/--no-policy", MODELS, default=True),  # `mcp serve` measures; code opts in
    Flag("runtime", "--backend", MODELS),
    Flag("sync_interval_s", "--sync-interval", MODELS),
    Flag("memory_budget_mb", panel=MODELS),
    Flag("generation.max_num_seqs", panel=LLM),
    Flag("generation.max_model_len", panel=LLM),
    Flag("generation.kv_cache_mb", panel=LLM),
    Flag("generation.speculative_tokens", panel=LLM),
    Flag("generation.prefix_cache_mb", panel=LLM),
    Flag("generation.batch_invariance", panel=LLM),
    Flag("generation.stream_buffer_deltas", "--stream-buffer-tokens", LLM),
    Flag("generation.max_loras", panel=LLM),
    Flag("generation.max_lora_rank", panel=LLM),
    Flag("lora_allowed_dirs", "--lora-allowed-dir", LLM),
    Flag("tool_call_parser", panel=LLM),
    Flag("reasoning_parser", panel=LLM),
    Flag("generation_config", panel=LLM),
    Flag("metrics_compat", panel=TRACING),
    Flag("traces.exporter", "--trace", TRACING),
    Flag("traces.endpoint", "--trace-endpoint", TRACING),
    Flag("traces.sample_ratio", "--trace-sample-ratio", TRACING),
    Flag("log_level", panel=TRACING),
    Flag("host_tuning.preset", "--host-tuning", TUNING),
    Flag("host_tuning.gil_switch_interval_ms", panel=TUNING),
    Flag(
        "host_tuning.bulk_batch_nice",
        panel=TUNING,
        to_config=lambda nice: nice or None,  # 0 was this flag's off before `off`
    ),
    Flag("host_tuning.best_effort_load_nice", panel=TUNING),
    Flag("host_tuning.freeze_startup_heap", panel=TUNING),
    Flag("host_tuning.full_collection_after", panel=TUNING),
    Flag("host_tuning.lone_session_plan", panel=TUNING),
]
BUILT = {"security", "generation_limits", "generation_configs"}
"""Fields that flags of their own build (cli/serve_security.py, cli/serve_limits.py, ``--config``)."""
NO_FLAG = {"reuse_port", "peer_dir"}
"""Fields the server sets itself (``--workers``)."""


def all_flags() -> list[Flag]:
    """:data:`FLAGS`, then a flag of its own name for every other top-level field."""
    listed = {flag.key.split(".")[0] for flag in FLAGS}
    extra = [Flag(key) for key in ServerConfig.model_fields if key not in listed | BUILT | NO_FLAG]
    return FLAGS + extra


def field_of(key: str) -> FieldInfo:
    """The pydantic field at a dotted path of ServerConfig."""
    model: type[BaseModel] = ServerConfig
    *parents, last = key.split(".")
    for part in parents:
        annotation = model.model_fields[part].annotation
        assert isinstance(annotation, type) and issubclass(annotation, BaseModel), key
        model = annotation
    return model.model_fields[last]


def field_default(key: str) -> Any:
    info = field_of(key)
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return info.default


def value_parser(annotation: Any, optional: bool) -> Callable[[str], Any]:
    """The option's parser: the field's scalar type, a Literal's choices, and ``off`` / ``none`` for None
    where the field may be None."""
    choices = [str(arg) for arg in get_args(annotation)] if get_origin(annotation) is Literal else None
    scalar: Callable[[str], Any] = {int: int, float: float, Path: Path}.get(annotation, str)

    def parse(text: Any) -> Any:
        if not isinstance(text, str):  # a default, already the field's
            return text
        if optional and text.strip().lower() in ("off", "none"):
            return None
        if choices is not None and text not in choices:
            raise typer.BadParameter(f"{text!r} is not one of {', '.join(choices)}")
        try:
            return scalar(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a valid {scalar.__name__}") from None

    return parse


def _optional(annotation: Any) -> tuple[Any, bool]:
    """``(T, True)`` for ``T | None``."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(args) == 1 and len(args) < len(get_args(annotation)):
            return args[0], True
    return annotation, False


def _parameter(flag: Flag) -> inspect.Parameter:
    info = field_of(flag.key)
    annotation, optional = _optional(info.annotation if flag.option_type is UNSET else flag.option_type)
    default = flag.default if flag.default is not UNSET else field_default(flag.key)
    if flag.from_config is not None and default is not None:
        default = flag.from_config(default)
    name = flag.name or "--" + flag.key.split(".")[-1].replace("_", "-")
    options: dict[str, Any] = {"help": info.description, "rich_help_panel": flag.panel}
    if annotation is bool:
        if "/" not in name:
            name = f"{name}/--no-{name[2:]}"
        python_type: Any = bool
    elif get_origin(annotation) is list:
        python_type = list[get_args(annotation)[0]]  # type: ignore[misc]
        default = list(default) or None
    else:
        options["parser"] = value_parser(annotation, optional)
        choices = "|".join(str(arg) for arg in get_args(annotation)) if get_origin(annotation) is Literal else None
        options["metavar"] = choices or {int: "INTEGER", float: "FLOAT"}.get(annotation, "TEXT")
        if optional:
            options["metavar"] += "|off"
        python_type = object
        if default is None:
            options["show_default"] = "off"
    annotated = Annotated[python_type, typer.Option(name, **options)]
    return inspect.Parameter(flag.param, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotated)


def config_parameters() -> list[inspect.Parameter]:
    """The options :func:`flag_values` reads, for a command's signature."""
    return [_parameter(flag) for flag in all_flags()]


def flag_values(values: dict[str, Any], given: Callable[[str], bool]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(defaults, chosen)``: the nested ServerConfig values of the flags whose default differs from the
    field's, and of the flags given on the command line (``given(param)``)."""
    defaults: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    for flag in all_flags():
        value = values[flag.param]
        if get_origin(_optional(field_of(flag.key).annotation)[0]) is list:
            value = list(value or [])
        if flag.to_config is not None:
            value = flag.to_config(value)
        if given(flag.param):
            _put(chosen, flag.key, value)
        elif flag.default is not UNSET:
            _put(defaults, flag.key, value)
    return defaults, chosen


def given_on_command_line(ctx: typer.Context) -> Callable[[str], bool]:
    """Whether the option of parameter ``param`` was given (not its default)."""

    def given(param: str) -> bool:
        source = ctx.get_parameter_source(param)
        return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")

    return given


def _put(tree: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[last] = value


def merged(*layers: dict[str, Any]) -> dict[str, Any]:
    """The layers' nested values, a later one's over an earlier one's (nested models merged key by key)."""
    result: dict[str, Any] = {}
    for layer in layers:
        _merge_into(result, layer)
    return result


def _merge_into(target: dict[str, Any], layer: dict[str, Any]) -> None:
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge_into(target[key], value)
        else:
            target[key] = value


def flag_names() -> Iterator[tuple[str, str]]:
    """(field path, option name) of every generated option, for the docs and tests."""
    for flag in all_flags():
        yield flag.key, flag.name or "--" + flag.key.split(".")[-1].replace("_", "-")


def command_signature(command: Callable[..., Any]) -> inspect.Signature:
    """``command``'s own parameters with its ``**options`` replaced by the generated options (typer reads the
    signature, and passes those as keyword arguments)."""
    own = [
        param
        for param in inspect.signature(command, eval_str=True).parameters.values()
        if param.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return inspect.Signature([*own, *config_parameters()])

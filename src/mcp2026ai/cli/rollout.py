"""``mcp rollout set|show|clear`` (canary, shadow, breaker settings) and ``mcp shadow report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.routing.chat_shadow import chat_shadow_report
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.config import load_rollouts as load_rollout_file
from mcp2026ai.routing.report import shadow_report

app = typer.Typer(help="Version rollouts: canary weight, shadow traffic, breaker and analysis.", no_args_is_help=True)
shadow_app = typer.Typer(help="Shadow traffic diffs.", no_args_is_help=True)

_NAME = Annotated[str, typer.Option(help="Model name.")]
_JSON = Annotated[bool, typer.Option("--json", help="Print JSON.")]
_REPORT_COLUMNS = ["primary", "shadow", "requests", "dropped", "status_match_rate", "shadow_error_rate",
                   "max_abs_diff", "rel_l2_mean", "rel_l2_max", "top1_agreement", "primary_latency_ms_mean",
                   "shadow_latency_ms_mean"]  # fmt: skip
_CHAT_COLUMNS = ["primary", "shadow", "prompt", "requests", "dropped", "shadow_error_rate", "token_agreement",
                 "identical_rate", "ttft_delta_ms_mean", "itl_delta_ms_mean"]  # fmt: skip


@app.command("set")
def set_rollout(
    name: Annotated[str | None, typer.Option(help="Model name (optional with --file if the file names it).")] = None,
    file: Annotated[Path | None, typer.Option(help="Rollout YAML: replaces the whole rollout.")] = None,
    stable: Annotated[str | None, typer.Option(help="Stable version; the registry default if unset.")] = None,
    canary: Annotated[str | None, typer.Option(help="Canary version.")] = None,
    weight: Annotated[int | None, typer.Option(help="Percent of users sent to the canary (0-100).")] = None,
    shadow: Annotated[str | None, typer.Option(help="Version that receives mirrored traffic.")] = None,
    shadow_percent: Annotated[float | None, typer.Option(help="Percent of requests mirrored (0-100).")] = None,
    fallback_model: Annotated[str | None, typer.Option(help="Model served while a circuit is open.")] = None,
    interval: Annotated[float | None, typer.Option(help="Canary analysis interval in seconds.")] = None,
    as_json: _JSON = False,
) -> None:
    """Create or change a rollout; options change only what they name (``clear`` starts over)."""
    management = context.management()
    if file is not None:
        configs = management.put_rollouts(load_rollout_file(file, name), str(file))
    else:
        if name is None:
            raise InvalidArgumentError("--name: required unless --file is given")
        changes = {"stable": stable, "canary": canary, "weight": weight, "shadow": shadow,
                   "shadow_percent": shadow_percent, "fallback_model": fallback_model}  # fmt: skip
        configs = [management.set_rollout(name, {k: v for k, v in changes.items() if v is not None}, interval)]
    if as_json:
        print_json([config.model_dump(mode="json") for config in configs])
        return
    for config in configs:
        console.print(f"rollout of [bold]{config.name}[/] set: {describe(config)}")


@app.command()
def show(name: _NAME, as_json: _JSON = False) -> None:
    """Show a model's rollout and its rollbacks."""
    document = context.management().rollout(name)
    if as_json:
        print_json(document)
        return
    config = RolloutConfig.model_validate(document["rollout"]) if document["rollout"] else None
    rollbacks = document["rollbacks"]
    if config is None:
        console.print(f"{name}: no rollout (every request goes to the default version)")
    else:
        console.print(f"[bold]{name}[/]: {describe(config)}")
        console.print(yaml.safe_dump(config.model_dump(mode="json", include={"analysis", "breaker"})).rstrip())
    rows = [{"time": row["time"], "version": row["version"], "chosen": row["chosen"], "reason": row["reason"]}
            for row in rollbacks]  # fmt: skip
    if rows:
        print_table("rollbacks", rows, ["time", "version", "chosen", "reason"])


@app.command()
def clear(name: _NAME) -> None:
    """Remove a model's rollout: all traffic goes to its default version."""
    context.management().clear_rollout(name)
    console.print(f"rollout of [bold]{name}[/] cleared")


@shadow_app.command()
def report(name: _NAME, as_json: _JSON = False) -> None:
    """Shadow diffs per (primary, shadow) version pair, merged over every stored flush; for a language
    model's chats, per prompt (named by the digest of its token ids): the greedy token agreement and
    the TTFT and ITL deltas (shadow minus primary, ms)."""
    registry = context.registry()
    registry.versions(name)
    rows = shadow_report(registry.catalog, name)
    chats = chat_shadow_report(registry.catalog, name)
    if as_json:
        print_json([*rows, *chats])
        return
    if not rows and not chats:
        console.print(f"{name}: no shadow diffs recorded")
        return
    if rows:
        print_table(f"shadow diffs of {name}", [_formatted(row) for row in rows], _REPORT_COLUMNS)
    if chats:
        print_table(f"chat shadow diffs of {name}, per prompt", [_formatted(row) for row in chats], _CHAT_COLUMNS)


def describe(config: RolloutConfig) -> str:
    parts = [f"stable {config.stable or 'default'}"]
    if config.canary:
        parts.append(f"canary {config.canary} at {config.weight}%")
    if config.shadow:
        parts.append(f"shadow {config.shadow} at {config.shadow_percent:g}%")
    if config.fallback_model:
        parts.append(f"fallback {config.fallback_model}")
    return ", ".join(parts)


def _formatted(row: dict[str, Any]) -> dict[str, Any]:
    return {key: f"{value:.4g}" if isinstance(value, float) else ("-" if value is None else value)
            for key, value in row.items()}  # fmt: skip

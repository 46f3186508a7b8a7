"""``mcp model``: register, list, show, promote and remove model versions."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Annotated

import typer
import yaml

from mcp2026ai.cli import context, triton
from mcp2026ai.cli.downloads import register_remote
from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.contract import load_contract
from mcp2026ai.dataplane.management import Registration
from mcp2026ai.errors import InvalidArgumentError, MCPError
from mcp2026ai.ir.llm_info import LLMInfo, LLMPrecision
from mcp2026ai.ir.pipeline_spec import ModelRef, is_pipeline_spec
from mcp2026ai.policy.probe import query_gpus
from mcp2026ai.registry import ModelRegistry, ModelVersion, Preprocessing, Stage
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.registry.lora_bundle import DEFAULT_MAX_RANK
from mcp2026ai.registry.pipelines import read_pipeline, register_pipeline
from mcp2026ai.registry.remote_sources import is_remote
from mcp2026ai.registry.signing import sign_version
from mcp2026ai.runtime.python_code import check_python_source
from mcp2026ai.security import KeyRing
from mcp2026ai.serving.llm_config import (
    ServingConfig,
    config_notes,
    load_serving_config,
    resolve_model,
    store_config,
)

app = typer.Typer(help="Register and manage model versions.", no_args_is_help=True)

_LIST_COLUMNS = ["name", "version", "number", "stage", "format", "digest", "created", "tags"]


def parse_tags(pairs: list[str]) -> dict[str, str]:
    tags = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidArgumentError(f"--tag {pair!r}: expected key=value")
        tags[key] = value
    return tags


def load_preprocessing(path: Path) -> Preprocessing:
    if not path.exists():
        raise InvalidArgumentError(f"{path}: preprocessing file not found")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        text = document.get("text") if isinstance(document, dict) else None
        if isinstance(text, dict) and isinstance(text.get("tokenizer"), str):  # relative to the YAML file
            text["tokenizer"] = str(path.parent / Path(text["tokenizer"]).expanduser())
        return Preprocessing.model_validate(document)
    except (yaml.YAMLError, ValueError) as exc:
        raise InvalidArgumentError(f"{path}: invalid preprocessing settings ({exc})".replace("\n", " ")) from None


@app.command()
def register(
    name: Annotated[str | None, typer.Option(help="Model name (with --config: its `model`).")] = None,
    path: Annotated[
        str | None,
        typer.Option(
            help="Model file (.onnx, .tflite, .pt), or a language model (.gguf, Hugging Face folder); "
            "or s3://bucket/key, s3://bucket/prefix/ (a folder) or https://... (downloaded first)."
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="mcp-config.yaml of a language model: generation defaults and resources; without --path it "
            "applies to the registered model it names."
        ),
    ] = None,
    contract: Annotated[Path | None, typer.Option(help="Inference contract YAML.")] = None,
    version: Annotated[str | None, typer.Option(help="Semantic version; next minor if omitted.")] = None,
    stage: Annotated[Stage, typer.Option(help="Lifecycle stage.")] = Stage.DEV,
    tag: Annotated[list[str] | None, typer.Option(help="key=value tag; repeatable.")] = None,
    preprocessing: Annotated[Path | None, typer.Option(help="Image preprocessing YAML for /v1/infer.")] = None,
    plan: Annotated[
        bool, typer.Option(help="Measure plans against the contract now; refuse the version if none meets it.")
    ] = False,
    precision: Annotated[
        LLMPrecision | None, typer.Option(help="Language models: weight precision of the decoder (default int4).")
    ] = None,
    adapter: Annotated[
        Path | None,
        typer.Option(
            help="A PEFT LoRA adapter folder (adapter_config.json + adapter_model.safetensors); needs --base."
        ),
    ] = None,
    base: Annotated[
        str | None, typer.Option(help="With --adapter: the base language model, NAME or NAME:VERSION (its default).")
    ] = None,
    max_lora_rank: Annotated[
        int, typer.Option(min=1, max=512, help="With --adapter: refuse adapters of a higher rank.")
    ] = DEFAULT_MAX_RANK,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Import a model file, store it content-addressed and record its metadata."""
    if adapter is not None or base is not None:
        _register_adapter(name, adapter, base, max_lora_rank, version, stage, tag, as_json)
        return
    if context.remote():
        _register_on_server(name, path, contract, version, stage, tag, as_json, config or preprocessing or precision)
        return
    registry = context.registry()
    serving = load_serving_config(config) if config else None
    if serving is not None and path is None:
        _configure(registry, serving, config, as_json)  # type: ignore[arg-type]
        return
    if path is not None and not is_remote(path) and is_pipeline_spec(Path(path)):
        _print_registered(_register_pipeline(registry, Path(path), name, version, stage), as_json)
        return
    name = _model_name(name, serving, config)
    if path is None:
        raise InvalidArgumentError("--path is required (or --config naming a registered model)")
    register_as = functools.partial(
        registry.register,
        name,
        contract=load_contract(contract) if contract else None,
        version=version,
        stage=stage,
        tags=parse_tags(tag or []),
        preprocessing=load_preprocessing(preprocessing) if preprocessing else None,
        precision=precision,
    )
    record = register_remote(registry, path, register_as) if is_remote(path) else register_as(Path(path))
    if plan:
        _plan_or_withdraw(registry, record)
    if serving is not None:
        _store_serving_config(registry, record, serving, config)  # type: ignore[arg-type]
    _print_registered(record, as_json)


def _register_pipeline(
    registry: ModelRegistry, spec: Path, name: str | None, version: str | None, stage: Stage
) -> ModelVersion:
    """A pipeline spec (``kind: pipeline``): its model files as ``<name>.<step>``, its Python steps by digest."""
    record = register_pipeline(
        registry, spec, check_python_source, name=name, version=version, stage=stage, actor=context.actor()
    )
    for step in read_pipeline(registry, record).steps:
        if isinstance(step.model, ModelRef):
            runs = f"model {step.model.name}" + (f":{step.model.version}" if step.model.version else "")
        else:
            runs = f"python {step.class_name} (sha256 {str(step.python)[:12]})"
        console.print(f"  step {step.name}: {runs}", highlight=False, soft_wrap=True)
    return record


def _register_adapter(
    name: str | None,
    adapter: Path | None,
    base: str | None,
    max_rank: int,
    version: str | None,
    stage: Stage,
    tag: list[str] | None,
    as_json: bool,
) -> None:
    """``--adapter DIR --base MODEL``: a LoRA adapter version whose lineage is the base version's digest."""
    if adapter is None or base is None or name is None:
        raise InvalidArgumentError("a LoRA adapter needs --name, --adapter DIR and --base MODEL")
    if context.remote():
        raise InvalidArgumentError("--adapter: register on the server's machine, or POST /v1/load_lora_adapter")
    if not adapter.is_dir():
        raise InvalidArgumentError(f"--adapter {adapter}: not a folder")
    registry = context.registry()
    base_name, _, base_version = base.partition(":")
    base_record = registry.resolve(base_name, base_version or None)
    record = registry.register(
        name,
        adapter,
        version=version,
        stage=stage,
        tags=parse_tags(tag or []),
        base=base_record,
        max_lora_rank=max_rank,
    )
    _print_registered(record, as_json)


def _print_registered(record: ModelVersion, as_json: bool) -> None:
    if as_json:
        print_json(record.model_dump(mode="json"))
        return
    console.print(f"registered [bold]{record.ref}[/] ({record.stage.value}, sha256 {record.digest[:12]})")


def _register_on_server(
    name: str | None,
    path: str | None,
    contract: Path | None,
    version: str | None,
    stage: Stage,
    tag: list[str] | None,
    as_json: bool,
    local_option: object,
) -> None:
    """``mcp --server URL model register``: the file uploaded (or the URL fetched by the server)."""
    if local_option:
        raise InvalidArgumentError("--config, --preprocessing and --precision: not available with --server")
    if name is None or path is None:
        raise InvalidArgumentError("--name and --path are required")
    asked = Registration(version, stage, parse_tags(tag or []), load_contract(contract) if contract else None)
    source = path if is_remote(path) else Path(path)
    if isinstance(source, Path) and is_pipeline_spec(source):
        raise InvalidArgumentError(
            f"--path {path}: a pipeline spec registers where its files are: run `mcp model register` without --server"
        )
    if isinstance(source, Path) and not source.is_file():
        raise InvalidArgumentError(f"--path {path}: not a file (with --server, one model file or a URL)")
    _print_registered(context.management().register(name, source, asked), as_json)


def _model_name(name: str | None, serving: ServingConfig | None, config: Path | None) -> str:
    if serving is not None and name is not None and name != serving.model:
        raise InvalidArgumentError(f"--name {name!r} and {config}: model: {serving.model!r} disagree; give one")
    chosen = name or (serving.model if serving else None)
    if chosen is None:
        raise InvalidArgumentError("--name is required")
    return chosen


def _configure(registry: ModelRegistry, serving: ServingConfig, config: Path, as_json: bool) -> None:
    """--config without --path: the config applies to the registered model it names."""
    record = resolve_model(registry, serving, str(config))
    _store_serving_config(registry, record, serving, config)
    if as_json:
        print_json({"model": record.ref, "config": serving.model_dump(mode="json")})


def _store_serving_config(registry: ModelRegistry, record: ModelVersion, serving: ServingConfig, config: Path) -> None:
    if not is_llm_format(record.format):
        raise InvalidArgumentError(f"{config}: model: {record.name!r} is not a language model ({record.format})")
    store_config(registry, record, serving)
    context.audit("model.configure", record.ref, {"source": str(config)})
    set_fields = serving.inference.parameters.model_dump(exclude_defaults=True)
    console.print(f"{record.ref}: generation defaults from {config}: {set_fields or 'none'}")
    for note in config_notes(serving, has_gpu=bool(query_gpus())):
        console.print(f"note: {note}")


@app.command("list")
def list_models(
    name: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List registered model versions."""
    records = context.management().versions(name)
    if as_json:
        print_json([record.model_dump(mode="json") for record in records])
        return
    print_table("models", [record.summary() for record in records], _LIST_COLUMNS)


@app.command()
def show(
    name: Annotated[str, typer.Option(help="Model name.")],
    version: Annotated[str | None, typer.Option(help="Version; the default version if omitted.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show one version: signature, contract, tags."""
    document = context.management().show(name, version)
    if as_json:
        print_json(document)
        return
    record = ModelVersion.model_validate(document)
    llm = LLMInfo.model_validate(document["llm"]) if "llm" in document else None
    _print_record(record)
    if llm is not None:
        rows = [{"field": field, "value": str(value)} for field, value in llm.describe().items()]
        print_table("language model", rows, ["field", "value"])


@app.command()
def promote(
    name: Annotated[str, typer.Option(help="Model name.")],
    version: Annotated[str, typer.Option(help="Version to move.")],
    stage: Annotated[Stage, typer.Option(help="Target stage.")],
) -> None:
    """Move a version to another stage (dev, staging, production, archived)."""
    record = context.management().promote(name, version, stage)
    console.print(f"{record.ref} is now {record.stage.value}")


@app.command()
def archive(
    name: Annotated[str, typer.Option(help="Model name.")],
    version: Annotated[str, typer.Option(help="Version to archive.")],
) -> None:
    """Archive a version: kept, never the default again (``promote --stage archived``)."""
    record = context.management().archive(name, version)
    console.print(f"{record.ref} is now {record.stage.value}")


@app.command("rm")
def remove(
    name: Annotated[str, typer.Option(help="Model name.")],
    version: Annotated[str | None, typer.Option(help="Version; every version if omitted.")] = None,
) -> None:
    """Remove a version (or the whole model) and its unreferenced artifacts."""
    removed = context.registry().remove(name, version)
    for record in removed:
        context.audit("model.rm", record.ref, {"digest": record.digest})
    console.print(f"removed {', '.join(record.ref for record in removed)}")


@app.command()
def sign(
    name: Annotated[str, typer.Option(help="Model name.")],
    version: Annotated[str | None, typer.Option(help="Version; the default version if omitted.")] = None,
    key: Annotated[str, typer.Option(help="Signing key name under MCP_HOME/keys.")] = "default",
) -> None:
    """Sign a version's artifact digest and metadata with an Ed25519 key (passphrase: MCP_KEY_PASSPHRASE)."""
    registry = context.registry()
    record = registry.resolve(name, version)
    signing_key = KeyRing(context.security_paths().keys_dir).load(key, passphrase=key_passphrase())
    signature = sign_version(registry, record, signing_key)
    context.audit("model.sign", record.ref, {"key_id": signature.key_id, "signer": signature.signer})
    console.print(f"signed [bold]{record.ref}[/] with key {signature.signer} ({signature.key_id})")


@app.command()
def verify(
    name: Annotated[str, typer.Option(help="Model name.")],
    version: Annotated[str | None, typer.Option(help="Version; the default version if omitted.")] = None,
) -> None:
    """Re-hash the artifact on disk and check a trusted signature; exits 2 with the reason if not."""
    status = context.management().signature(name, version)
    who = f"key {status['signer']} {status['key_id']}"
    console.print(f"{status['model']}: signature ok ({who}, sha256 {status['digest'][:12]})", highlight=False)


def key_passphrase() -> bytes | None:
    value = os.environ.get("MCP_KEY_PASSPHRASE")
    return value.encode("utf-8") if value else None


def _print_record(record: ModelVersion) -> None:
    summary = record.summary()
    console.print(f"[bold]{record.ref}[/]  stage={summary['stage']}  format={record.format}")
    console.print(f"sha256 {record.digest}  created {summary['created']}  tags {summary['tags'] or '-'}")
    rows = [
        {"role": role, "name": spec.name, "datatype": spec.datatype, "shape": spec.shape}
        for role, specs in (("input", record.signature.inputs), ("output", record.signature.outputs))
        for spec in specs
    ]
    print_table("signature", rows, ["role", "name", "datatype", "shape"])
    if record.contract is not None:
        console.print("contract:")
        console.print(yaml.safe_dump(record.contract.model_dump(mode="json"), sort_keys=False).rstrip())


def _plan_or_withdraw(registry: ModelRegistry, record: ModelVersion) -> None:
    """Plan the new version; if no plan meets its contract, remove it again and re-raise."""
    from mcp2026ai.policy.orchestrator import PolicyOrchestrator

    try:
        decision = PolicyOrchestrator(registry).plan_for(record, "register")
    except MCPError as exc:
        registry.remove(record.name, record.version)
        context.audit("model.rm", record.ref, {"digest": record.digest, "reason": str(exc)[:200]})
        raise
    console.print(f"plan: {decision.reason}", highlight=False)


app.command("import-triton")(triton.import_triton)
app.command("export")(triton.export)

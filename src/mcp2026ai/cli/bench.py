"""``mcp bench`` (and the ``mcp-bench`` console script): load-test a KServe v2 server.

mcp-bench -c 1000 -n 10000 -u http://localhost:8080/infer --output-format csv
mcp bench --model ocr-cls -u localhost:8081 -i grpc --shape x:3,48,192 --rate 200 --duration 30
"""

from __future__ import annotations

import asyncio
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mcp2026ai.bench.config import BenchConfig, parse_shapes
from mcp2026ai.bench.load import Samples
from mcp2026ai.bench.report import BenchReport, errors_table, table, to_csv, to_json
from mcp2026ai.cli.output import EXIT_USAGE, print_error
from mcp2026ai.errors import InvalidArgumentError, MCPError

_OPTION_NAMES = {
    "concurrency": "-c/--concurrency",
    "requests": "-n/--requests",
    "rate": "--rate",
    "duration_s": "--duration",
    "batch_size": "-b/--batch-size",
    "timeout_s": "--timeout",
    "max_in_flight": "--max-in-flight",
    "start_at_unix": "--start-at",
}


class OutputFormat(StrEnum):
    TABLE = "table"
    CSV = "csv"
    JSON = "json"


def bench(
    url: Annotated[str, typer.Option("-u", "--url", help="Server: base URL or infer URL.")] = "localhost:8080",
    model: Annotated[str | None, typer.Option("-m", "--model", help="Model; default: the only one served.")] = None,
    model_version: Annotated[str | None, typer.Option("--model-version", "-x", help="Model version.")] = None,
    protocol: Annotated[str, typer.Option("-i", "--protocol", help="http or grpc.")] = "http",
    concurrency: Annotated[int, typer.Option("-c", "--concurrency", help="Closed loop: requests in flight.")] = 1,
    requests: Annotated[int | None, typer.Option("-n", "--requests", help="Requests in total (default 1000).")] = None,
    rate: Annotated[float | None, typer.Option(help="Open loop: Poisson arrivals per second.")] = None,
    max_in_flight: Annotated[int, typer.Option(help="Open loop: most requests in flight.")] = 64,
    duration: Annotated[float | None, typer.Option(help="Stop sending after this many seconds.")] = None,
    batch_size: Annotated[int, typer.Option("-b", "--batch-size", help="Rows per request.")] = 1,
    shape: Annotated[list[str] | None, typer.Option(help="NAME:D1,D2 dims without batch; repeatable.")] = None,
    binary: Annotated[bool, typer.Option("--binary/--json", help="Binary tensors or JSON lists.")] = True,
    header: Annotated[list[str] | None, typer.Option("-H", "--header", help="KEY:VALUE header/metadata.")] = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds.")] = 30.0,
    seed: Annotated[int, typer.Option(help="Seed of input data and arrivals.")] = 0,
    start_at: Annotated[
        float | None,
        typer.Option(help="Unix time to begin sending at, once the connections are open (lines several clients up)."),
    ] = None,
    output_format: Annotated[OutputFormat, typer.Option("--output-format", help="table, csv or json.")] = (
        OutputFormat.TABLE
    ),
    output: Annotated[Path | None, typer.Option("-o", "-f", "--output", help="Write the CSV/JSON here.")] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
) -> None:
    """Load-test a KServe v2 server: closed loop (-c, -n) or open loop (--rate), HTTP or gRPC."""
    if protocol not in ("http", "grpc"):
        raise InvalidArgumentError(f"-i {protocol!r}: expected http or grpc")
    config = _config(
        url=url,
        protocol=protocol,
        model=model,
        version=model_version,
        concurrency=concurrency,
        requests=requests,
        rate=rate,
        max_in_flight=max_in_flight,
        duration_s=duration,
        batch_size=batch_size,
        shapes=parse_shapes(shape or []),
        binary=binary,
        headers=_headers(header or []),
        timeout_s=timeout,
        seed=seed,
        start_at_unix=start_at,
    )
    report = _run(config, show_progress=not quiet and sys.stderr.isatty())
    _emit(report, output_format, output)


def _config(**fields: object) -> BenchConfig:
    try:
        return BenchConfig.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "option"
        option = _OPTION_NAMES.get(field, f"--{field.replace('_', '-')}")
        raise InvalidArgumentError(f"{option}: {first['msg']} (got {first.get('input')!r})") from None


def _headers(items: list[str]) -> dict[str, str]:
    headers = {}
    for item in items:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"-H {item!r}: expected KEY:VALUE")
        headers[key.strip()] = value.strip()
    return headers


def _run(config: BenchConfig, show_progress: bool) -> BenchReport:
    if not show_progress:
        return _loop_run(config, None)
    total = config.requests
    with Progress(
        TextColumn("[bold]bench[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        console=Console(stderr=True),
        auto_refresh=False,
        transient=True,
    ) as progress:
        task = progress.add_task("requests", total=total, status="")

        def tick(samples: Samples) -> None:
            rps = samples.completed / max(samples.elapsed_now_s, 1e-9)
            errors = samples.completed - len(samples.latencies_ns)
            progress.update(task, completed=samples.completed, status=f"{rps:,.0f} req/s, {errors} errors")
            progress.refresh()

        return _loop_run(config, tick)


def _loop_run(config: BenchConfig, tick: object) -> BenchReport:
    from mcp2026ai.bench.runner import run_bench  # grpc, httptools: only when a bench runs

    try:
        import uvloop

        return uvloop.run(run_bench(config, tick))  # type: ignore[arg-type]
    except ImportError:
        return asyncio.run(run_bench(config, tick))  # type: ignore[arg-type]


def _emit(report: BenchReport, output_format: OutputFormat, output: Path | None) -> None:
    """Table: printed (and the file, if any, gets CSV or JSON by its suffix); CSV/JSON: to the file or stdout."""
    if output_format is OutputFormat.TABLE:
        console = Console()
        console.print(table(report))
        errors = errors_table(report)
        if errors is not None:
            console.print(errors)
        if output is not None:
            output.write_text(to_csv([report]) if output.suffix == ".csv" else to_json(report), encoding="utf-8")
        return
    text = to_csv([report]) if output_format is OutputFormat.CSV else to_json(report)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def main() -> None:
    """The ``mcp-bench`` console script: the bench command alone, errors as one line, exit 2."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(bench)
    try:
        app()
    except MCPError as exc:
        print_error(exc)
        raise SystemExit(EXIT_USAGE) from None

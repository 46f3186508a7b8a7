"""``mcp batch run in.jsonl --out out.jsonl``: an OpenAI batch input file answered offline, on the
local registry's models, through the same route handlers ``mcp serve`` answers /v1/batches lines with
(server/http/openai/batch/), with a progress bar on stderr. Each output line is OpenAI's batch output
line (``custom_id``, ``response.status_code`` and ``body``, ``error``), in the input's order; a request
the server would refuse is answered with its error document, as /v1/batches' error file has it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from starlette.applications import Starlette

from mcp2026ai.app import build_plane, load_models
from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, error_console
from mcp2026ai.errors import InvalidArgumentError, MCPError
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.body import BodyBudget
from mcp2026ai.server.http.openai import openai_routes
from mcp2026ai.server.http.openai.batch.lines import BatchLine, parse_lines
from mcp2026ai.server.http.openai.batch.runner import OFFLINE_LINES_IN_FLIGHT, line_answerer

app = typer.Typer(help="OpenAI batch files (JSONL), answered offline on the local registry.", no_args_is_help=True)


@app.command("run")
def run(
    source: Annotated[Path, typer.Argument(help="Input JSONL: one {custom_id, method, url, body} a line.")],
    out: Annotated[Path, typer.Option(help="Output JSONL (written when every line is answered).")],
    concurrency: Annotated[int, typer.Option(help="Lines answered at once.", min=1, max=256)] = OFFLINE_LINES_IN_FLIGHT,
) -> None:
    """Answer every line of an OpenAI batch file with the registry's models."""
    lines = _read(source)
    models = sorted({str(line.body["model"]) for line in lines})
    results = asyncio.run(_answer_all(lines, models, concurrency))
    out.write_bytes(b"".join(orjson.dumps(result) + b"\n" for result in results))
    failed = sum(1 for result in results if result["response"]["status_code"] != 200)
    console.print(f"{len(results)} lines answered ({failed} with an error) -> {out}", highlight=False)


def _read(source: Path) -> list[BatchLine]:
    if not source.is_file():
        raise InvalidArgumentError(f"{source}: no such file")
    data = source.read_bytes()
    first = next((line for line in data.splitlines() if line.strip()), b"")
    try:
        endpoint = str(orjson.loads(first).get("url", "")) if first else ""
    except (orjson.JSONDecodeError, AttributeError):
        endpoint = ""
    try:
        return parse_lines(data, endpoint or "/v1/chat/completions")
    except MCPError as exc:
        raise InvalidArgumentError(f"{source}: {exc}") from None


async def _answer_all(lines: list[BatchLine], models: list[str], concurrency: int) -> list[dict[str, Any]]:
    config = ServerConfig(http_port=0, grpc_port=None, plan_with_policy=False)
    plane = build_plane(context.registry(), models, config)
    try:
        await load_models(plane, models, config)
        router = Starlette(routes=openai_routes(plane, config, BodyBudget(config.max_inflight_body_bytes))).router
        answer, slots, never = line_answerer(router), asyncio.Semaphore(concurrency), asyncio.Event()
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=error_console, disable=not error_console.is_terminal) as progress:
            task = progress.add_task(f"batch of {len(lines)}", total=len(lines))

            async def one(line: BatchLine) -> dict[str, Any]:
                async with slots:
                    result = await answer(line, never)
                progress.advance(task)
                return result

            return list(await asyncio.gather(*(one(line) for line in lines)))
    finally:
        await plane.shutdown(config.drain_timeout_s)

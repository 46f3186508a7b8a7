"""Run a batch's lines: each sent to the same route handler a synchronous call reaches (in process,
through the app's router: no socket, no middleware), in the best-effort SLA class, a few at a time
so the engine batches them. Each answer is recorded as it completes (store.py); a cancel stops taking
lines and aborts those in flight; a drain stops taking lines and leaves the batch to the next start."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from starlette.types import ASGIApp

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.server.http.openai.batch.lines import BatchLine, parse_lines
from mcp2026ai.server.http.openai.batch.store import ACTIVE, BatchStore

log = logging.getLogger(__name__)
OFFLINE_LINES_IN_FLIGHT = 8
"""Lines answered at once by ``mcp batch run`` (no other traffic to leave room for); a server answers
``ServerConfig.batch_lines_in_flight`` at once, all its batches together."""
CANCEL_WAIT_S = 10.0
"""Longest a cancel waits for the lines in flight to end (aborted, they end at the engine's next step)."""
CLASS_FIELDS = ("priority", "service_tier")
"""Body fields that would pick another SLA class: a batch line runs best-effort whatever it asks."""

Answer = Callable[[BatchLine, asyncio.Event], Awaitable[dict[str, Any]]]


async def call_app(app: ASGIApp, path: str, body: bytes, gone: asyncio.Event) -> tuple[int, bytes]:
    """POST ``body`` to ``path`` of ``app`` as one HTTP request whose client disconnects when ``gone``
    is set (the handler then aborts its generation, as for a client that hangs up)."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers.append((b"x-sla-class", SLAClass.BEST_EFFORT.value.encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 0),
        "server": ("batch", 0),
        "state": {},
    }
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    answer: dict[str, Any] = {"status": 500, "body": []}

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        elif message["type"] == "http.response.body":
            answer["body"].append(message.get("body", b""))

    await app(scope, receive, send)
    return int(answer["status"]), b"".join(answer["body"])


def line_answerer(app: ASGIApp) -> Answer:
    """``answer(line, gone)``: the line's result document (OpenAI's batch output line)."""

    async def answer(line: BatchLine, gone: asyncio.Event) -> dict[str, Any]:
        body = {key: value for key, value in line.body.items() if key not in CLASS_FIELDS}
        status, content = await call_app(app, line.url, orjson.dumps(body), gone)
        try:
            document = orjson.loads(content)
        except orjson.JSONDecodeError:
            document = {"error": {"message": content[:500].decode("utf-8", "replace"), "type": "server_error"}}
        return {
            "id": f"batch_req_{uuid.uuid4().hex}",
            "custom_id": line.custom_id,
            "response": {"status_code": status, "request_id": f"req_{uuid.uuid4().hex}", "body": document},
            "error": None,
        }

    return answer


async def _line_slot(slots: asyncio.Semaphore, gone: asyncio.Event) -> bool:
    """Wait for a line slot (shared by every batch); False, holding none, once the batch is cancelled."""
    if gone.is_set():
        return False
    acquiring = asyncio.ensure_future(slots.acquire())
    stopping = asyncio.ensure_future(gone.wait())
    await asyncio.wait({acquiring, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not acquiring.done():
        acquiring.cancel()
        return False
    if gone.is_set():
        slots.release()
        return False
    return True


class BatchRunner:
    def __init__(self, store: BatchStore, plane: DataPlane, lines_in_flight: int) -> None:
        self.store = store
        self.plane = plane
        self.lines_in_flight = lines_in_flight
        self._line_slots: asyncio.Semaphore | None = None
        """Shared by every batch: however many run, their lines hold at most ``lines_in_flight`` engine
        slots, and latency-critical requests find the rest free."""
        self._answer: Answer | None = None
        self._running: dict[str, asyncio.Task[None]] = {}
        self._cancelled: set[str] = set()
        self._resumed = False
        self._gone: dict[str, asyncio.Event] = {}
        """Per running batch: set by a cancel, its lines in flight see their client disconnect."""
        self._in_flight: dict[str, set[asyncio.Task[None]]] = {}
        """Per running batch: its lines being answered now."""
        self._counts: dict[str, dict[str, int]] = {}
        """Per batch this process runs: its lines answered so far, ``completed`` and ``failed`` (a poll
        reads them here instead of every answered line from the catalog)."""

    def counts(self, batch_id: str) -> dict[str, int] | None:
        """The answered-line counts of a batch this process is running (None: not running here)."""
        counted = self._counts.get(batch_id)
        return dict(counted) if counted is not None else None

    def attach(self, app: ASGIApp) -> None:
        """The router lines are sent to; the batches left active by a previous run resume now."""
        self._answer = line_answerer(app)
        with contextlib.suppress(RuntimeError):  # no running loop yet: resumed on the first batch request
            asyncio.get_running_loop()
            self.ensure_resumed()

    def ensure_resumed(self) -> None:
        """Resume the batches a previous run left active, once (on the running loop)."""
        if not self._resumed:
            self._resumed = True
            asyncio.get_running_loop().create_task(self.resume())

    async def resume(self) -> None:
        for batch in await asyncio.to_thread(self.store.batches):
            if batch["status"] in ACTIVE:
                log.info("batch %s: resuming (%s)", batch["id"], batch["status"])
                self.start(batch["id"])

    def start(self, batch_id: str) -> None:
        if batch_id not in self._running:
            task = asyncio.get_running_loop().create_task(self._run(batch_id))
            self._running[batch_id] = task
            task.add_done_callback(lambda _: self._running.pop(batch_id, None))

    def stop_lines(self, batch_id: str) -> None:
        """Send no further line of the batch, and abort those in flight: their callers disconnect now, so
        their generations end at the engine's next step (``generation/engine.py``: an aborted request
        leaves at the next step; one still waiting is never admitted)."""
        self._cancelled.add(batch_id)
        self._gone.setdefault(batch_id, asyncio.Event()).set()

    async def cancel(self, batch_id: str) -> None:
        """Stop the batch's lines and wait (``CANCEL_WAIT_S`` at most) until those in flight have ended,
        so that once a cancel is answered no line of the batch runs; the batch then finishes cancelled."""
        self.stop_lines(batch_id)
        if batch_id not in self._running:
            self.start(batch_id)  # finalizes what was answered
            return
        in_flight = self._in_flight.get(batch_id)
        if in_flight:
            await asyncio.wait(set(in_flight), timeout=CANCEL_WAIT_S)

    async def _run(self, batch_id: str) -> None:
        try:
            await self._answer_lines(batch_id)
            self._counts.pop(batch_id, None)
        except Exception:
            self._counts.pop(batch_id, None)
            log.exception("batch %s failed", batch_id)
            batch = await asyncio.to_thread(self.store.batch, batch_id)
            await asyncio.to_thread(self.store.save, {**batch, "status": "failed", "failed_at": int(time.time())})

    async def _answer_lines(self, batch_id: str) -> None:
        assert self._answer is not None
        batch = await asyncio.to_thread(self.store.batch, batch_id)
        if batch["status"] not in ACTIVE:
            return
        if batch["status"] == "cancelling":
            self._cancelled.add(batch_id)
        lines = parse_lines(
            await asyncio.to_thread(self.store.file_bytes, batch["input_file_id"], None), batch["endpoint"]
        )
        results = await asyncio.to_thread(self.store.results, batch_id)
        done = {result["custom_id"] for result in results}
        completed = sum(1 for result in results if result["response"]["status_code"] == 200)
        self._counts[batch_id] = {"completed": completed, "failed": len(results) - completed}
        if batch["status"] == "validating":
            batch = await asyncio.to_thread(
                self.store.save, {**batch, "status": "in_progress", "in_progress_at": int(time.time())}
            )
        await self._answer_pending(batch_id, [line for line in lines if line.custom_id not in done])
        if self.plane.gate.open:  # draining: the next start resumes the lines left
            await self._finalize(batch_id, len(lines))

    async def _answer_pending(self, batch_id: str, pending: list[BatchLine]) -> None:
        if self._line_slots is None:
            self._line_slots = asyncio.Semaphore(self.lines_in_flight)
        slots = self._line_slots
        gone = self._gone.setdefault(batch_id, asyncio.Event())
        in_flight = self._in_flight.setdefault(batch_id, set())
        for line in pending:
            if not await _line_slot(slots, gone):
                break
            if batch_id in self._cancelled or not self.plane.gate.open:
                slots.release()
                break
            task = asyncio.get_running_loop().create_task(self._answer_one(batch_id, line, gone))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            task.add_done_callback(lambda _: slots.release())
        await asyncio.gather(*list(in_flight), return_exceptions=True)
        self._gone.pop(batch_id, None)
        self._in_flight.pop(batch_id, None)

    async def _answer_one(self, batch_id: str, line: BatchLine, gone: asyncio.Event) -> None:
        assert self._answer is not None
        result = await self._answer(line, gone)
        if gone.is_set():
            return  # cancelled while in flight: not answered
        if result["response"]["status_code"] == 503 and not self.plane.gate.open:
            return  # refused by the drain, not answered: left for the next start
        await asyncio.to_thread(self.store.add_result, batch_id, result)
        counted = self._counts.get(batch_id)
        if counted is not None:
            counted["completed" if result["response"]["status_code"] == 200 else "failed"] += 1

    async def _finalize(self, batch_id: str, total: int) -> None:
        batch = await asyncio.to_thread(self.store.batch, batch_id)
        results = await asyncio.to_thread(self.store.results, batch_id)
        answered = [result for result in results if result["response"]["status_code"] == 200]
        failed = [result for result in results if result["response"]["status_code"] != 200]
        owner = str(batch.get("owner", ""))
        batch["output_file_id"] = await self._result_file(answered, f"{batch_id}_output.jsonl", owner)
        batch["error_file_id"] = await self._result_file(failed, f"{batch_id}_error.jsonl", owner)
        batch["request_counts"] = {"total": total, "completed": len(answered), "failed": len(failed)}
        cancelled = batch_id in self._cancelled
        status = "cancelled" if cancelled else "completed"
        await asyncio.to_thread(self.store.save, {**batch, "status": status, f"{status}_at": int(time.time())})
        self._cancelled.discard(batch_id)

    async def _result_file(self, results: list[dict[str, Any]], name: str, owner: str) -> str | None:
        if not results:
            return None
        data = b"".join(orjson.dumps(result) + b"\n" for result in results)
        record = await asyncio.to_thread(self.store.put_file, data, name, "batch_output", owner)
        return str(record["id"])

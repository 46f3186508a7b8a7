"""Naive peer for the text-generation benchmark: transformers ``generate`` behind an OpenAI-style API.

One request at a time (a lock; no batching, no KV reuse across requests): the baseline a user gets
from ``AutoModelForCausalLM.generate`` in a web handler. Runs inside benchmarks/.venvs/transformers:

    python transformers_server.py --port P [--threads 2]

Routes: ``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions`` and ``POST /v1/completions``,
with ``stream: true`` as SSE (one chunk per generated token, ``data: [DONE]`` last;
``stream_options.include_usage`` adds a usage chunk). Honoured fields: ``max_tokens`` /
``max_completion_tokens``, ``temperature`` (0: greedy), ``top_p``, ``seed``, ``ignore_eos`` (as
llama-server: generate exactly max_tokens). A client that disconnects stops its generation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from llm_model import gguf_path
from transformers import AutoModelForCausalLM, AutoTokenizer, StoppingCriteria, StoppingCriteriaList
from transformers.generation.streamers import BaseStreamer

MODEL_ID = "smollm2"
DEFAULT_MAX_TOKENS = 16


@dataclass
class Job:
    """One generation: its prompt ids, sampling settings, and the queue its tokens go to."""

    prompt_ids: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    ignore_eos: bool
    loop: asyncio.AbstractEventLoop
    tokens: asyncio.Queue[int | None] = field(default_factory=asyncio.Queue)
    cancelled: threading.Event = field(default_factory=threading.Event)


class _QueueStreamer(BaseStreamer):
    """Hands each new token id to the job's asyncio queue; the prompt (first put) is skipped."""

    def __init__(self, job: Job) -> None:
        self._job = job
        self._prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for token in value.reshape(-1).tolist():
            self._job.loop.call_soon_threadsafe(self._job.tokens.put_nowait, int(token))

    def end(self) -> None:
        self._job.loop.call_soon_threadsafe(self._job.tokens.put_nowait, None)


class _Cancelled(StoppingCriteria):
    def __init__(self, job: Job) -> None:
        self._job = job

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return torch.full((input_ids.shape[0],), self._job.cancelled.is_set(), dtype=torch.bool)


class Generator:
    """The model and tokenizer, and a lock that lets one ``generate`` run at a time."""

    def __init__(self) -> None:
        path = gguf_path()
        self.tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        self.model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
        self.model.eval()
        self.context = int(self.model.config.max_position_embeddings)
        self._lock = threading.Lock()

    def chat_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        normalised = [{"role": m.get("role", "user"), "content": _text(m.get("content", ""))} for m in messages]
        text = self.tokenizer.apply_chat_template(normalised, tokenize=False, add_generation_prompt=True)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, prompt: str) -> list[int]:
        return list(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])

    def run(self, job: Job) -> None:
        """Generate ``job``'s tokens into its queue (blocking; called in a worker thread)."""
        streamer = _QueueStreamer(job)
        try:
            with self._lock, torch.inference_mode():
                if job.seed is not None:
                    torch.manual_seed(job.seed)
                sampling = job.temperature > 0
                self.model.generate(
                    torch.tensor([job.prompt_ids]),
                    attention_mask=torch.ones((1, len(job.prompt_ids)), dtype=torch.long),
                    max_new_tokens=job.max_tokens,
                    min_new_tokens=job.max_tokens if job.ignore_eos else None,
                    do_sample=sampling,
                    temperature=job.temperature if sampling else None,
                    top_p=job.top_p if sampling else None,
                    top_k=None,
                    streamer=streamer,
                    stopping_criteria=StoppingCriteriaList([_Cancelled(job)]),
                    pad_token_id=self.tokenizer.eos_token_id,
                )
        finally:
            streamer.end()


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _error(status: int, message: str) -> JSONResponse:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return JSONResponse(body, status_code=status)


def _job(body: dict[str, Any], prompt_ids: list[int], loop: asyncio.AbstractEventLoop) -> Job:
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens")) or DEFAULT_MAX_TOKENS
    return Job(
        prompt_ids=prompt_ids,
        max_tokens=int(max_tokens),
        temperature=float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0),
        top_p=float(body.get("top_p") or 1.0),
        seed=body.get("seed"),
        ignore_eos=bool(body.get("ignore_eos", False)),
        loop=loop,
    )


class _Decoder:
    """Incremental detokenisation: the text each new token adds (held back while a character is split)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._ids: list[int] = []
        self._emitted = ""

    def add(self, token: int) -> str:
        self._ids.append(token)
        text = self._tokenizer.decode(self._ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return ""
        delta, self._emitted = text[len(self._emitted) :], text
        return delta


def _chunk(kind: str, rid: str, created: int, text: str | None, finish: str | None) -> dict[str, Any]:
    if kind == "chat":
        delta = {} if text is None else {"content": text}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL_ID,
            "choices": [choice],
        }
    choice = {"index": 0, "text": text or "", "finish_reason": finish}
    return {"id": rid, "object": "text_completion", "created": created, "model": MODEL_ID, "choices": [choice]}


def _sse(document: dict[str, Any]) -> str:
    return f"data: {json.dumps(document)}\n\n"


def build_app(generator: Generator) -> FastAPI:
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "benchmarks"}]}

    async def generate(request: Request, kind: str) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not valid JSON")
        if kind == "chat":
            if not isinstance(body.get("messages"), list) or not body["messages"]:
                return _error(400, "'messages' must be a non-empty list")
            prompt_ids = generator.chat_ids(body["messages"])
        else:
            if not isinstance(body.get("prompt"), str):
                return _error(400, "'prompt' must be a string")
            prompt_ids = generator.prompt_ids(body["prompt"])
        job = _job(body, prompt_ids, asyncio.get_running_loop())
        if job.max_tokens < 1 or len(prompt_ids) + job.max_tokens > generator.context:
            return _error(
                400, f"prompt ({len(prompt_ids)} tokens) + max_tokens ({job.max_tokens}) must fit {generator.context}"
            )
        worker = asyncio.get_running_loop().run_in_executor(None, generator.run, job)
        rid, created = f"cmpl-{uuid.uuid4().hex[:16]}", int(time.time())
        if body.get("stream"):
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            stream = _stream(generator, job, worker, request, kind, rid, created, usage)
            return StreamingResponse(stream, media_type="text/event-stream")
        return await _whole(generator, job, worker, kind, rid, created)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        return await generate(request, "chat")

    @app.post("/v1/completions")
    async def completions(request: Request) -> Any:
        return await generate(request, "text")

    return app


async def _tokens(job: Job) -> AsyncIterator[int]:
    while (token := await job.tokens.get()) is not None:
        yield token


async def _stream(
    generator: Generator,
    job: Job,
    worker: asyncio.Future[None],
    request: Request,
    kind: str,
    rid: str,
    created: int,
    include_usage: bool,
) -> AsyncIterator[str]:
    decoder, count = _Decoder(generator.tokenizer), 0
    try:
        if kind == "chat":
            yield _sse(
                _chunk(kind, rid, created, None, None) | {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}
            )
        async for token in _tokens(job):
            count += 1
            text = decoder.add(token)
            if text:
                yield _sse(_chunk(kind, rid, created, text, None))
            if await request.is_disconnected():
                job.cancelled.set()
        await worker
        finish = "length" if count >= job.max_tokens else "stop"
        yield _sse(_chunk(kind, rid, created, None if kind == "chat" else "", finish))
        if include_usage:
            usage = _usage(len(job.prompt_ids), count)
            yield _sse(
                {"id": rid, "object": "chat.completion.chunk", "created": created, "choices": [], "usage": usage}
            )
        yield "data: [DONE]\n\n"
    finally:
        job.cancelled.set()


async def _whole(
    generator: Generator, job: Job, worker: asyncio.Future[None], kind: str, rid: str, created: int
) -> Any:
    ids = [token async for token in _tokens(job)]
    await worker
    text = generator.tokenizer.decode(ids, skip_special_tokens=True)
    finish = "length" if len(ids) >= job.max_tokens else "stop"
    if kind == "chat":
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
        }
        obj = "chat.completion"
    else:
        choice, obj = {"index": 0, "text": text, "finish_reason": finish}, "text_completion"
    usage = _usage(len(job.prompt_ids), len(ids))
    return {"id": rid, "object": obj, "created": created, "model": MODEL_ID, "choices": [choice], "usage": usage}


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _arguments(argv: Iterator[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    return parser.parse_args(None if argv is None else list(argv))


def main() -> None:
    args = _arguments()
    torch.set_num_threads(args.threads)
    app = build_app(Generator())
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()

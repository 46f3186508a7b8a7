"""Text generation as a use case: a neutral, already-parsed request in, an observed stream out.

The OpenAI routes and Triton's generate routes only decode and encode; everything between is here:

- the model lookup (a served language model, else NotFoundError) and the serving config's defaults
  (``mcp-config.yaml``) under the request's own sampling fields;
- the prompt's token ids (text, token ids, or chat messages through the model's chat template; long
  prompts are tokenized off the event loop);
- the request limits (serving/limits.py), the cheap counts checked before tokenizing;
- the SLA class (vLLM's ``priority`` when non-zero, else the caller's ``X-SLA-Class``, else the
  contract's) and admission: the engine's class
  queue refuses a full class with OverloadedError (429 + Retry-After at the edge);
- the drain check: once the server stops accepting, new generations get UnavailableError (503);
- the request metrics (``mcp_requests_total``, ``mcp_request_duration_seconds``, in-flight), counted
  when the stream ends, with the transport's status code; the engine keeps the generation's span
  and its own ``mcp_generation_*`` figures.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp2026ai.contract import SLAClass, parse_sla_class
from mcp2026ai.dataplane.chat_shadow import ChatMirror
from mcp2026ai.dataplane.gate import AcceptGate
from mcp2026ai.dataplane.stream_timing import StreamTimer
from mcp2026ai.dataplane.tool_prompt import template_messages
from mcp2026ai.errors import ColdLoadError, ContextLengthError, InvalidFieldError, MCPError, ModelNotReadyError
from mcp2026ai.generation.stream import GenerationStream
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import (
    Choice,
    Constraint,
    Delta,
    GenerationRequest,
    SamplingParams,
    TokenLogprob,
    Usage,
)
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.messages import validated
from mcp2026ai.observability import metrics
from mcp2026ai.routing.chat_shadow import ChatAnswer
from mcp2026ai.routing.outcome import Outcome, classify
from mcp2026ai.routing.router import RouteReason
from mcp2026ai.routing.traffic import Choice as RouteChoice
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.serving.limits import GenerationLimits
from mcp2026ai.serving.llm_versions import ServedLLM
from mcp2026ai.serving.llms import GenerationModels

TOKENIZE_INLINE_CHARS = 4096
"""Prompts up to this many characters are tokenized on the event loop (well under a millisecond);
longer ones in a worker thread, so that one large prompt never stalls every other connection."""
DRAIN_POLL_S = 0.05
COLD_LOAD_WAIT_S = 30.0
"""How long a request whose contract states no time to first token waits for its model's cold load."""
ROLLOUT_LOAD_RETRY_S = 1.0
"""Retry-After of a chat its rollout routes to a version the server has not loaded yet."""
VERSION_RESPONSE_HEADER = "X-Model-Version"
FALLBACK_RESPONSE_HEADER = "X-Fallback-Model"


@dataclass(frozen=True)
class Prompt:
    """What to continue: exactly one of plain text, token ids, or chat messages (``role``/``content``
    mappings as the model's chat template takes them)."""

    text: str | None = None
    token_ids: tuple[int, ...] | None = None
    messages: tuple[Mapping[str, Any], ...] | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None
    """OpenAI tool definitions the chat template shows the model (dataplane/tool_prompt.py)."""
    template_kwargs: Mapping[str, Any] | None = None
    """The request's ``chat_template_kwargs`` (vLLM's; e.g. ``enable_thinking``)."""

    def characters(self) -> int:
        if self.text is not None:
            return len(self.text)
        if self.messages is not None:
            return sum(len(str(message.get("content") or "")) for message in self.messages)
        return 0

    def token_ids_for(self, tokenizer: TextTokenizer) -> list[int]:
        if self.token_ids is not None:
            return list(self.token_ids)
        if self.messages is not None:
            messages, tools = template_messages(self.messages, self.tools, tokenizer.template_takes_tools)
            return tokenizer.chat_ids(messages, tools, self.template_kwargs)
        return tokenizer.encode(self.text or "")


@dataclass(frozen=True)
class TextRequest:
    """One generation as every text protocol asks for it, decoded."""

    model: str
    prompt: Prompt
    sampling: Mapping[str, Any] = field(default_factory=dict)
    """:class:`SamplingParams` fields the caller set (None means unset: the model's defaults apply)."""
    default_max_tokens: int | None = None
    """The protocol's own max_tokens when neither the request nor the model's config sets one."""
    sla_class: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    constraint: Constraint | None = None
    """Constrained decoding (structured outputs, forced tool calls): the text every choice must match."""
    priority: int = 0
    """vLLM's request priority; non-zero picks the SLA class (:func:`class_of_priority`)."""
    version: str | None = None
    """A version pinned by the route (``/v2/models/{m}/versions/{v}/generate``); else the
    ``X-Model-Version`` header, the rollout and the registry default decide."""


@dataclass(frozen=True)
class ResultCodes:
    """How the calling transport labels its answers in the request metrics."""

    protocol: str
    ok: str
    cancelled: str
    unexpected: str
    of_error: Callable[[MCPError], str]


class _Observation:
    """In-flight gauge on start; one ``mcp_requests_total`` count and duration when :meth:`end` is called,
    then ``on_end`` (the routing's observation and the served version's lease)."""

    def __init__(self, codes: ResultCodes) -> None:
        self.codes = codes
        self.on_end: list[Callable[[BaseException | None], None]] = []
        self.model = metrics.UNKNOWN_MODEL
        self.version = ""
        self.sla_class = metrics.UNKNOWN_CLASS
        self._started = time.perf_counter()
        self.timer = StreamTimer()
        self._in_flight = metrics.child(metrics.IN_FLIGHT, codes.protocol)
        self._in_flight.inc()
        self._ended = False

    def end(self, code: str, error: BaseException | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        self._in_flight.dec()
        seconds = time.perf_counter() - self._started
        metrics.observe_request(self.model, self.version, self.codes.protocol, self.sla_class, code, seconds)
        for callback in self.on_end:
            callback(error)

    def end_with(self, error: BaseException) -> None:
        self.end(self.codes.of_error(error) if isinstance(error, MCPError) else self.codes.unexpected, error)


class TextGeneration:
    """An admitted generation: its deltas (iterate once), the served model it runs on, its parameters.

    Ending the iteration, a domain error while iterating, or :meth:`abort` before the end (the client
    went away) counts the request once with the matching code.
    """

    def __init__(
        self,
        served: ServedLLM,
        params: SamplingParams,
        stream: GenerationStream,
        observation: _Observation,
        prompt_ids: list[int] | None = None,
        fallback_model: str | None = None,
    ) -> None:
        self.served = served
        self.params = params
        self.prompt_ids = prompt_ids or []
        self.fallback_model = fallback_model
        """The model that answers instead of the one asked for (its versions' circuits are open)."""
        self._stream = stream
        self._observation = observation

    @property
    def tokenizer(self) -> TextTokenizer:
        return self.served.engine.tokenizer

    @property
    def ttft_budget_s(self) -> float | None:
        """The contract's time-to-first-token budget (None: none): until its first token this generation
        may still be refused (429) for not making it in time."""
        return _ttft_budget_s(self.served)

    @property
    def usage(self) -> Usage:
        return self._stream.usage

    @property
    def answer_headers(self) -> dict[str, str]:
        """What every transport tells the caller: the version that answered, and the fallback model."""
        headers = {VERSION_RESPONSE_HEADER: self.served.record.version}
        if self.fallback_model is not None:
            headers[FALLBACK_RESPONSE_HEADER] = self.fallback_model
        return headers

    @property
    def prompt_logprobs(self) -> list[TokenLogprob | None] | None:
        """Each prompt token's log-probability (the first None), once the prompt is in, when asked for."""
        return self._stream.prompt_logprobs

    def __aiter__(self) -> TextGeneration:
        return self

    async def __anext__(self) -> Delta:
        try:
            delta = await self._stream.__anext__()
        except StopAsyncIteration:
            self._observation.end(self._observation.codes.ok)
            raise
        except BaseException as exc:
            self._observation.end_with(exc)
            raise
        self._observation.timer.delta(delta)
        return delta

    async def collect(self, choices: int) -> list[Choice]:
        """Every choice whole (non-streaming answers)."""
        gathered = [Choice(index) for index in range(choices)]
        async for delta in self:
            gathered[delta.index].add(delta)
        return gathered

    def abort(self) -> None:
        """Stop generating (the client went away); a no-op once the stream has ended."""
        self._observation.end(self._observation.codes.cancelled)
        self._stream.abort()


class GenerationHandlers:
    """The text use cases over the served language models, routed like tensor requests (the
    ``X-Model-Version`` header, a rollout's canary weight by ``X-User-Id``, the circuit breakers and
    their fallback model: routing/traffic.py)."""

    def __init__(
        self,
        llms: GenerationModels,
        gate: AcceptGate,
        limits: GenerationLimits | None = None,
        traffic: TrafficController | None = None,
    ) -> None:
        self.llms = llms
        self.gate = gate
        self.limits = limits or GenerationLimits()
        self.traffic = traffic or TrafficController(llms.registry)
        self.shadows = ChatMirror(llms, self.traffic.chat_reporter)

    def served(self) -> list[ServedLLM]:
        """Each served language model's default version."""
        return [self.llms.get(name) for name in self.llms.names()]

    def model(self, name: str) -> ServedLLM:
        return self.llms.get(name)

    async def drain(self, streams_deadline_s: float) -> None:
        """Shutdown (the gate is closed, so nothing new is accepted): every generation already accepted,
        queued ones included, may finish until ``streams_deadline_s``; then every engine stops and what
        still runs or waits ends with an error (never cut off)."""
        await self.shadows.drain(min(5.0, streams_deadline_s / 4))
        engines = self.llms.engines()
        deadline = time.monotonic() + streams_deadline_s
        while any(engine.busy for engine in engines) and time.monotonic() < deadline:
            await asyncio.sleep(DRAIN_POLL_S)
        for engine in engines:
            engine.drain()
        for engine in engines:
            await asyncio.to_thread(engine.close)

    def _route(self, request: TextRequest, observation: _Observation) -> tuple[ServedLLM, RouteChoice]:
        """The version that serves ``request`` (tensor routing: header, canary, breakers, fallback),
        leased until the generation ends and observed for canary analysis and the breakers then."""
        default = self.llms.get(request.model)  # NotFoundError for a model not served
        routed = InferenceRequest(request.model, {}, version=request.version, headers=dict(request.headers))
        choice = self.traffic.choose(routed, default.record.version)
        served = self._routed(request.model, choice, observation.timer)
        served.acquire()
        promises = served.record.contract.generation if served.record.contract else None

        def observed(error: BaseException | None) -> None:
            served.release()
            if isinstance(error, asyncio.CancelledError | GeneratorExit):
                return  # the client went away: says nothing of the version's health
            sample = observation.timer.sample(classify(error))
            self.traffic.observe_stream(choice, request.model, served.record.version, sample, promises)

        observation.on_end.append(observed)
        return served, choice

    async def _cold_load_wait_s(self, model: str) -> float:
        """How long a request may wait for its model's load on first request: its contract's time to
        first token, else :data:`COLD_LOAD_WAIT_S`."""
        if self.llms.serves(model) or self.llms.budget_mb is None:
            return 0.0
        try:
            record = await asyncio.to_thread(self.llms.registry.resolve, model)
        except MCPError:
            return 0.0
        spec = record.contract.generation if record.contract else None
        return spec.ttft_p99_ms / 1000 if spec and spec.ttft_p99_ms else COLD_LOAD_WAIT_S

    def _routed(self, model: str, choice: RouteChoice, timer: StreamTimer) -> ServedLLM:
        """The served version ``choice`` names; one the rollout routes to that failed to load is a
        server fault (503, counted by its breaker, so that its circuit opens onto the fallback model)."""
        target = choice.target
        if target.reason == "fallback" and not self.llms.serves(target.model):
            why = self.llms.last_failure(target.model)
            raise ModelNotReadyError(
                f"model {model!r}: its circuit is open and its fallback model {target.model!r} is not served"
                + (f" ({why})" if why else "")
            )
        failure = self.llms.load_failure(target.model, target.version) if target.version else None
        if choice.decision.reason not in (RouteReason.STABLE, RouteReason.CANARY):
            return self.llms.get(target.model, target.version)
        if failure is None:
            if target.version and not self.llms.serves_version(target.model, target.version):
                raise ColdLoadError(  # a rollout just set: not the version's fault, so not its breaker's
                    f"model {model!r}: its rollout routes to version {target.version}, which is not loaded yet"
                    " (the server loads it within its sync interval); retry later",
                    ROLLOUT_LOAD_RETRY_S,
                )
            return self.llms.get(target.model, target.version)
        error = ModelNotReadyError(failure)
        self.traffic.observe_stream(choice, model, target.version or "", timer.sample(Outcome.SERVER_ERROR), None)
        raise error

    async def start(self, request: TextRequest, codes: ResultCodes) -> TextGeneration:
        """Admit ``request``: its observed stream, or the domain error that refused it (counted too)."""
        observation = _Observation(codes)
        try:
            self.gate.check()
            await self.llms.load_on_request(request.model, await self._cold_load_wait_s(request.model))
            served, choice = self._route(request, observation)
            observation.model, observation.version = request.model, served.record.version
            sla_class = self._sla_class(served, request)
            observation.sla_class = sla_class.value
            self.limits.check_prompt(request.prompt.characters(), len(request.prompt.messages or ()))
            self.limits.check_sampling(request.sampling)
            params = self._sampling(request)
            ids = await _token_ids(request.prompt, served.engine.tokenizer)
            if request.constraint is not None and not served.engine.grammars.cached(request.constraint):
                await asyncio.to_thread(served.engine.grammars.compile, request.constraint)  # off the event loop
            engine_request = GenerationRequest(
                _request_id(),
                ids,
                params,
                sla_class,
                dict(request.headers),
                constraint=request.constraint,
                ttft_budget_s=_ttft_budget_s(served),
                adapter=served.adapter,
            )
            stream = served.engine.submit(engine_request)
            self._mirror_when_done(observation, request.model, served, choice, ids, params)
        except ContextLengthError as exc:
            exc.param = "messages" if request.prompt.messages is not None else "prompt"
            observation.end_with(exc)
            raise
        except BaseException as exc:
            observation.end_with(exc)
            raise
        fallback = choice.target.model if choice.target.reason == "fallback" else None
        return TextGeneration(served, params, stream, observation, ids, fallback)

    def _mirror_when_done(
        self,
        observation: _Observation,
        model: str,
        served: ServedLLM,
        choice: RouteChoice,
        ids: list[int],
        params: SamplingParams,
    ) -> None:
        """When the rollout sampled this chat for its shadow: mirror it once the client's answer is
        complete (never before: the shadow must not delay it), if it succeeded."""
        shadow = choice.decision.shadow_version
        if shadow is None or shadow == served.record.version or choice.target.model != model:
            return
        primary_version = served.record.version

        def mirror(error: BaseException | None) -> None:
            if error is None:
                timer = observation.timer
                primary = ChatAnswer(timer.sample(Outcome.OK), tuple(timer.token_ids))
                self.shadows.mirror(model, primary_version, shadow, ids, params, primary)

        observation.on_end.append(mirror)

    async def tokenize(self, model: str, prompt: Prompt) -> tuple[list[int], ServedLLM]:
        """``prompt``'s token ids as a generation would take them (the same count as its usage's
        prompt_tokens), and the served model (NotFoundError if none is served by that name)."""
        served = self.llms.get(model)
        self.limits.check_prompt(prompt.characters(), len(prompt.messages or ()))  # as a generation would
        return await _token_ids(prompt, served.engine.tokenizer), served

    def detokenize(self, model: str, token_ids: list[int]) -> str:
        served = self.llms.get(model)
        vocab = served.engine.info.vocab_size
        outside = [token for token in token_ids if not 0 <= token < vocab]
        if outside:
            raise InvalidFieldError(f"token id {outside[0]} lies outside the vocabulary [0, {vocab})", "tokens")
        return served.engine.tokenizer.decode(token_ids)

    def _sampling(self, request: TextRequest) -> SamplingParams:
        """The request's sampling fields over the model's defaults (``mcp-config.yaml``), then the
        protocol's default max_tokens, then the server's; a field the request sets always wins."""
        defaults = self.llms.defaults(request.model)
        merged = defaults.fill(dict(request.sampling))
        if "max_tokens" not in merged and request.default_max_tokens is not None:
            merged["max_tokens"] = request.default_max_tokens
        return validated(SamplingParams, merged)

    @staticmethod
    def _sla_class(served: ServedLLM, request: TextRequest) -> SLAClass:
        if request.priority:
            return class_of_priority(request.priority)
        if request.sla_class:
            return parse_sla_class(request.sla_class)
        contract = served.record.contract
        return contract.sla_class if contract else SLAClass.BEST_EFFORT


def class_of_priority(priority: int) -> SLAClass:
    """vLLM's ``priority`` (lower runs sooner; 0, the default, leaves the class to ``X-SLA-Class`` or the
    contract) as an SLA class: below 0 latency-critical, above 0 best-effort."""
    return SLAClass.LATENCY_CRITICAL if priority < 0 else SLAClass.BEST_EFFORT


def _ttft_budget_s(served: ServedLLM) -> float | None:
    """The contract's p99 time to first token: the longest a request may wait for a slot."""
    contract = served.record.contract
    promise = contract.generation.ttft_p99_ms if contract and contract.generation else None
    return promise / 1000 if promise else None


async def _token_ids(prompt: Prompt, tokenizer: TextTokenizer) -> list[int]:
    if prompt.characters() <= TOKENIZE_INLINE_CHARS:
        return prompt.token_ids_for(tokenizer)
    return await asyncio.to_thread(prompt.token_ids_for, tokenizer)


def _request_id() -> str:
    return f"gen-{uuid.uuid4().hex}"

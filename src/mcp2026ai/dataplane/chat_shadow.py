"""Mirror a chat to a rollout's shadow version once the client's answer is complete.

The shadow runs the same prompt token ids with the same sampling parameters, best-effort, on a task
of its own: the client's stream has ended before it starts, so it never delays the client, and its
answer is discarded. At most ``max_in_flight`` shadow chats run at a time; beyond that a mirrored
chat is dropped and counted. What both answers did goes to the :class:`ChatShadowReporter`
(routing/chat_shadow.py): per prompt, the greedy token agreement and the TTFT and ITL deltas.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane.stream_timing import StreamTimer
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.routing.chat_shadow import ChatAnswer, ChatShadowKey, ChatShadowReporter, prompt_key
from mcp2026ai.routing.outcome import Outcome, classify
from mcp2026ai.serving.llms import GenerationModels

log = logging.getLogger(__name__)

MAX_SHADOW_CHATS = 2
"""Shadow chats run at once (each holds an engine slot of the shadow version)."""


class ChatMirror:
    def __init__(
        self, llms: GenerationModels, reporter: ChatShadowReporter, max_in_flight: int = MAX_SHADOW_CHATS
    ) -> None:
        self.llms = llms
        self.reporter = reporter
        self.max_in_flight = max_in_flight
        self._tasks: set[asyncio.Task[None]] = set()

    def mirror(
        self, model: str, primary_version: str, shadow_version: str, prompt_ids: list[int], params: SamplingParams,
        primary: ChatAnswer,
    ) -> bool:  # fmt: skip
        """Schedule the shadow chat (on the event loop); False when dropped for capacity."""
        key = ChatShadowKey(model, primary_version, shadow_version, prompt_key(prompt_ids))
        if len(self._tasks) >= self.max_in_flight:
            self.reporter.dropped(key)
            return False
        task = asyncio.get_running_loop().create_task(self._run(key, prompt_ids, params, primary))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def drain(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the shadow chats running, then cancel the rest."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(list(self._tasks), timeout=timeout_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _run(
        self, key: ChatShadowKey, prompt_ids: list[int], params: SamplingParams, primary: ChatAnswer
    ) -> None:
        timer = StreamTimer()
        try:
            await self._generate(key, prompt_ids, params, timer)
            shadow: ChatAnswer | None = ChatAnswer(timer.sample(Outcome.OK), tuple(timer.token_ids))
        except Exception as exc:  # noqa: BLE001 - a shadow failure is data, never an error upstream
            log.info("shadow chat on %s:%s failed: %s", key.model, key.shadow, exc)
            shadow = ChatAnswer(timer.sample(classify(exc)), ())
        self.reporter.add(key, primary, shadow, greedy=params.greedy)

    async def _generate(
        self, key: ChatShadowKey, prompt_ids: list[int], params: SamplingParams, timer: StreamTimer
    ) -> None:
        served = self.llms.get(key.model, key.shadow)
        served.acquire()
        try:
            request = GenerationRequest(f"shadow-{uuid.uuid4().hex}", prompt_ids, params, SLAClass.BEST_EFFORT, {})
            async for delta in served.engine.submit(request):
                timer.delta(delta)
        finally:
            served.release()

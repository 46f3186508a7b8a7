"""What one text-generation request may ask for, checked before it costs anything.

Each limit is refused with a 400 (413 for the body) whose message names the field and the limit
(``--limit-...`` flags of ``mcp serve``). The cheap counts (body bytes, messages, characters, stop
strings) come before any tokenizing; the token limits that depend on the model (context length, KV
budget) are the engine's (generation/engine.py ``_check_length``). docs/llm-reliability.md has the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import InvalidFieldError

MAX_LOGPROBS = 20
"""OpenAI's own bound on ``top_logprobs``; the sampler keeps no more."""


class GenerationLimits(BaseModel):
    """Per-request limits of the text routes (OpenAI and Triton's generate)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_body_bytes: int = Field(
        4 << 20, ge=1024, description="Largest OpenAI / generate request body (413 above; before it is parsed)."
    )
    max_messages: int = Field(1024, ge=1, description="Chat messages per request.")
    max_prompts: int = Field(
        64,
        ge=1,
        description="Prompts in one completions request (each is its own generation), checked before any starts.",
    )
    max_prompt_chars: int = Field(
        262_144, ge=1, description="Characters of prompt text (all messages together), checked before tokenizing."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="Largest max_tokens a request may ask for; None: up to the context length."
    )
    default_max_tokens: int = Field(
        512, ge=1, description="max_tokens of a generate request that sets none (nor does the model's config)."
    )
    max_n: int = Field(16, ge=1, le=16, description="Choices per request (also bounded by max_num_seqs and the KV).")
    max_top_logprobs: int = Field(MAX_LOGPROBS, ge=0, le=MAX_LOGPROBS, description="Alternatives per token.")
    max_stop_strings: int = Field(16, ge=0, le=16, description="Stop strings per request.")
    max_stop_chars: int = Field(256, ge=1, description="Characters per stop string.")

    def check_prompt(self, characters: int, messages: int) -> None:
        """Before tokenizing: the message count and the prompt's characters."""
        if messages > self.max_messages:
            raise InvalidFieldError(
                f"messages: {messages} messages exceed the limit of {self.max_messages} (max_messages)", "messages"
            )
        if characters > self.max_prompt_chars:
            where = "messages" if messages else "prompt"
            raise InvalidFieldError(
                f"{where}: {characters} characters of prompt exceed the limit of {self.max_prompt_chars} "
                "(max_prompt_chars)",
                where,
            )

    def check_prompt_count(self, prompts: int) -> None:
        """A completions request's list of prompts, before any is admitted."""
        if prompts > self.max_prompts:
            raise InvalidFieldError(
                f"prompt: {prompts} prompts exceed the limit of {self.max_prompts} (max_prompts)", "prompt"
            )

    def check_sampling(self, fields: Mapping[str, Any]) -> None:
        """The sampling fields a request set (None: unset)."""
        self._at_most(fields.get("max_tokens"), self.max_tokens, "max_tokens")
        self._at_most(fields.get("n"), self.max_n, "n")
        self._at_most(fields.get("logprobs"), self.max_top_logprobs, "logprobs", "max_top_logprobs")
        self.check_stops(fields.get("stop"))

    def check_stops(self, stops: Sequence[Any] | None) -> None:
        if not stops:
            return
        if len(stops) > self.max_stop_strings:
            raise InvalidFieldError(
                f"stop: {len(stops)} stop strings exceed the limit of {self.max_stop_strings} (max_stop_strings)",
                "stop",
            )
        longest = max(len(stop) if isinstance(stop, str) else 0 for stop in stops)
        if longest > self.max_stop_chars:
            raise InvalidFieldError(
                f"stop: a stop string of {longest} characters exceeds the limit of {self.max_stop_chars} "
                "(max_stop_chars)",
                "stop",
            )

    @staticmethod
    def _at_most(value: Any, limit: int | None, field: str, name: str | None = None) -> None:
        if limit is None or not isinstance(value, int) or isinstance(value, bool) or value <= limit:
            return
        raise InvalidFieldError(f"{field}: {value} exceeds the limit of {limit} ({name or 'max_' + field})", field)

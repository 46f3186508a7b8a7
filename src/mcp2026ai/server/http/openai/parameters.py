"""Every create parameter of OpenAI's chat and completions APIs, and what this server does with it.

Nothing is silently ignored: a field is honoured, or refused with a 400 whose ``error.param`` names it.

- Honoured: the fields the request models in codec.py declare, including the ones below
  (:class:`SurfaceFields`; ``echo``, ``best_of`` and lists of prompts: completions.py):
  ``logit_bias``, vLLM's ``min_tokens`` and ``priority``, ``service_tier``
  (an SLA class, as ``priority``), ``store: false`` (nothing is stored), ``modalities: ["text"]``, and
  three identifiers whose contract this server meets without acting on them: ``user`` and
  ``safety_identifier`` (end-user ids for the provider's abuse monitoring; nothing is kept) and
  ``prompt_cache_key`` (a routing hint for OpenAI's prompt cache: the prefix cache here keys on the
  prompt itself, so every request gets it).
- Refused by name (:data:`REFUSED`): what no served model or no part of this server can do.
- :data:`STRUCTURED`: structured outputs and tools (issue 37 items 1-3, codec.py, structured.py).
- Any other field is refused as unknown: a misspelt ``max_token`` is a 400, never a default.

``priority`` and ``service_tier`` pick the SLA class the engine queues the request in
(``X-SLA-Class`` and the contract apply when neither is set):

==========================  ===================
``priority < 0``            latency-critical
``service_tier: priority``  latency-critical
``priority > 0``            best-effort
``service_tier: flex``      best-effort
``0`` / ``auto``/``default``  header, else contract
==========================  ===================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from mcp2026ai.errors import InvalidArgumentError, InvalidFieldError

STRUCTURED = frozenset(
    {
        "response_format",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "structured_outputs",
        "guided_json",
        "guided_choice",
        "guided_regex",
        "guided_grammar",
    }
)
"""Fields structured outputs and tools (issue 37 items 1-3) honour; on /v1/completions ``tools``,
``tool_choice`` and ``parallel_tool_calls`` are refused, as OpenAI has none there."""

REFUSED: dict[str, str] = {
    "audio": "audio output is not supported: the served models write text",
    "functions": "the legacy functions API is not supported: use tools",
    "function_call": "the legacy functions API is not supported: use tool_choice",
    "metadata": "metadata is kept with stored completions, and this server stores none",
    "moderation": "moderation is not offered by this server",
    "prediction": "predicted outputs are not supported",
    "prompt_cache_options": "prompt cache options are not supported (the prefix cache is automatic)",
    "prompt_cache_retention": "prompt cache retention is not configurable per request",
    "reasoning_effort": "no served model has a reasoning effort setting",
    "verbosity": "no served model has a verbosity setting",
    "web_search_options": "web search is not offered by this server",
    "suffix": "insertion after a suffix is not supported",
}
"""Parameters of OpenAI's API this server refuses, with the reason the 400 gives."""

SERVICE_TIER_PRIORITY = {"auto": 0, "default": 0, "priority": -1, "flex": 1}


def refusal(param: str, message: str) -> InvalidArgumentError:
    return InvalidFieldError(f"{param}: {message}", param)


def check_parameters(document: Mapping[str, Any], declared: Iterable[str]) -> None:
    """A 400 naming the first field of ``document`` the request model does not declare."""
    known = set(declared)
    for name in document:
        if name not in known:
            raise refusal(name, REFUSED.get(name, "not a parameter this server knows (see the OpenAI API)"))


class SurfaceFields(BaseModel):
    """The request fields both endpoints share beyond sampling: see the module docstring."""

    logit_bias: dict[int, float] | None = None
    min_tokens: int = Field(0, ge=0)
    priority: int = 0
    service_tier: Literal["auto", "default", "priority", "flex"] | None = None
    store: bool | None = None
    modalities: list[str] | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None

    @field_validator("logit_bias", mode="before")
    @classmethod
    def _token_keys(cls, value: Any) -> Any:
        """JSON object keys are strings: ``{"50256": -100}`` names token 50256."""
        if not isinstance(value, dict):
            return value
        try:
            return {int(key) if isinstance(key, str) else key: bias for key, bias in value.items()}
        except ValueError:
            raise ValueError("logit_bias keys must be token ids (integers as strings)") from None

    @field_validator("store")
    @classmethod
    def _nothing_stored(cls, value: bool | None) -> bool | None:
        if value:
            raise ValueError("this server stores no completions: leave store unset or false")
        return value

    @field_validator("stream_options", mode="before", check_fields=False)
    @classmethod
    def _known_stream_options(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        unknown = set(value) - {"include_usage", "include_obfuscation"}
        if unknown:
            raise ValueError(f"unsupported stream options {sorted(unknown)} (include_usage is)")
        if value.get("include_obfuscation"):
            raise ValueError("include_obfuscation is not supported: chunks carry no obfuscation padding")
        return {key: item for key, item in value.items() if key != "include_obfuscation"}

    @field_validator("modalities")
    @classmethod
    def _text_only(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and value != ["text"]:
            raise ValueError(f"only the text modality is supported (got {value})")
        return value

    def effective_priority(self) -> int:
        """``priority`` when set, else the one ``service_tier`` stands for."""
        return self.priority or SERVICE_TIER_PRIORITY[self.service_tier or "auto"]

"""vLLM's ``POST /tokenize`` and ``POST /detokenize``.

``/tokenize`` takes a ``prompt`` (as /v1/completions) or chat ``messages`` (as /v1/chat/completions,
rendered by the model's chat template with the generation prompt and any ``chat_template_kwargs``) and answers
``{"count", "max_model_len", "tokens", "token_strs"}``: the ids a generation of the same request
would start from, so ``count`` equals that generation's ``usage.prompt_tokens``. ``return_token_strs``
adds each token's text. ``/detokenize`` takes ``{"model", "tokens"}`` and answers ``{"prompt"}``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp2026ai.dataplane.generation import Prompt
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.chat_template import template_kwargs
from mcp2026ai.messages import validated
from mcp2026ai.server.http.openai.codec import ChatMessage


class TokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    prompt: str | list[int] | None = None
    messages: list[ChatMessage] | None = Field(None, min_length=1)
    chat_template_kwargs: dict[str, Any] | None = None
    return_token_strs: bool = False

    @model_validator(mode="after")
    def _one_input(self) -> TokenizeRequest:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of prompt and messages")
        return self

    def as_prompt(self) -> Prompt:
        if self.messages is not None:
            turns = tuple(
                {"role": "system" if m.role == "developer" else m.role, "content": m.text()} for m in self.messages
            )
            return Prompt(messages=turns, template_kwargs=template_kwargs(self.chat_template_kwargs) or None)
        if isinstance(self.prompt, list):
            return Prompt(token_ids=tuple(self.prompt))
        return Prompt(text=self.prompt)


class DetokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    tokens: list[int]


def parse(model: type[BaseModel], document: Any) -> Any:
    if not isinstance(document, dict):
        raise InvalidArgumentError("the request body must be a JSON object")
    return validated(model, document)


def tokenize_document(ids: list[int], max_model_len: int, token_strs: list[str] | None) -> dict[str, Any]:
    return {"count": len(ids), "max_model_len": max_model_len, "tokens": ids, "token_strs": token_strs}

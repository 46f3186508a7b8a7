"""Text <-> token ids with the model's own tokenizer (``tokenizer.json``) and chat template (Jinja).

:class:`IncrementalDecoder` turns a growing list of token ids into text deltas: it decodes a small
window and holds a delta back while it ends in an incomplete UTF-8 sequence (a byte-level BPE token
may carry half a character), the way Hugging Face's streamers and vLLM do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp2026ai.errors import InvalidArgumentError, ModelImportError
from mcp2026ai.extras import require
from mcp2026ai.ir.llm_info import TOKENIZER_FILE, chat_template_of

_REPLACEMENT = "\ufffd"


class TextTokenizer:
    """The tokenizer and chat template of one converted model folder."""

    def __init__(self, folder: Path) -> None:
        tokenizers = require("tokenizers", "serving a language model", ModelImportError)
        self.path = folder / TOKENIZER_FILE
        try:
            self._tokenizer = tokenizers.Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        except Exception as exc:  # the Rust tokenizer raises its own exception type  # noqa: BLE001
            raise ModelImportError(f"{folder / TOKENIZER_FILE}: cannot load the tokenizer ({exc})") from None
        self._template_source = chat_template_of(folder)
        self._template: Any = None
        self.special_tokens = {token.content for token in self._tokenizer.get_added_tokens_decoder().values()}

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=True))

    def token_text(self, token_id: int) -> str:
        """One token as text, the way OpenAI's logprobs name it."""
        return str(self._tokenizer.decode([token_id], skip_special_tokens=False))

    @property
    def has_chat_template(self) -> bool:
        return self._template_source is not None

    @property
    def template_takes_tools(self) -> bool:
        """Whether the chat template renders ``tools`` (and tool-call history) itself."""
        return self._template_source is not None and "tools" in self._template_source

    def apply_chat_template(
        self,
        messages: Sequence[Mapping[str, Any]],
        add_generation_prompt: bool = True,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> str:
        """The prompt text for ``messages`` (dicts with role and content), rendered by the model's template
        (with ``tools``, OpenAI function definitions, where the template takes them)."""
        if self._template_source is None:
            raise InvalidArgumentError("this model has no chat template: use the completions endpoint")
        if self._template is None:
            self._template = _compile(self._template_source)
        try:
            context = {"messages": list(messages), "add_generation_prompt": add_generation_prompt}
            if tools:
                context["tools"] = list(tools)
            return str(self._template.render(**context))
        except InvalidArgumentError:
            raise
        except Exception as exc:  # a template error is the caller's messages not fitting it  # noqa: BLE001
            raise InvalidArgumentError(f"messages do not fit the model's chat template ({exc})") from None

    def chat_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> list[int]:
        """The prompt ids of a chat: the template rendered with the generation prompt, encoded without
        adding special tokens again (the template writes its own)."""
        return self.encode(self.apply_chat_template(messages, tools=tools), add_special_tokens=False)


def _compile(source: str) -> Any:
    jinja2 = require("jinja2", "chat templates", ModelImportError)
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise InvalidArgumentError(f"the model's chat template refused the messages: {message}")

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    environment.globals["raise_exception"] = raise_exception
    try:
        return environment.from_string(source)
    except jinja2.TemplateError as exc:
        raise ModelImportError(f"the model's chat template does not compile ({exc})") from None


class IncrementalDecoder:
    """Text deltas of a growing token sequence (see the module docstring)."""

    def __init__(self, tokenizer: TextTokenizer) -> None:
        self._tokenizer = tokenizer
        self._ids: list[int] = []
        self._prefix = 0
        self._read = 0

    def push(self, token_id: int) -> str:
        """Add one token; the new text it completes (may be empty)."""
        self._ids.append(token_id)
        decode = self._tokenizer.decode
        before = decode(self._ids[self._prefix : self._read])
        after = decode(self._ids[self._prefix :])
        if len(after) > len(before) and not after.endswith(_REPLACEMENT):
            self._prefix, self._read = self._read, len(self._ids)
            return after[len(before) :]
        return ""

    def flush(self) -> str:
        """Whatever is still held back (an incomplete character at the very end)."""
        before = self._tokenizer.decode(self._ids[self._prefix : self._read])
        after = self._tokenizer.decode(self._ids[self._prefix :])
        self._prefix = self._read = len(self._ids)
        return after[len(before) :]

"""Text <-> token ids with the model's own tokenizer (``tokenizer.json``) and chat template (Jinja).

:class:`IncrementalDecoder` turns a growing list of token ids into text deltas with tokenizers'
``DecodeStream``: a delta is held back while it ends in an incomplete UTF-8 sequence (a byte-level BPE
token may carry half a character), the way Hugging Face's streamers and vLLM do.
:class:`WindowDecoder`, the hand-written decoder it replaced, stays for the benchmark that chose it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp2026ai.errors import InvalidArgumentError, ModelImportError
from mcp2026ai.extras import require
from mcp2026ai.generation.chat_template import ChatTemplate, special_tokens_of
from mcp2026ai.ir.llm_info import TOKENIZER_FILE, chat_template_of, tokenizer_config_of

_REPLACEMENT = "\ufffd"
KEPT_MARKERS = frozenset(
    {
        "<|python_tag|>",
        "<|python_start|>",
        "<|python_end|>",
        "[TOOL_CALLS]",
        "[ARGS]",
        "[CALL_ID]",
        "<think>",
        "</think>",
    }
)
"""Special tokens that stay in decoded text: where a model family marks tool calls and reasoning with
special tokens (Llama 3.x, Mistral, some reasoning models), the parsers need to see them."""


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
        self._template: ChatTemplate | None = None
        self.named_special_tokens = special_tokens_of(tokenizer_config_of(folder))
        """``bos_token``, ``eos_token``, ... as the tokenizer config names them (what templates see)."""
        added = self._tokenizer.get_added_tokens_decoder()
        self.special_tokens = {token.content for token in added.values()}
        self._skipped = frozenset(
            i for i, token in added.items() if token.special and token.content not in KEPT_MARKERS
        )
        self._keeps_markers = any(token.special and token.content in KEPT_MARKERS for token in added.values())

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` without special tokens, except the :data:`KEPT_MARKERS` (the tool-call and
        reasoning parsers read them, as vLLM's parsers read them with ``skip_special_tokens=False``)."""
        if not self._keeps_markers:
            return str(self._tokenizer.decode(list(ids), skip_special_tokens=True))
        kept = [token for token in ids if token not in self._skipped]
        return str(self._tokenizer.decode(kept, skip_special_tokens=False))

    @property
    def keeps_markers(self) -> bool:
        """Whether some special tokens stay in the decoded text (:data:`KEPT_MARKERS`)."""
        return self._keeps_markers

    def skips(self, token_id: int) -> bool:
        """Whether ``token_id`` is a special token decoded text leaves out."""
        return token_id in self._skipped

    @property
    def rust_tokenizer(self) -> Any:
        """The ``tokenizers.Tokenizer`` itself (for its decode stream)."""
        return self._tokenizer

    @property
    def template_source(self) -> str | None:
        """The chat template's Jinja source (None: the model has none)."""
        return self._template_source

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

    @property
    def chat_template(self) -> ChatTemplate:
        """The compiled template (InvalidArgumentError when the model has none)."""
        if self._template_source is None:
            raise InvalidArgumentError("this model has no chat template: use the completions endpoint")
        if self._template is None:
            self._template = ChatTemplate(self._template_source, self.named_special_tokens)
        return self._template

    def apply_chat_template(
        self,
        messages: Sequence[Mapping[str, Any]],
        add_generation_prompt: bool = True,
        tools: Sequence[Mapping[str, Any]] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> str:
        """The prompt text for ``messages`` (dicts with role and content), rendered by the model's template
        the way transformers does (generation/chat_template.py), with ``tools`` (OpenAI function
        definitions) where the template takes them and the request's template ``kwargs``."""
        return self.chat_template.render(messages, add_generation_prompt, tools, kwargs)

    def chat_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> list[int]:
        """The prompt ids of a chat: the template rendered with the generation prompt, encoded without
        adding special tokens again (the template writes its own: ``bos_token`` where the model wants it),
        as transformers' ``apply_chat_template(..., tokenize=True)`` and vLLM do."""
        return self.encode(self.apply_chat_template(messages, tools=tools, kwargs=kwargs), add_special_tokens=False)


class IncrementalDecoder:
    """Text deltas of a growing token sequence, by tokenizers' ``DecodeStream`` (it holds back a delta
    while it ends in an incomplete UTF-8 sequence, as Hugging Face's streamers and vLLM do). The
    special tokens :meth:`TextTokenizer.decode` skips are skipped here too; the markers it keeps stay.
    Chosen over :class:`WindowDecoder` by measurement (benchmarks/llm/detokenize.py)."""

    def __init__(self, tokenizer: TextTokenizer) -> None:
        tokenizers = require("tokenizers", "serving a language model", ModelImportError)
        self._tokenizer = tokenizer
        self._stream = tokenizers.decoders.DecodeStream(skip_special_tokens=not tokenizer.keeps_markers)
        self._held: list[int] = []
        """Ids whose text the stream has not given yet (an incomplete character at the end)."""

    def push(self, token_id: int) -> str:
        """Add one token; the new text it completes (may be empty)."""
        if self._tokenizer.skips(token_id):
            return ""
        self._held.append(token_id)
        text = self._stream.step(self._tokenizer.rust_tokenizer, token_id)
        if text is None:
            return ""
        self._held.clear()
        return str(text)

    def flush(self) -> str:
        """Whatever is still held back (an incomplete character at the very end)."""
        held, self._held = self._held, []
        return self._tokenizer.decode(held) if held else ""


class WindowDecoder:
    """The hand-written incremental decoder DecodeStream replaced: decodes a small window and holds a
    delta back while it ends in an incomplete UTF-8 sequence (kept for benchmarks/llm/detokenize.py)."""

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

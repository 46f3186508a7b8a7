"""A model's Jinja chat template, rendered the way transformers' ``apply_chat_template`` renders it.

The environment is transformers' own: a sandbox (``ImmutableSandboxedEnvironment``, ``trim_blocks``,
``lstrip_blocks``, loop controls, the ``{% generation %}`` tag), its ``tojson`` (no HTML escaping,
``indent``/``separators``/``sort_keys``), ``raise_exception``, ``strftime_now``, a ``dict`` and a
``namespace`` that refuse underscore names. Every template sees the tokenizer config's named special
tokens (``bos_token``, ``eos_token``, ``unk_token``, ``sep_token``, ``pad_token``, ``cls_token``,
``mask_token``) and the request's ``chat_template_kwargs`` over them (e.g. Qwen3's
``enable_thinking``), as vLLM passes them. Messages lose their None-valued keys and get their reasoning
under every name templates read it by (``reasoning_content``, ``thinking``), as transformers does.

A template that refuses the messages (``raise_exception``) or fails while rendering is the caller's
400 naming the template's error; one that does not compile fails when the model loads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from mcp2026ai.errors import InvalidArgumentError, InvalidFieldError, ModelImportError
from mcp2026ai.extras import require

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
"""The tokenizer config's named special tokens every template sees (transformers' ``special_tokens_map``)."""
RESERVED_NAMES = frozenset({"messages", "tools", "documents", "add_generation_prompt"})
"""Template variables the request sets through its own fields, never through ``chat_template_kwargs``."""
MAX_TEMPLATE_KWARGS = 32
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def special_tokens_of(config: Mapping[str, Any]) -> dict[str, str]:
    """The named special tokens of a ``tokenizer_config.json`` document (a token is a string or an
    AddedToken object with its ``content``); unset and null ones are left out."""
    tokens: dict[str, str] = {}
    for name in SPECIAL_TOKEN_NAMES:
        value = config.get(name)
        if isinstance(value, Mapping):
            value = value.get("content")
        if isinstance(value, str):
            tokens[name] = value
    return tokens


def template_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request's ``chat_template_kwargs``, checked: identifiers, not a reserved name, few of them."""
    if not kwargs:
        return {}
    if len(kwargs) > MAX_TEMPLATE_KWARGS:
        raise InvalidFieldError(f"at most {MAX_TEMPLATE_KWARGS} chat_template_kwargs", "chat_template_kwargs")
    for name in kwargs:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise InvalidFieldError(f"{name!r} is not a template variable name", "chat_template_kwargs")
        if name in RESERVED_NAMES:
            raise InvalidFieldError(
                f"{name!r} is set by the request itself, not a template kwarg", "chat_template_kwargs"
            )
    return dict(kwargs)


class ChatTemplate:
    """One compiled chat template with its tokenizer's special tokens (see the module docstring)."""

    def __init__(self, source: str, special_tokens: Mapping[str, str] | None = None) -> None:
        self.source = source
        self.special_tokens = dict(special_tokens or {})
        self._template = _compile(source)

    @property
    def takes_tools(self) -> bool:
        """Whether the template renders ``tools`` (and tool-call history) itself."""
        return "tools" in self.source

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        add_generation_prompt: bool = True,
        tools: Sequence[Mapping[str, Any]] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> str:
        """The prompt text for ``messages`` (with ``tools`` and the request's template kwargs).

        Tool-call arguments reach the template as mappings, as transformers' templates expect; a
        template that joins them as text (DeepSeek-R1's ``+ tool['function']['arguments'] +``) fails on
        a mapping with a TypeError, and is rendered again with the arguments as JSON text, as the client
        sent them."""
        jinja2 = require("jinja2", "chat templates", ModelImportError)
        context = {**self.special_tokens, **(kwargs or {})}
        turns = [_normalized(message) for message in messages]
        try:
            try:
                return self._render(turns, tools, add_generation_prompt, context)
            except TypeError:
                if not any(_mapping_arguments(turn) for turn in turns):
                    raise
                return self._render([_text_arguments(turn) for turn in turns], tools, add_generation_prompt, context)
        except jinja2.TemplateError as exc:
            raise InvalidArgumentError(f"the model's chat template refused the messages: {exc}") from None
        except Exception as exc:  # a template failing on the caller's messages  # noqa: BLE001
            kind = type(exc).__name__
            raise InvalidArgumentError(f"messages do not fit the model's chat template ({kind}: {exc})") from None

    def _render(
        self,
        turns: list[dict[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        add_generation_prompt: bool,
        context: Mapping[str, Any],
    ) -> str:
        return str(
            self._template.render(
                messages=turns,
                tools=[dict(tool) for tool in tools] if tools else None,
                documents=None,
                add_generation_prompt=add_generation_prompt,
                **context,
            )
        )


def _mapping_arguments(turn: Mapping[str, Any]) -> bool:
    return any(isinstance(call.get("function", {}).get("arguments"), Mapping) for call in turn.get("tool_calls") or [])


def _text_arguments(turn: dict[str, Any]) -> dict[str, Any]:
    """``turn`` with its tool calls' mapping arguments written as JSON text."""
    if not _mapping_arguments(turn):
        return turn
    calls = [
        {**call, "function": {**call["function"], "arguments": json.dumps(call["function"]["arguments"])}}
        if isinstance(call.get("function", {}).get("arguments"), Mapping)
        else call
        for call in turn["tool_calls"]
    ]
    return {**turn, "tool_calls": calls}


def _normalized(message: Mapping[str, Any]) -> dict[str, Any]:
    """transformers' message shape: None-valued keys dropped, reasoning under each name templates read."""
    turn = {key: value for key, value in message.items() if value is not None}
    reasoning = next((turn[key] for key in _REASONING_FIELDS if turn.get(key) is not None), None)
    if reasoning is not None:
        turn = {"thinking": reasoning, **turn, "reasoning_content": reasoning}
    return turn


def _compile(source: str) -> Any:
    jinja2 = require("jinja2", "chat templates", ModelImportError)
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_generation_tag(jinja2), "jinja2.ext.loopcontrols"]
    )
    environment.filters["tojson"] = _tojson
    environment.globals.update(
        raise_exception=_raise_exception, strftime_now=_strftime_now, dict=_TemplateDict(), namespace=_namespace(jinja2)
    )
    try:
        return environment.from_string(source)
    except jinja2.TemplateError as exc:
        raise ModelImportError(f"the model's chat template does not compile ({exc})") from None


def _raise_exception(message: str) -> None:
    jinja2 = require("jinja2", "chat templates", ModelImportError)
    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None, sort_keys: bool = False
) -> str:
    """transformers' ``tojson``: no HTML escaping (Jinja's own escapes ``<``), with json.dumps' options."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class _TemplateDict:
    """``dict(...)`` in a template, without the type's attributes."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _namespace(jinja2: Any) -> type:
    """Jinja's ``namespace``, refusing underscore-prefixed attributes (as transformers' does)."""

    def check(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"a namespace attribute cannot start with '_' ({name!r})")

    class TemplateNamespace(jinja2.utils.Namespace):  # type: ignore[misc]
        def __init__(*args: Any, **kwargs: Any) -> None:
            self, args = args[0], args[1:]
            attributes = dict(*args, **kwargs)
            for name in attributes:
                check(name)
            jinja2.utils.Namespace.__init__(self, attributes)

        def __setitem__(self, name: str, value: Any) -> None:
            check(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

    return TemplateNamespace


def _generation_tag(jinja2: Any) -> type:
    """``{% generation %}...{% endgeneration %}`` (transformers' assistant-mask tag): renders its body."""
    from jinja2.ext import Extension

    class GenerationTag(Extension):
        tags = {"generation"}  # noqa: RUF012  (Jinja reads it from the class)

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> Iterator[str] | str:
            return str(caller())

    return GenerationTag

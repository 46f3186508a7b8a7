"""Tool-call parsers per model family, chosen as vLLM's ``--tool-call-parser`` chooses them.

``hermes`` (Hermes, Qwen2.5/Qwen3, SmolLM2 and any model that follows the Hermes prompt) is
tool_calls.py's ``<tool_call>`` parser, which streams a call's arguments as they are written. The
other families (tool_formats.py) stream through :class:`FormatParser`: text before the family's
opener is content at once (a possible half opener at the end is held back); from the opener on the
text is held until a call is complete, then the call goes out whole (its id and name, then its
arguments in one fragment, which is OpenAI's delta shape too). Whatever turns out not to be a call
goes out as content, opener included: nothing the model wrote is dropped.

``auto`` (the default) reads the model's chat template: Qwen3-Coder's ``<function=`` XML,
Mistral's ``[TOOL_CALLS]``, Llama 3.x's ``<|python_tag|>``/``"parameters"`` JSON, a pythonic
``[func_name(param=value)]`` instruction; anything else is Hermes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp2026ai.dataplane.tool_calls import (
    ContentText,
    ToolCall,
    ToolCallArguments,
    ToolCallEvent,
    ToolCallParser,
    ToolCallStart,
    new_call_id,
)
from mcp2026ai.dataplane.tool_formats import FORMATS, CallFormat, Parsed, partial_suffix
from mcp2026ai.errors import InvalidArgumentError

HERMES = "hermes"
AUTO = "auto"
PARSER_NAMES = (AUTO, HERMES, *FORMATS)


class CallParser(Protocol):
    calls: list[ToolCall]

    def feed(self, text: str) -> list[ToolCallEvent]: ...

    def finish(self) -> list[ToolCallEvent]: ...


def check_parser_name(name: str) -> str:
    if name not in PARSER_NAMES:
        raise InvalidArgumentError(f"unknown tool-call parser {name!r} (one of {', '.join(PARSER_NAMES)})")
    return name


def parser_for_template(template: str | None) -> str:
    """The family a chat template's tool instructions ask for (``hermes`` when none is recognised)."""
    source = template or ""
    if "<function=" in source and "<parameter=" in source:
        return "qwen3_coder"
    if "[TOOL_CALLS]" in source:
        return "mistral"
    if "<|python_tag|>" in source or ("<|eot_id|>" in source and '"parameters"' in source):
        return "llama3_json"
    if "[func_name1(" in source or "<|python_start|>" in source:
        return "pythonic"
    return HERMES


def resolve_parser(configured: str, template: str | None, forced: bool) -> str:
    """The parser a request's answer needs: Hermes when ``tool_choice`` forces a call (its grammar
    writes Hermes calls on any model), else the configured one (``auto``: the template's family)."""
    if forced:
        return HERMES
    return parser_for_template(template) if configured == AUTO else check_parser_name(configured)


def new_parser(name: str, max_calls: int | None, tools: Sequence[Mapping[str, Any]] = ()) -> CallParser:
    """A streaming parser of family ``name`` (not ``auto``: resolve it with :func:`resolve_parser`)."""
    if name == HERMES:
        return ToolCallParser(max_calls)
    return FormatParser(FORMATS[check_parser_name(name)], max_calls, list(tools))


def parse_whole(parser: CallParser, text: str) -> tuple[str | None, list[ToolCall]]:
    """A whole choice's content (None when only whitespace is left beside calls) and its tool calls."""
    events = parser.feed(text) + parser.finish()
    content = "".join(event.text for event in events if isinstance(event, ContentText))
    return (content if content.strip() else None) if parser.calls else content, parser.calls


@dataclass
class FormatParser:
    """Streams one choice's text through a :class:`CallFormat` (see the module docstring)."""

    format: CallFormat
    max_calls: int | None = None
    tools: list[Mapping[str, Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    _buffer: str = ""
    _region: str | None = None
    """The open call region's text (None: reading content)."""
    _opener: str = ""
    _taken: int = 0
    """Calls of the open region already sent."""
    _consumed: int = 0
    """How much of the open region those calls took."""
    _started: bool = False
    """Content other than whitespace went out: leading openers no longer apply."""
    _plain: bool = False
    """A region turned out not to be calls: the rest of the text is content."""

    def feed(self, text: str) -> list[ToolCallEvent]:
        events: list[ToolCallEvent] = []
        if self._region is not None:
            self._region += text
            self._read_region(events, final=False)
        else:
            self._buffer += text
        while self._region is None and self._buffer and self._outside(events):
            self._read_region(events, final=False)
        return events

    def finish(self) -> list[ToolCallEvent]:
        events: list[ToolCallEvent] = []
        while self._region is not None:
            self._read_region(events, final=True)
            while self._region is None and self._buffer and self._outside(events):
                self._read_region(events, final=False)
        if self._buffer:
            events.append(ContentText(self._buffer))
            self._buffer = ""
        return events

    def _outside(self, events: list[ToolCallEvent]) -> bool:
        """Send content up to the next opener; True when a region opened."""
        if self._plain:
            events.append(ContentText(self._buffer))
            self._buffer = ""
            return False
        if not self._started:
            stripped = self._buffer.lstrip()
            if not stripped:
                return False  # leading whitespace: a leading opener may follow
            if stripped.startswith(self.format.leading):
                self._open("", stripped, events, before=self._buffer[: len(self._buffer) - len(stripped)])
                return True
        found = [(at, opener) for opener in self.format.openers if (at := self._buffer.find(opener)) >= 0]
        if not found:
            keep = max((partial_suffix(self._buffer, opener) for opener in self.format.openers), default=0)
            self._send_content(self._buffer[: len(self._buffer) - keep], events)
            self._buffer = self._buffer[len(self._buffer) - keep :]
            return False
        at, opener = min(found)
        self._open(opener, self._buffer[at + len(opener) :], events, before=self._buffer[:at])
        return True

    def _open(self, opener: str, region: str, events: list[ToolCallEvent], before: str) -> None:
        self._send_content(before, events)
        self._region, self._opener, self._taken, self._consumed, self._buffer = region, opener, 0, 0, ""

    def _send_content(self, text: str, events: list[ToolCallEvent]) -> None:
        if text:
            events.append(ContentText(text))
            self._started = self._started or bool(text.strip())

    def _read_region(self, events: list[ToolCallEvent], final: bool) -> None:
        """Send the region's new complete calls; at its end (closed, failed, or ``final``) the rest is
        content again (with the opener when the region held no call: it was no call at all)."""
        assert self._region is not None
        parsed = self.format.parse(self._region, final, self.tools)
        if len(parsed.calls) < self._taken:  # the text after the calls already sent is not part of them
            parsed = Parsed(consumed=self._consumed, closed=True)
        else:
            for call in parsed.calls[self._taken :]:
                self._add_call(call.name, call.arguments, events)
            self._taken, self._consumed = len(parsed.calls), parsed.consumed
        if not (parsed.failed or parsed.closed or final):
            return
        rest = self._region[parsed.consumed :]
        if not self._taken:
            rest, self._plain = self._opener + rest, True
        self._plain = self._plain or parsed.failed
        self._region, self._started = None, True
        self._buffer = rest + self._buffer

    def _add_call(self, name: str, arguments: str, events: list[ToolCallEvent]) -> None:
        if self.max_calls is not None and len(self.calls) >= self.max_calls:
            return
        self.calls.append(ToolCall(new_call_id(), name, arguments))
        index = len(self.calls) - 1
        events += [ToolCallStart(index, self.calls[index].id, name), ToolCallArguments(index, arguments)]

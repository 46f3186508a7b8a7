"""Tool calls in generated text, in the Hermes format, and the grammar that forces them.

A call is a JSON object between tags, as Hermes, Qwen and most open chat templates write it::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

:class:`ToolCallParser` reads a choice's text as it streams: text outside the tags is content; a
call becomes a :class:`ToolCallStart` (its id and name, once the name is complete) followed by
:class:`ToolCallArguments` fragments of the arguments' JSON text as they arrive, so an encoder can
stream them the way OpenAI does. :func:`forced_tool_calls` is the grammar for ``tool_choice``
``required`` or a named function: the model must write one call in exactly this format, so they
work on any model.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp2026ai.generation.grammar import closed_objects
from mcp2026ai.generation.types import Constraint, ConstraintKind

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_HEADER = re.compile(r'\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"(?:arguments|parameters)"\s*:\s*(?=\S)')
_STRING_OR_CLOSE = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|' + re.escape(CLOSE))
"""A JSON string (running to the end of the text while unterminated) or the closing tag."""
_JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


@dataclass(frozen=True)
class ContentText:
    text: str


@dataclass(frozen=True)
class ToolCallStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallArguments:
    index: int
    fragment: str


ToolCallEvent = ContentText | ToolCallStart | ToolCallArguments


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str = ""
    """The arguments as JSON text."""


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class _OpenCall:
    text: str = ""
    started: bool = False
    arguments_at: int = 0
    sent: int = 0
    index: int | None = None
    """Which of the parser's calls this one feeds (None: dropped, past ``max_calls``)."""


@dataclass
class ToolCallParser:
    """Splits one choice's text into content and tool calls as it streams (see the module docstring)."""

    max_calls: int | None = None
    """1 when ``parallel_tool_calls`` is false: calls after the first are dropped."""
    calls: list[ToolCall] = field(default_factory=list)
    _buffer: str = ""
    _open: _OpenCall | None = None

    def feed(self, text: str) -> list[ToolCallEvent]:
        self._buffer += text
        events: list[ToolCallEvent] = []
        while self._buffer:
            if self._open is None:
                if not self._outside(events):
                    break
            elif not self._inside(events):
                break
        return events

    def finish(self) -> list[ToolCallEvent]:
        """The end of the text: a call missing its closing tag still counts if its JSON is whole."""
        events: list[ToolCallEvent] = []
        while self._open is not None:
            text, self._buffer = self._open.text + self._buffer, ""
            at = text.find(CLOSE)  # the text ended inside a string: its first closing tag closes the call
            self._open.text = text if at < 0 else text[:at]
            self._close(events)
            if at >= 0:
                events += self.feed(text[at + len(CLOSE) :])
        if self._buffer:
            events.append(ContentText(self._buffer))
        self._buffer = ""
        return events

    def _outside(self, events: list[ToolCallEvent]) -> bool:
        at = self._buffer.find(OPEN)
        if at < 0:
            keep = _partial_tag(self._buffer, OPEN)
            ready = self._buffer[: len(self._buffer) - keep]
            if ready:
                events.append(ContentText(ready))
            self._buffer = self._buffer[len(ready) :]
            return False
        if at:
            events.append(ContentText(self._buffer[:at]))
        self._buffer = self._buffer[at + len(OPEN) :]
        self._open = _OpenCall()
        return True

    def _inside(self, events: list[ToolCallEvent]) -> bool:
        assert self._open is not None
        text = self._open.text + self._buffer
        at = _close_outside_strings(text)
        if at < 0:
            keep = _partial_tag(self._buffer, CLOSE)
            self._open.text, self._buffer = text[: len(text) - keep], text[len(text) - keep :]
            self._progress(events)
            return False
        self._open.text, self._buffer = text[:at], text[at + len(CLOSE) :]
        self._close(events)
        return True

    def _wanted(self) -> bool:
        return self.max_calls is None or len(self.calls) < self.max_calls

    def _progress(self, events: list[ToolCallEvent]) -> None:
        call = self._open
        assert call is not None
        if not call.started:
            header = _HEADER.match(call.text)
            if header is None:
                return
            call.started, call.arguments_at = True, header.end()
            if self._wanted():
                self.calls.append(ToolCall(new_call_id(), json.loads(header.group(1))))
                call.index = len(self.calls) - 1
                events.append(ToolCallStart(call.index, self.calls[-1].id, self.calls[-1].name))
        arguments = call.text[call.arguments_at :]
        ready = arguments[: arguments.rfind("}")] if "}" in arguments else arguments  # the wrapper's } may follow
        self._send(call, ready, events)

    def _close(self, events: list[ToolCallEvent]) -> None:
        call = self._open
        assert call is not None
        self._open = None
        if not call.started:
            self._close_unstarted(call, events)
            return
        try:
            _, end = json.JSONDecoder().raw_decode(call.text, call.arguments_at)
            whole = call.text[call.arguments_at : end]
        except json.JSONDecodeError:
            whole = call.text[call.arguments_at :].rstrip().removesuffix("}")
        self._send(call, whole, events)

    def _close_unstarted(self, call: _OpenCall, events: list[ToolCallEvent]) -> None:
        """A call whose header never matched: whole JSON in another key order, or not a call at all."""
        try:
            document = json.loads(call.text)
            name = document["name"]
            arguments = document.get("arguments", document.get("parameters", {}))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            events.append(ContentText(OPEN + call.text))
            return
        if self._wanted():
            text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            self.calls.append(ToolCall(new_call_id(), str(name), text))
            events.append(ToolCallStart(len(self.calls) - 1, self.calls[-1].id, self.calls[-1].name))
            events.append(ToolCallArguments(len(self.calls) - 1, text))

    def _send(self, call: _OpenCall, ready: str, events: list[ToolCallEvent]) -> None:
        if call.index is None or len(ready) <= call.sent:
            return
        fragment, call.sent = ready[call.sent :], len(ready)
        self.calls[call.index].arguments += fragment
        events.append(ToolCallArguments(call.index, fragment))


def parse_tool_calls(text: str, max_calls: int | None = None) -> tuple[str | None, list[ToolCall]]:
    """A whole choice's content (None when only whitespace is left) and its tool calls."""
    parser = ToolCallParser(max_calls)
    events = parser.feed(text) + parser.finish()
    content = "".join(event.text for event in events if isinstance(event, ContentText))
    return (content if content.strip() else None) if parser.calls else content, parser.calls


def forced_tool_calls(functions: Sequence[Mapping[str, Any]]) -> Constraint:
    """The grammar for ``tool_choice`` required or named: one Hermes call to one of ``functions``
    (OpenAI function definitions: name, parameters)."""
    calls: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "name": {"const": function["name"]},
                "arguments": closed_objects(function.get("parameters") or {"type": "object"}),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for function in functions
    ]
    body: dict[str, Any] = dict(calls[0]) if len(calls) == 1 else {"anyOf": calls}
    body["x-guidance"] = _JSON_OPTIONS
    lark = f'start: call\ncall: "{_lark(OPEN)}\\n" body "\\n{_lark(CLOSE)}"\nbody: %json {json.dumps(body)}\n'
    return Constraint(ConstraintKind.GRAMMAR, lark, "tool_choice")


def _lark(text: str) -> str:
    return json.dumps(text)[1:-1]


def _close_outside_strings(text: str) -> int:
    """Where the closing tag first appears outside a JSON string (-1: nowhere yet). A small model
    constrained to a call may write ``</tool_call>`` inside an argument's string; that is no end."""
    for match in _STRING_OR_CLOSE.finditer(text):
        if match.group() == CLOSE:
            return match.start()
    return -1


def _partial_tag(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could be the start of ``tag`` (held back)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0

"""How each model family writes tool calls, as pure functions from a call region's text to calls.

A *region* is the text after the family's opener (tool_parsers.py finds it). Each format's
:meth:`CallFormat.parse` reads as many complete calls as the region holds and says how far it read;
``final`` is the end of the generation (a call still open then is complete or not a call at all).
A region that is not a call (``failed``) goes back to the caller as content: no text is dropped.

- **Llama 3.x JSON** (``llama3_json``): ``{"name": "f", "parameters": {...}}``, several joined by
  ``;``, at the start of the answer or after ``<|python_tag|>``.
- **Mistral** (``mistral``): ``[TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]``, or the v11
  tokenizer's ``[TOOL_CALLS]f[ARGS]{...}`` (optionally ``f[CALL_ID]id[ARGS]{...}``).
- **Qwen3-Coder XML** (``qwen3_coder``): ``<tool_call><function=f><parameter=a>value</parameter>
  </function></tool_call>``; values are typed by the tool's JSON schema.
- **Pythonic** (``pythonic``): ``[f(a=1), g(b="x")]`` (Llama 3.2/4, ToolACE), read with ``ast``,
  never evaluated: arguments must be Python literals.
"""

from __future__ import annotations

import ast
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: str
    """The arguments as JSON text."""


@dataclass
class Parsed:
    calls: list[ParsedCall] = field(default_factory=list)
    consumed: int = 0
    """How much of the region the calls took (the rest waits for more text)."""
    failed: bool = False
    """The text from ``consumed`` on is no call: it is content."""
    closed: bool = False
    """The region ended (its closing tag was read): text after ``consumed`` is content again."""


def _json_arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _skip(text: str, at: int, separators: str) -> int:
    while at < len(text) and (text[at].isspace() or text[at] in separators):
        at += 1
    return at


def _json_calls(region: str, final: bool, separators: str, keys: tuple[str, ...]) -> Parsed:
    """JSON objects ``{"name", <one of keys>}`` one after another (separated by ``separators``)."""
    parsed, at = Parsed(), 0
    while True:
        at = _skip(region, at, separators)
        if at == len(region):
            parsed.consumed = at
            return parsed
        if region[at] != "{":
            return Parsed(parsed.calls, parsed.consumed, failed=True)
        try:
            document, end = _DECODER.raw_decode(region, at)
        except json.JSONDecodeError:
            return Parsed(parsed.calls, parsed.consumed, failed=final)
        call = _named_call(document, keys)
        if call is None:
            return Parsed(parsed.calls, parsed.consumed, failed=True)
        parsed.calls.append(call)
        at = parsed.consumed = end


def _named_call(document: Any, keys: tuple[str, ...]) -> ParsedCall | None:
    if not isinstance(document, dict) or not isinstance(document.get("name"), str):
        return None
    arguments: Any = next((document[key] for key in keys if key in document), {})
    return ParsedCall(document["name"], _json_arguments(arguments))


class CallFormat(ABC):
    """One family's call syntax (see the module docstring)."""

    name = ""
    openers: tuple[str, ...] = ()
    """Text that opens a call region anywhere in the answer (consumed)."""
    leading: tuple[str, ...] = ()
    """Text that opens a call region only at the answer's start (kept: it is the call's own first character)."""

    @abstractmethod
    def parse(self, region: str, final: bool, tools: Sequence[Mapping[str, Any]]) -> Parsed:
        """The calls in a call region (``final``: the answer has ended, so the region is whole)."""


class Llama3Json(CallFormat):
    name = "llama3_json"
    openers = ("<|python_tag|>",)
    leading = ("{",)

    def parse(self, region: str, final: bool, tools: Sequence[Mapping[str, Any]]) -> Parsed:
        return _json_calls(region, final, ";", ("parameters", "arguments"))


_V11_CALL = re.compile(r"\s*([A-Za-z0-9_.-]+)(?:\[CALL_ID\][A-Za-z0-9]+)?\[ARGS\]")


class Mistral(CallFormat):
    name = "mistral"
    openers = ("[TOOL_CALLS]",)

    def parse(self, region: str, final: bool, tools: Sequence[Mapping[str, Any]]) -> Parsed:
        start = _skip(region, 0, "")
        if start < len(region) and region[start] == "[":
            return self._array(region, start + 1, final)
        return self._v11(region, final)

    @staticmethod
    def _array(region: str, at: int, final: bool) -> Parsed:
        parsed = _json_calls(region[at:], final, ",", ("arguments", "parameters"))
        rest = region[at + parsed.consumed :].lstrip(", \n\t\r")
        if parsed.failed and rest.startswith("]"):  # the array's end
            parsed.consumed = len(region) - len(rest) + 1
            parsed.failed, parsed.closed = False, True
        elif parsed.calls:
            parsed.consumed += at
        return parsed

    @staticmethod
    def _v11(region: str, final: bool) -> Parsed:
        parsed, at = Parsed(), 0
        while True:
            at = _skip(region, at, "")
            if region.startswith("[TOOL_CALLS]", at):
                at += len("[TOOL_CALLS]")
            header = _V11_CALL.match(region, at)
            if header is None:
                waiting = not final and len(region) - at < 64 and "[ARGS]" not in region[at:]
                return Parsed(parsed.calls, parsed.consumed, failed=at < len(region) and not waiting)
            try:
                arguments, end = _DECODER.raw_decode(region, header.end())
            except json.JSONDecodeError:
                return Parsed(parsed.calls, parsed.consumed, failed=final)
            parsed.calls.append(ParsedCall(header.group(1), _json_arguments(arguments)))
            at = parsed.consumed = end


_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)</function>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)</parameter>", re.DOTALL)


class Qwen3Coder(CallFormat):
    name = "qwen3_coder"
    openers = ("<tool_call>",)
    closer = "</tool_call>"

    def parse(self, region: str, final: bool, tools: Sequence[Mapping[str, Any]]) -> Parsed:
        end = region.find(self.closer)
        if end < 0 and not final:
            return Parsed()
        body = region if end < 0 else region[:end]
        functions = list(_FUNCTION.finditer(body))
        if not functions:
            return Parsed(failed=True)
        calls = [ParsedCall(match.group(1), self._arguments(match, tools)) for match in functions]
        consumed = len(region) if end < 0 else end + len(self.closer)
        return Parsed(calls, consumed, closed=True)

    @staticmethod
    def _arguments(function: re.Match[str], tools: Sequence[Mapping[str, Any]]) -> str:
        schema = _properties(tools, function.group(1))
        values = {
            name: _typed(_trim_newline(value), schema.get(name) or {})
            for name, value in _PARAMETER.findall(function.group(2))
        }
        return json.dumps(values, ensure_ascii=False)


def _properties(tools: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    for tool in tools:
        function = tool.get("function") or {}
        if function.get("name") == name:
            return (function.get("parameters") or {}).get("properties") or {}
    return {}


def _trim_newline(value: str) -> str:
    return value.removeprefix("\n").removesuffix("\n")


def _typed(value: str, schema: Mapping[str, Any]) -> Any:
    """A parameter's text as its schema's type (as vLLM's qwen3_coder parser converts it)."""
    kind = schema.get("type")
    if kind == "string":
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


class Pythonic(CallFormat):
    name = "pythonic"
    openers = ("<|python_start|>",)
    leading = ("[",)

    end = "<|python_end|>"

    def parse(self, region: str, final: bool, tools: Sequence[Mapping[str, Any]]) -> Parsed:
        held = 0 if final else partial_suffix(region, self.end)  # a half-written end marker
        text = region[: len(region) - held].replace(self.end, "").strip()
        if not final and not text.endswith("]"):
            return Parsed()
        try:
            calls = _python_calls(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # a pathological answer is no call
            return Parsed(failed=final)
        return Parsed(calls, len(region) - held)


def partial_suffix(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could be the start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def _python_calls(text: str) -> list[ParsedCall]:
    """``[f(a=1), g()]`` as calls; anything else (or a non-literal argument) is a ValueError."""
    tree = ast.parse(text, mode="eval").body
    if not isinstance(tree, ast.List) or not tree.elts:
        raise ValueError("not a list of calls")
    calls = []
    for node in tree.elts:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
            raise ValueError("not a call with keyword arguments")
        arguments = {keyword.arg: ast.literal_eval(keyword.value) for keyword in node.keywords if keyword.arg}
        calls.append(ParsedCall(node.func.id, json.dumps(arguments, ensure_ascii=False)))
    return calls


FORMATS: dict[str, CallFormat] = {format.name: format for format in (Llama3Json(), Mistral(), Qwen3Coder(), Pythonic())}
"""The families this module reads; Hermes ``<tool_call>`` JSON is tool_calls.py's streaming parser."""

"""Tools and tool-call history as the model's chat template sees them.

A template that knows tools (its source mentions ``tools``) gets them as ``tools=`` and the history
in Hugging Face's shape: an assistant turn's ``tool_calls`` with ``function.arguments`` as a mapping,
and ``role: "tool"`` turns with their ``tool_call_id``. A template that does not (SmolLM2's) would
drop all of that, so the tools go into the system message the Hermes way and the history is written
out as text: the assistant's calls as ``<tool_call>`` blocks, the results as ``<tool_response>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp2026ai.dataplane.tool_calls import CLOSE, OPEN

HERMES_SYSTEM = (
    "You are a function calling AI model. You are provided with function signatures within <tools></tools> "
    "XML tags. You may call one or more functions to assist with the user query. Don't make assumptions about "
    "what values to plug into functions. Here are the available tools: <tools>\n{tools}\n</tools>\n"
    "For each function call return a json object with function name and arguments within "
    f"{OPEN}{CLOSE} XML tags as follows:\n{OPEN}\n"
    '{{"name": <function-name>, "arguments": <args-dict>}}\n'
    f"{CLOSE}"
)

Message = Mapping[str, Any]


def template_messages(
    messages: Sequence[Message], tools: Sequence[Message] | None, template_takes_tools: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The messages (and tools, or None) to render with the chat template."""
    if template_takes_tools:
        return [_with_mapping_arguments(message) for message in messages], list(map(dict, tools)) if tools else None
    written = [_as_text(message) for message in messages]
    if tools:
        written = _with_tools_in_system(written, tools)
    return written, None


def _with_mapping_arguments(message: Message) -> dict[str, Any]:
    turn = dict(message)
    if turn.get("tool_calls"):
        turn["tool_calls"] = [
            {**call, "function": {**call["function"], "arguments": _arguments(call["function"].get("arguments"))}}
            for call in turn["tool_calls"]
        ]
    return turn


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _as_text(message: Message) -> dict[str, Any]:
    content = str(message.get("content") or "")
    if message.get("tool_calls"):
        calls = [f"{OPEN}\n{json.dumps(_call(call))}\n{CLOSE}" for call in message["tool_calls"]]
        content = "\n".join([content, *calls] if content else calls)
    if message.get("role") == "tool":
        content = f"<tool_response>\n{content}\n</tool_response>"
    return {"role": message["role"], "content": content}


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": call["function"]["name"], "arguments": _arguments(call["function"].get("arguments"))}


def _with_tools_in_system(messages: list[dict[str, Any]], tools: Sequence[Message]) -> list[dict[str, Any]]:
    described = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    system = HERMES_SYSTEM.format(tools=described)
    if messages and messages[0]["role"] == "system":
        return [{"role": "system", "content": f"{messages[0]['content']}\n\n{system}"}, *messages[1:]]
    return [{"role": "system", "content": system}, *messages]

"""Function tools on ``/v1/responses``, over the chat completions' tool machinery (tools.py).

The Responses API names a tool flat (``{"type": "function", "name", "description", "parameters",
"strict"}``) and a forced one as ``{"type": "function", "name"}``; history carries
``function_call`` items (the model's calls) and ``function_call_output`` items (their results). They
become the chat shapes: tools and ``tool_choice`` for :func:`tool_plan` (``required`` and a named
function are forced by grammar, ``auto`` parses the model's ``<tool_call>`` blocks), an assistant
turn with ``tool_calls`` and ``tool`` turns with ``tool_call_id`` for the chat template. The answer's
calls are ``function_call`` output items. Only function tools exist here: any other tool type is a
400 naming ``tools``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mcp2026ai.dataplane.tool_calls import ToolCall
from mcp2026ai.server.http.openai.codec import new_id
from mcp2026ai.server.http.openai.parameters import refusal
from mcp2026ai.server.http.openai.tools import NamedFunction, NamedToolChoice, Tool, ToolChoice


def chat_tools(tools: list[dict[str, Any]] | None) -> list[Tool] | None:
    """The Responses API's flat function tools as the chat API's tools."""
    if not tools:
        return None
    converted = []
    for index, tool in enumerate(tools):
        if tool.get("type") != "function":
            raise refusal("tools", f"tools[{index}]: only function tools are supported (got {tool.get('type')!r})")
        function = {key: value for key, value in tool.items() if key != "type"}
        try:
            converted.append(Tool.model_validate({"type": "function", "function": function}))
        except ValidationError as exc:
            raise refusal("tools", f"tools[{index}]: {exc.errors()[0]['msg']}") from None
    return converted


def chat_tool_choice(choice: str | dict[str, Any] | None) -> ToolChoice | None:
    if choice is None or choice in ("none", "auto", "required"):
        return choice  # type: ignore[return-value]
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return NamedToolChoice(type="function", function=NamedFunction(name=choice["name"]))
    raise refusal("tool_choice", "none, auto, required or {type: function, name}")


def history_turns(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``function_call`` / ``function_call_output`` input items as chat turns (consecutive calls: one turn)."""
    turns: list[dict[str, Any]] = []
    for item in items:
        if item.get("type") == "function_call":
            function = {"name": item.get("name"), "arguments": item.get("arguments", "")}
            call: dict[str, Any] = {"id": item.get("call_id"), "type": "function", "function": function}
            if turns and turns[-1].get("role") == "assistant" and turns[-1].get("tool_calls"):
                turns[-1]["tool_calls"].append(call)
            else:
                turns.append({"role": "assistant", "content": "", "tool_calls": [call]})
        else:
            output = item.get("output")
            content = output if isinstance(output, str) else str(output)
            turns.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": content})
    return turns


def function_call_item(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": new_id("fc"),
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    }

"""OpenAI's function tools on the chat route: ``tools``, ``tool_choice``, ``parallel_tool_calls`` in,
``message.tool_calls`` and streamed tool-call deltas out.

- ``none``: the tools are left out of the prompt and nothing is parsed (vLLM's
  ``--exclude-tools-when-tool-choice-none``), so the model answers in prose.
- ``auto`` (the default with tools): the tools reach the chat template (dataplane/tool_prompt.py) and
  the answer's Hermes ``<tool_call>`` blocks become tool calls (dataplane/tool_calls.py).
- ``required`` and a named function: constrained decoding forces exactly one call to those tools (to
  the named one), so they work on any model. One call is a valid answer with or without
  ``parallel_tool_calls``; a grammar that let the model go on would let a small one repeat calls until
  max_tokens (SmolLM2 does). Parallel calls come from ``auto``: all of them are parsed, or only the
  first when ``parallel_tool_calls`` is false.

A choice with tool calls finishes with ``tool_calls``; tool_encoder.py writes the answers and deltas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.dataplane.tool_calls import forced_tool_calls
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.types import Constraint


class FunctionDefinition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(BaseModel):
    name: str


class NamedToolChoice(BaseModel):
    type: Literal["function"]
    function: NamedFunction


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


@dataclass(frozen=True)
class ToolPlan:
    """What the request's tool fields ask of one generation."""

    tools: tuple[dict[str, Any], ...]
    """The definitions shown to the model (empty for ``none``)."""
    parse: bool
    parallel: bool
    constraint: Constraint | None

    @property
    def max_calls(self) -> int | None:
        return None if self.parallel else 1


def tool_plan(tools: Sequence[Tool] | None, choice: ToolChoice | None, parallel: bool | None) -> ToolPlan | None:
    """The plan for a request's ``tools``/``tool_choice``/``parallel_tool_calls`` (None: no tools)."""
    if not tools:
        if choice is not None and choice != "none":
            raise InvalidArgumentError("tool_choice needs tools: the request has none")
        return None
    parallel = True if parallel is None else parallel
    choice = choice or "auto"
    if choice == "none":
        return ToolPlan((), parse=False, parallel=parallel, constraint=None)
    shown = tuple(tool.model_dump(exclude_none=True) for tool in tools)
    if choice == "auto":
        return ToolPlan(shown, parse=True, parallel=parallel, constraint=None)
    functions = [tool.function.model_dump(exclude_none=True) for tool in tools]
    if isinstance(choice, NamedToolChoice):
        functions = [function for function in functions if function["name"] == choice.function.name]
        if not functions:
            raise InvalidArgumentError(f"tool_choice names {choice.function.name!r}, which is not among the tools")
    return ToolPlan(shown, parse=True, parallel=False, constraint=forced_tool_calls(functions))

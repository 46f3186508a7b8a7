"""The shape of OpenAI's structured request fields: ``tools``, ``tool_choice``, ``response_format``,
``stream_options``.

Only the shape is checked here (types, required names, objects where objects belong), so that junk
is refused with a 400 naming the field before the request costs anything; what a tool or a schema
means (grammar constraints, tool calls) belongs to the generation use case. The models are strict:
``"3"`` or ``true`` where a number belongs is an error, as in OpenAI's own API. Unknown keys inside
these objects are ignored (OpenAI adds fields first), unknown ``type`` values are not.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_TOOLS = 128
"""OpenAI's own limit on ``tools`` per request."""

FUNCTION_NAME = r"^[A-Za-z0-9_-]{1,64}$"
"""OpenAI's rule for function names."""


class Shape(BaseModel):
    """Strict types, no NaN or Infinity, unknown keys ignored."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore", populate_by_name=True)


class FunctionShape(Shape):
    name: str = Field(pattern=FUNCTION_NAME, description="What the model calls the function.")
    description: str | None = None
    parameters: dict[str, Any] | None = Field(None, description="A JSON Schema object for the arguments.")
    strict: bool | None = None


class ToolShape(Shape):
    type: Literal["function"]
    function: FunctionShape


class FunctionNameShape(Shape):
    name: str = Field(pattern=FUNCTION_NAME)


class NamedToolChoice(Shape):
    type: Literal["function"]
    function: FunctionNameShape


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


class JsonSchemaShape(Shape):
    name: str = Field(pattern=FUNCTION_NAME)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema", description="A JSON Schema object.")
    strict: bool | None = None


class TextFormat(Shape):
    type: Literal["text"]


class JsonObjectFormat(Shape):
    type: Literal["json_object"]


class JsonSchemaFormat(Shape):
    type: Literal["json_schema"]
    json_schema: JsonSchemaShape


ResponseFormat = Annotated[TextFormat | JsonObjectFormat | JsonSchemaFormat, Field(discriminator="type")]


class StreamOptions(Shape):
    include_usage: bool | None = None


Tools = Annotated[list[ToolShape], Field(max_length=MAX_TOOLS)]

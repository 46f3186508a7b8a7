"""The Hermes tool-call parser (whole and streamed) and the tool prompt for templates without tools."""

from __future__ import annotations

import json

from mcp2026ai.dataplane.tool_calls import (
    ContentText,
    ToolCallArguments,
    ToolCallParser,
    ToolCallStart,
    forced_tool_calls,
    parse_tool_calls,
)
from mcp2026ai.dataplane.tool_prompt import template_messages
from mcp2026ai.generation.types import ConstraintKind

TWO_CALLS = (
    'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "at": {"h": 9}}}\n'
    '</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
)


def test_whole_text_gives_content_and_every_call() -> None:
    content, calls = parse_tool_calls(TWO_CALLS)
    assert content == "Let me check.\n\n"
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris", "at": {"h": 9}}),
        ("get_time", {}),
    ]
    assert len({c.id for c in calls}) == 2 and all(c.id.startswith("call_") for c in calls)
    assert [c.name for c in parse_tool_calls(TWO_CALLS, max_calls=1)[1]] == ["get_weather"]


def test_text_without_calls_is_content_and_a_broken_call_stays_text() -> None:
    assert parse_tool_calls("Paris is sunny.") == ("Paris is sunny.", [])
    assert parse_tool_calls("half a tag <tool_ca") == ("half a tag <tool_ca", [])
    assert parse_tool_calls("<tool_call>not json</tool_call>") == ("<tool_call>not json", [])
    content, calls = parse_tool_calls('<tool_call>{"arguments": {"x": 1}, "name": "f"}')  # no closing tag
    assert content is None and calls[0].name == "f" and json.loads(calls[0].arguments) == {"x": 1}


def test_streamed_in_any_pieces_the_events_add_up_to_the_whole() -> None:
    for size in (1, 2, 3, 7, 50):
        parser = ToolCallParser()
        events = []
        for start in range(0, len(TWO_CALLS), size):
            events += parser.feed(TWO_CALLS[start : start + size])
        events += parser.finish()
        starts = [e for e in events if isinstance(e, ToolCallStart)]
        assert [(s.index, s.name) for s in starts] == [(0, "get_weather"), (1, "get_time")]
        for index in (0, 1):
            arguments = "".join(e.fragment for e in events if isinstance(e, ToolCallArguments) and e.index == index)
            assert arguments == parser.calls[index].arguments
            assert json.loads(arguments) == json.loads(parse_tool_calls(TWO_CALLS)[1][index].arguments)
        first_start = events.index(starts[0])
        assert all(isinstance(e, ContentText) for e in events[:first_start])


def test_a_closing_tag_inside_an_argument_string_does_not_end_the_call() -> None:
    """SmolLM2 at temperature 0.8, forced to call, sometimes writes the tag inside a string."""
    text = '<tool_call>\n{"name": "City", "arguments": {"name": "}}</tool_call> \\"x", "n": 5}}\n</tool_call> Done.'
    for size in (1, 3, len(text)):
        parser = ToolCallParser()
        events = [event for start in range(0, len(text), size) for event in parser.feed(text[start : start + size])]
        events += parser.finish()
        assert [c.name for c in parser.calls] == ["City"], size
        assert json.loads(parser.calls[0].arguments) == {"name": '}}</tool_call> "x', "n": 5}
        assert "".join(e.text for e in events if isinstance(e, ContentText)) == " Done."
    content, calls = parse_tool_calls('<tool_call>{"name": "f", "arguments": {"a": "open</tool_call>after')
    assert content == "after" and calls[0].name == "f"  # a string never closed: the first tag ends the call


def test_forced_calls_are_a_lark_grammar_over_the_tools() -> None:
    function = {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}
    constraint = forced_tool_calls([function])
    assert constraint.kind is ConstraintKind.GRAMMAR and constraint.param == "tool_choice"
    assert '"const": "f"' in constraint.spec and '"additionalProperties": false' in constraint.spec


def test_a_template_without_tools_gets_them_the_hermes_way() -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    messages, tools = template_messages(history, [tool], template_takes_tools=False)
    assert tools is None and messages[0]["content"].startswith("Be brief.\n\n") and "<tools>" in messages[0]["content"]
    assert messages[2]["content"] == '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    assert messages[3] == {"role": "tool", "content": "<tool_response>\nsunny\n</tool_response>"}
    native, native_tools = template_messages(history, [tool], template_takes_tools=True)
    assert native_tools == [tool] and native[2]["tool_calls"][0]["function"]["arguments"] == {}
    assert native[3]["tool_call_id"] == "c1"

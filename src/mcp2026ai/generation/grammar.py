"""Constrained decoding: grammars compiled once per constraint, one matcher per sequence.

The grammar engine is llguidance, chosen by measurement on SmolLM2's 49,152-token vocabulary
(docs/notebook/benchmarks.md, "Structured outputs"): a 20-property JSON schema compiles in about 10 ms with
either llguidance or xgrammar, and a token mask costs 9 µs (llguidance) or 3 µs (xgrammar) at the
median, both negligible beside a decode step. llguidance won on what matters more here: it names
each JSON-schema keyword it cannot honour (``Unimplemented keys: ["not"]``) where xgrammar drops
unknown keywords silently, it needs no torch, and its matchers roll back (speculative drafts).

:class:`Grammars` belongs to one engine (one tokenizer). It compiles a :class:`Constraint` into a
matcher at its start state (objects closed, see :func:`closed_objects`) and keeps the latest
:data:`CACHE_SIZE` of them in an LRU keyed by the constraint's canonical text; every sequence gets a
copy (:class:`GrammarMatcher`), advanced with each token it accepts. A constraint the engine cannot
honour is an InvalidArgumentError naming the request field and the feature, never a silent fallback.

Speculative decoding is off for constrained sequences (engine.py): a draft would have to be checked
token by token against the matcher and rolled back, for little gain on a lone constrained sequence.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.extras import require
from mcp2026ai.generation.types import Constraint, ConstraintKind

CACHE_SIZE = 128
"""Compiled grammars kept per engine (a compiled 20-property schema takes well under a megabyte)."""

JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
"""JSON as ``json.dumps`` writes it: one space after separators, no other whitespace (a free-whitespace
grammar lets a small model pad with newlines until max_tokens)."""

_OPEN_KEYS = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def closed_objects(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists its properties and says
    nothing about others (xgrammar's and so vLLM's strict default): a small model otherwise invents keys
    until max_tokens. What it generates still validates against the schema as given."""
    if isinstance(schema, list):
        return [closed_objects(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {key: closed_objects(value) for key, value in schema.items()}
    if isinstance(schema.get("properties"), dict) and not any(key in schema for key in _OPEN_KEYS):
        closed["additionalProperties"] = False
    return closed


_PURPOSE = "constrained decoding (response_format, guided_*, tool_choice)"


class GrammarMatcher:
    """The grammar state of one sequence: which tokens may come next, advanced token by token."""

    def __init__(self, matcher: Any, vocab_size: int, eos_token_ids: Sequence[int]) -> None:
        self._matcher = matcher
        self._vocab_size = vocab_size
        self._eos = list(eos_token_ids)
        self._bitmask = np.full((1, (vocab_size + 31) // 32), -1, dtype=np.int32)
        self._ended = False

    def allowed(self) -> np.ndarray:
        """A boolean mask over the vocabulary: True where the token keeps the text in the grammar."""
        self._matcher.unsafe_compute_mask_ptr(self._bitmask.ctypes.data, self._bitmask.nbytes)
        mask: np.ndarray = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")[: self._vocab_size]
        allowed = mask.astype(bool)
        if not allowed.any():  # only after an error: end the sequence rather than draw from nothing
            allowed[self._eos] = True
        return allowed

    def accept(self, token: int) -> None:
        """Advance past ``token`` (one the mask allowed; an end-of-sequence token ends the match)."""
        if token in self._eos:
            self._ended = True
            return
        self._matcher.consume_token(token)

    @property
    def finished(self) -> bool:
        """The text is complete and nothing may follow (or the end-of-sequence token came, which with
        ``ignore_eos`` does not end the sequence by itself): the sequence stops."""
        return self._ended or bool(self._matcher.is_stopped())


class Grammars:
    """Compiles constraints for one tokenizer and caches the results (see the module docstring)."""

    def __init__(self, tokenizer_file: Path, vocab_size: int, eos_token_ids: Sequence[int]) -> None:
        self._tokenizer_file = tokenizer_file
        self.vocab_size = vocab_size
        self.eos_token_ids = tuple(eos_token_ids)
        self._tokenizer: Any = None
        self._cache: OrderedDict[tuple[ConstraintKind, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, constraint: Constraint) -> bool:
        with self._lock:
            return (constraint.kind, constraint.spec) in self._cache

    def compile(self, constraint: Constraint) -> Any:
        """The matcher at the start state of ``constraint`` (from the cache when it was compiled before);
        InvalidArgumentError names the request field and what the engine cannot honour."""
        key = (constraint.kind, constraint.spec)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            compiled = self._compile(constraint)
            self._cache[key] = compiled
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
            return compiled

    def matcher(self, constraint: Constraint) -> GrammarMatcher:
        """A fresh matcher for one sequence."""
        return GrammarMatcher(self.compile(constraint).deep_copy(), self.vocab_size, self.eos_token_ids)

    def _compile(self, constraint: Constraint) -> Any:
        llguidance = require("llguidance", _PURPOSE)
        grammar = _grammar_text(llguidance, constraint)
        matcher = llguidance.LLMatcher(self._llg_tokenizer(llguidance), grammar, log_level=0)
        if matcher.is_error():
            raise InvalidArgumentError(f"{_where(constraint)} cannot be enforced: {matcher.get_error()}")
        scratch = np.zeros((self.vocab_size + 31) // 32, dtype=np.int32)
        matcher.unsafe_compute_mask_ptr(scratch.ctypes.data, scratch.nbytes)  # builds the lexer now, not at token 1
        return matcher

    def _llg_tokenizer(self, llguidance: Any) -> Any:
        if self._tokenizer is None:
            self._tokenizer = llguidance.LLTokenizer(
                str(self._tokenizer_file), n_vocab=self.vocab_size, eos_token=list(self.eos_token_ids)
            )
        return self._tokenizer


def _grammar_text(llguidance: Any, constraint: Constraint) -> str:
    matcher = llguidance.LLMatcher
    try:
        if constraint.kind is ConstraintKind.JSON_SCHEMA:
            schema = closed_objects(json.loads(constraint.spec))
            return str(matcher.grammar_from_json_schema(json.dumps(schema), defaults=JSON_OPTIONS))
        if constraint.kind is ConstraintKind.JSON_OBJECT:
            return str(matcher.grammar_from_json_schema('{"type":"object"}', defaults=JSON_OPTIONS))
        if constraint.kind is ConstraintKind.REGEX:
            return str(matcher.grammar_from_regex(constraint.spec))
        if constraint.kind is ConstraintKind.CHOICE:
            choices = json.loads(constraint.spec)
            return str(matcher.grammar_from_lark("start: " + " | ".join(json.dumps(c) for c in choices)))
        return str(matcher.grammar_from_lark(_as_lark(constraint.spec)))
    except (ValueError, TypeError, RuntimeError) as exc:
        raise InvalidArgumentError(f"{_where(constraint)} cannot be enforced: {exc}") from None


def _as_lark(grammar: str) -> str:
    """Lark as it is; GBNF (``root ::= ...``, as llama.cpp and xgrammar take it) converted to Lark."""
    if "::=" not in grammar:
        return grammar
    from llguidance.gbnf_to_lark import gbnf_to_lark

    try:
        return str(gbnf_to_lark(grammar))
    except Exception as exc:  # the converter raises its own error types  # noqa: BLE001
        raise InvalidArgumentError(f"the GBNF grammar does not parse ({exc})") from None


def _where(constraint: Constraint) -> str:
    return constraint.param or f"the {constraint.kind.value} constraint"


_REASONING_TEXT = r"(.|\n)*"


def after_reasoning(constraint: Constraint, inside: bool) -> Constraint:
    """``constraint`` applied once the model's reasoning ends (``</think>``): the text up to there is
    free, then the constraint's grammar holds (with ``inside`` False the answer may open the block
    with ``<think>`` itself, or answer at once). Lark with llguidance's lazy lexeme ends the reasoning
    at the first ``</think>``."""
    answer = _answer_rule(constraint)
    thinking = '"<think>" mcp_reasoning' if not inside else "mcp_reasoning"
    start = f"start: {thinking} mcp_answer" if inside else f"start: ({thinking})? mcp_answer"
    lark = (
        f"%llguidance {{}}\n{start}\n"
        f'mcp_reasoning[lazy]: MCP_THINKING "</think>"\nMCP_THINKING: /{_REASONING_TEXT}/\n{answer}'
    )
    return Constraint(ConstraintKind.GRAMMAR, lark, constraint.param)


def _lark_regex(regex: str) -> str:
    """A regex as the body of a Lark ``/.../`` literal: slashes escaped, line breaks written as escapes."""
    for character, escape in (("\n", "\\n"), ("\r", "\\r")):
        regex = regex.replace("\\" + character, escape).replace(character, escape)
    return regex.replace("/", "\\/")


def _answer_rule(constraint: Constraint) -> str:
    """The constraint as the Lark rule ``mcp_answer`` (and, for a grammar, its own rules)."""
    kind = constraint.kind
    if kind is ConstraintKind.JSON_SCHEMA or kind is ConstraintKind.JSON_OBJECT:
        schema = (
            closed_objects(json.loads(constraint.spec)) if kind is ConstraintKind.JSON_SCHEMA else {"type": "object"}
        )
        return f"mcp_answer: %json {json.dumps({**schema, 'x-guidance': JSON_OPTIONS})}\n"
    if kind is ConstraintKind.REGEX:
        return f"mcp_answer: /{_lark_regex(constraint.spec)}/\n"
    if kind is ConstraintKind.CHOICE:
        return "mcp_answer: " + " | ".join(json.dumps(choice) for choice in json.loads(constraint.spec)) + "\n"
    grammar = _as_lark(constraint.spec)
    if not any(line.startswith("start:") for line in grammar.splitlines()):
        raise InvalidArgumentError(f"{_where(constraint)}: a grammar needs a start rule to follow reasoning")
    renamed = "\n".join(
        "mcp_grammar_start:" + line[len("start:") :] if line.startswith("start:") else line
        for line in grammar.splitlines()
        if not line.startswith("%llguidance")
    )
    return f"mcp_answer: mcp_grammar_start\n{renamed}\n"

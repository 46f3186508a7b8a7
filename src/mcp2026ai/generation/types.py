"""What a generation request asks for and what it gets back, free of any transport."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp2026ai.contract import SLAClass

MAX_LOGPROBS = 20
MAX_CHOICES = 16
MAX_LOGIT_BIAS = 300
"""Most entries in one ``logit_bias`` (OpenAI's own limit)."""
LOGIT_BIAS_RANGE = 100.0


class SamplingParams(BaseModel):
    """How tokens are chosen and when a sequence ends (OpenAI / vLLM names and meanings)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int | None = Field(
        None, ge=1, description="Most tokens generated per choice; None: up to the context length."
    )
    temperature: float = Field(1.0, ge=0.0, le=2.0, description="0 picks the most likely token (greedy).")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Sample from the smallest set holding this probability.")
    top_k: int = Field(0, ge=-1, description="Sample from the k most likely tokens; 0 or -1: all.")
    min_p: float = Field(0.0, ge=0.0, le=1.0, description="Drop tokens below min_p x the top token's probability.")
    repetition_penalty: float = Field(1.0, gt=0.0, le=10.0, description="Divides logits of tokens already seen.")
    presence_penalty: float = Field(0.0, ge=-2.0, le=2.0, description="Subtracted once from generated tokens.")
    frequency_penalty: float = Field(0.0, ge=-2.0, le=2.0, description="Subtracted per occurrence.")
    seed: int | None = Field(None, ge=0, lt=2**63, description="Same seed, same tokens, whatever else runs.")
    stop: tuple[str, ...] = Field((), max_length=16, description="Strings that end a choice (not returned).")
    stop_token_ids: tuple[int, ...] = Field((), max_length=64, description="Token ids that end a choice.")
    ignore_eos: bool = False
    n: int = Field(1, ge=1, le=MAX_CHOICES, description="Independent choices for one prompt.")
    logprobs: int | None = Field(
        None, ge=0, le=MAX_LOGPROBS, description="Return each token's log-probability and this many alternatives."
    )
    prompt_logprobs: int | None = Field(
        None, ge=0, le=MAX_LOGPROBS, description="Also each prompt token's log-probability (the first has none)."
    )
    logit_bias: dict[int, float] | None = Field(
        None, max_length=MAX_LOGIT_BIAS, description="Added to the logits of these token ids before sampling."
    )
    min_tokens: int = Field(0, ge=0, description="End-of-sequence and stop token ids are masked until this many.")

    @field_validator("logit_bias")
    @classmethod
    def _bias_in_range(cls, value: dict[int, float] | None) -> dict[int, float] | None:
        for token, bias in (value or {}).items():
            if not -LOGIT_BIAS_RANGE <= bias <= LOGIT_BIAS_RANGE:
                raise ValueError(f"the bias of token {token} is {bias}: biases lie in [-100, 100]")
        return value

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


class ConstraintKind(StrEnum):
    """What a constrained sequence's output must match (see generation/grammar.py)."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    REGEX = "regex"
    CHOICE = "choice"
    GRAMMAR = "grammar"
    """A Lark grammar (llguidance's dialect, ``%json {...}`` included) or a GBNF one (``root ::= ...``)."""


@dataclass(frozen=True)
class Constraint:
    """A grammar the generated text must match. ``spec`` is canonical text (a JSON schema as compact
    JSON in its own key order, a regex, the choices as a JSON list, a grammar): equal constraints
    share one compiled grammar. ``param`` names the request field it came from, for errors."""

    kind: ConstraintKind
    spec: str
    param: str = ""


@dataclass
class GenerationRequest:
    """One prompt (already tokenized) to continue."""

    request_id: str
    prompt_ids: list[int]
    params: SamplingParams
    sla_class: SLAClass = SLAClass.THROUGHPUT_GUARANTEED
    headers: dict[str, str] = field(default_factory=dict)
    """Lower-cased request headers (the tracing context of the caller, if any)."""
    constraint: Constraint | None = None
    """Constrained decoding: every choice's text matches this grammar (None: free text)."""
    ttft_budget_s: float | None = None
    """Time to first token the contract promises (``ttft_p99_ms``): a request whose estimated wait (for a
    slot, or for the prompts ahead at the measured prefill pace) exceeds it is refused at once (429), none
    waits in the queue past it, and a prompt that can no longer reach its first token in time is refused."""
    adapter: str | None = None
    """The key of a LoRA adapter the engine holds (``Engine.load_adapter``); None: the base model."""


class FinishReason(StrEnum):
    STOP = "stop"
    LENGTH = "length"
    ABORT = "abort"


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token's log-probability under the model, and the most likely alternatives."""

    token_id: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


@dataclass
class Delta:
    """What one choice produced since its previous delta."""

    index: int
    token_ids: list[int] = field(default_factory=list)
    text: str = ""
    logprobs: list[TokenLogprob] = field(default_factory=list)
    finish_reason: FinishReason | None = None


@dataclass
class Usage:
    prompt_tokens: int
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens whose KV came from the prefix cache."""
    reasoning_tokens: int = 0
    """Completion tokens spent inside the thinking block, its markers included (set by the encoder
    when a reasoning parser splits the answer: dataplane/reasoning.py :func:`reasoning_token_count`)."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Choice:
    """A whole choice, gathered from its deltas (non-streaming answers)."""

    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[TokenLogprob] = field(default_factory=list)
    finish_reason: FinishReason | None = None

    def add(self, delta: Delta) -> None:
        self.text += delta.text
        self.token_ids += delta.token_ids
        self.logprobs += delta.logprobs
        self.finish_reason = delta.finish_reason or self.finish_reason

"""Sequence batching (Triton's): the requests of one correlation id run one at a time, in arrival
order, with the control inputs the model declares filled in (START, END, READY, CORRID) and its
implicit state (an output fed back as an input on the next request, zeros at the start) kept here.

A sequence begins with ``sequence_start``, ends with ``sequence_end`` and is dropped once idle for
the contract's ``idle_timeout_s``. Different sequences run concurrently through the model's executor.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcp2026ai.clock import Clock
from mcp2026ai.contract import SequenceSpec
from mcp2026ai.errors import ContractError, InvalidInputError
from mcp2026ai.ir.dtypes import numpy_dtype
from mcp2026ai.ir.signature import Signature, TensorSpec

CorrelationId = int | str
Submit = Callable[[dict[str, np.ndarray], list[str] | None], Awaitable[dict[str, np.ndarray]]]


@dataclass
class _Sequence:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    state: dict[str, np.ndarray] = field(default_factory=dict)
    last_seen: float = 0.0


@dataclass(frozen=True)
class SequenceFlags:
    correlation_id: CorrelationId
    start: bool
    end: bool


def sequence_flags(parameters: Mapping[str, Any]) -> SequenceFlags | None:
    """The request's correlation id and start/end flags; None when it names no sequence (id 0 or "")."""
    raw = parameters.get("sequence_id", 0)
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise InvalidInputError(f"sequence_id must be an integer or a string, not {type(raw).__name__}")
    if raw in (0, ""):
        return None
    return SequenceFlags(raw, _flag(parameters, "sequence_start"), _flag(parameters, "sequence_end"))


def _flag(parameters: Mapping[str, Any], name: str) -> bool:
    value = parameters.get(name, False)
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a boolean, not {str(value)[:40]!r}")
    return value


class SequenceTable:
    """The live sequences of one served model version."""

    def __init__(self, model: str, spec: SequenceSpec, signature: Signature, clock: Clock = time.monotonic) -> None:
        self.model = model
        self.spec = spec
        self.signature = signature
        self.clock = clock
        self._sequences: dict[CorrelationId, _Sequence] = {}
        _check_names(model, spec, signature)

    def __len__(self) -> int:
        return len(self._sequences)

    async def run(
        self, flags: SequenceFlags | None, inputs: dict[str, np.ndarray], outputs: Sequence[str] | None, submit: Submit
    ) -> dict[str, np.ndarray]:
        if flags is None:
            raise InvalidInputError(
                f"inference request to model '{self.model}' must specify a non-zero or non-empty correlation ID"
            )
        self._drop_idle()
        sequence = self._sequence(flags)
        async with sequence.lock:  # FIFO: the sequence's requests run in arrival order
            sequence.last_seen = self.clock()
            feed = {**inputs, **self._controls(flags), **self._state(sequence, flags.start)}
            wanted = None if self.spec.state else (list(outputs) if outputs else None)
            results = await submit(feed, wanted)
            sequence.state = {s.output: results[s.output] for s in self.spec.state}
            sequence.last_seen = self.clock()
        if flags.end:
            self._sequences.pop(flags.correlation_id, None)
        return self._answer(results, outputs)

    def _sequence(self, flags: SequenceFlags) -> _Sequence:
        if flags.start:
            sequence = self._sequences.get(flags.correlation_id) or _Sequence()
            self._sequences[flags.correlation_id] = sequence
            return sequence
        existing = self._sequences.get(flags.correlation_id)
        if existing is None:
            raise InvalidInputError(
                f"inference request for sequence {flags.correlation_id} to model '{self.model}' must specify "
                "the START flag on the first request of the sequence"
            )
        return existing

    def _drop_idle(self) -> None:
        oldest = self.clock() - self.spec.idle_timeout_s
        for key in [key for key, seq in self._sequences.items() if seq.last_seen < oldest and not seq.lock.locked()]:
            del self._sequences[key]

    def _controls(self, flags: SequenceFlags) -> dict[str, np.ndarray]:
        controls = self.spec.controls
        values: dict[str, CorrelationId] = {}
        if controls.start:
            values[controls.start] = int(flags.start)
        if controls.end:
            values[controls.end] = int(flags.end)
        if controls.ready:
            values[controls.ready] = 1
        if controls.corrid:
            values[controls.corrid] = flags.correlation_id
        return {name: self._filled(name, value) for name, value in values.items()}

    def _state(self, sequence: _Sequence, start: bool) -> dict[str, np.ndarray]:
        if start or not sequence.state:
            return {s.input: self._filled(s.input, 0) for s in self.spec.state}
        return {s.input: sequence.state[s.output] for s in self.spec.state}

    def _filled(self, name: str, value: CorrelationId) -> np.ndarray:
        spec = _input_spec(self.signature, name, self.model)
        shape = tuple(1 if dim < 0 else dim for dim in spec.shape)
        if spec.datatype == "BYTES":
            return np.full(shape, str(value).encode(), dtype=np.object_)
        if isinstance(value, str):
            raise InvalidInputError(f"model '{self.model}' takes an integer correlation id in {name!r}, not a string")
        return np.full(shape, value, dtype=numpy_dtype(spec.datatype))

    def _answer(self, results: dict[str, np.ndarray], outputs: Sequence[str] | None) -> dict[str, np.ndarray]:
        if outputs:
            return {name: results[name] for name in outputs}
        kept = {s.output for s in self.spec.state}
        return {name: array for name, array in results.items() if name not in kept}


def _check_names(model: str, spec: SequenceSpec, signature: Signature) -> None:
    """Every control and state input the contract names is a model input, every state output an output."""
    inputs = {tensor.name for tensor in signature.inputs}
    outputs = {tensor.name for tensor in signature.outputs}
    controls = [name for name in spec.controls.model_dump().values() if name is not None]
    for name in [*controls, *(state.input for state in spec.state)]:
        if name not in inputs:
            raise ContractError(f"model '{model}': contract sequence names input {name!r}, which the model lacks")
    for state in spec.state:
        if state.output not in outputs:
            raise ContractError(f"model '{model}': contract sequence state output {state.output!r} is not an output")


def _input_spec(signature: Signature, name: str, model: str) -> TensorSpec:
    spec = next((spec for spec in signature.inputs if spec.name == name), None)
    if spec is None:
        raise InvalidInputError(f"model '{model}' declares sequence input {name!r} but has no such input")
    return spec

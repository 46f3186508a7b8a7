"""SequenceTable: arrival order within a sequence, idle sequences dropped, flags read strictly."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mcp2026ai.contract import SequenceControls, SequenceSpec, SequenceState
from mcp2026ai.errors import ContractError, InvalidInputError
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.scheduling.sequences import SequenceFlags, SequenceTable, sequence_flags
from support.clock import FakeClock

SIGNATURE = Signature(
    inputs=[TensorSpec(name="x", datatype="FP32", shape=[1]), TensorSpec(name="acc", datatype="FP32", shape=[1])],
    outputs=[TensorSpec(name="acc_out", datatype="FP32", shape=[1])],
)
SPEC = SequenceSpec(state=[SequenceState(input="acc", output="acc_out")], idle_timeout_s=10)


def table(clock: FakeClock) -> SequenceTable:
    return SequenceTable("m", SPEC, SIGNATURE, clock=clock)


async def accumulate(inputs: dict[str, np.ndarray], outputs: list[str] | None) -> dict[str, np.ndarray]:
    await asyncio.sleep(0.001 * float(inputs["x"][0] % 3))  # later requests may finish earlier if unordered
    return {"acc_out": inputs["acc"] * 10 + inputs["x"]}  # the digits record the order of execution


def x(value: float) -> dict[str, np.ndarray]:
    return {"x": np.array([value], np.float32)}


def test_requests_of_one_sequence_run_in_arrival_order() -> None:
    asyncio.run(_in_order())


async def _in_order() -> None:
    sequences = table(FakeClock())
    await sequences.run(SequenceFlags(1, start=True, end=False), x(0.0), None, accumulate)
    runs = [sequences.run(SequenceFlags(1, start=False, end=False), x(float(v)), None, accumulate) for v in (5, 1, 3)]
    assert await asyncio.gather(*runs) == [{}, {}, {}]  # the state output is kept, not returned
    final = await sequences.run(SequenceFlags(1, start=False, end=True), x(0.0), ["acc_out"], accumulate)
    assert float(final["acc_out"][0]) == 5130.0
    assert len(sequences) == 0  # ended


def test_idle_sequences_are_dropped() -> None:
    asyncio.run(_idle())


async def _idle() -> None:
    clock = FakeClock()
    sequences = table(clock)
    await sequences.run(SequenceFlags("a", start=True, end=False), x(1.0), None, accumulate)
    clock.advance(11)
    with pytest.raises(InvalidInputError, match="START flag"):
        await sequences.run(SequenceFlags("a", start=False, end=False), x(1.0), None, accumulate)


@pytest.mark.parametrize("parameters", [{"sequence_id": 1.5}, {"sequence_id": 1, "sequence_start": "yes"}])
def test_bad_flags_are_client_errors(parameters: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        sequence_flags(parameters)


def test_no_sequence_id_is_none() -> None:
    assert sequence_flags({}) is None and sequence_flags({"sequence_id": ""}) is None


@pytest.mark.parametrize(
    "spec",
    [
        SequenceSpec(controls=SequenceControls(start="START")),
        SequenceSpec(state=[SequenceState(input="acc", output="missing")]),
        SequenceSpec(state=[SequenceState(input="missing", output="acc_out")]),
    ],
)
def test_a_contract_naming_absent_tensors_is_refused(spec: SequenceSpec) -> None:
    with pytest.raises(ContractError, match="model 'm'"):
        SequenceTable("m", spec, SIGNATURE)

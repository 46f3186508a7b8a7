"""The adapters an engine holds (generation/adapters.py): bounded by --max-loras and --max-lora-rank,
an unloaded adapter's slot freed only once no request that took it remains, and every load with its
own prefix-cache root."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.generation.adapters import AdapterSlots
from mcp2026ai.ir.lora_adapter import AdapterConfig, AdapterWeights
from mcp2026ai.ir.lora_graph import LoraLayout, LoraPart, LoraTarget
from mcp2026ai.runtime.lora_weights import LoraStacks

TARGET = LoraTarget(0, "attn/o_proj", 4, 4, (LoraPart("self_attn.o_proj", 0, 4),))


def weights(rank: int = 2) -> AdapterWeights:
    config = AdapterConfig(r=rank, lora_alpha=rank, target_modules=["o_proj"])
    matrices = {(0, "self_attn.o_proj"): (np.ones((rank, 4), np.float32), np.ones((4, rank), np.float32))}
    return AdapterWeights(config, matrices)


def slots(count: int = 2, rank: int = 4) -> AdapterSlots:
    return AdapterSlots(LoraStacks([TARGET], LoraLayout(count, rank)))


def test_loads_take_free_slots_up_to_max_loras() -> None:
    table = slots(2)
    first, second = table.load("a", weights()), table.load("b", weights())
    assert {first, second} == {0, 1} and table.loaded() == ["a", "b"]
    with pytest.raises(InvalidArgumentError, match="--max-loras 2 adapters are loaded"):
        table.load("c", weights())
    assert table.take("a")[0] == first
    with pytest.raises(NotFoundError, match="'c' is not loaded"):
        table.take("c")


def test_a_rank_over_the_limit_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="rank 8, over --max-lora-rank 4"):
        slots(rank=4).load("a", weights(8))


def test_an_unloaded_slot_is_freed_after_its_last_request() -> None:
    table = slots(1)
    slot = table.load("a", weights())
    buffers = table.stacks.buffers
    assert buffers[TARGET.b_input].any()
    table.unload("a")
    with pytest.raises(NotFoundError):
        table.take("a")  # new requests are refused at once
    table.reap(in_use={slot})  # a request that took it still runs
    with pytest.raises(InvalidArgumentError, match="still finishing requests"):
        table.load("b", weights())
    assert buffers[TARGET.b_input].any()
    table.reap(in_use=set())
    assert not buffers[TARGET.a_input].any() and not buffers[TARGET.b_input].any()
    assert table.load("b", weights()) == slot


def test_each_load_has_its_own_prefix_cache_root() -> None:
    table = slots(2)
    table.load("a", weights())
    root = table.take("a")[1]
    table.load("a", weights())  # the same name again (new weights): its KV is not the old one's
    assert table.take("a")[1] not in (root, 0)

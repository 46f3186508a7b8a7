"""KV-cache slots: one fixed-size region per running sequence, kept dense from slot 0.

The engine reserves ``max_model_len`` tokens of keys and values per slot (``max_num_seqs`` slots),
so admission only needs a free slot. The running sequences always occupy slots ``0 .. n-1``: a
decode step then reads one contiguous ``[n, kv_heads, max_len, head]`` block per layer, which the
onnxruntime decoder binds in place (past and present share it). When a sequence leaves from the
middle, the last one moves into its slot (:meth:`SlotTable.free` says which move to make).

This is the bookkeeping only; the decoder (``runtime/onnx_decoder.py``) holds the tensors.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass


@dataclass(frozen=True)
class SlotMove:
    """Copy the first ``length`` positions of ``source``'s KV into ``target`` (then ``source`` is free)."""

    source: int
    target: int
    length: int


class SlotTable:
    """Dense slot assignment with a per-sequence reservation of ``max_len`` tokens."""

    def __init__(self, num_slots: int, max_len: int) -> None:
        if num_slots < 1 or max_len < 2:
            raise ValueError(f"a KV slot table needs at least one slot of two tokens (got {num_slots} x {max_len})")
        self.num_slots = num_slots
        self.max_len = max_len
        self._order: list[Hashable] = []
        self._lengths: dict[Hashable, int] = {}

    @property
    def capacity_tokens(self) -> int:
        return self.num_slots * self.max_len

    @property
    def used_tokens(self) -> int:
        return sum(self._lengths.values())

    @property
    def active(self) -> int:
        return len(self._order)

    def can_admit(self, total_tokens: int) -> bool:
        return len(self._order) < self.num_slots and total_tokens <= self.max_len

    def order(self) -> list[Hashable]:
        """Sequence ids by slot: slot ``i`` holds ``order()[i]``."""
        return list(self._order)

    def slot_of(self, seq_id: Hashable) -> int:
        return self._order.index(seq_id)

    def length_of(self, seq_id: Hashable) -> int:
        return self._lengths[seq_id]

    def allocate(self, seq_id: Hashable, prompt_tokens: int) -> int:
        if not self.can_admit(prompt_tokens):
            raise ValueError(f"no KV slot for a {prompt_tokens}-token sequence ({self.active}/{self.num_slots} used)")
        self._order.append(seq_id)
        self._lengths[seq_id] = prompt_tokens
        return len(self._order) - 1

    def grow(self, seq_id: Hashable, tokens: int = 1) -> None:
        length = self._lengths[seq_id] + tokens
        if length > self.max_len:
            raise ValueError(f"sequence {seq_id!r} would hold {length} tokens, over the slot's {self.max_len}")
        self._lengths[seq_id] = length

    def free(self, seq_id: Hashable) -> SlotMove | None:
        """Release ``seq_id``'s slot; the move that keeps the slots dense, if one is needed."""
        slot = self._order.index(seq_id)
        del self._lengths[seq_id]
        last = len(self._order) - 1
        if slot == last:
            self._order.pop()
            return None
        moved = self._order.pop()
        self._order[slot] = moved
        return SlotMove(source=last, target=slot, length=self._lengths[moved])

"""The adapter weights a LoRA decoder reads: one A and one B buffer per projection, every slot side by side.

Layout (``ir/lora_graph.py``): slot ``s``, part ``p`` (q, k or v of a packed projection; 0 elsewhere)
owns columns ``(s x parts + p) x rank ..`` of ``A`` and the same rows of ``B``, stored transposed:
``A^T`` is ``[columns, in]`` and ``B^T`` ``[out, columns]``, whose rows outside the part's outputs stay
zero. An adapter of a lower rank
fills the first of its slot's rank columns; the rest stay zero (they add exact zeros). PEFT's scale
is folded into ``B``.

Writing a slot while the decoder runs is safe: no running row selects a slot being filled or
cleared (the engine assigns a slot before any request uses it and clears it after the last one has
ended), and the other rows multiply its columns by an exact zero whatever they hold (finite values:
the adapter reader refuses others).
"""

from __future__ import annotations

import numpy as np

from mcp2026ai.ir.lora_adapter import AdapterWeights
from mcp2026ai.ir.lora_graph import LoraLayout, LoraTarget


class LoraStacks:
    """The buffers bound to a LoRA decoder's adapter inputs (bound once: writes are seen by every run)."""

    def __init__(self, targets: list[LoraTarget], layout: LoraLayout) -> None:
        self.targets = targets
        self.layout = layout
        self.buffers: dict[str, np.ndarray] = {}
        for target in targets:
            columns = target.columns(layout.slots, layout.rank)
            self.buffers[target.a_input] = np.zeros((columns, target.in_features), np.float32)
            self.buffers[target.b_input] = np.zeros((target.out_features, columns), np.float32)

    @property
    def nbytes(self) -> int:
        return sum(buffer.nbytes for buffer in self.buffers.values())

    def write(self, slot: int, adapter: AdapterWeights) -> None:
        """Fill ``slot`` with ``adapter`` (checked to fit: ``ir.lora_adapter.check_fit``)."""
        self.clear(slot)
        rank, scale = adapter.rank, np.float32(adapter.config.scaling)
        for target in self.targets:
            a_stack, b_stack = self.buffers[target.a_input], self.buffers[target.b_input]
            for index, part in enumerate(target.parts):
                pair = adapter.matrices.get((target.layer, part.module))
                if pair is None:
                    continue
                a, b = pair
                column = self._column(slot, index, len(target.parts))
                a_stack[column : column + rank, :] = a
                b_stack[part.offset : part.offset + part.size, column : column + rank] = b * scale

    def clear(self, slot: int) -> None:
        """Zero ``slot``'s columns: rows that select it get the base model's output."""
        for target in self.targets:
            parts = len(target.parts)
            start, end = self._column(slot, 0, parts), self._column(slot + 1, 0, parts)
            self.buffers[target.a_input][start:end, :] = 0.0
            self.buffers[target.b_input][:, start:end] = 0.0

    def _column(self, slot: int, part: int, parts: int) -> int:
        return (slot * parts + part) * self.layout.rank

"""Prefix caching: the KV of prompt prefixes, kept block by block, so a prompt that starts like an
earlier one (a shared system prompt) is prefilled only from where they differ.

A full block of ``block_size`` prompt tokens is keyed by the hash of every token up to its end (the
previous block's key and its own tokens), so a key names one exact prefix. After a prefill the
prompt's full blocks are copied out of its KV slot; a later prompt with the same first blocks gets
them copied into its slot and prefills the rest on top (the decoder appends after cached positions:
greedy output is the same as without the cache). At least the prompt's last token is always
computed: its logits give the first generated token. Blocks are evicted least recently used first
once ``capacity_bytes`` is reached.

The decoder keeps each sequence's KV contiguous (onnxruntime's GroupQueryAttention reads one region
per sequence), so cached blocks are copied in, not shared in place: the saving is the prefill's
compute, which is where a long shared prompt's time to first token goes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np

DEFAULT_BLOCK_SIZE = 16


class BlockStorage(Protocol):
    """What the cache needs of the decoder: copy one block of a slot's KV out, copy blocks in."""

    def read_block(self, slot: int, start: int, size: int) -> np.ndarray: ...

    def write_blocks(self, slot: int, blocks: Sequence[np.ndarray]) -> None: ...


def block_keys(prompt: Sequence[int], block_size: int = DEFAULT_BLOCK_SIZE, root: int = 0) -> list[int]:
    """The prefix key of each full block of ``prompt``, in order (``root``: the LoRA adapter's, 0 for none)."""
    keys: list[int] = []
    parent = root
    for start in range(0, len(prompt) - block_size + 1, block_size):
        parent = hash((parent, tuple(prompt[start : start + block_size])))
        keys.append(parent)
    return keys


class PrefixCache:
    def __init__(self, capacity_bytes: int, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        self.capacity_bytes = capacity_bytes
        self.block_size = block_size
        self._blocks: OrderedDict[int, np.ndarray] = OrderedDict()
        self._bytes = 0
        self.lookup_tokens = 0
        self.hit_tokens = 0

    @property
    def hit_rate(self) -> float:
        """Share of looked-up prompt tokens whose KV came from the cache."""
        return self.hit_tokens / self.lookup_tokens if self.lookup_tokens else 0.0

    @property
    def used_bytes(self) -> int:
        return self._bytes

    def restore(self, prompt: Sequence[int], slot: int, storage: BlockStorage) -> int:
        """Copy the longest cached prefix of ``prompt`` into ``slot``; how many tokens it covers."""
        found = self.lookup(prompt)
        if found:
            storage.write_blocks(slot, found)
        return len(found) * self.block_size

    def lookup(self, prompt: Sequence[int], root: int = 0) -> list[np.ndarray]:
        """The cached blocks of the longest known prefix of ``prompt`` (counted in the hit rate); the
        engine's executor copies them into the prompt's slot."""
        usable = (len(prompt) - 1) // self.block_size  # the last token is always computed
        found: list[np.ndarray] = []
        for key in block_keys(prompt[: usable * self.block_size], self.block_size, root):
            block = self._blocks.get(key)
            if block is None:
                break
            self._blocks.move_to_end(key)
            found.append(block)
        self.lookup_tokens += len(prompt)
        self.hit_tokens += len(found) * self.block_size
        return found

    def remember(self, prompt: Sequence[int], slot: int, storage: BlockStorage, root: int = 0) -> None:
        """Keep the full blocks of a just-prefilled ``prompt`` that the cache does not hold yet."""
        if self.capacity_bytes <= 0:
            return
        for index, key in enumerate(block_keys(prompt, self.block_size, root)):
            if key in self._blocks:
                self._blocks.move_to_end(key)
                continue
            block = storage.read_block(slot, index * self.block_size, self.block_size)
            if block.nbytes > self.capacity_bytes:
                return
            self._blocks[key] = block
            self._bytes += block.nbytes
            self._evict()

    def _evict(self) -> None:
        while self._bytes > self.capacity_bytes and self._blocks:
            _, block = self._blocks.popitem(last=False)
            self._bytes -= block.nbytes

"""Paged KV cache bookkeeping: fixed-size blocks from one pool, a block table per sequence, prefix caching.

The pool is sized once (from the contract's memory budget, :meth:`KVBlockPool.from_memory_budget`)
and never reserves ``max_model_len`` for a sequence: a sequence holds ``ceil(tokens / block_size)``
blocks and takes one more only when its last block fills, so at most one block per sequence is
partly empty. Admission asks :meth:`KVBlockPool.can_allocate`; when the pool runs dry while running
sequences grow, :meth:`KVBlockPool.append` says so and the scheduler preempts a sequence (frees its
blocks and recomputes it later).

Prefix caching: a full block is keyed by the hash of every token up to its end (its parent block's
key and its own tokens), so two sequences with the same first ``k * block_size`` tokens (a shared
system prompt) share those blocks, prefilled once. A cached block whose last user left is kept,
least recently used first out, until a new block is needed.

This module holds no tensors: block ids index whatever storage the engine keeps, e.g. an array of
shape ``[num_blocks, layers, 2, kv_heads, block_size, head_dim]``.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from mcp2026ai.errors import OverloadedError

DEFAULT_BLOCK_SIZE = 16


class NoFreeBlocksError(OverloadedError):
    """The pool has no block left for a new sequence (admission waits or the request is refused)."""


@dataclass
class BlockTable:
    """The blocks one sequence holds, in token order, and how many tokens they hold."""

    blocks: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    """The token ids written so far (prefix keys of blocks that fill are computed from them)."""
    keys: list[int] = field(default_factory=list)
    """The prefix key of each full block, in order."""

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class Allocation:
    """What :meth:`KVBlockPool.allocate` gave a new sequence."""

    blocks: list[int]
    cached_tokens: int
    """Leading prompt tokens whose KV is already in shared blocks: the prefill can skip them."""


@dataclass(frozen=True)
class KVStats:
    """The pool at one moment (the engine exports these as metrics)."""

    total_blocks: int
    used_blocks: int
    cached_free_blocks: int
    block_size: int
    filled_tokens: int
    preemptions: int
    prefix_queried_tokens: int
    prefix_hit_tokens: int

    @property
    def usage(self) -> float:
        """Share of the pool held by running sequences."""
        return self.used_blocks / self.total_blocks if self.total_blocks else 0.0

    @property
    def fragmentation(self) -> float:
        """Reserved-but-unused token slots / reserved slots, over the blocks held by sequences."""
        reserved = self.used_blocks * self.block_size
        return 1.0 - self.filled_tokens / reserved if reserved else 0.0

    @property
    def prefix_hit_rate(self) -> float:
        return self.prefix_hit_tokens / self.prefix_queried_tokens if self.prefix_queried_tokens else 0.0


class KVBlockPool:
    """Allocates KV blocks to sequences; see the module docstring."""

    def __init__(self, num_blocks: int, block_size: int = DEFAULT_BLOCK_SIZE, prefix_caching: bool = True) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"a KV pool needs at least one block of one token (got {num_blocks} x {block_size})")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_caching = prefix_caching
        self._free: deque[int] = deque(range(num_blocks))
        self._refs = [0] * num_blocks
        self._key_of: dict[int, int] = {}
        self._block_of: dict[int, int] = {}
        self._evictable: OrderedDict[int, None] = OrderedDict()
        self._tables: dict[Hashable, BlockTable] = {}
        self._filled = 0
        self._preemptions = 0
        self._queried = 0
        self._hits = 0

    @classmethod
    def from_memory_budget(
        cls, budget_bytes: int, bytes_per_token: int, block_size: int = DEFAULT_BLOCK_SIZE, prefix_caching: bool = True
    ) -> KVBlockPool:
        """As many blocks as ``budget_bytes`` holds at ``bytes_per_token`` (all layers, keys and values)."""
        blocks = budget_bytes // (bytes_per_token * block_size)
        if blocks < 1:
            need = bytes_per_token * block_size
            raise ValueError(
                f"a KV budget of {budget_bytes} bytes holds no block of {block_size} tokens ({need} bytes)"
            )
        return cls(int(blocks), block_size, prefix_caching)

    # admission ---------------------------------------------------------------------------------
    def blocks_for(self, tokens: int) -> int:
        return math.ceil(tokens / self.block_size)

    def can_allocate(self, prompt: Sequence[int], reserve_blocks: int = 0) -> bool:
        """Whether a sequence with ``prompt`` fits now, leaving ``reserve_blocks`` for running ones."""
        cached = self._cached_prefix(prompt)
        idle_cached = sum(1 for block, _ in cached if self._refs[block] == 0)  # leave the LRU when reused
        needed = self.blocks_for(max(len(prompt), 1)) - len(cached) + idle_cached
        return needed + reserve_blocks <= self.available_blocks

    @property
    def available_blocks(self) -> int:
        """Blocks a new need can take: free ones and cached ones no sequence holds."""
        return len(self._free) + len(self._evictable)

    def allocate(self, seq_id: Hashable, prompt: Sequence[int]) -> Allocation:
        """Blocks for a new sequence's prompt, sharing cached prefix blocks; NoFreeBlocksError if it does not fit."""
        if seq_id in self._tables:
            raise ValueError(f"sequence {seq_id!r} already holds blocks")
        if not self.can_allocate(prompt):
            raise NoFreeBlocksError(
                f"KV cache full: a {len(prompt)}-token prompt needs {self.blocks_for(len(prompt))} blocks, "
                f"{self.available_blocks} available"
            )
        cached = self._cached_prefix(prompt)
        self._queried += len(prompt)
        self._hits += len(cached) * self.block_size
        table = BlockTable()
        for block, key in cached:
            self._hold(block)
            table.blocks.append(block)
            table.keys.append(key)
        table.tokens.extend(prompt[: len(cached) * self.block_size])
        self._filled += len(table.tokens)
        self._tables[seq_id] = table
        for token in prompt[len(table.tokens) :]:
            self._append(table, token)
        cached_tokens = min(len(cached) * self.block_size, max(len(prompt) - 1, 0))
        return Allocation(list(table.blocks), cached_tokens)

    # decoding ----------------------------------------------------------------------------------
    def append(self, seq_id: Hashable, token: int) -> bool:
        """Record one generated token; False (nothing changed) when it needs a block and none is left."""
        table = self._tables[seq_id]
        if table.num_tokens % self.block_size == 0 and not self.available_blocks:
            return False
        self._append(table, token)
        return True

    def free(self, seq_id: Hashable) -> None:
        """Release a finished or aborted sequence's blocks (full ones stay cached for reuse)."""
        table = self._tables.pop(seq_id, None)
        if table is None:
            return
        self._filled -= table.num_tokens
        for block in table.blocks:
            self._release(block)

    def preempt(self, seq_id: Hashable) -> None:
        """Free a running sequence so others can grow; it is recomputed when readmitted."""
        self._preemptions += 1
        self.free(seq_id)

    def table(self, seq_id: Hashable) -> BlockTable:
        return self._tables[seq_id]

    def stats(self) -> KVStats:
        used = self.num_blocks - len(self._free) - len(self._evictable)
        return KVStats(
            total_blocks=self.num_blocks,
            used_blocks=used,
            cached_free_blocks=len(self._evictable),
            block_size=self.block_size,
            filled_tokens=self._filled,
            preemptions=self._preemptions,
            prefix_queried_tokens=self._queried,
            prefix_hit_tokens=self._hits,
        )

    # internals ---------------------------------------------------------------------------------
    def _append(self, table: BlockTable, token: int) -> None:
        if table.num_tokens % self.block_size == 0:
            table.blocks.append(self._take_block())
        table.tokens.append(token)
        self._filled += 1
        if table.num_tokens % self.block_size == 0:
            self._seal(table)

    def _seal(self, table: BlockTable) -> None:
        """The last block just filled: key it by its prefix so later sequences can share it."""
        parent = table.keys[-1] if table.keys else 0
        key = hash((parent, tuple(table.tokens[-self.block_size :])))
        table.keys.append(key)
        block = table.blocks[-1]
        if self.prefix_caching and key not in self._block_of:
            self._block_of[key] = block
            self._key_of[block] = key

    def _cached_prefix(self, prompt: Sequence[int]) -> list[tuple[int, int]]:
        """(block, key) of the leading full blocks of ``prompt`` already in the cache."""
        if not self.prefix_caching:
            return []
        found: list[tuple[int, int]] = []
        parent = 0
        for start in range(0, len(prompt) - self.block_size + 1, self.block_size):
            key = hash((parent, tuple(prompt[start : start + self.block_size])))
            block = self._block_of.get(key)
            if block is None:
                break
            found.append((block, key))
            parent = key
        return found

    def _take_block(self) -> int:
        if self._free:
            block = self._free.popleft()
        elif self._evictable:
            block, _ = self._evictable.popitem(last=False)  # least recently used cached block
            del self._block_of[self._key_of.pop(block)]
        else:
            raise NoFreeBlocksError("KV cache full: no free block")
        self._refs[block] = 1
        return block

    def _hold(self, block: int) -> None:
        if self._refs[block] == 0:
            self._evictable.pop(block, None)
        self._refs[block] += 1

    def _release(self, block: int) -> None:
        self._refs[block] -= 1
        if self._refs[block]:
            return
        if block in self._key_of:
            self._evictable[block] = None
        else:
            self._free.append(block)


def pool_blocks(kv_cache_mb: float | None, bytes_per_token: int, slot_tokens: int) -> int:
    """Blocks in an engine's KV pool: ``kv_cache_mb`` of them, or by default as many as its slots could
    fill (``slot_tokens`` = max_num_seqs x max_model_len: the memory a static reservation would take)."""
    if kv_cache_mb is not None:
        return max(1, int(kv_cache_mb * (1 << 20)) // (bytes_per_token * DEFAULT_BLOCK_SIZE))
    return max(1, -(-slot_tokens // DEFAULT_BLOCK_SIZE))

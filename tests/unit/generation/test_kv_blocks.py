"""The paged KV block pool: no max-length reservation, admission by free blocks, preemption, prefix sharing."""

from __future__ import annotations

import pytest

from mcp2026ai.generation.kv_blocks import KVBlockPool, NoFreeBlocksError


def tokens(n: int, start: int = 0) -> list[int]:
    return list(range(start, start + n))


def test_a_sequence_holds_only_the_blocks_its_tokens_fill() -> None:
    pool = KVBlockPool(num_blocks=10, block_size=4, prefix_caching=False)
    allocation = pool.allocate("a", tokens(5))
    assert len(allocation.blocks) == 2 and allocation.cached_tokens == 0
    assert pool.stats().used_blocks == 2 and pool.stats().filled_tokens == 5
    for token in range(3):  # fills the second block: no new block yet
        assert pool.append("a", 100 + token)
    assert pool.stats().used_blocks == 2
    assert pool.append("a", 200)  # the ninth token opens a third block
    assert pool.stats().used_blocks == 3
    assert pool.stats().fragmentation == pytest.approx(1 - 9 / 12)


def test_admission_is_by_free_blocks_and_free_returns_them() -> None:
    pool = KVBlockPool(num_blocks=4, block_size=4, prefix_caching=False)
    pool.allocate("a", tokens(8))
    assert pool.can_allocate(tokens(8, 50)) and not pool.can_allocate(tokens(9, 50))
    assert not pool.can_allocate(tokens(4, 50), reserve_blocks=2)
    with pytest.raises(NoFreeBlocksError, match="9-token prompt needs 3 blocks, 2 available"):
        pool.allocate("b", tokens(9, 50))
    pool.free("a")
    assert pool.available_blocks == 4 and pool.stats().used_blocks == 0
    pool.allocate("b", tokens(9, 50))


def test_a_dry_pool_refuses_growth_and_preemption_frees_room() -> None:
    pool = KVBlockPool(num_blocks=2, block_size=2, prefix_caching=False)
    pool.allocate("a", tokens(2))
    pool.allocate("b", tokens(2, 10))
    assert not pool.append("a", 99)  # needs a third block: refused, nothing changed
    assert pool.table("a").num_tokens == 2
    pool.preempt("b")
    assert pool.append("a", 99)
    assert pool.stats().preemptions == 1


def test_a_shared_prefix_is_prefilled_once_and_shared() -> None:
    pool = KVBlockPool(num_blocks=8, block_size=4)
    system = tokens(8, 1000)
    first = pool.allocate("a", [*system, 1, 2])
    assert first.cached_tokens == 0
    second = pool.allocate("b", [*system, 3])
    assert second.cached_tokens == 8
    assert second.blocks[:2] == first.blocks[:2] and second.blocks[2] != first.blocks[2]
    stats = pool.stats()
    assert stats.used_blocks == 4  # 2 shared + one tail each
    assert stats.prefix_hit_tokens == 8 and stats.prefix_hit_rate == pytest.approx(8 / 19)


def test_cached_blocks_outlive_their_sequence_until_space_is_needed() -> None:
    pool = KVBlockPool(num_blocks=3, block_size=2)
    pool.allocate("a", tokens(4))
    pool.free("a")
    stats = pool.stats()
    assert stats.used_blocks == 0 and stats.cached_free_blocks == 2
    assert pool.allocate("b", tokens(4)).cached_tokens == 3  # all cached; the last token is recomputed for logits
    pool.free("b")
    pool.allocate("c", tokens(6, 500))  # needs all 3 blocks: the cached ones are evicted, oldest first
    assert pool.stats().cached_free_blocks == 0
    pool.free("c")
    assert pool.allocate("d", tokens(4)).cached_tokens == 0  # the old prefix was evicted


def test_reusing_an_idle_cached_prefix_counts_against_availability() -> None:
    pool = KVBlockPool(num_blocks=2, block_size=2)
    pool.allocate("a", tokens(2))
    pool.free("a")  # block 0 cached and idle; block 1 free
    assert pool.can_allocate([*tokens(2), 7])  # reuses the cached block, needs one more: fits exactly
    pool.allocate("b", [*tokens(2), 7])
    assert pool.available_blocks == 0


def test_the_pool_is_sized_by_the_memory_budget() -> None:
    pool = KVBlockPool.from_memory_budget(budget_bytes=1 << 20, bytes_per_token=1024, block_size=16)
    assert pool.num_blocks == 64
    with pytest.raises(ValueError, match="holds no block of 16 tokens"):
        KVBlockPool.from_memory_budget(budget_bytes=1000, bytes_per_token=1024)

"""What a generation request must satisfy before it queues: a prompt, token ids in the vocabulary, no
more choices than sequences, and a prompt plus ``max_tokens`` that fit the context and the KV pool."""

from __future__ import annotations

from mcp2026ai.errors import ContextLengthError, InvalidArgumentError
from mcp2026ai.generation.kv_blocks import KVBlockPool
from mcp2026ai.generation.prompt_scoring import check_token_ids
from mcp2026ai.generation.types import GenerationRequest
from mcp2026ai.ir.llm_info import LLMInfo


def check_request(request: GenerationRequest, info: LLMInfo, num_slots: int, blocks: KVBlockPool, max_len: int) -> int:
    """The tokens ``request`` may generate per choice; InvalidArgumentError or ContextLengthError (naming
    the limit) when it cannot run."""
    prompt = len(request.prompt_ids)
    if prompt == 0:
        raise InvalidArgumentError("the prompt is empty: give at least one token of text")
    if any(not 0 <= token < info.vocab_size for token in request.prompt_ids):
        raise InvalidArgumentError(f"prompt token ids must lie in [0, {info.vocab_size})")
    check_token_ids(request.params, info.vocab_size)
    if request.params.n > num_slots:
        raise InvalidArgumentError(
            f"n={request.params.n} choices need {request.params.n} sequences at once; "
            f"this server runs at most {num_slots} (max_num_seqs)"
        )
    wanted = request.params.max_tokens
    longest = prompt + (wanted if wanted is not None else max_len - prompt)
    needed = request.params.n * blocks.blocks_for(min(longest, max_len))
    if needed > blocks.num_blocks:
        raise InvalidArgumentError(
            f"{request.params.n} x {min(longest, max_len)} tokens need {needed} KV blocks of "
            f"{blocks.block_size} tokens; the KV cache holds {blocks.num_blocks} (kv_cache_mb): "
            "lower max_tokens or n"
        )
    if wanted is None and prompt >= max_len:
        raise ContextLengthError(
            f"This model's maximum context length is {max_len} tokens. However, your prompt has "
            f"{prompt} tokens, which leaves no room to generate. Please reduce the length of the prompt.",
            max_len,
        )
    if wanted is not None and prompt + wanted > max_len:
        raise ContextLengthError(
            f"This model's maximum context length is {max_len} tokens. However, you requested "
            f"{prompt + wanted} tokens ({prompt} in the prompt, {wanted} in the completion). "
            "Please reduce the length of the prompt or max_tokens.",
            max_len,
        )
    return wanted if wanted is not None else max_len - prompt

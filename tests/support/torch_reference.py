"""transformers references on one torch thread.

torch's OpenMP pool waits for all its threads at every operator: with two test workers (and their
servers) on two cores, a thread of the pool is often descheduled and the others wait for it. On the
shared 2-core host a 24-token greedy generate of SmolLM2-135M took 25-30 s on torch's default two
threads and 4 s on one (``torch.set_num_threads(1)``; one thread per worker is what ``make test``
has anyway). The references' greedy tokens on one thread still equal the engine's fp32 tokens
(``tests/unit/generation/test_fp32_reference.py``, ``test_lora_adapters.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch's intra-op pool at one thread inside the block (restored after it)."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def reference_greedy(model: object, ids: list[int], tokens: int, eos: Collection[int]) -> list[int]:
    """transformers' greedy continuation of ``ids`` (``tokens`` at most, EOS ids dropped: EOS ends both)."""
    import torch

    with one_torch_thread(), torch.no_grad():
        output = model.generate(torch.tensor([ids]), max_new_tokens=tokens, do_sample=False)  # type: ignore[attr-defined]
    return [token for token in output[0, len(ids) :].tolist() if token not in eos]

"""Triton's classification extension: an output asked for with ``classification: k`` comes back as
the top ``k`` classes of each row, as BYTES strings ``"score:index:label"`` (``"score:index"`` when the
model has no labels), best first, shape ``[batch, k]`` (``[k]`` for an unbatched output)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcp2026ai.errors import InvalidInputError
from mcp2026ai.inference import RequestedOutput


def classify_outputs(
    outputs: dict[str, np.ndarray], requested: Sequence[RequestedOutput], labels: Sequence[str]
) -> dict[str, np.ndarray]:
    """``outputs`` with every output requested with a class count replaced by its top classes."""
    counts = {output.name: output.class_count for output in requested if output.class_count}
    if not counts:
        return outputs  # the usual case: nothing to do, nothing copied
    return {name: top_classes(a, counts[name], labels) if name in counts else a for name, a in outputs.items()}


def top_classes(scores: np.ndarray, k: int, labels: Sequence[str]) -> np.ndarray:
    if scores.dtype.kind not in "fiu" or scores.ndim == 0:
        raise InvalidInputError(
            f"classification needs a numeric output, not {scores.dtype} of shape {list(scores.shape)}"
        )
    rows = scores.reshape(1, -1) if scores.ndim == 1 else scores.reshape(scores.shape[0], -1)
    k = min(k, rows.shape[1])
    best = np.argsort(-rows, axis=1, kind="stable")[:, :k]
    text = [[_entry(row[index], int(index), labels) for index in order] for row, order in zip(rows, best, strict=True)]
    result = np.array(text, dtype=np.object_)
    return result.reshape(k) if scores.ndim == 1 else result


def _entry(score: float, index: int, labels: Sequence[str]) -> bytes:
    label = f":{labels[index]}" if index < len(labels) else ""
    return f"{float(score):f}:{index}{label}".encode()

"""Pure batch assembly: merge requests along axis 0, split outputs back, choose the batch size.

Sizes are counted in rows (a request may carry several), never in requests. Requests can share a
batch only when their inputs agree on everything but the leading dimension (:func:`shape_key`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from mcp2026ai.errors import InferenceFailedError, InvalidInputError

Tensors = Mapping[str, np.ndarray]


def request_rows(inputs: Tensors) -> int:
    """Rows of a request: the leading dimension every input must share."""
    rows: dict[str, int] = {}
    for name, array in inputs.items():
        if array.ndim == 0:
            raise InvalidInputError(f"input {name!r} is a scalar; the model expects a leading batch dimension")
        rows[name] = int(array.shape[0])
    if not rows:
        raise InvalidInputError("the request has no inputs")
    if len(set(rows.values())) > 1:
        detail = ", ".join(f"{name} has {count}" for name, count in rows.items())
        raise InvalidInputError(f"inputs disagree on the batch dimension ({detail} rows)")
    return next(iter(rows.values()))


def shape_key(inputs: Tensors) -> Hashable:
    """Equal keys <=> the requests can be concatenated along axis 0."""
    return tuple(sorted((name, array.dtype.str, tuple(array.shape[1:])) for name, array in inputs.items()))


def merge_inputs(requests: Sequence[Tensors]) -> tuple[dict[str, np.ndarray], list[int]]:
    """Concatenate each input along axis 0; also return the row offsets (len(requests) + 1 of them)."""
    offsets = [0]
    for inputs in requests:
        offsets.append(offsets[-1] + request_rows(inputs))
    if len(requests) == 1:
        return dict(requests[0]), offsets
    names = list(requests[0])
    merged = {name: np.concatenate([inputs[name] for inputs in requests], axis=0) for name in names}
    return merged, offsets


def union_outputs(wanted: Sequence[Sequence[str] | None]) -> list[str] | None:
    """Outputs the batch must compute: None (all) if any member wants all, else the union in first-seen order."""
    names: dict[str, None] = {}
    for request in wanted:
        if not request:
            return None
        names.update(dict.fromkeys(request))
    return list(names)


def split_outputs(
    outputs: Mapping[str, np.ndarray], offsets: Sequence[int], wanted: Sequence[Sequence[str] | None]
) -> list[dict[str, np.ndarray]]:
    """Slice each batch output back into the members' rows, keeping only what each asked for."""
    total = offsets[-1]
    for name, array in outputs.items():
        if array.ndim == 0 or array.shape[0] != total:
            got = "a scalar" if array.ndim == 0 else f"{array.shape[0]} rows"
            raise InferenceFailedError(f"output {name!r} has {got}; the batch had {total} rows")
    parts = []
    for index, names in enumerate(wanted):
        start, stop = offsets[index], offsets[index + 1]
        keep = list(names) if names else list(outputs)
        parts.append({name: outputs[name][start:stop] for name in keep})
    return parts


def select_outputs(outputs: Mapping[str, np.ndarray], wanted: Sequence[str] | None) -> dict[str, np.ndarray]:
    """A lone request's outputs, restricted to what it asked for."""
    return {name: outputs[name] for name in (wanted or list(outputs))}


def choose_batch(
    rows: Sequence[int],
    max_batch_size: int,
    preferred_batch_sizes: Sequence[int] = (),
    *,
    more_waiting: bool = False,
    window_elapsed: bool = False,
) -> int:
    """How many leading requests of ``rows`` to dispatch now; 0 means wait for more.

    Triton semantics: the largest prefix whose rows equal a preferred size (max_batch_size when
    none is configured) goes at once. Otherwise the largest prefix within max_batch_size goes when
    the batch cannot grow (the next request does not fit or cannot join: ``more_waiting``) or the
    batching window of its oldest member has elapsed. A batch never exceeds max_batch_size rows,
    except a lone request that alone carries more (it runs by itself).
    """
    sums: list[int] = []
    for count in rows:
        total = (sums[-1] if sums else 0) + count
        if total > max_batch_size:
            more_waiting = True
            break
        sums.append(total)
    if not sums:
        return 1 if rows else 0
    targets = set(preferred_batch_sizes) or {max_batch_size}
    best = max((index + 1 for index, total in enumerate(sums) if total in targets), default=0)
    if best:
        return best
    return len(sums) if more_waiting or window_elapsed else 0

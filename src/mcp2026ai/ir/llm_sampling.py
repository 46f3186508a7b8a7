"""A language model's own sampling defaults, as its publisher ships them.

A Hugging Face folder may carry ``generation_config.json`` (``temperature``, ``top_p``, ``top_k``,
``min_p``, ``repetition_penalty``: the fields vLLM's ``--generation-config auto`` reads); a GGUF file
may carry llama.cpp's ``general.sampling.*`` keys (``temp``, ``top_p``, ``top_k``, ``min_p``,
``penalty_repeat``). The converter copies what it finds into the converted folder's
``generation_config.json`` (:func:`write_sampling`), and the server reads it back
(:func:`read_sampling`): a request that leaves a setting out gets the model's (``mcp serve
--generation-config none`` turns them off). Folders converted before this module existed have none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLING_FILE = "generation_config.json"
HF_FIELDS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")
GGUF_FIELDS = {
    "general.sampling.temp": "temperature",
    "general.sampling.top_p": "top_p",
    "general.sampling.top_k": "top_k",
    "general.sampling.min_p": "min_p",
    "general.sampling.penalty_repeat": "repetition_penalty",
}
_LIMITS = {"temperature": (0.0, 2.0), "top_p": (1e-9, 1.0), "top_k": (-1, 1 << 20), "min_p": (0.0, 1.0)}
_LIMITS["repetition_penalty"] = (1e-9, 10.0)


def sampling_of_hf(folder: Path) -> dict[str, float | int]:
    """The sampling fields of a Hugging Face folder's ``generation_config.json`` (empty: none)."""
    path = folder / SAMPLING_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return _valid({name: document.get(name) for name in HF_FIELDS} if isinstance(document, dict) else {})


def sampling_of_gguf(path: Path) -> dict[str, float | int]:
    """The ``general.sampling.*`` fields of a GGUF file's metadata (empty: none, or no gguf package)."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return {}
    reader = GGUFReader(str(path))
    values: dict[str, Any] = {}
    for key, name in GGUF_FIELDS.items():
        field = reader.get_field(key)
        if field is not None and field.data:
            values[name] = field.parts[field.data[0]].tolist()[0]
    return _valid(values)


def write_sampling(folder: Path, values: dict[str, float | int]) -> None:
    if values:
        (folder / SAMPLING_FILE).write_text(json.dumps(values, indent=2), encoding="utf-8")


def read_sampling(folder: Path) -> dict[str, float | int]:
    """What :func:`write_sampling` wrote into a converted folder (empty: nothing)."""
    return sampling_of_hf(folder)


def _valid(values: dict[str, Any]) -> dict[str, float | int]:
    """The fields whose values are numbers inside the server's own limits (others are dropped: a
    publisher's odd value must not make every request fail)."""
    kept: dict[str, float | int] = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        low, high = _LIMITS[name]
        if low <= value <= high:
            kept[name] = int(value) if name == "top_k" else float(value)
    return kept

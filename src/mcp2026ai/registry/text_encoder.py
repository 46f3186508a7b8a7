"""A sentence encoder's tokenizer as a registry artifact.

A tensor model registered with ``text`` preprocessing (``--preprocessing`` YAML with a ``text:``
section) names its ``tokenizer.json``; registration stores that file content-addressed beside the
model (suffix ``.tokenizer.json``) and keeps its sha256 digest in the record, so the record's
signature covers the tokenizer too and serving reads it back checked (and decrypted when the store
encrypts at rest).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry.records import ModelVersion, Preprocessing
from mcp2026ai.registry.store import ArtifactStore

TOKENIZER_SUFFIX = ".tokenizer.json"
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def is_digest(reference: str) -> bool:
    return bool(_DIGEST.match(reference))


def store_tokenizer(store: ArtifactStore, preprocessing: Preprocessing | None) -> Preprocessing | None:
    """``preprocessing`` with its text tokenizer's path replaced by the digest it is stored under."""
    if preprocessing is None or preprocessing.text is None or is_digest(preprocessing.text.tokenizer):
        return preprocessing
    path = Path(preprocessing.text.tokenizer)
    if not path.is_file():
        raise InvalidArgumentError(f"{path}: text.tokenizer file not found (give the model's tokenizer.json)")
    digest = store.put(path, TOKENIZER_SUFFIX)
    text = preprocessing.text.model_copy(update={"tokenizer": digest})
    return preprocessing.model_copy(update={"text": text})


def tokenizer_digests(records: Iterable[ModelVersion]) -> set[str]:
    """The tokenizer artifacts ``records`` name (kept by the leftovers sweep like the models themselves)."""
    return {
        record.preprocessing.text.tokenizer
        for record in records
        if record.preprocessing is not None and record.preprocessing.text is not None
    }


def tokenizer_json(store: ArtifactStore, digest: str) -> str:
    """The stored tokenizer.json's text (checked against its digest)."""
    return store.read(digest, TOKENIZER_SUFFIX).decode("utf-8")

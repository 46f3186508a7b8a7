"""Cache of onnxruntime-optimized models, so that reloading a planned model skips graph optimization.

The first load of ``(artifact digest, plan)`` runs onnxruntime's optimizer and saves the result via
``SessionOptions.optimized_model_filepath`` to ``<root>/<digest>-<plan hash>.onnx``; later loads open
that file with optimization disabled. The plan hash covers the plan and the hardware fingerprint
(CPU, ISA flags, onnxruntime version), because an optimized graph may use machine-specific kernels.
Each file's sha256 is kept beside it (``.sha256``); a cached file that no longer matches (or has no
record) is thrown away and optimized again, never loaded.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

import onnxruntime as ort

from mcp2026ai.errors import InferenceFailedError, IntegrityError, NotFoundError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.registry.store import VerifiedFiles, sha256_of
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.onnx import session_options
from mcp2026ai.runtime.plan import DEFAULT_RUNTIME, Plan, Provider

log = logging.getLogger(__name__)

# TensorRT keeps its own engine cache; an ORT-optimized graph is not portable to it.
_UNCACHED_PROVIDERS = (Provider.TENSORRT,)


CACHE_FORMAT = 2
"""Bumped when what the cache keeps changes (2: copies checked to take the model's own inputs)."""


def plan_hash(plan: Plan, hardware_fingerprint: str) -> str:
    document = {
        "plan": plan.model_dump(mode="json"),
        "hardware": hardware_fingerprint,
        "ort": ort.__version__,
        "format": CACHE_FORMAT,
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16]


class OptimizedModelCache:
    """``root/<digest>-<plan hash>.onnx`` files written atomically, one per artifact, plan and machine."""

    def __init__(self, root: Path, hardware_fingerprint: str) -> None:
        self.root = root
        self.hardware_fingerprint = hardware_fingerprint
        self._verified = VerifiedFiles()

    def path_for(self, digest: str, plan: Plan) -> Path:
        return self.root / f"{digest}-{plan_hash(plan, self.hardware_fingerprint)}.onnx"

    def cacheable(self, plan: Plan) -> bool:
        return plan.provider not in _UNCACHED_PROVIDERS and plan.graph_optimization != "disable"

    def ensure(self, source: Path, digest: str, plan: Plan) -> Path | None:
        """The cached optimized model for ``plan``, writing it first if absent; None if not cacheable."""
        if not self.cacheable(plan):
            return None
        target = self.path_for(digest, plan)
        if target.exists() and self._intact(target):
            return target
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=self.root, prefix=".optimizing-", suffix=".onnx")
        os.close(fd)
        try:
            options = session_options(plan, Path(tmp_name))
            available = set(ort.get_available_providers())
            providers = [name for name in plan.ort_providers() if name in available]
            original = ort.InferenceSession(str(source), options, providers=providers)
            if not _same_inputs(original, Path(tmp_name), providers):
                log.warning(
                    "%s: onnxruntime's optimized copy takes other inputs; loading the model itself", source.name
                )
                return None
            _digest_file(target).write_text(sha256_of(Path(tmp_name)))
            os.replace(tmp_name, target)
        except Exception as exc:  # onnxruntime raises its own exception types  # noqa: BLE001
            raise InferenceFailedError(f"{source.name}: cannot write optimized model ({str(exc)[:300]})") from None
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
        return target

    def _intact(self, target: Path) -> bool:
        """Whether a cached file still matches the digest recorded when it was written; if not, drop it."""
        recorded = _digest_file(target)
        try:
            self._verified.check(target, recorded.read_text().strip())
            return True
        except (FileNotFoundError, NotFoundError, IntegrityError):
            log.warning("optimized model %s does not match its recorded sha256: optimizing again", target.name)
            target.unlink(missing_ok=True)
            recorded.unlink(missing_ok=True)
            return False

    def backend(self, source: Path, digest: str, plan: Plan, signature: Signature) -> Backend:
        """A backend for ``plan`` that loads the cached optimized model (creating it on first use).

        The cache holds onnxruntime's optimized graphs; another runtime loads the source itself.
        """
        cached = self.ensure(source, digest, plan) if plan.runtime == DEFAULT_RUNTIME else None
        if cached is None:
            return create_backend(source, signature, plan)
        return create_backend(cached, signature, plan.model_copy(update={"graph_optimization": "disable"}))


def _digest_file(cached: Path) -> Path:
    return cached.with_name(cached.name + ".sha256")


def _same_inputs(original: ort.InferenceSession, optimized: Path, providers: list[str]) -> bool:
    """Whether the optimized copy takes exactly the inputs the model does. An ONNX model of IR < 4
    lists its weights as graph inputs too; onnxruntime treats them as overridable, and its saved copy
    can keep them as inputs without their values, so that every request would lack them."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    copy = ort.InferenceSession(str(optimized), options, providers=providers)
    return {i.name for i in copy.get_inputs()} == {i.name for i in original.get_inputs()}

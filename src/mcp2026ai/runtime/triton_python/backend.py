"""A Triton Python model (``TritonPythonModel`` in ``1/model.py``) behind the Backend protocol.

Loaded only from the bytes the caller read and verified out of the artifact store, through
:func:`~mcp2026ai.runtime.python_code.load_class` with the shim as ``triton_python_backend_utils``.
The executors hand it requests as Triton does: :meth:`PythonModelBackend.infer_requests` passes a
dynamic batch to one ``execute`` call as a list (each request keeps its own tensors) and answers each
request on its own (a response's ``error`` fails that request only). ``execute`` runs on the
executor's worker thread, one call at a time per instance (``instance_group`` count instances), as in
Triton; an ``async def execute``
runs on an event loop of that thread. Decoupled models answer through
:meth:`PythonModelBackend.run_decoupled`, any number of responses per request.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.errors import (
    DeadlineExceededError,
    InferenceFailedError,
    InvalidInputError,
    MCPError,
    ModelImportError,
    NotFoundError,
    UnavailableError,
    UnsupportedError,
)
from mcp2026ai.ir.signature import Signature
from mcp2026ai.runtime.base import QueuedRequest, RequestDetails, Tensors
from mcp2026ai.runtime.plan import DEFAULT_PLAN, Plan
from mcp2026ai.runtime.python_code import load_class
from mcp2026ai.runtime.triton_python import pb_utils
from mcp2026ai.runtime.triton_python.bls import CURRENT, BlsGateway, ExecuteContext
from mcp2026ai.runtime.triton_python.model_config import initialize_args, instance_count, is_decoupled
from mcp2026ai.runtime.triton_python.support import MODULE_NAME, check_model_source, shim_module

log = logging.getLogger(__name__)
PYTHON_FORMAT = "triton_python"
"""The registry format of a Triton Python model version (its artifact: the ``model.py`` bytes)."""
CLASS_NAME = "TritonPythonModel"
Emit = Callable[[dict[str, np.ndarray] | MCPError | None], None]
"""A decoupled request's outlet: outputs, an error, or None once the model sent its final flag."""


@dataclass(frozen=True)
class PythonModelSource:
    """What a Python model version is made of: its verified source and its config."""

    source: bytes
    label: str
    """Names the file in messages (``<repository>/<model>/1/model.py`` or the registry ref)."""
    config: mc.ModelConfig
    version: int
    repository: str = ""


class PythonModelBackend:
    """Backend running a ``TritonPythonModel``; see the module docstring."""

    platform = "python"

    def __init__(self, model: PythonModelSource, signature: Signature, gateway: BlsGateway, plan: Plan = DEFAULT_PLAN):
        self._source = model
        self._signature = signature
        self._gateway = gateway
        self._plan = plan
        self._instances: list[Any] = []
        self._free: queue.Queue[Any] = queue.Queue()
        """Instances not running ``execute`` now: each runs one call at a time, as in Triton."""
        self.decoupled = is_decoupled(model.config)
        self.name = model.config.name

    @property
    def signature(self) -> Signature:
        return self._signature

    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def loaded(self) -> bool:
        return bool(self._instances)

    def load(self) -> None:
        """Check, run the module, build the class and call ``initialize(args)``: a failure names the file."""
        label = self._source.label
        check_model_source(self._source.source, label=label)
        cls = load_class(
            self._source.source,
            label=label,
            class_name=CLASS_NAME,
            module_name=f"triton_python_model_{self.name}",
            provided={MODULE_NAME: shim_module()},
        )
        if not callable(getattr(cls, "execute", None)):
            raise ModelImportError(f"{label}: class {CLASS_NAME} has no execute(requests) method")
        instances = [self._instance_of(cls, index) for index in range(instance_count(self._source.config))]
        for instance in instances:
            self._free.put(instance)
        self._instances = instances

    def _instance_of(self, cls: type, index: int) -> Any:
        """One initialized instance (Triton's instance ``<name>_0_<index>`` of the instance group)."""
        instance = cls()
        initialize = getattr(instance, "initialize", None)
        if initialize is not None:
            source = self._source
            args = initialize_args(source.config, version=source.version, repository=source.repository, instance=index)
            try:
                initialize(args)
            except Exception as exc:  # noqa: BLE001 - the model's own failure, reported as its load failure
                raise ModelImportError(f"{source.label}: initialize() failed: {_describe(exc)}") from None
        return instance

    def unload(self) -> None:
        instances, self._instances, self._free = self._instances, [], queue.Queue()
        for instance in instances:
            finalize = getattr(instance, "finalize", None)
            if finalize is None:
                continue
            try:
                finalize()
            except Exception:  # a failing finalize must not stop the others from unloading
                log.exception("%s: finalize() failed", self._source.label)

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """One request alone (the direct executor's way)."""
        (result,) = self.infer_requests([QueuedRequest(inputs, outputs, None)])
        if isinstance(result, MCPError):
            raise result
        return result

    def infer_requests(self, requests: Sequence[QueuedRequest]) -> list[dict[str, np.ndarray] | MCPError]:
        """One ``execute`` call for the batch; each request's outputs, or its own error."""
        if self.decoupled:
            error = UnsupportedError(
                f"model {self.name!r}: this end point doesn't support models with decoupled transaction policy "
                "(use gRPC ModelStreamInfer)"
            )
            return [error for _ in requests]
        built = [_request(self.name, item) for item in requests]
        try:
            responses = self._execute(built, _earliest(requests))
        except MCPError as exc:
            return [exc for _ in requests]
        if not isinstance(responses, list | tuple) or len(responses) != len(requests):
            count = len(responses) if isinstance(responses, list | tuple) else type(responses).__name__
            failed = InferenceFailedError(
                f"model {self.name!r}: execute() must return one InferenceResponse per request "
                f"({len(requests)}), it returned {count}"
            )
            return [failed for _ in requests]
        return [_outputs(self.name, response, item.outputs) for response, item in zip(responses, requests, strict=True)]

    def run_decoupled(self, item: QueuedRequest, emit: Emit) -> None:
        """Run ``execute`` for one request of a decoupled model; its responses go to ``emit`` as they are
        sent (possibly after ``execute`` returned, from the model's own threads), then None."""
        names = list(item.outputs) if item.outputs else None
        request = _request(self.name, item)

        def send(response: pb_utils.InferenceResponse | None, final: bool) -> None:
            if response is not None:
                emit(_outputs(self.name, response, names))
            if final:
                emit(None)

        sender = pb_utils.InferenceResponseSender(send)
        request._sender = sender
        try:
            self._execute([request], item.deadline)
        except MCPError as exc:
            emit(exc)
            emit(None)

    def _execute(self, requests: list[pb_utils.InferenceRequest], deadline: float | None) -> Any:
        """``execute`` on a free instance (waiting for one no longer than the deadline)."""
        if not self._instances:
            raise UnavailableError(f"model {self.name!r} is not loaded")
        free = self._free
        try:
            instance = free.get(timeout=None if deadline is None else max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise DeadlineExceededError(f"model {self.name!r}: no instance free before the deadline") from None
        token = CURRENT.set(ExecuteContext(self._gateway, deadline))
        try:
            result = instance.execute(requests)
            if inspect.iscoroutine(result):
                result = asyncio.run(result)
            return result
        except MCPError:
            raise
        except Exception as exc:  # noqa: BLE001 - the model's failure fails its requests, never the server
            raise InferenceFailedError(f"model {self.name!r}: execute() failed: {_describe(exc)}") from None
        finally:
            CURRENT.reset(token)
            free.put(instance)


def _request(model: str, item: QueuedRequest) -> pb_utils.InferenceRequest:
    tensors = [pb_utils.Tensor(name, array) for name, array in item.inputs.items()]
    outputs = list(item.outputs or [])
    details = item.details or RequestDetails()
    return pb_utils.InferenceRequest(
        request_id=details.request_id,
        inputs=tensors,
        requested_output_names=outputs,
        model_name=model,
        parameters=_json_parameters(details.parameters),
    )


def _json_parameters(parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request's parameters as Triton's ``request.parameters()`` JSON holds them (JSON values only)."""
    return {key: value for key, value in (parameters or {}).items() if isinstance(value, str | int | float | bool)}


def _earliest(requests: Sequence[QueuedRequest]) -> float | None:
    deadlines = [item.deadline for item in requests if item.deadline is not None]
    return min(deadlines) if deadlines else None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, pb_utils.TritonModelException):
        return exc.message()
    return f"{type(exc).__name__}: {exc}"


_ERRORS: dict[int, type[MCPError]] = {
    pb_utils.TritonError.INVALID_ARG: InvalidInputError,
    pb_utils.TritonError.NOT_FOUND: NotFoundError,
    pb_utils.TritonError.UNAVAILABLE: UnavailableError,
    pb_utils.TritonError.UNSUPPORTED: UnsupportedError,
}


def _outputs(model: str, response: Any, wanted: Sequence[str] | None) -> dict[str, np.ndarray] | MCPError:
    """A response's tensors (the requested ones), or its error as the domain error its code means."""
    if not isinstance(response, pb_utils.InferenceResponse):
        kind = type(response).__name__
        return InferenceFailedError(f"model {model!r}: execute() returned {kind}, not an InferenceResponse")
    error = response.error()
    if error is not None:
        return _ERRORS.get(error.code(), InferenceFailedError)(error.message())
    tensors = {tensor.name(): tensor.as_numpy() for tensor in response.output_tensors()}
    if not wanted:
        return tensors
    missing = [name for name in wanted if name not in tensors]
    if missing:
        return InferenceFailedError(f"model {model!r}: its response has no output {missing[0]!r}")
    return {name: tensors[name] for name in wanted}

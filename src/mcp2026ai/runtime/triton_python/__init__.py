"""Triton's Python backend as it stands: ``1/model.py`` with a ``TritonPythonModel`` class that uses
``triton_python_backend_utils`` (:mod:`.pb_utils`), served like any model (docs/triton-repositories.md).

- :mod:`.pb_utils`: the part of ``triton_python_backend_utils`` real models use, injected at load
  (its tensors, errors, type names and logger in :mod:`.pb_tensors`);
- :mod:`.support`: what the shim implements, and the load-time check of the names a model uses;
- :mod:`.bls`: the gateway a BLS ``InferenceRequest.exec()`` calls back into the data plane through;
- :mod:`.model_config`: the ``args`` Triton hands ``initialize`` (its config as JSON, ...);
- :mod:`.backend`: :class:`PythonModelBackend`, the Backend the executors run.
"""

from mcp2026ai.runtime.triton_python.backend import PYTHON_FORMAT, PythonModelBackend, PythonModelSource
from mcp2026ai.runtime.triton_python.bls import BlsCall, BlsGateway
from mcp2026ai.runtime.triton_python.support import check_model_source

__all__ = [
    "PYTHON_FORMAT",
    "BlsCall",
    "BlsGateway",
    "PythonModelBackend",
    "PythonModelSource",
    "check_model_source",
]

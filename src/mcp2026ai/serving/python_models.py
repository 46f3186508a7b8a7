"""Building the backend of a Triton Python model version (format ``triton_python``).

Its source is the version's verified artifact bytes (read by the backend factory, never re-read from
the repository), its config the one stored with the version at import. The BLS gateway is the
factory's: the data plane binds it to its inference entry point (dataplane/bls.py).
"""

from __future__ import annotations

from mcp2026ai.errors import ModelImportError
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.triton_import import stored_config
from mcp2026ai.registry.triton_python import PYTHON_FORMAT
from mcp2026ai.runtime.triton_python import PYTHON_FORMAT as RUNTIME_PYTHON_FORMAT
from mcp2026ai.runtime.triton_python import BlsGateway, PythonModelBackend, PythonModelSource

assert PYTHON_FORMAT == RUNTIME_PYTHON_FORMAT  # one name on both sides of the floor


def is_python_model(record: ModelVersion) -> bool:
    return record.format == PYTHON_FORMAT


def python_model_backend(
    registry: ModelRegistry, record: ModelVersion, source: bytes, gateway: BlsGateway
) -> PythonModelBackend:
    """An unloaded backend of the version: its verified ``source`` and its stored config."""
    config = stored_config(registry, record)
    if config is None:
        raise ModelImportError(f"{record.ref}: a python model needs the config.pbtxt it was imported with")
    label = f"{record.name}/{record.number}/{config.default_model_filename or 'model.py'}"
    model = PythonModelSource(source=source, label=label, config=config, version=record.number)
    return PythonModelBackend(model, record.signature, gateway)

"""A Triton Python backend model (``backend: "python"``, ``<N>/model.py``) as the registry keeps it.

Its artifact is the ``model.py`` bytes, stored as they are (format :data:`PYTHON_FORMAT`): it is not
imported, so its signature is its config's inputs and outputs (a leading ``-1`` when the config batches:
``max_batch_size > 0``), and it may declare only what a config can (``auto_complete_config`` is not
run: the config must name every tensor, as under Triton's ``--strict-model-config``). The source is
checked before anything is stored by the check the caller passes (the runtime's, which the registry
may not import: syntax, imports, the ``triton_python_backend_utils`` names it uses).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.registry.triton_config import v2_datatype
from mcp2026ai.registry.triton_repository import TritonConfigError

PYTHON_FORMAT = "triton_python"
"""The registry format of a Triton Python model version (the runtime's ``PYTHON_FORMAT``)."""
SourceCheck = Callable[[bytes, str], object]
"""Checks a model.py (its bytes, a label naming the file); raises ModelImportError naming the problem."""
_NO_BATCH_FIELDS = ("sequence_batching", "ensemble_scheduling")


def python_signature(config: mc.ModelConfig, source: Path) -> Signature:
    """The model's tensors as its config declares them."""
    if not config.input or not config.output:
        raise TritonConfigError(
            f"{source}: a python model's config must declare its input and output tensors "
            "(auto_complete_config is not run here)"
        )
    batched = config.max_batch_size > 0

    def spec(tensor: mc.ModelInput | mc.ModelOutput) -> TensorSpec:
        dims = list(tensor.reshape.shape) if tensor.HasField("reshape") else list(tensor.dims)
        shape = [-1, *dims] if batched else dims
        return TensorSpec(name=tensor.name, datatype=v2_datatype(tensor.data_type), shape=shape)

    return Signature(inputs=[spec(t) for t in config.input], outputs=[spec(t) for t in config.output])


def check_python_config(config: mc.ModelConfig, source: Path) -> None:
    """What a python model's config may not ask for here."""
    for field in _NO_BATCH_FIELDS:
        if config.HasField(field):
            raise TritonConfigError(f'{source}: {field}: not supported for backend "python" models here')
    if config.model_transaction_policy.decoupled and config.max_batch_size > 0 and config.HasField("dynamic_batching"):
        raise TritonConfigError(
            f"{source}: dynamic_batching: a decoupled python model is run one request at a time here"
        )


def check_python_version(path: Path, check: SourceCheck | None) -> None:
    """Read a version's model.py and run ``check`` on it (None: registered unchecked, checked at load)."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise TritonConfigError(f"{path}: cannot read ({exc.__class__.__name__})") from None
    if check is not None:
        check(source, str(path))

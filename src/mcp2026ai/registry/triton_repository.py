"""Triton model repositories on disk: ``<name>/config.pbtxt`` beside numeric version directories
(``<name>/1/model.onnx``), read and written with protobuf's text format and Triton's own
``model_config.proto`` message (``tritonclient.grpc.model_config_pb2``).

Reading is strict: an unknown field, a bad enum value or a malformed number is refused with the
file, line and field; the version directories served are the ones ``version_policy`` selects
(Triton's default: the latest one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.security.paths import confined_path

CONFIG_FILE = "config.pbtxt"
DEFAULT_MODEL_FILE = "model.onnx"
ONNX_PLATFORMS = {"", "onnxruntime_onnx"}
ONNX_BACKENDS = {"", "onnxruntime"}
ENSEMBLE_PLATFORM = "ensemble"
"""Served as a pipeline (registry/triton_ensemble.py): its steps name the repository's other models."""
PYTHON_BACKEND = "python"
PYTHON_MODEL_FILE = "model.py"


class TritonConfigError(InvalidArgumentError):
    """A model of a Triton repository that cannot be served: its message names the file and field."""


@dataclass(frozen=True)
class RepositoryModel:
    """One model of a repository: its configuration and the version files its policy selects."""

    name: str
    directory: Path
    config: mc.ModelConfig
    versions: dict[int, Path]
    """Triton version number -> model file, ascending."""

    @property
    def config_path(self) -> Path:
        return self.directory / CONFIG_FILE


@dataclass(frozen=True)
class RepositoryFailure:
    """A model directory that cannot be served, and why (one line)."""

    name: str
    reason: str


def read_config(path: Path) -> mc.ModelConfig:
    """Parse a ``config.pbtxt``; one line naming the file, line and column otherwise."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TritonConfigError(f"{path}: cannot read ({exc})") from None
    try:
        return text_format.Parse(text, mc.ModelConfig())
    except text_format.ParseError as exc:
        raise TritonConfigError(f"{path}:{str(exc).splitlines()[0]}") from None


def write_config(path: Path, config: mc.ModelConfig) -> Path:
    path.write_text(text_format.MessageToString(config))
    return path


def scan_repository(root: Path) -> tuple[list[RepositoryModel], list[RepositoryFailure]]:
    """Every model directory under ``root`` (hidden ones skipped), read or refused one by one."""
    if not root.is_dir():
        raise InvalidArgumentError(f"{root}: not a directory (expected a Triton model repository)")
    models: list[RepositoryModel] = []
    failures: list[RepositoryFailure] = []
    for directory in sorted(path for path in root.iterdir() if path.is_dir() and not path.name.startswith(".")):
        try:
            models.append(read_model(directory))
        except InvalidArgumentError as exc:
            failures.append(RepositoryFailure(directory.name, str(exc)))
    return models, failures


def read_model(directory: Path) -> RepositoryModel:
    """A model directory: its config (checked to name it and an ONNX runtime) and selected versions."""
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise TritonConfigError(f"{path}: missing (every model needs its config.pbtxt here)")
    config = read_config(path)
    if config.name and config.name != directory.name:
        raise TritonConfigError(f"{path}: name: {config.name!r} differs from the directory name {directory.name!r}")
    config.name = directory.name
    if config.platform == ENSEMBLE_PLATFORM:
        return RepositoryModel(directory.name, directory, config, ensemble_versions(directory))
    python = is_python_model(config)
    for field, value, served in (
        ("platform", config.platform, ONNX_PLATFORMS),
        ("backend", config.backend, ONNX_BACKENDS | {PYTHON_BACKEND}),
    ):
        if value not in served:
            raise TritonConfigError(
                f'{path}: {field}: {value!r} is not served here (ONNX models: onnxruntime; backend: "python")'
            )
    if python and config.platform:
        raise TritonConfigError(f'{path}: platform: {config.platform!r} with backend "python" (leave platform out)')
    filename = model_filename(config, path)
    field = f"{path}: default_model_filename"
    available = {
        int(p.name): confined_path(p, filename, field) for p in directory.iterdir() if p.is_dir() and p.name.isdigit()
    }
    selected = selected_versions(config, sorted(available), path)
    missing = [number for number in selected if not available[number].is_file()]
    if missing:
        raise TritonConfigError(f"{directory / str(missing[0]) / filename}: missing (version {missing[0]})")
    return RepositoryModel(directory.name, directory, config, {number: available[number] for number in selected})


def ensemble_versions(directory: Path) -> dict[int, Path]:
    """An ensemble's version directories (Triton wants one, empty); version 1 when there is none."""
    numbers = sorted(int(path.name) for path in directory.iterdir() if path.is_dir() and path.name.isdigit())
    return {number: directory / str(number) for number in numbers[-1:] or [1]}


def model_filename(config: mc.ModelConfig, path: Path) -> str:
    """The version file's name: ``model.onnx`` (``model.py`` for backend python) unless
    ``default_model_filename`` says otherwise, which must then be an ``.onnx`` (``.py``) file (the suffix
    picks the importer)."""
    if is_python_model(config):
        filename = config.default_model_filename or PYTHON_MODEL_FILE
        if not filename.endswith(".py"):
            raise TritonConfigError(f"{path}: default_model_filename: {filename!r} is not a .py file (backend python)")
        return filename
    filename = config.default_model_filename or DEFAULT_MODEL_FILE
    if not filename.endswith(".onnx"):
        raise TritonConfigError(f"{path}: default_model_filename: {filename!r} is not an .onnx file (ONNX models only)")
    return filename


def is_python_model(config: mc.ModelConfig) -> bool:
    """A Triton Python backend model (``backend: "python"``, ``<N>/model.py``)."""
    return bool(config.backend == PYTHON_BACKEND)


def selected_versions(config: mc.ModelConfig, available: list[int], source: Path) -> list[int]:
    """The versions ``version_policy`` serves among ``available`` (ascending)."""
    if not available:
        raise TritonConfigError(f"{source.parent}: no numeric version directories (e.g. 1/{DEFAULT_MODEL_FILE})")
    policy = config.version_policy
    kind = policy.WhichOneof("policy_choice") or "latest"
    if kind == "all":
        return available
    if kind == "specific":
        wanted = sorted(set(policy.specific.versions))
        absent = [number for number in wanted if number not in available]
        if absent or not wanted:
            shown = absent[0] if absent else "none"
            raise TritonConfigError(f"{source}: version_policy.specific.versions: {shown} has no version directory")
        return wanted
    count = policy.latest.num_versions if policy.HasField("latest") else 1
    if count < 1:
        raise TritonConfigError(f"{source}: version_policy.latest.num_versions: {count} must be at least 1")
    return available[-count:]

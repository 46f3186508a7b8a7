"""A pipeline's spec: steps (registered models or Python steps) wired by tensor names, one contract.

The YAML document (``kind: pipeline``; paths relative to its folder) is parsed into
:class:`PipelineSpec`; :func:`step_order` checks its graph (a tensor produced twice, read but never
produced, a cycle, an output nobody produces) and returns the steps in an order that runs each
after its producers. What the registry stores is the same spec with every file replaced by what
it became there (:class:`StoredPipeline`): a Python step's source by its sha256 digest, a model
file by the registered model ``<pipeline>.<step>`` and version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.dtypes import V2_TO_NUMPY
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.messages import describe_validation_error, read_yaml_file

PIPELINE_KIND = "pipeline"
PIPELINE_FORMAT = "pipeline"
"""A pipeline version's ``format`` in the catalog; its digest is its stored spec's."""
PIPELINE_SPEC_SUFFIX = ".pipeline.json"
EXAMPLE_SUFFIX = ".example"
"""The stored spec's suffix in the artifact store."""
STEP_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
MAX_STEPS = 64


class PipelineSpecError(InvalidArgumentError):
    """A pipeline spec that cannot be registered: the message names the file, step, tensor and values."""


class ModelRef(BaseModel):
    """An already registered model a step runs (``version`` None: the model's default when served)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=128)
    version: str | None = None


class _Tensor(TensorSpec):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="after")
    def _known_datatype(self) -> _Tensor:
        if self.datatype not in V2_TO_NUMPY:
            raise ValueError(f"datatype {self.datatype!r} is not a KServe v2 datatype ({sorted(V2_TO_NUMPY)})")
        return self


class PipelineStep(BaseModel):
    """One step: a model (a file beside the spec, or a registered one) or a Python class."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=STEP_NAME)
    model: str | ModelRef | None = Field(None, description="A model file beside the spec, or a registered model.")
    python: str | None = Field(None, description="A Python file beside the spec (as written), or its sha256 digest.")
    class_name: str | None = Field(None, alias="class", description="The Python step's class.")
    requires: list[str] = Field(default_factory=list, description="Modules the Python step imports.")
    config: dict[str, Any] = Field(default_factory=dict, description="Passed to the Python step's initialize().")
    inputs: dict[str, str] = Field(description="The step's tensor name -> the pipeline's tensor name.")
    outputs: dict[str, str] = Field(min_length=1, description="The step's tensor name -> the pipeline's tensor name.")

    @model_validator(mode="after")
    def _one_kind(self) -> PipelineStep:
        if (self.model is None) == (self.python is None):
            raise ValueError("give exactly one of `model` and `python`")
        if self.python is not None and not self.class_name:
            raise ValueError("a Python step needs `class`")
        if self.model is not None and (self.class_name or self.requires or self.config):
            raise ValueError("`class`, `requires` and `config` apply to Python steps only")
        return self

    @property
    def is_python(self) -> bool:
        return self.python is not None


class PipelineSpec(BaseModel):
    """The whole pipeline as written (or translated from a Triton ensemble)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["pipeline"] = "pipeline"
    name: str | None = Field(None, description="The default name to register it under.")
    inputs: list[_Tensor] = Field(min_length=1)
    outputs: list[_Tensor] = Field(min_length=1)
    contract: dict[str, Any] | None = Field(
        None, description="The pipeline's inference contract (checked as a contract when registered)."
    )
    steps: list[PipelineStep] = Field(min_length=1, max_length=MAX_STEPS)
    examples: dict[str, str] | None = Field(
        None,
        description="Input name -> an example file beside the spec (a BYTES input: its bytes; else a .npy), "
        "stored with the pipeline: what `mcp policy plan` measures the steps on when given no --input.",
    )

    @property
    def signature(self) -> Signature:
        return Signature(inputs=list(self.inputs), outputs=list(self.outputs))

    def step(self, name: str) -> PipelineStep:
        return next(step for step in self.steps if step.name == name)


class StoredPipeline(PipelineSpec):
    """The spec as the registry keeps it: ``python`` and each of ``examples`` is a digest, ``model`` a
    :class:`ModelRef`."""

    spec_source: str | None = Field(None, description="Where it was registered from (a path, or a Triton config).")


def parse_spec(document: Any, source: str) -> PipelineSpec:
    if not isinstance(document, dict):
        raise PipelineSpecError(f"{source}: expected a mapping at the top level")
    try:
        spec = PipelineSpec.model_validate(document)
    except ValidationError as exc:
        raise PipelineSpecError(describe_validation_error(exc, source)) from None
    step_order(spec, source)
    return spec


def load_spec(path: Path) -> PipelineSpec:
    """Read and check a spec file (graph included); PipelineSpecError names the file and what is wrong."""
    return parse_spec(read_yaml_file(path, "pipeline spec"), str(path))


def is_pipeline_spec(path: Path) -> bool:
    """A YAML file whose top level says ``kind: pipeline``."""
    if path.suffix.lower() not in {".yaml", ".yml"} or not path.is_file():
        return False
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        return False
    return any(line.strip() in {"kind: pipeline", 'kind: "pipeline"', "kind: 'pipeline'"} for line in head.splitlines())


def producers(spec: PipelineSpec, source: str) -> dict[str, str]:
    """Pipeline tensor -> the step producing it (``""``: a pipeline input); a tensor produced twice refused."""
    produced: dict[str, str] = {tensor.name: "" for tensor in spec.inputs}
    if len(produced) != len(spec.inputs):
        raise PipelineSpecError(f"{source}: inputs: a tensor name is given twice")
    names: set[str] = set()
    for step in spec.steps:
        if step.name in names:
            raise PipelineSpecError(f"{source}: step {step.name!r}: another step has this name")
        names.add(step.name)
        for tensor in step.outputs.values():
            if tensor in produced:
                first = f"step {produced[tensor]!r}" if produced[tensor] else "the pipeline's inputs"
                raise PipelineSpecError(
                    f"{source}: step {step.name!r}: tensor {tensor!r} is produced twice (also by {first})"
                )
            produced[tensor] = step.name
    return produced


def step_order(spec: PipelineSpec, source: str) -> list[list[PipelineStep]]:
    """The steps in waves: each wave's steps read only tensors produced by earlier waves (so a wave's
    steps may run together). Refuses a tensor read but never produced, an output never produced, a cycle."""
    produced = producers(spec, source)
    for step in spec.steps:
        for own, tensor in step.inputs.items():
            if tensor not in produced:
                raise PipelineSpecError(
                    f"{source}: step {step.name!r}: input {own!r} reads tensor {tensor!r}, which no step produces "
                    f"and the pipeline's inputs do not name"
                )
    for output in spec.outputs:
        if output.name not in produced:
            raise PipelineSpecError(f"{source}: outputs: tensor {output.name!r} is produced by no step")
    ready = {tensor.name for tensor in spec.inputs}
    waiting = list(spec.steps)
    waves: list[list[PipelineStep]] = []
    while waiting:
        wave = [step for step in waiting if set(step.inputs.values()) <= ready]
        if not wave:
            names = ", ".join(repr(step.name) for step in waiting)
            raise PipelineSpecError(f"{source}: steps {names} form a cycle: each waits for another's output")
        waves.append(wave)
        ready |= {tensor for step in wave for tensor in step.outputs.values()}
        waiting = [step for step in waiting if step not in wave]
    return waves

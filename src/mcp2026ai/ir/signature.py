"""Model signatures: named, typed, shaped inputs and outputs (-1 marks a dynamic dimension)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TensorSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    datatype: str = Field(description="KServe v2 datatype name, e.g. FP32.")
    shape: list[int] = Field(description="Dimensions; -1 is dynamic.")

    @property
    def batch_dynamic(self) -> bool:
        """Whether the leading dimension can carry a batch of any size."""
        return bool(self.shape) and self.shape[0] == -1

    def accepts_shape(self, shape: tuple[int, ...]) -> bool:
        if len(shape) != len(self.shape):
            return False
        return all(want in (-1, got) for want, got in zip(self.shape, shape, strict=True))


class Signature(BaseModel):
    model_config = ConfigDict(frozen=True)

    inputs: list[TensorSpec]
    outputs: list[TensorSpec]

    def input(self, name: str) -> TensorSpec | None:
        return next((spec for spec in self.inputs if spec.name == name), None)

    def output(self, name: str) -> TensorSpec | None:
        return next((spec for spec in self.outputs if spec.name == name), None)

    @property
    def batchable(self) -> bool:
        """True when every input and output has a dynamic leading (batch) dimension."""
        return all(spec.batch_dynamic for spec in [*self.inputs, *self.outputs])

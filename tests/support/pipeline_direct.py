"""A pipeline spec run directly: Python steps loaded with load_class, ONNX sessions called in a plain loop.

The test oracle's runner for the bundled pipelines (its answer is compared with the library the
pipeline mirrors), and the "ONNX sessions called directly in a Python loop" baseline of the
pipeline-overhead benchmark. It has none of the server's parts: no queue, batching, deadline or
registry, one request at a time, steps in the spec's order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnxruntime as ort
import yaml

from mcp2026ai.runtime.python_code import load_class

Tensors = dict[str, np.ndarray]


class Step(Protocol):
    name: str
    inputs: Mapping[str, str]  # step tensor -> pipeline tensor
    outputs: Mapping[str, str]

    def run(self, tensors: Tensors) -> Tensors: ...


@dataclass
class PythonStep:
    name: str
    inputs: Mapping[str, str]
    outputs: Mapping[str, str]
    instance: Any

    def run(self, tensors: Tensors) -> Tensors:
        return dict(self.instance.execute(tensors))


@dataclass
class ModelStep:
    name: str
    inputs: Mapping[str, str]
    outputs: Mapping[str, str]
    session: ort.InferenceSession

    def run(self, tensors: Tensors) -> Tensors:
        names = list(self.outputs)
        return dict(zip(names, self.session.run(names, tensors), strict=True))


@dataclass
class DirectPipeline:
    """The steps of one spec, ready to run; ``timings`` holds each step's seconds for the last request."""

    name: str
    steps: list[Step]
    output_names: list[str]
    timings: dict[str, float] = field(default_factory=dict)

    def __call__(self, inputs: Tensors) -> Tensors:
        tensors = dict(inputs)
        for step in self.steps:
            started = time.perf_counter()
            produced = step.run({own: tensors[wired] for own, wired in step.inputs.items()})
            self.timings[step.name] = time.perf_counter() - started
            for own, value in produced.items():
                if own in step.outputs:
                    value.flags.writeable = False  # steps share tensors: none may change what it reads
                    tensors[step.outputs[own]] = value
        return {name: tensors[name] for name in self.output_names}

    def close(self) -> None:
        for step in self.steps:
            if isinstance(step, PythonStep):
                step.instance.finalize()


def load_pipeline(spec_path: Path, *, intra_op_threads: int = 0) -> DirectPipeline:
    """Parse ``spec_path`` (paths in it are relative to its folder) and load every step."""
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    folder = spec_path.parent
    steps: list[Step] = [_load_step(raw, folder, spec["name"], intra_op_threads) for raw in spec["steps"]]
    return DirectPipeline(spec["name"], steps, [output["name"] for output in spec["outputs"]])


def _load_step(raw: dict[str, Any], folder: Path, pipeline: str, intra_op_threads: int) -> Step:
    inputs, outputs = dict(raw["inputs"]), dict(raw["outputs"])
    if "model" in raw:
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        session = ort.InferenceSession(str(folder / raw["model"]), options, providers=["CPUExecutionProvider"])
        return ModelStep(raw["name"], inputs, outputs, session)
    source = (folder / raw["python"]).read_bytes()
    cls = load_class(source, label=raw["python"], class_name=raw["class"], module_name=f"{pipeline}.{raw['name']}")
    instance = cls()
    instance.initialize(dict(raw.get("config") or {}))
    return PythonStep(raw["name"], inputs, outputs, instance)


def image_request(image: bytes) -> Tensors:
    """The OCR pipeline's input: one encoded image as a BYTES [1] tensor."""
    tensor = np.empty(1, dtype=object)
    tensor[0] = image
    return {"image": tensor}

"""A minimal MLServer runtime that runs an ONNX model with onnxruntime (MLServer ships none).

Used by benchmarks/compare/run.py only, inside benchmarks/.venvs/mlserver (never the project venv).
``model-settings.json`` gives the model path as ``parameters.uri`` and the onnxruntime intra-op
thread count as ``parameters.extra.intra_op_threads``; adaptive batching is MLServer's own
(``max_batch_size`` / ``max_batch_time``). MLServer has no Triton ``/config`` endpoint, which
perf_analyzer reads once before it starts, so the runtime serves a Triton-style config as a
custom GET handler (not on the inference path).
"""

from __future__ import annotations

from typing import Any

import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.handlers import custom_handler
from mlserver.types import InferenceRequest, InferenceResponse

_TRITON_TYPES = {"tensor(float)": "TYPE_FP32", "tensor(int64)": "TYPE_INT64", "tensor(int32)": "TYPE_INT32"}


class OnnxRuntimeModel(MLModel):
    async def load(self) -> bool:
        parameters = self.settings.parameters
        extra = (parameters.extra if parameters else None) or {}
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(extra.get("intra_op_threads", 0))
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        uri = parameters.uri if parameters else None
        self._session = ort.InferenceSession(uri, options, providers=["CPUExecutionProvider"])
        self._outputs = [output.name for output in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {item.name: NumpyCodec.decode_input(item) for item in payload.inputs}
        results = self._session.run(self._outputs, feeds)
        outputs = [NumpyCodec.encode_output(name, array) for name, array in zip(self._outputs, results, strict=True)]
        for output in outputs:
            # perf_analyzer's client reads a present "parameters" object as binary-data metadata
            # and fails on MLServer's optional content-type hint, so send none.
            output.parameters = None
        return InferenceResponse(model_name=self.name, outputs=outputs)

    @custom_handler(rest_path="/v2/models/{model_name}/config", rest_method="GET")
    async def triton_config(self) -> dict[str, Any]:
        batched = self.settings.max_batch_size > 1

        def tensor(meta: Any) -> dict[str, Any]:
            dims = [d if isinstance(d, int) else -1 for d in meta.shape]
            return {"name": meta.name, "data_type": _TRITON_TYPES[meta.type], "dims": dims[1:] if batched else dims}

        return {
            "name": self.name,
            "platform": "onnxruntime_onnx",
            "max_batch_size": self.settings.max_batch_size if batched else 0,
            "input": [tensor(meta) for meta in self._session.get_inputs()],
            "output": [tensor(meta) for meta in self._session.get_outputs()],
        }

"""Serve one ONNX model with PyTriton (Triton server, dynamic batching on) via onnxruntime.

Used by benchmarks/compare/run.py only, inside benchmarks/.venvs/pytriton (never the project venv):

    python pytriton_server.py --model m.onnx --name mlp --http-port P --grpc-port G --metrics-port M

The bound Python function runs the whole batch Triton's dynamic batcher formed in one
onnxruntime call. Runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import logging

import numpy as np
import onnxruntime as ort
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

# perf_analyzer reads the statistics API before and after each run; PyTriton guards it with a token
# by default. Loopback only, so leave statistics open and keep the rest restricted.
_RESTRICTED = ["shared-memory", "model-repository", "trace", "logging"]
_DTYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--max-queue-delay-us", type=int, default=2000)
    parser.add_argument("--intra-op-threads", type=int, default=0)
    return parser.parse_args()


def _session(path: str, intra_op_threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _tensors(metas: list) -> list[Tensor]:
    return [Tensor(name=meta.name, dtype=_DTYPES[meta.type], shape=tuple(meta.shape[1:])) for meta in metas]


def main() -> None:
    args = _arguments()
    logging.basicConfig(level=logging.WARNING)
    session = _session(args.model, args.intra_op_threads)
    output_names = [meta.name for meta in session.get_outputs()]

    @batch
    def infer(**inputs: np.ndarray) -> dict[str, np.ndarray]:
        return dict(zip(output_names, session.run(output_names, inputs), strict=True))

    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=args.http_port,
        grpc_address="127.0.0.1",
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        log_verbose=0,
    )
    with Triton(config=config, security_config=TritonSecurityConfig(restricted_endpoints=_RESTRICTED)) as triton:
        triton.bind(
            model_name=args.name,
            infer_func=infer,
            inputs=_tensors(session.get_inputs()),
            outputs=_tensors(session.get_outputs()),
            config=ModelConfig(
                max_batch_size=args.max_batch_size,
                batcher=DynamicBatcher(max_queue_delay_microseconds=args.max_queue_delay_us),
            ),
            strict=False,
        )
        triton.serve()


if __name__ == "__main__":
    main()

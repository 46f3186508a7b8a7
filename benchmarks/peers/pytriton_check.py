"""Check that PyTriton can load and run a model with this interpreter (used by setup_peers.sh).

Binds an identity model, sends one request through Triton's HTTP endpoint and compares the answer.
The bound function runs in the bundled Triton Python backend stub, the process that fails at model
load when the venv's interpreter and the libpython the stub links are different builds. Exit 0 and
one line on success; exit 1 and the reason otherwise. Runs inside benchmarks/.venvs/pytriton only:

    python pytriton_check.py
"""

from __future__ import annotations

import logging
import socket
import sys

import numpy as np
from pytriton.client import ModelClient
from pytriton.decorators import batch
from pytriton.model_config import ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@batch
def _identity(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"y": x}


def main() -> int:
    logging.basicConfig(level=logging.ERROR)
    http = _free_port()
    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=http,
        grpc_address="127.0.0.1",
        grpc_port=_free_port(),
        metrics_port=_free_port(),
        log_verbose=0,
    )
    sent = np.arange(4, dtype=np.float32).reshape(1, 4)
    try:
        with Triton(config=config) as triton:
            triton.bind(
                model_name="check",
                infer_func=_identity,
                inputs=[Tensor(name="x", dtype=np.float32, shape=(4,))],
                outputs=[Tensor(name="y", dtype=np.float32, shape=(4,))],
                config=ModelConfig(max_batch_size=4),
                strict=False,
            )
            triton.run()
            with ModelClient(f"http://127.0.0.1:{http}", "check", init_timeout_s=60) as client:
                received = client.infer_batch(x=sent)["y"]
    except Exception as error:  # noqa: BLE001 - any failure means this interpreter cannot serve PyTriton
        print(f"pytriton check failed with Python {sys.version.split()[0]}: {error}", file=sys.stderr)
        return 1
    if not np.array_equal(received, sent):
        print(f"pytriton check: identity model answered {received.tolist()} for {sent.tolist()}", file=sys.stderr)
        return 1
    print(f"pytriton check: a model loaded and answered with Python {sys.version.split()[0]} ({sys.executable})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

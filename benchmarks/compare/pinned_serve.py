"""Serve one model over HTTP and gRPC with a given execution plan, not the policy's choice.

    python benchmarks/compare/pinned_serve.py --model resnet50.onnx --contract contract.yaml \
        --plan '{"runtime": "openvino", "intra_op_threads": 1, "performance_hint": "THROUGHPUT",
                 "streams": 2, "instances": 2}' --http-port 8000 --grpc-port 8001

For like-for-like A/B runs of a plan (the policy re-measures at each start and may flip between plans
within noise) and of two source trees (run it with another tree's src/ on PYTHONPATH): only the
registry, the serving layer's batching executor and the server are used, as ``mcp serve`` uses them.
Stops on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import tempfile
import threading
from pathlib import Path

from mcp2026ai.contract import load_contract
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import Plan
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.testing import BackgroundServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--name", default=None, help="Model name (default: the file's stem).")
    parser.add_argument("--contract", type=Path, default=None)
    parser.add_argument("--plan", required=True, help="The Plan as JSON (runtime/plan.py's fields).")
    parser.add_argument("--http-port", type=int, default=0)
    parser.add_argument("--grpc-port", type=int, default=0)
    args = parser.parse_args()
    plan = Plan.model_validate(json.loads(args.plan))
    name = args.name or args.model.stem
    registry = ModelRegistry(Path(tempfile.mkdtemp(prefix="pinned-home-")))
    contract = load_contract(args.contract) if args.contract else None
    registry.register(name, args.model, contract=contract)

    def backend(record: ModelVersion) -> Backend:
        return create_backend(registry.artifact_path(record), record.signature, plan)

    models = ServedModels(registry, backend_factory=backend)
    config = ServerConfig(http_port=args.http_port, grpc_port=args.grpc_port, drain_timeout_s=5)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with BackgroundServer(registry, [name], config, plane=DataPlane(models, default_models=[name])) as server:
        print(f"serving {name} with {plan.describe()} on http={server.http_url} grpc={server.grpc_url}", flush=True)
        stop.wait()


if __name__ == "__main__":
    main()

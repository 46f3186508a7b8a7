"""Send real requests to a running `mcp serve`: tritonclient over HTTP and gRPC, and /v1/infer."""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path

import httpx
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from mcp2026ai.imaging import decode_image, image_to_tensor
from mcp2026ai.registry import Preprocessing

OUTPUT = "save_infer_model/scale_0.tmp_1"
LABELS = ["0", "180"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--preprocessing", type=Path, required=True)
    parser.add_argument("--ocr", help="a served OCR pipeline: each image's lines, read end to end")
    parser.add_argument("images", type=Path, nargs="+")
    args = parser.parse_args()
    import yaml

    prep = Preprocessing.model_validate(yaml.safe_load(args.preprocessing.read_text()))
    batch = np.concatenate([image_to_tensor(decode_image(p.read_bytes()), prep) for p in args.images])

    http = httpclient.InferenceServerClient(f"127.0.0.1:{args.http_port}")
    print(f"server ready={http.is_server_ready()} metadata={http.get_server_metadata()['name']}")
    tensor = httpclient.InferInput("x", list(batch.shape), "FP32")
    tensor.set_data_from_numpy(batch)
    http_scores = http.infer("ocr-cls", [tensor]).as_numpy(OUTPUT)

    grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{args.grpc_port}")
    tensor = grpcclient.InferInput("x", list(batch.shape), "FP32")
    tensor.set_data_from_numpy(batch)
    grpc_scores = grpc.infer("ocr-cls", [tensor]).as_numpy(OUTPUT)

    for path, h, g in zip(args.images, http_scores, grpc_scores, strict=True):
        print(f"tritonclient  {path.name:12s} http -> {LABELS[int(h.argmax())]:>3}° ({h.max():.4f})   "
              f"grpc -> {LABELS[int(g.argmax())]:>3}° ({g.max():.4f})")
    if not np.array_equal(http_scores, grpc_scores):
        print("HTTP and gRPC answers differ", file=sys.stderr)
        return 1

    image = base64.b64encode(args.images[0].read_bytes()).decode()
    answer = httpx.post(f"http://127.0.0.1:{args.http_port}/v1/infer", json={"model": "ocr-cls", "image": image, "top_k": 2}).json()
    print(f"POST /v1/infer {args.images[0].name}: {answer['predictions']}")
    for path in args.images if args.ocr else []:
        tensor = httpclient.InferInput("image", [1], "BYTES")
        tensor.set_data_from_numpy(np.array([path.read_bytes()], dtype=np.object_))
        result = http.infer(args.ocr, [tensor])
        lines = [line.decode() for line in result.as_numpy("text")]
        print(f"OCR pipeline {path.name:12s} -> {lines} (scores {np.round(result.as_numpy('scores'), 3).tolist()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

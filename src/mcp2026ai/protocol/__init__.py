"""Wire formats of the KServe v2 / Open Inference Protocol, shared by the server, the client and the
benchmarks: tensors <-> numpy, the JSON (+ binary extension) codec, the gRPC codec, and the
Triton-shaped model metadata and configuration."""

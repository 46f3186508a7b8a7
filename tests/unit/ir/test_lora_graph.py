"""The LoRA rewrite of a decoder graph, on a tiny graph of one layer's projections (no model needed):
each row gets its own adapter's delta, a row without one the base output bit for bit, and the weights'
layout in the stacks is the one the graph reads (ir/lora_graph.py, runtime/lora_weights.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from mcp2026ai.ir.llm_info import LLMInfo, LLMPrecision
from mcp2026ai.ir.lora_adapter import AdapterConfig, AdapterWeights
from mcp2026ai.ir.lora_graph import LORA_SLOTS, NO_ADAPTER, LoraLayout, lora_model_bytes, lora_targets
from mcp2026ai.runtime.lora_weights import LoraStacks

HIDDEN, HEADS, KV_HEADS, HEAD = 8, 2, 1, 4  # q 8 outputs, k and v 4 each
RANK = 2
INFO = LLMInfo(
    architecture="llama",
    context_length=64,
    vocab_size=16,
    num_layers=1,
    num_attention_heads=HEADS,
    num_kv_heads=KV_HEADS,
    head_size=HEAD,
    hidden_size=HIDDEN,
    precision=LLMPrecision.FP32,
    source_format="gguf",
)


def tiny_decoder(path: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x -> qkv (packed) and o projections, as the builder names them."""
    qkv = rng.standard_normal((HIDDEN, 16)).astype(np.float32)
    o = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "qkv_w"], ["qkv"], name="/model/layers.0/attn/qkv_proj/MatMul"),
        helper.make_node("MatMul", ["x", "o_w"], ["o"], name="/model/layers.0/attn/o_proj/MatMul"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        [
            helper.make_tensor_value_info("qkv", TensorProto.FLOAT, ["batch", "seq", 16]),
            helper.make_tensor_value_info("o", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
        ],
        [numpy_helper.from_array(qkv, "qkv_w"), numpy_helper.from_array(o, "o_w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return {"qkv": qkv, "o": o}


def adapter(rng: np.random.Generator, modules: dict[str, int], alpha: float = 4.0) -> AdapterWeights:
    config = AdapterConfig(r=RANK, lora_alpha=alpha, target_modules=[name.split(".")[1] for name in modules])
    matrices = {
        (0, module): (
            rng.standard_normal((RANK, HIDDEN)).astype(np.float32),
            rng.standard_normal((out, RANK)).astype(np.float32),
        )
        for module, out in modules.items()
    }
    return AdapterWeights(config, matrices)


def expected(x: np.ndarray, weights: dict[str, np.ndarray], chosen: AdapterWeights | None) -> dict[str, np.ndarray]:
    """PEFT's forward: base + scale * x A^T B^T for each targeted module."""
    out = {name: x @ weight for name, weight in weights.items()}
    if chosen is None:
        return out
    scale = chosen.config.scaling
    parts = {"self_attn.q_proj": ("qkv", 0), "self_attn.k_proj": ("qkv", 8), "self_attn.v_proj": ("qkv", 12)}
    parts["self_attn.o_proj"] = ("o", 0)
    for module, (a, b) in chosen.matrices.items():
        name, offset = parts[module[1]]
        delta = (x @ a.T) @ b.T * scale
        out[name][..., offset : offset + b.shape[0]] += delta
    return out


def test_each_row_gets_its_own_adapter_and_a_row_without_one_the_base_output(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "model.onnx"
    weights = tiny_decoder(path, rng)
    targets = lora_targets(path, INFO)
    assert [(t.projection, [p.module for p in t.parts]) for t in targets] == [
        ("attn/qkv_proj", ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"]),
        ("attn/o_proj", ["self_attn.o_proj"]),
    ]
    layout = LoraLayout(slots=3, rank=4)  # adapters of rank 2 padded to 4
    stacks = LoraStacks(targets, layout)
    first = adapter(rng, {"self_attn.q_proj": 8, "self_attn.v_proj": 4, "self_attn.o_proj": 8})
    second = adapter(rng, {"self_attn.k_proj": 4})
    stacks.write(0, first)
    stacks.write(2, second)
    session = ort.InferenceSession(lora_model_bytes(path, targets, layout), providers=["CPUExecutionProvider"])
    base = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rows = np.array([0, NO_ADAPTER, 2, 0], dtype=np.int64)
    x = rng.standard_normal((4, 1, HIDDEN)).astype(np.float32)  # a decode run: several rows of one token
    qkv, o = session.run(["qkv", "o"], {"x": x, LORA_SLOTS: rows, **stacks.buffers})
    base_qkv, base_o = base.run(["qkv", "o"], {"x": x})
    for row, chosen in enumerate([first, None, second, first]):
        want = expected(x[row], weights, chosen)
        np.testing.assert_allclose(qkv[row], want["qkv"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(o[row], want["o"], rtol=1e-5, atol=1e-5)
    assert np.array_equal(qkv[1], base_qkv[1]) and np.array_equal(o[1], base_o[1])  # bit for bit
    prompt = rng.standard_normal((1, 5, HIDDEN)).astype(np.float32)  # a prompt: one row of several tokens
    qkv, o = session.run(["qkv", "o"], {"x": prompt, LORA_SLOTS: rows[2:3], **stacks.buffers})
    np.testing.assert_allclose(qkv[0], expected(prompt[0], weights, second)["qkv"], rtol=1e-5, atol=1e-5)
    stacks.clear(0)  # an unloaded slot: its rows get the base output again
    qkv, o = session.run(["qkv", "o"], {"x": x, LORA_SLOTS: rows, **stacks.buffers})
    assert np.array_equal(o[0], base_o[0]) and np.array_equal(qkv[3], base_qkv[3])


def test_a_row_gets_the_same_result_whatever_runs_beside_it(tmp_path: Path) -> None:
    """Alone (padded to two rows), beside 7 others, or its prompt in one chunk or two: the same bits."""
    rng = np.random.default_rng(1)
    path = tmp_path / "model.onnx"
    tiny_decoder(path, rng)
    targets = lora_targets(path, INFO)
    layout = LoraLayout(slots=2, rank=2)
    stacks = LoraStacks(targets, layout)
    stacks.write(0, adapter(rng, {"self_attn.q_proj": 8, "self_attn.o_proj": 8}))
    stacks.write(1, adapter(rng, {"self_attn.v_proj": 4}))
    session = ort.InferenceSession(lora_model_bytes(path, targets, layout), providers=["CPUExecutionProvider"])
    x = rng.standard_normal((8, 1, HIDDEN)).astype(np.float32)
    rows = np.array([0, 1, NO_ADAPTER] * 2 + [0, 1], dtype=np.int64)
    together = session.run(["qkv", "o"], {"x": x, LORA_SLOTS: rows, **stacks.buffers})
    for count in (2, 3, 5):
        fewer = session.run(["qkv", "o"], {"x": x[:count], LORA_SLOTS: rows[:count], **stacks.buffers})
        for output, full in zip(fewer, together, strict=True):
            assert np.array_equal(output, full[:count])
    prompt = rng.standard_normal((1, 40, HIDDEN)).astype(np.float32)
    whole = session.run(["o"], {"x": prompt, LORA_SLOTS: rows[:1], **stacks.buffers})[0]
    first = session.run(["o"], {"x": prompt[:, :16], LORA_SLOTS: rows[:1], **stacks.buffers})[0]
    rest = session.run(["o"], {"x": prompt[:, 16:], LORA_SLOTS: rows[:1], **stacks.buffers})[0]
    assert np.array_equal(whole, np.concatenate([first, rest], axis=1))

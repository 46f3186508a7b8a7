"""A decoder graph that applies LoRA adapters per row: the targeted projections get a low-rank delta.

For each projection the import's graph computes (``attn/qkv_proj``, ``attn/o_proj``,
``mlp/gate_proj``, ``mlp/up_proj``, ``mlp/down_proj`` of every layer; the builder packs q, k and v
into one MatMul) the rewrite adds, beside the base MatMul (fp32 ``MatMul`` or int4/int8
``MatMulNBits``, left as it is)::

    y = base(x) + ((x @ A) * mask[row]) @ B

``A`` and ``B`` are graph inputs holding every loaded adapter side by side (``slots x parts x rank``
columns of ``A``, the same rows of ``B``, its scale folded into ``B``); ``mask[row]`` keeps the
columns of the adapter slot the row uses (from the int64 input :data:`LORA_SLOTS`, one entry per
row, ``-1``: none). So rows with different adapters share one run (no per-adapter grouping, no
per-row copies of weights), and a row that uses no adapter adds an exact zero: its output is the
base graph's, bit for bit. A packed projection gives each part (q, k, v) its own rank columns, and
its ``B`` is zero outside that part's output columns.

Batch invariance: the products run one per token, batched (``A^T`` ``[columns, in]`` times each
token's ``x`` ``[in, 1]``, then ``B^T`` ``[out, columns]`` times that), so a token's result never
depends on how many rows run beside it nor on how its prompt was cut into chunks: every product has
the same shape. Flattened into one ``[tokens, in] x [in, columns]`` GEMM, onnxruntime's threaded
kernels partition the narrow ``columns`` side by the number of tokens, and a row got other sums in a
batch of 2 than in one of 8, a prompt other keys and values in one chunk than in two (measured on an
AVX2 host). The mask broadcasts ``[rows, columns, 1]`` over ``[tokens, columns, 1]``: a run has one
row of several tokens or several rows of one token (``runtime/onnx_decoder.py``).

The cost is fixed by ``slots x rank`` (``--max-loras`` x ``--max-lora-rank``), whatever is loaded:
two small MatMuls per projection (``docs/lora.md`` has the measured figures).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.llm_info import LLMInfo

_AXES = "/lora/axes_12"
LORA_SLOTS = "lora_slots"
"""Decoder input (int64, ``[batch]``): the adapter slot each row uses; :data:`NO_ADAPTER` for none."""
NO_ADAPTER = -1
"""A row's adapter slot when it uses none (the base model's output, bit for bit)."""
_PROJECTION = re.compile(r"^/model/layers\.(\d+)/(attn/qkv_proj|attn/o_proj|mlp/gate_proj|mlp/up_proj|mlp/down_proj)/")
_PARTS = {
    "attn/qkv_proj": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
    "attn/o_proj": ("self_attn.o_proj",),
    "mlp/gate_proj": ("mlp.gate_proj",),
    "mlp/up_proj": ("mlp.up_proj",),
    "mlp/down_proj": ("mlp.down_proj",),
}
MODULE_NAMES = frozenset(name.rsplit(".", 1)[1] for parts in _PARTS.values() for name in parts)
"""The PEFT ``target_modules`` this rewrite can apply (q/k/v/o and the MLP's gate/up/down)."""


@dataclass(frozen=True)
class LoraPart:
    """One PEFT module inside a graph projection: its output columns ``offset .. offset+size-1``."""

    module: str
    """PEFT's name within the layer, e.g. ``self_attn.q_proj``."""
    offset: int
    size: int


@dataclass(frozen=True)
class LoraTarget:
    """A projection of the decoder graph that takes adapter deltas."""

    layer: int
    projection: str
    in_features: int
    out_features: int
    parts: tuple[LoraPart, ...]

    @property
    def a_input(self) -> str:
        return f"lora_A.{self.layer}.{self.projection}"

    @property
    def b_input(self) -> str:
        return f"lora_B.{self.layer}.{self.projection}"

    def columns(self, slots: int, rank: int) -> int:
        """Width of this target's adapter columns (``A^T`` is ``[columns, in]``, ``B^T`` ``[out, columns]``)."""
        return slots * len(self.parts) * rank


@dataclass(frozen=True)
class LoraLayout:
    """How many adapters a decoder holds at once and the rank each is padded to."""

    slots: int
    rank: int


def lora_targets(model_path: Path, info: LLMInfo) -> list[LoraTarget]:
    """The projections of a converted decoder, with their sizes (read from the graph's weights)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    shapes = {init.name: list(init.dims) for init in model.graph.initializer}
    targets = []
    for node in model.graph.node:
        match = _PROJECTION.match(node.name)
        if not match or node.op_type not in ("MatMul", "MatMulNBits"):
            continue
        in_features, out_features = _matmul_sizes(node, shapes)
        projection = match.group(2)
        targets.append(
            LoraTarget(
                int(match.group(1)), projection, in_features, out_features, _parts(projection, out_features, info)
            )
        )
    return targets


def _matmul_sizes(node: Any, shapes: dict[str, list[int]]) -> tuple[int, int]:
    from onnx import helper

    if node.op_type == "MatMulNBits":
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        return int(attributes["K"]), int(attributes["N"])
    weight = shapes.get(node.input[1])
    if weight is None or len(weight) != 2:
        raise ModelImportError(f"{node.name}: its weight is not a constant matrix")
    return int(weight[0]), int(weight[1])


def _parts(projection: str, out_features: int, info: LLMInfo) -> tuple[LoraPart, ...]:
    names = _PARTS[projection]
    if len(names) == 1:
        return (LoraPart(names[0], 0, out_features),)
    q_size = info.num_attention_heads * info.head_size
    kv_size = info.num_kv_heads * info.head_size
    if q_size + 2 * kv_size != out_features:
        raise ModelImportError(f"layer qkv projection has {out_features} outputs, not q {q_size} + k, v {kv_size}")
    return (
        LoraPart(names[0], 0, q_size),
        LoraPart(names[1], q_size, kv_size),
        LoraPart(names[2], q_size + kv_size, kv_size),
    )


def lora_model_bytes(model_path: Path, targets: list[LoraTarget], layout: LoraLayout) -> bytes:
    """The decoder with adapter inputs on every target (its weights stay in their external file:
    open it with ``session.model_external_initializers_file_folder_path`` set to its folder)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(model_path), load_external_data=False)
    graph = model.graph
    graph.input.append(helper.make_tensor_value_info(LORA_SLOTS, TensorProto.INT64, ["batch_size"]))
    graph.initializer.append(numpy_helper.from_array(np.array([1, 2], dtype=np.int64), _AXES))
    after: dict[str, list[onnx.NodeProto]] = {}
    masks: list[onnx.NodeProto] = []
    for parts in sorted({len(target.parts) for target in targets}):
        slot_of_column = np.repeat(np.arange(layout.slots, dtype=np.int64), parts * layout.rank)[:, None]
        graph.initializer.append(numpy_helper.from_array(slot_of_column, f"/lora/columns_{parts}"))
        masks += _mask_nodes(helper, parts)
    for in_features in sorted({target.in_features for target in targets}):
        shape = np.array([-1, in_features, 1], dtype=np.int64)  # every token its own product
        graph.initializer.append(numpy_helper.from_array(shape, _tokens_shape(in_features)))
    by_name = {node.name: node for node in graph.node}
    for target in targets:
        node = _target_node(by_name, target)
        columns = target.columns(layout.slots, layout.rank)
        graph.input.append(
            helper.make_tensor_value_info(target.a_input, TensorProto.FLOAT, [columns, target.in_features])
        )
        graph.input.append(
            helper.make_tensor_value_info(target.b_input, TensorProto.FLOAT, [target.out_features, columns])
        )
        after[node.name] = _delta_nodes(helper, node, target)
    ordered = [*masks]
    for node in graph.node:
        ordered += [node, *after.get(node.name, [])]
    del graph.node[:]
    graph.node.extend(ordered)
    return bytes(model.SerializeToString())


def _delta_nodes(helper: Any, node: Any, target: LoraTarget) -> list[Any]:
    """``base(x) + ((x @ A) * mask) @ B`` in place of ``base(x)`` (the base node's output renamed), one
    product per token: ``A^T [C, in] @ x [tokens, in, 1]``, masked, ``B^T [out, C] @ that``."""
    make, prefix, base_out = helper.make_node, f"/lora/{target.layer}/{target.projection}", node.output[0]
    node.output[0] = f"{prefix}/base"
    mask = f"/lora/mask_{len(target.parts)}"
    return [
        make("Reshape", [node.input[0], _tokens_shape(target.in_features)], [f"{prefix}/x"], name=f"{prefix}/Tokens"),
        make("MatMul", [target.a_input, f"{prefix}/x"], [f"{prefix}/xa"], name=f"{prefix}/MatMulA"),
        make("Mul", [f"{prefix}/xa", mask], [f"{prefix}/xm"], name=f"{prefix}/Mask"),
        make("MatMul", [target.b_input, f"{prefix}/xm"], [f"{prefix}/dt"], name=f"{prefix}/MatMulB"),
        make("Shape", [f"{prefix}/base"], [f"{prefix}/shape"], name=f"{prefix}/Shape"),
        make("Reshape", [f"{prefix}/dt", f"{prefix}/shape"], [f"{prefix}/delta"], name=f"{prefix}/Rows"),
        make("Add", [f"{prefix}/base", f"{prefix}/delta"], [base_out], name=f"{prefix}/Add"),
    ]


def _tokens_shape(in_features: int) -> str:
    return f"/lora/tokens_{in_features}"


def _mask_nodes(helper: Any, parts: int) -> list[Any]:
    """``mask_{parts}[row, column, 0] = (lora_slots[row] == slot of column)`` as float: ``[batch, columns, 1]``."""
    make, name = helper.make_node, f"/lora/mask_{parts}"
    return [
        make("Unsqueeze", [LORA_SLOTS, _AXES], [f"{name}/rows"], name=f"{name}/Unsqueeze"),
        make("Equal", [f"{name}/rows", f"/lora/columns_{parts}"], [f"{name}/equal"], name=f"{name}/Equal"),
        make("Cast", [f"{name}/equal"], [name], name=f"{name}/Cast", to=1),
    ]


def _target_node(by_name: dict[str, Any], target: LoraTarget) -> Any:
    for suffix in ("MatMul", "MatMul_Q4", "MatMul_Q8"):
        node = by_name.get(f"/model/layers.{target.layer}/{target.projection}/{suffix}")
        if node is not None:
            return node
    raise ModelImportError(f"layer {target.layer}: no {target.projection} MatMul in the decoder")

"""Decode rows and a prompt chunk in one run ("varlen"): what it saves over two runs (issue 34).

onnxruntime's GroupQueryAttention takes one row when a run has several new tokens and a past, so the
engine runs a prompt chunk on its own, beside the batched decode step. The long-prompt targets
(running streams' largest gap <= 3x their ITL, the long prompt's TTFT <= 1.3x alone) then exclude
each other: a step costs chunk + decode. This benchmark builds the graph that would change that
and measures it. Every node of the decoder but attention works token by token, so the graph
packs the decode rows' tokens and the chunk's into one row, ``[1, rows + chunk]``: the projections,
norms and MLP run once over all of them (the weights read once), and each layer's attention is split
into two GroupQueryAttention nodes, the decode rows over their slots (``[rows, 1, ...]``, as a
decode step) and the chunk over its own slot (``[1, chunk, ...]``, as a prefill), each with its own
past and present; the LM head gets the positions asked for (``logit_positions``). It reads the
import's weights file; nothing is converted again.

Per round (interleaved): one decode step of ``--rows`` sequences of ``--context`` tokens, one chunk of
``--chunk`` tokens after ``--cached`` tokens, and the mixed run of both; first, the mixed run's logits
and KV are compared with the two runs' (measured: bit-identical, the kernels compute each row alike).

    PYTHONPATH=src .venv/bin/python benchmarks/engine/mixed_run.py [--rows 8] [--chunk 64] [--cached 512]

Measured 2026-12-05 (quiet 2-core EPYC): 8 rows + chunk 64 after 512: decode 20-24 ms, chunk 87-93 ms,
two runs 107-113 ms, mixed 106-109 ms; chunk 32: 71-74 against 67 ms; chunk 128: 233-239 against 199-220
ms; 1 row + chunk 64: 100-105 against 93-94 ms. The decode rows cost inside the mixed run about what
they cost alone (their attention, their rows of every projection): the saving is 4-8 % of a step, so
the step is still about chunk + decode and the two long-prompt targets still exclude each other.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnxruntime as ort

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.llm_convert import NUM_LOGITS, convert_llm
from mcp2026ai.ir.llm_info import LLMInfo, LLMPrecision, load_llm_info
from mcp2026ai.runtime.cpu_load import LoadProbe
from mcp2026ai.runtime.onnx_decoder import OnnxDecoder

if TYPE_CHECKING:
    import onnx

DECODE_SEQLENS = "decode_seqlens_k"
DECODE_TOTAL = "decode_total_length"
CHUNK_SEQLENS = "chunk_seqlens_k"
CHUNK_TOTAL = "chunk_total_length"
LOGIT_POSITIONS = "logit_positions"
CHUNK_PREFIX = "chunk_"
"""Prefix of the chunk's past and present names (``chunk_past_key_values.0.key``, ``chunk_present.0.key``)."""
_ATTENTION = "GroupQueryAttention"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
NEVER_CONTENDED = LoadProbe(read=lambda: 0.0)
_INT64_MAX = 2**63 - 1


def mixed_decoder(model_path: Path, attention_mask: str, logits: str) -> onnx.ModelProto:
    """The mixed graph of a decoder written by the import (weights stay in its data file)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    graph = model.graph
    attentions = [node for node in graph.node if node.op_type == _ATTENTION]
    if not attentions:
        raise ModelImportError(f"{model_path}: no {_ATTENTION} node to split")
    _drop_inputs(graph, {attention_mask, NUM_LOGITS})
    _add_inputs(graph)
    nodes = [*_shared_nodes()]
    for node in graph.node:
        if node.op_type == _ATTENTION:
            nodes += _split_attention(graph, node)
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    _gather_logit_positions(graph, logits, model_path)
    _prune_unused(graph)
    return model


def _drop_inputs(graph: onnx.GraphProto, names: set[str]) -> None:
    """Remove graph inputs (the nodes that read only them lose their consumers and are pruned)."""
    keep = [input_ for input_ in graph.input if input_.name not in names]
    del graph.input[:]
    graph.input.extend(keep)


def _add_inputs(graph: onnx.GraphProto) -> None:
    from onnx import TensorProto, helper

    graph.input.extend(
        [
            helper.make_tensor_value_info(DECODE_SEQLENS, TensorProto.INT32, ["decode_rows"]),
            helper.make_tensor_value_info(DECODE_TOTAL, TensorProto.INT32, []),
            helper.make_tensor_value_info(CHUNK_SEQLENS, TensorProto.INT32, [1]),
            helper.make_tensor_value_info(CHUNK_TOTAL, TensorProto.INT32, []),
            helper.make_tensor_value_info(LOGIT_POSITIONS, TensorProto.INT64, ["logit_rows"]),
        ]
    )
    past = [input_ for input_ in graph.input if input_.name.startswith("past_key_values.")]
    for input_ in past:
        chunk = graph.input.add()
        chunk.CopyFrom(input_)
        chunk.name = CHUNK_PREFIX + input_.name
        chunk.type.tensor_type.shape.dim[0].ClearField("dim_param")
        chunk.type.tensor_type.shape.dim[0].dim_value = 1
    presents = [output for output in graph.output if output.name.startswith("present.")]
    for output in presents:
        chunk = graph.output.add()
        chunk.CopyFrom(output)
        chunk.name = CHUNK_PREFIX + output.name
        chunk.type.tensor_type.shape.dim[0].ClearField("dim_param")
        chunk.type.tensor_type.shape.dim[0].dim_value = 1


_ZERO = "/mixed/zero"
_END = "/mixed/end"
_AXIS = "/mixed/axis1"
_ROWS = "/mixed/decode_rows"
_AS_ROWS = "/mixed/as_rows"
_AS_PACKED = "/mixed/as_packed"


def _shared_nodes() -> list[onnx.NodeProto]:
    """Constants, and the number of decode rows (the packed position where the chunk starts)."""
    from onnx import helper, numpy_helper

    def constant(name: str, values: list[int]) -> onnx.NodeProto:
        return helper.make_node(
            "Constant", [], [name], name=name, value=numpy_helper.from_array(np.array(values, np.int64), name)
        )

    return [
        constant(_ZERO, [0]),
        constant(_END, [_INT64_MAX]),
        constant(_AXIS, [1]),
        constant(_AS_ROWS, [-1, 1, 0]),  # [1, rows, width] -> [rows, 1, width]
        constant(_AS_PACKED, [1, -1, 0]),  # [rows, 1, width] -> [1, rows, width]
        helper.make_node("Shape", [DECODE_SEQLENS], [_ROWS], name=_ROWS),
    ]


def _split_attention(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """One GroupQueryAttention over packed tokens -> the decode rows' and the chunk's, concatenated."""
    from onnx import helper

    prefix = node.name or node.output[0]
    qkv, past_key, past_value = node.input[0], node.input[3], node.input[4]
    if node.input[1] or node.input[2]:
        raise ModelImportError(f"{prefix}: separate query, key and value inputs are not supported (packed only)")
    rest = list(node.input[7:])  # cos_cache, sin_cache and the optional inputs after them
    decode_in, chunk_in = f"{prefix}/decode_qkv", f"{prefix}/chunk_qkv"
    decode_out, chunk_out = f"{prefix}/decode_out", f"{prefix}/chunk_out"
    present_key, present_value = node.output[1], node.output[2]
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return [
        helper.make_node("Slice", [qkv, _ZERO, _ROWS, _AXIS], [f"{decode_in}/packed"], name=f"{decode_in}/Slice"),
        helper.make_node("Reshape", [f"{decode_in}/packed", _AS_ROWS], [decode_in], name=f"{decode_in}/Reshape"),
        helper.make_node("Slice", [qkv, _ROWS, _END, _AXIS], [chunk_in], name=f"{chunk_in}/Slice"),
        helper.make_node(
            _ATTENTION,
            [decode_in, "", "", past_key, past_value, DECODE_SEQLENS, DECODE_TOTAL, *rest],
            [f"{decode_out}/rows", present_key, present_value],
            name=f"{prefix}/decode",
            domain=node.domain,
            **attributes,
        ),
        helper.make_node(
            _ATTENTION,
            [chunk_in, "", "", CHUNK_PREFIX + past_key, CHUNK_PREFIX + past_value, CHUNK_SEQLENS, CHUNK_TOTAL, *rest],
            [chunk_out, CHUNK_PREFIX + present_key, CHUNK_PREFIX + present_value],
            name=f"{prefix}/chunk",
            domain=node.domain,
            **attributes,
        ),
        helper.make_node("Reshape", [f"{decode_out}/rows", _AS_PACKED], [decode_out], name=f"{decode_out}/Reshape"),
        helper.make_node("Concat", [decode_out, chunk_out], [node.output[0]], name=f"{prefix}/Concat", axis=1),
    ]


def _gather_logit_positions(graph: onnx.GraphProto, logits: str, model_path: Path) -> None:
    """The LM head gets the hidden states of ``logit_positions`` (instead of the last ``num_logits``)."""
    from onnx import helper

    head = next((node for node in graph.node if logits in node.output), None)
    if head is None:
        raise ModelImportError(f"{model_path}: no node computes {logits!r}")
    producer = next((node for node in graph.node if head.input[0] in node.output), None)
    hidden = producer.input[0] if producer is not None and producer.op_type == "Slice" else head.input[0]
    gathered = f"{hidden}/logit_positions"
    index = list(graph.node).index(head)
    graph.node.insert(index, helper.make_node("Gather", [hidden, LOGIT_POSITIONS], [gathered], name=gathered, axis=1))
    head.input[0] = gathered


def _prune_unused(graph: onnx.GraphProto) -> None:
    """Drop nodes none of whose outputs is used (the mask's subgraph, the old logits slice)."""
    outputs = {output.name for output in graph.output}
    while True:
        used = {name for node in graph.node for name in node.input} | outputs
        keep = [node for node in graph.node if any(name in used for name in node.output)]
        if len(keep) == len(graph.node):
            return
        del graph.node[:]
        graph.node.extend(keep)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=8, help="decoding sequences")
    parser.add_argument("--context", type=int, default=200, help="tokens already in each decoding sequence")
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--cached", type=int, default=512, help="tokens of the long prompt already prefilled")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    return parser.parse_args()


def kv_buffers(decoder: OnnxDecoder) -> list[tuple[str, np.ndarray]]:
    """(past name, buffer ``[slots, kv_heads, max_len, head]``) of each layer and kind."""
    return decoder._kv


class MixedRun:
    """The mixed graph bound to an :class:`OnnxDecoder`'s KV buffers: decode slots ``0 .. rows-1``
    and the chunk's slot."""

    def __init__(self, decoder: OnnxDecoder, folder: Path, info: LLMInfo, rows: int, slot: int) -> None:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.model_external_initializers_file_folder_path", str(folder))
        graph = mixed_decoder(folder / info.decoder_file, info.attention_mask, info.logits)
        self.session = ort.InferenceSession(graph.SerializeToString(), options, ["CPUExecutionProvider"])
        self.info, self.rows = info, rows
        self.logits = np.zeros((1, rows + 1, info.vocab_size), np.float32)
        self.binding = self.session.io_binding()
        for name, buffer in kv_buffers(decoder):
            present = decoder._present[name]
            for prefix, view in (("", buffer[0:rows]), (CHUNK_PREFIX, buffer[slot : slot + 1])):
                shape = list(view.shape)
                self.binding.bind_input(prefix + name, "cpu", 0, np.float32, shape, view.ctypes.data)
                self.binding.bind_output(prefix + present, "cpu", 0, np.float32, shape, view.ctypes.data)
        shape = list(self.logits.shape)
        self.binding.bind_output(info.logits, "cpu", 0, np.float32, shape, self.logits.ctypes.data)

    def run(self, tokens: list[int], lengths: list[int], prompt: list[int], cached: int) -> np.ndarray:
        """Logits ``[rows + 1, vocab]``: the decode rows', then the chunk's last position's."""
        chunk = len(prompt) - cached
        bind = self.binding.bind_cpu_input
        bind(self.info.input_ids, np.array([tokens + prompt[cached:]], np.int64))
        bind(DECODE_SEQLENS, np.array(lengths, np.int32) - 1)
        bind(DECODE_TOTAL, np.array(max(lengths), np.int32))
        bind(CHUNK_SEQLENS, np.array([len(prompt) - 1], np.int32))
        bind(CHUNK_TOTAL, np.array(len(prompt), np.int32))
        bind(LOGIT_POSITIONS, np.array([*range(self.rows), self.rows + chunk - 1], np.int64))
        self.session.run_with_iobinding(self.binding)
        return self.logits[0]


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    args = _arguments()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    info = load_llm_info(folder)
    rows, slot = args.rows, args.rows
    decoder = OnnxDecoder(folder, info, rows + 1, args.cached + args.chunk + 1, load_probe=NEVER_CONTENDED)
    rng = np.random.default_rng(0)
    for row in range(rows):
        decoder.prefill(row, [int(t) for t in rng.integers(100, 40_000, args.context)])
    prompt = [int(t) for t in rng.integers(100, 40_000, args.cached + args.chunk)]
    if args.cached:
        decoder.prefill(slot, prompt[: args.cached])
    tokens, lengths = [int(t) for t in rng.integers(100, 40_000, rows)], [args.context + 1] * rows
    mixed = MixedRun(decoder, folder, info, rows, slot)
    before = [buffer.copy() for _, buffer in kv_buffers(decoder)]
    separate = np.concatenate(
        [decoder.decode(tokens, lengths).copy(), decoder.prefill(slot, prompt, args.cached)[None]]
    )
    after = [buffer.copy() for _, buffer in kv_buffers(decoder)]
    for (_, buffer), saved in zip(kv_buffers(decoder), before, strict=True):
        buffer[...] = saved
    together = mixed.run(tokens, lengths, prompt, args.cached)
    kv_diff = max(float(np.abs(b - a).max()) for (_, b), a in zip(kv_buffers(decoder), after, strict=True))
    print(
        f"mixed against two runs: logits max |diff| {float(np.abs(together - separate).max())}, "
        f"KV max |diff| {kv_diff}, greedy tokens equal: {bool((together.argmax(-1) == separate.argmax(-1)).all())}"
    )
    print(f"| round | decode b={rows} ms | chunk {args.chunk} after {args.cached} ms | two runs ms | mixed ms |")
    print("|---|---|---|---|---|")
    for round_ in range(args.rounds):
        decode = _median_ms(lambda: decoder.decode(tokens, lengths), args.repeats)
        chunk = _median_ms(lambda: decoder.prefill(slot, prompt, args.cached), args.repeats)
        both = _median_ms(lambda: mixed.run(tokens, lengths, prompt, args.cached), args.repeats)
        print(f"| {round_ + 1} | {decode:.1f} | {chunk:.1f} | {decode + chunk:.1f} | {both:.1f} |", flush=True)


if __name__ == "__main__":
    main()

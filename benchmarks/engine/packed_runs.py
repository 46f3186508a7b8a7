"""Packed runs: several sequences' new tokens in one decoder run, measured against separate runs (issue 34).

onnxruntime's GroupQueryAttention takes one row when a run has several new tokens and a past, so the
engine runs each prompt chunk and each speculative verification on its own, beside the batched
decode step. Every node of the decoder but attention works token by token, so a second graph can
pack the new tokens of several sequences into one row, ``[1, tokens]``: the projections, norms and
MLP run once over all of them (the weights read once), and each layer's attention is split into
one GroupQueryAttention per segment (a sequence's tokens over its own slot, as a prefill or a
verification runs) plus, optionally, one over the batched decode rows (``[rows, 1, ...]``, as a
decode step); the LM head gets the positions asked for. The graph is derived from the import's
decoder and reads its weights file; nothing is converted again.

Two measures, each first checked against the separate runs (logits and KV: measured bit-identical,
the kernels compute each row alike), then timed in interleaved rounds:

- ``--mode chunk``: ``--rows`` decoding sequences of ``--context`` tokens and one prompt chunk of
  ``--chunk`` tokens after ``--cached`` (the long-prompt targets: a step carrying a chunk costs
  chunk + decode when they run apart);
- ``--mode verify``: ``--rows`` sequences each verifying ``--draft`` drafted tokens after
  ``--context`` (speculation at batch 8: each verification is a run of its own today).

    PYTHONPATH=src:. .venv/bin/python benchmarks/engine/packed_runs.py [--mode chunk|verify] [--rows 8]
        [--chunk 64] [--cached 512] [--draft 4] [--context 200] [--rounds 3]

Measured 2026-12-05 (quiet 2-core EPYC, docs/notebook/benchmarks.md "Packed runs"): chunk mode, 8 rows + chunk 64
after 512: two runs 104.4-105.2 ms, packed 101.3-105.5 ms (4-8 % saved at other sizes); verify mode,
8 sequences x (1 + 4): 8 runs 91-102 ms, packed 66-71 ms, against 20-23 ms for a plain decode step.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from benchmarks.engine.decode_step import run_times
from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.llm_convert import NUM_LOGITS, convert_llm
from mcp2026ai.ir.llm_info import LLMInfo, LLMPrecision, load_llm_info
from mcp2026ai.runtime.cpu_load import LoadProbe
from mcp2026ai.runtime.onnx_decoder import OnnxDecoder

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
NEVER_CONTENDED = LoadProbe(read=lambda: 0.0)
ATTENTION = "GroupQueryAttention"
BOUNDS = "segment_bounds"
"""int64 ``[segments + 1]``: packed position where the decode rows end (0 without them), then each segment's end."""
SEGMENT_SEQLENS = "segment_seqlens_k"
SEGMENT_TOTALS = "segment_total_lengths"
DECODE_SEQLENS = "decode_seqlens_k"
DECODE_TOTAL = "decode_total_length"
LOGIT_POSITIONS = "logit_positions"


def segment_prefix(index: int) -> str:
    """Prefix of segment ``index``'s past and present names (``s0_past_key_values.0.key``)."""
    return f"s{index}_"


# the graph -------------------------------------------------------------------------------------
def packed_decoder(model_path: Path, info: LLMInfo, segments: int, decode_rows: bool) -> onnx.ModelProto:
    """The import's decoder with its tokens packed: ``segments`` single-sequence segments, after
    batched decode rows when ``decode_rows``."""
    model = onnx.load(str(model_path), load_external_data=False)
    graph = model.graph
    if not any(node.op_type == ATTENTION for node in graph.node):
        raise ModelImportError(f"{model_path}: no {ATTENTION} node to split")
    _rewrite_io(graph, info, segments, decode_rows)
    nodes = _index_nodes(segments)
    for node in graph.node:
        nodes += _split_attention(node, segments, decode_rows) if node.op_type == ATTENTION else [node]
    del graph.node[:]
    graph.node.extend(nodes)
    _gather_logit_positions(graph, info.logits)
    _prune_unused(graph)
    return model


def _rewrite_io(graph: onnx.GraphProto, info: LLMInfo, segments: int, decode_rows: bool) -> None:
    past = [i for i in graph.input if i.name.startswith("past_key_values.")]
    presents = [o for o in graph.output if o.name.startswith("present.")]
    kept = [i for i in graph.input if i.name not in (info.attention_mask, NUM_LOGITS) and i not in past]
    inputs = [
        *kept,
        helper.make_tensor_value_info(BOUNDS, TensorProto.INT64, [segments + 1]),
        helper.make_tensor_value_info(SEGMENT_SEQLENS, TensorProto.INT32, [segments]),
        helper.make_tensor_value_info(SEGMENT_TOTALS, TensorProto.INT32, [segments]),
        helper.make_tensor_value_info(LOGIT_POSITIONS, TensorProto.INT64, ["logit_rows"]),
    ]
    outputs = [o for o in graph.output if o.name == info.logits]
    if decode_rows:
        inputs += [
            helper.make_tensor_value_info(DECODE_SEQLENS, TensorProto.INT32, ["decode_rows"]),
            helper.make_tensor_value_info(DECODE_TOTAL, TensorProto.INT32, []),
            *past,
        ]
        outputs += presents
    for index in range(segments):
        inputs += [_one_row(value, segment_prefix(index)) for value in past]
        outputs += [_one_row(value, segment_prefix(index)) for value in presents]
    for field, values in ((graph.input, inputs), (graph.output, outputs)):
        copies = [onnx.ValueInfoProto.FromString(value.SerializeToString()) for value in values]
        del field[:]
        field.extend(copies)


def _one_row(value: onnx.ValueInfoProto, prefix: str) -> onnx.ValueInfoProto:
    row = onnx.ValueInfoProto.FromString(value.SerializeToString())
    row.name = prefix + value.name
    row.type.tensor_type.shape.dim[0].ClearField("dim_param")
    row.type.tensor_type.shape.dim[0].dim_value = 1
    return row


def _constant(name: str, value: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(value, name))


def _index_nodes(segments: int) -> list[onnx.NodeProto]:
    """Per segment: its packed start and end (``[1]``), its seqlens_k (``[1]``) and total length (scalar)."""
    nodes = [
        _constant("/packed/axis0", np.array([0], np.int64)),
        _constant("/packed/axis1", np.array([1], np.int64)),
        _constant("/packed/as_rows", np.array([-1, 1, 0], np.int64)),  # [1, rows, width] -> [rows, 1, width]
        _constant("/packed/as_packed", np.array([1, -1, 0], np.int64)),  # and back
        _constant("/packed/zero", np.array([0], np.int64)),
        _constant("/packed/one", np.array([1], np.int64)),
        helper.make_node("Slice", [BOUNDS, "/packed/zero", "/packed/one", "/packed/axis0"], ["/packed/rows_end"]),
    ]
    for index in range(segments):
        at = f"/packed/s{index}"
        nodes += [
            _constant(f"{at}/i", np.array([index], np.int64)),
            _constant(f"{at}/j", np.array([index + 1], np.int64)),
            _constant(f"{at}/k", np.array([index + 2], np.int64)),
            _constant(f"{at}/scalar", np.array(index, np.int64)),
            helper.make_node("Slice", [BOUNDS, f"{at}/i", f"{at}/j", "/packed/axis0"], [f"{at}/start"]),
            helper.make_node("Slice", [BOUNDS, f"{at}/j", f"{at}/k", "/packed/axis0"], [f"{at}/end"]),
            helper.make_node("Slice", [SEGMENT_SEQLENS, f"{at}/i", f"{at}/j", "/packed/axis0"], [f"{at}/seqlens"]),
            helper.make_node("Gather", [SEGMENT_TOTALS, f"{at}/scalar"], [f"{at}/total"], axis=0),
        ]
    return nodes


def _split_attention(node: onnx.NodeProto, segments: int, decode_rows: bool) -> list[onnx.NodeProto]:
    """One GroupQueryAttention over packed tokens -> the decode rows' and one per segment, concatenated."""
    prefix = node.name or node.output[0]
    qkv, past_key, past_value = node.input[0], node.input[3], node.input[4]
    if node.input[1] or node.input[2]:
        raise ModelImportError(f"{prefix}: separate query, key and value inputs are not supported (packed only)")
    tail = list(node.input[7:])  # cos_cache, sin_cache and the optional inputs after them
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    nodes, parts = [], []
    if decode_rows:
        rows = f"{prefix}/decode"
        nodes += [
            helper.make_node("Slice", [qkv, "/packed/zero", "/packed/rows_end", "/packed/axis1"], [f"{rows}/packed"]),
            helper.make_node("Reshape", [f"{rows}/packed", "/packed/as_rows"], [f"{rows}/qkv"]),
            helper.make_node(
                ATTENTION,
                [f"{rows}/qkv", "", "", past_key, past_value, DECODE_SEQLENS, DECODE_TOTAL, *tail],
                [f"{rows}/out", node.output[1], node.output[2]],
                domain=node.domain,
                **attributes,
            ),
            helper.make_node("Reshape", [f"{rows}/out", "/packed/as_packed"], [f"{rows}/out_packed"]),
        ]
        parts.append(f"{rows}/out_packed")
    for index in range(segments):
        at, own = f"{prefix}/s{index}", segment_prefix(index)
        bounds = f"/packed/s{index}"
        nodes += [
            helper.make_node("Slice", [qkv, f"{bounds}/start", f"{bounds}/end", "/packed/axis1"], [f"{at}/qkv"]),
            helper.make_node(
                ATTENTION,
                [f"{at}/qkv", "", "", own + past_key, own + past_value, f"{bounds}/seqlens", f"{bounds}/total", *tail],
                [f"{at}/out", own + node.output[1], own + node.output[2]],
                domain=node.domain,
                **attributes,
            ),
        ]
        parts.append(f"{at}/out")
    nodes.append(helper.make_node("Concat", parts, [node.output[0]], name=f"{prefix}/Concat", axis=1))
    return nodes


def _gather_logit_positions(graph: onnx.GraphProto, logits: str) -> None:
    """The LM head gets the hidden states at ``logit_positions`` (instead of the last ``num_logits``)."""
    head = next(node for node in graph.node if logits in node.output)
    producer = next((node for node in graph.node if head.input[0] in node.output), None)
    hidden = producer.input[0] if producer is not None and producer.op_type == "Slice" else head.input[0]
    gathered = f"{hidden}/logit_positions"
    graph.node.insert(
        list(graph.node).index(head),
        helper.make_node("Gather", [hidden, LOGIT_POSITIONS], [gathered], name=gathered, axis=1),
    )
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


# running it over an OnnxDecoder's KV buffers --------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """One sequence's new tokens in a packed run: its slot, its tokens, and its length after them."""

    slot: int
    tokens: list[int]
    total: int


Decode = tuple[list[int], list[int]]
"""The decode rows' new tokens and their lengths after them (as :meth:`OnnxDecoder.decode` takes them)."""


def kv_buffers(decoder: OnnxDecoder) -> list[tuple[str, np.ndarray]]:
    """(past name, buffer ``[slots, kv_heads, max_len, head]``) of each layer and kind."""
    return decoder._kv


class PackedRun:
    """The packed graph bound to a decoder's KV buffers: decode slots ``0 .. rows-1`` and one slot per segment."""

    def __init__(self, decoder: OnnxDecoder, folder: Path, info: LLMInfo, rows: int, slots: list[int]) -> None:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.model_external_initializers_file_folder_path", str(folder))
        graph = packed_decoder(folder / info.decoder_file, info, len(slots), decode_rows=rows > 0)
        self.session = ort.InferenceSession(graph.SerializeToString(), options, ["CPUExecutionProvider"])
        self.info, self.rows = info, rows
        self._logits: dict[int, np.ndarray] = {}
        self.binding = self.session.io_binding()
        views = [("", slice(0, rows))] if rows else []
        views += [(segment_prefix(index), slice(slot, slot + 1)) for index, slot in enumerate(slots)]
        for name, buffer in kv_buffers(decoder):
            present = decoder._present[name]
            for prefix, rows_of in views:
                view = buffer[rows_of]
                shape = list(view.shape)
                self.binding.bind_input(prefix + name, "cpu", 0, np.float32, shape, view.ctypes.data)
                self.binding.bind_output(prefix + present, "cpu", 0, np.float32, shape, view.ctypes.data)

    def run(
        self, decode: tuple[list[int], list[int]] | None, segments: list[Segment], logits_of: list[int]
    ) -> np.ndarray:
        """Logits ``[len(logits_of), vocab]`` of the packed positions ``logits_of``."""
        tokens, lengths = decode if decode else ([], [])
        bounds = [len(tokens)]
        for segment in segments:
            bounds.append(bounds[-1] + len(segment.tokens))
        bind = self.binding.bind_cpu_input
        bind(self.info.input_ids, np.array([tokens + [t for s in segments for t in s.tokens]], np.int64))
        bind(BOUNDS, np.array(bounds, np.int64))
        bind(SEGMENT_SEQLENS, np.array([s.total - 1 for s in segments], np.int32))
        bind(SEGMENT_TOTALS, np.array([s.total for s in segments], np.int32))
        bind(LOGIT_POSITIONS, np.array(logits_of, np.int64))
        if decode:
            bind(DECODE_SEQLENS, np.array(lengths, np.int32) - 1)
            bind(DECODE_TOTAL, np.array(max(lengths), np.int32))
        logits = self._logits.get(len(logits_of))
        if logits is None:  # bound once per row count, as the decoder's own logits
            logits = self._logits[len(logits_of)] = np.zeros((1, len(logits_of), self.info.vocab_size), np.float32)
        self.binding.bind_output(self.info.logits, "cpu", 0, np.float32, list(logits.shape), logits.ctypes.data)
        self.session.run_with_iobinding(self.binding)
        return logits[0]


# the measurement -------------------------------------------------------------------------------
def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["chunk", "verify"], default="chunk")
    parser.add_argument(
        "--rows", type=int, default=8, help="decoding (chunk mode) or verifying (verify mode) sequences"
    )
    parser.add_argument("--context", type=int, default=200, help="tokens already in each of those sequences")
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--cached", type=int, default=512, help="tokens of the long prompt already prefilled")
    parser.add_argument("--draft", type=int, default=4, help="drafted tokens per verification")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    return parser.parse_args()


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    return statistics.median(run_times(run, repeats))


def _random_tokens(rng: np.random.Generator, count: int) -> list[int]:
    return [int(t) for t in rng.integers(100, 40_000, count)]


def _compare(decoder: OnnxDecoder, separate: Callable[[], np.ndarray], packed: Callable[[], np.ndarray]) -> None:
    """Run both from the same KV; print how far the packed run's logits and KV are from the separate runs'."""
    before = [buffer.copy() for _, buffer in kv_buffers(decoder)]
    expected = separate()
    after = [buffer.copy() for _, buffer in kv_buffers(decoder)]
    for (_, buffer), saved in zip(kv_buffers(decoder), before, strict=True):
        buffer[...] = saved
    got = packed()
    kv = max(float(np.abs(b - a).max()) for (_, b), a in zip(kv_buffers(decoder), after, strict=True))
    print(
        f"packed against separate runs: logits max |diff| {float(np.abs(got - expected).max())}, KV max |diff| {kv}, "
        f"greedy tokens equal: {bool((got.argmax(-1) == expected.argmax(-1)).all())}"
    )


def main() -> None:
    args = _arguments()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    info = load_llm_info(folder)
    rows, rng = args.rows, np.random.default_rng(0)
    chunk_mode = args.mode == "chunk"
    length = (args.cached + args.chunk if chunk_mode else args.context + args.draft) + 1
    decoder = OnnxDecoder(folder, info, rows + 1, max(length, args.context + 2), load_probe=NEVER_CONTENDED)
    for row in range(rows):
        decoder.prefill(row, _random_tokens(rng, args.context))
    plain = (_random_tokens(rng, rows), [args.context + 1] * rows)
    if chunk_mode:
        prompt = _random_tokens(rng, args.cached + args.chunk)
        if args.cached:
            decoder.prefill(rows, prompt[: args.cached])
        packed = PackedRun(decoder, folder, info, rows, [rows])
        chunk = Segment(rows, prompt[args.cached :], len(prompt))
        runs = {
            f"decode b={rows} + chunk {args.chunk} after {args.cached}, two runs": lambda: np.concatenate(
                [decoder.decode(*plain).copy(), decoder.prefill(rows, prompt, args.cached)[None]]
            ),
            "packed": lambda: packed.run(plain, [chunk], [*range(rows), rows + args.chunk - 1]),
        }
    else:
        fed = [_random_tokens(rng, args.draft + 1) for _ in range(rows)]
        total = args.context + args.draft + 1
        packed = PackedRun(decoder, folder, info, 0, list(range(rows)))
        segments = [Segment(row, fed[row], total) for row in range(rows)]
        runs = {
            f"{rows} verifications of 1 + {args.draft}, {rows} runs": lambda: np.concatenate(
                [decoder.verify(row, fed[row], total).copy() for row in range(rows)]
            ),
            "packed": lambda: packed.run(None, segments, list(range(rows * (args.draft + 1)))),
        }
    _compare(decoder, *runs.values())
    runs[f"plain decode step b={rows}"] = lambda: decoder.decode(*plain)
    print("| round | " + " | ".join(f"{name} ms" for name in runs) + " |\n|---|" + "---|" * len(runs))
    for round_ in range(args.rounds):
        times = [_median_ms(run, args.repeats) for run in runs.values()]
        print(f"| {round_ + 1} | " + " | ".join(f"{ms:.1f}" for ms in times) + " |", flush=True)


if __name__ == "__main__":
    main()

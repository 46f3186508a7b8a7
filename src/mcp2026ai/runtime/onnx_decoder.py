"""onnxruntime decoder backend for text generation: prefill and batched decode over KV slots.

The decoder (onnxruntime-genai's builder output: GroupQueryAttention, ``attention_mask`` giving each
row's length) keeps its keys and values in one float32 buffer per layer and kind, shaped
``[slots, kv_heads, max_len, head_size]``. Past and present are bound to the same memory
(IOBinding), so the model appends each new token's KV in place: no cache is copied between steps.
Running sequences hold slots ``0 .. n-1`` (see ``generation/kv_slots.py``); a decode step binds the
leading ``n`` slots, one new token per row, and the mask gives each row its own length.

The LM head sees the last ``num_logits`` positions only (the import inserts that slice; revision-1
imports had a fixed single row), so a prefill returns one row of logits and a speculative
verification (:meth:`OnnxDecoder.verify`) the k+1 it needs.
"""

from __future__ import annotations

import mmap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from mcp2026ai.errors import InferenceFailedError
from mcp2026ai.ir.llm_convert import NUM_LOGITS
from mcp2026ai.ir.llm_info import LLMInfo

PLATFORM = "onnxruntime_decoder"
SESSION_CONFIG: dict[str, str] = {"session.intra_op.allow_spinning": "0"}
"""onnxruntime session config entries every decoder gets (benchmarks/decode_step.py compares others).

Intra-op threads block instead of spinning between parallel sections: a decode step hands work to
the pool hundreds of times, and on two cores shared with the HTTP event loop (and the benchmark's
client, and other processes) a spinning worker holds the core a descheduled peer needs to finish
its part. Side by side under load, 3 alternating pairs of aiperf runs: c=8 230 / 192 / 147 tok/s
spinning vs 261 / 249 / 232 blocking; c=1 55 / 79 / 40 vs 127 / 110 / 111 (docs/benchmarks.md)."""


class OnnxDecoder:
    """One decoder session and its KV buffers."""

    def __init__(
        self,
        folder: Path,
        info: LLMInfo,
        num_slots: int,
        max_len: int,
        threads: int = 0,
        session_config: Mapping[str, str] | None = None,
        profile_prefix: Path | None = None,
    ) -> None:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        for key, value in (SESSION_CONFIG if session_config is None else session_config).items():
            options.add_session_config_entry(key, value)
        if profile_prefix is not None:  # onnxruntime's per-node profile (benchmarks/decode_step.py --profile)
            options.enable_profiling = True
            options.profile_file_prefix = str(profile_prefix)
        try:
            self.session = ort.InferenceSession(str(folder / info.decoder_file), options, ["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own pybind types  # noqa: BLE001
            raise InferenceFailedError(f"{folder / info.decoder_file}: onnxruntime cannot load it ({exc})") from None
        self.info = info
        self.num_slots = num_slots
        self.max_len = max_len
        shape = (num_slots, info.num_kv_heads, max_len, info.head_size)
        self._maps: list[mmap.mmap] = []
        self._kv = [
            (name % layer, self._lazy_zeros(shape))
            for layer in range(info.num_layers)
            for name in (info.past_key, info.past_value)
        ]
        self._present = {info.past_key % layer: info.present_key % layer for layer in range(info.num_layers)} | {
            info.past_value % layer: info.present_value % layer for layer in range(info.num_layers)
        }
        self._logits = np.zeros((num_slots, 1, info.vocab_size), np.float32)
        self._bindings: dict[tuple[int, int, int], ort.IOBinding] = {}
        self._row_logits: dict[int, np.ndarray] = {}
        self.multi_row_logits = NUM_LOGITS in {i.name for i in self.session.get_inputs()}
        """Whether this decoder can return logits for several trailing positions (speculative decoding)."""

    def _lazy_zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        """A zeroed float32 array in its own anonymous mapping: page-aligned, and its pages take memory
        only once written (so the slots reserve address space, not memory) and give it back on
        :meth:`release`."""
        size = int(np.prod(shape)) * 4
        mapping = mmap.mmap(-1, size)
        self._maps.append(mapping)
        return np.frombuffer(mapping, dtype=np.float32).reshape(shape)

    @property
    def kv_bytes(self) -> int:
        """Address space of the KV buffers (what they would hold with every slot full)."""
        return sum(buffer.nbytes for _, buffer in self._kv)

    @property
    def bytes_per_token(self) -> int:
        """KV bytes one token takes in one sequence (all layers, keys and values)."""
        return len(self._kv) * self.info.num_kv_heads * self.info.head_size * 4

    def release(self, slot: int) -> None:
        """Give a vacated slot's memory back to the system (its positions read as zeros afterwards)."""
        if not hasattr(mmap, "MADV_DONTNEED"):
            return
        for mapping, (_, buffer) in zip(self._maps, self._kv, strict=True):
            stride = buffer[0].nbytes  # one slot: [kv_heads, max_len, head], page-aligned when its size is
            if stride % mmap.PAGESIZE == 0:
                mapping.madvise(mmap.MADV_DONTNEED, slot * stride, stride)

    def prefill(self, slot: int, token_ids: Sequence[int], cached: int = 0) -> np.ndarray:
        """Run a prompt into a slot whose first ``cached`` positions already hold the prompt's KV (0: an
        empty slot); the logits of its last position, shape ``[vocab]``."""
        ids = np.asarray(token_ids[cached:], dtype=np.int64).reshape(1, -1)
        mask = np.ones((1, len(token_ids)), dtype=np.int64)
        logits: np.ndarray = self._run(slot, 1, ids, mask)[0]
        return logits

    def read_block(self, slot: int, start: int, size: int) -> np.ndarray:
        """A copy of positions ``start .. start+size-1`` of a slot's KV: ``[layers x 2, kv_heads, size, head]``."""
        return np.stack([buffer[slot, :, start : start + size] for _, buffer in self._kv])

    def write_blocks(self, slot: int, blocks: Sequence[np.ndarray]) -> None:
        """Copy consecutive blocks (as :meth:`read_block` gives them) into a slot's first positions."""
        position = 0
        for block in blocks:
            size = block.shape[2]
            for layer, (_, buffer) in enumerate(self._kv):
                buffer[slot, :, position : position + size] = block[layer]
            position += size

    def decode(self, token_ids: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        """One new token for each of slots ``0 .. n-1``; ``lengths`` count it. Logits ``[n, vocab]``."""
        count = len(token_ids)
        ids = np.asarray(token_ids, dtype=np.int64).reshape(count, 1)
        totals = np.asarray(lengths, dtype=np.int64)
        mask = (np.arange(int(totals.max()))[None, :] < totals[:, None]).astype(np.int64)
        return self._run(0, count, ids, mask)

    def verify(self, slot: int, token_ids: Sequence[int], total: int) -> np.ndarray:
        """Run ``token_ids`` (the last token and k drafts) after a slot's first ``total - len(token_ids)``
        positions; logits of every one of them, ``[len(token_ids), vocab]``. The KV of all of them is
        written; the caller's length decides how many count."""
        rows = len(token_ids)
        if not self.multi_row_logits and rows > 1:
            raise InferenceFailedError(
                "this decoder returns one row of logits (re-register the model to verify drafts)"
            )
        ids = np.asarray(token_ids, dtype=np.int64).reshape(1, rows)
        mask = np.ones((1, total), dtype=np.int64)
        logits: np.ndarray = self._run(slot, 1, ids, mask, rows)[0]
        return logits

    def move(self, source: int, target: int, length: int) -> None:
        """Copy a slot's first ``length`` positions into another slot (compaction, or forking ``n`` choices)."""
        for _, buffer in self._kv:
            buffer[target, :, :length] = buffer[source, :, :length]

    def _run(self, first: int, count: int, ids: np.ndarray, mask: np.ndarray, rows: int = 1) -> np.ndarray:
        """Logits ``[count, vocab]`` (one row per slot), or ``[1, rows, vocab]`` when ``rows > 1``."""
        binding = self._binding(first, count, rows)
        binding.bind_cpu_input(self.info.input_ids, ids)
        binding.bind_cpu_input(self.info.attention_mask, mask)
        if self.multi_row_logits:
            binding.bind_cpu_input(NUM_LOGITS, np.array([rows], dtype=np.int64))
        try:
            self.session.run_with_iobinding(binding)
        except Exception as exc:  # noqa: BLE001
            raise InferenceFailedError(f"decoder step failed ({str(exc).splitlines()[0][:300]})") from None
        if rows > 1:
            return self._row_logits[rows]
        return self._logits[:count, 0]

    def _binding(self, first: int, count: int, rows: int = 1) -> ort.IOBinding:
        """Past, present and logits of slots ``first .. first+count-1`` (built once per slot range and
        number of logits rows)."""
        key = (first, count, rows)
        binding = self._bindings.get(key)
        if binding is not None:
            return binding
        binding = self.session.io_binding()
        for name, buffer in self._kv:
            view = buffer[first : first + count]
            shape = list(view.shape)
            binding.bind_input(name, "cpu", 0, np.float32, shape, view.ctypes.data)
            binding.bind_output(self._present[name], "cpu", 0, np.float32, shape, view.ctypes.data)
        if rows > 1:
            logits = self._row_logits.setdefault(rows, np.zeros((1, rows, self.info.vocab_size), np.float32))
        else:
            logits = self._logits[:count]
        binding.bind_output(self.info.logits, "cpu", 0, np.float32, list(logits.shape), logits.ctypes.data)
        self._bindings[key] = binding
        return binding

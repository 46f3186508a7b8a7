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

A run of several tokens per row (a prompt chunk, a verification) takes one row only: onnxruntime's
GroupQueryAttention refuses ``batch_size > 1`` when ``sequence_length > 1`` and past context is
given. So prompt chunks and verifications run one sequence each, beside the batched one-token decode.

Batch invariance: onnxruntime's int4 ``MatMulNBits`` runs a matrix of one row through another kernel
than a matrix of two or more on some hosts (AVX2 without AVX-512: the logits of a row decoded alone
differ from the same row decoded beside others by up to 0.4, enough to change a greedy token after a
dozen or so). From two rows up, each row's result is the same whatever the number of rows and its
place among them (measured: ``tests/unit/runtime/test_onnx_decoder_invariance.py``).
:meth:`OnnxDecoder.lone_row_matches_batched` measures which kind of host this is; where it is the
first kind, :attr:`OnnxDecoder.pad_lone_rows` makes every run have two rows or more: the engine adds
a throwaway row to a lone decode row (``generation/step_scheduler.py``), and a prompt chunk of one token
after cached context re-runs the token before it too (its keys and values come out the same).

LoRA (``lora``: ``--max-loras``): the decoder is opened from the rewrite ``ir/lora_graph.py`` makes (its
weights still read from the import's external file), with the adapters' buffers
(``runtime/lora_weights.py``) bound to every run and each run's rows given their adapter slot
(``adapters`` / ``adapter``: -1 for none, the base model's output bit for bit).
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
from mcp2026ai.ir.lora_graph import LORA_SLOTS, NO_ADAPTER, LoraLayout, lora_model_bytes, lora_targets
from mcp2026ai.runtime.cpu_affinity import confine
from mcp2026ai.runtime.cpu_load import LoadProbe
from mcp2026ai.runtime.lora_weights import LoraStacks
from mcp2026ai.runtime.thread_priority import BLOCKING_WORKERS, lowered_session_config

PLATFORM = "onnxruntime_decoder"
SESSION_CONFIG: dict[str, str] = {}
"""onnxruntime session config entries every decoder gets (benchmarks/engine/decode_step.py compares others)."""
BLOCKING = BLOCKING_WORKERS
_EXTERNAL_FOLDER = "session.model_external_initializers_file_folder_path"
"""Added for the session used while the CPUs are contended (see :class:`OnnxDecoder`)."""


class OnnxDecoder:
    """One decoder over its KV buffers, run by one of two sessions of the same model.

    onnxruntime's intra-op workers spin between parallel sections (a decode step hands work to the
    pool hundreds of times). On an idle machine that is fastest; when other processes want the two
    cores, a spinning worker holds the core its descheduled peer needs to finish its part. So while
    :class:`~mcp2026ai.runtime.cpu_load.LoadProbe` finds the machine contended, runs go to a second
    session whose workers block instead (built on first need; same kernels, same results).
    Measured with aiperf, alternating pairs (docs/notebook/benchmarks.md): idle, spinning gave c=8 327 / 360 /
    357 tok/s vs blocking 323 / 294 / 314 and c=1 180 / 169 / 174 vs 136 / 138 / 126; under load
    (load average 3-5), spinning gave c=8 230 / 192 / 147 vs blocking 261 / 249 / 232 and c=1
    55 / 79 / 40 vs 127 / 110 / 111.
    """

    def __init__(
        self,
        folder: Path,
        info: LLMInfo,
        num_slots: int,
        max_len: int,
        threads: int = 0,
        session_config: Mapping[str, str] | None = None,
        profile_prefix: Path | None = None,
        load_probe: LoadProbe | None = None,
        lora: LoraLayout | None = None,
    ) -> None:
        self._path = folder / info.decoder_file
        self.lora: LoraStacks | None = None
        """The adapter weights (``--max-loras``): the decoder then applies each row's adapter slot."""
        self._model_bytes: bytes | None = None
        if lora is not None:
            targets = lora_targets(self._path, info)
            self.lora = LoraStacks(targets, lora)
            self._model_bytes = lora_model_bytes(self._path, targets, lora)
        self._threads = threads
        self._config = dict(SESSION_CONFIG if session_config is None else session_config)
        self.session = self._session(self._config, profile_prefix)
        self._blocking: ort.InferenceSession | None = None
        self.load_probe = load_probe if load_probe is not None else LoadProbe()
        """Asked before each run: while it finds the CPUs contended, runs use the blocking session."""
        self.last_run_blocking = False
        """Whether the last run went to the blocking session."""
        self.info = info
        self.num_slots = num_slots
        self.max_len = max_len
        self.pad_lone_rows = False
        """Run no matrix of one row (see the module's doc): set where lone rows differ from batched ones."""
        shape = (max(num_slots, 2), info.num_kv_heads, max_len, info.head_size)  # a spare for a lone row's pad
        self._maps: list[mmap.mmap] = []
        self._kv = [
            (name % layer, self._lazy_zeros(shape))
            for layer in range(info.num_layers)
            for name in (info.past_key, info.past_value)
        ]
        self._present = {info.past_key % layer: info.present_key % layer for layer in range(info.num_layers)} | {
            info.past_value % layer: info.present_value % layer for layer in range(info.num_layers)
        }
        self._logits = np.zeros((shape[0], 1, info.vocab_size), np.float32)
        self._bindings: dict[tuple[int, int, int, int], ort.IOBinding] = {}
        self._row_logits: dict[int, np.ndarray] = {}
        self.multi_row_logits = NUM_LOGITS in {i.name for i in self.session.get_inputs()}
        """Whether this decoder can return logits for several trailing positions (speculative decoding)."""

    def _session(self, config: Mapping[str, str], profile_prefix: Path | None = None) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = confine(options, self._threads)
        for key, value in {**config, **lowered_session_config()}.items():  # built lowered: workers block
            options.add_session_config_entry(key, value)
        if self._model_bytes is not None:  # the LoRA graph, its weights in the decoder's external file
            options.add_session_config_entry(_EXTERNAL_FOLDER, str(self._path.parent))
        if profile_prefix is not None:  # onnxruntime's per-node profile (benchmarks/engine/decode_step.py --profile)
            options.enable_profiling = True
            options.profile_file_prefix = str(profile_prefix)
        try:
            model = self._model_bytes if self._model_bytes is not None else str(self._path)
            return ort.InferenceSession(model, options, ["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own pybind types  # noqa: BLE001
            raise InferenceFailedError(f"{self._path}: onnxruntime cannot load it ({exc})") from None

    def _current_session(self) -> tuple[int, ort.InferenceSession]:
        """(0, the spinning session), or (1, the blocking one) while the CPUs are contended."""
        self.last_run_blocking = self._threads != 1 and self.load_probe.contended()
        if not self.last_run_blocking:
            return 0, self.session
        if self._blocking is None:
            self._blocking = self._session({**self._config, **BLOCKING})
        return 1, self._blocking

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

    def prefill(self, slot: int, token_ids: Sequence[int], cached: int = 0, adapter: int = NO_ADAPTER) -> np.ndarray:
        """Run a prompt into a slot whose first ``cached`` positions already hold the prompt's KV (0: an
        empty slot), with an adapter slot's deltas; the logits of its last position, shape ``[vocab]``."""
        if self.pad_lone_rows and cached > 0 and len(token_ids) - cached == 1:
            cached -= 1  # one token alone would take the one-row kernels: run the one before it again too
        ids = np.asarray(token_ids[cached:], dtype=np.int64).reshape(1, -1)
        mask = np.ones((1, len(token_ids)), dtype=np.int64)
        logits: np.ndarray = self._run(slot, 1, ids, mask, adapters=(adapter,))[0]
        return logits

    def lone_row_matches_batched(self) -> bool:
        """Whether a row decoded alone gets exactly the logits it gets beside another row on this host.
        Runs a short prompt into slots 0 and 1 (which must be free), decodes it alone and in two rows,
        and gives both slots back."""
        prompt = [1, 2, 3, 4, 5, 6, 7, 8]
        for slot in (0, 1):
            self.prefill(slot, prompt)
        token, length = 9, len(prompt) + 1
        alone = self.decode([token], [length]).copy()
        beside = self.decode([token, token], [length, length])
        for slot in (0, 1):
            self.release(slot)
        return bool(np.array_equal(alone[0], beside[0]))

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

    def decode(
        self, token_ids: Sequence[int], lengths: Sequence[int], adapters: Sequence[int] | None = None
    ) -> np.ndarray:
        """One new token for each of slots ``0 .. n-1``; ``lengths`` count it; ``adapters``: each row's
        adapter slot (None: none). Logits ``[n, vocab]``."""
        count = len(token_ids)
        ids = np.asarray(token_ids, dtype=np.int64).reshape(count, 1)
        totals = np.asarray(lengths, dtype=np.int64)
        mask = (np.arange(int(totals.max()))[None, :] < totals[:, None]).astype(np.int64)
        return self._run(0, count, ids, mask, adapters=adapters)

    def verify(self, slot: int, token_ids: Sequence[int], total: int, adapter: int = NO_ADAPTER) -> np.ndarray:
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
        logits: np.ndarray = self._run(slot, 1, ids, mask, rows, (adapter,))[0]
        return logits

    def prompt_logits(self, slot: int, token_ids: Sequence[int], adapter: int = NO_ADAPTER) -> np.ndarray:
        """Prefill an empty slot with ``token_ids`` and return the logits of every position (a copy,
        ``[len(token_ids), vocab]``: prompt log-probabilities). Its logits buffer and binding are not
        kept, unlike :meth:`verify`'s few small ones."""
        rows = len(token_ids)
        if rows == 1:
            return self.prefill(slot, token_ids, adapter=adapter)[None, :].copy()
        kept = rows in self._row_logits
        logits = self.verify(slot, token_ids, rows, adapter).copy()
        if not kept:
            self._row_logits.pop(rows, None)
            for key in [key for key in self._bindings if key[3] == rows]:
                del self._bindings[key]
        return logits

    def move(self, source: int, target: int, length: int) -> None:
        """Copy a slot's first ``length`` positions into another slot (compaction, or forking ``n`` choices)."""
        for _, buffer in self._kv:
            buffer[target, :, :length] = buffer[source, :, :length]

    def _run(
        self,
        first: int,
        count: int,
        ids: np.ndarray,
        mask: np.ndarray,
        rows: int = 1,
        adapters: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Logits ``[count, vocab]`` (one row per slot), or ``[1, rows, vocab]`` when ``rows > 1``."""
        index, session = self._current_session()
        binding = self._binding(index, session, first, count, rows)
        binding.bind_cpu_input(self.info.input_ids, ids)
        binding.bind_cpu_input(self.info.attention_mask, mask)
        if self.multi_row_logits:
            binding.bind_cpu_input(NUM_LOGITS, np.array([rows], dtype=np.int64))
        if self.lora is not None:
            chosen = [NO_ADAPTER] * count if adapters is None else list(adapters)
            binding.bind_cpu_input(LORA_SLOTS, np.asarray(chosen, dtype=np.int64))
        elif adapters is not None and any(adapter != NO_ADAPTER for adapter in adapters):
            raise InferenceFailedError("an adapter was asked of a decoder built without LoRA (--max-loras)")
        try:
            session.run_with_iobinding(binding)
        except Exception as exc:  # noqa: BLE001
            raise InferenceFailedError(f"decoder step failed ({str(exc).splitlines()[0][:300]})") from None
        if rows > 1:
            return self._row_logits[rows]
        return self._logits[:count, 0]

    def _binding(
        self, index: int, session: ort.InferenceSession, first: int, count: int, rows: int = 1
    ) -> ort.IOBinding:
        """Past, present and logits of slots ``first .. first+count-1`` (built once per session, slot
        range and number of logits rows)."""
        key = (index, first, count, rows)
        binding = self._bindings.get(key)
        if binding is not None:
            return binding
        binding = session.io_binding()
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
        for name, stack in self.lora.buffers.items() if self.lora is not None else ():
            binding.bind_input(name, "cpu", 0, np.float32, list(stack.shape), stack.ctypes.data)
        self._bindings[key] = binding
        return binding

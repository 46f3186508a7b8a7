"""Convert a language model (a GGUF file or a Hugging Face folder) to an onnxruntime decoder.

Steps: a GGUF file is first turned into a Hugging Face folder (transformers reads and de-quantizes
it); onnxruntime-genai's model builder then writes ``model.onnx`` (GroupQueryAttention with KV-cache
inputs and outputs), ``genai_config.json`` and the tokenizer files. Last, the decoder's LM head is
fed the last ``num_logits`` positions only (a graph input): a prompt's prefill computes one row of
logits instead of one per prompt token, and a speculative step's verification the k+1 rows it needs.

Conversions are cached by the source's sha256, the precision, the builder's version and
:data:`CONVERTER_REVISION`, in ``MCP_LLM_CACHE`` (default ``MCP_HOME/cache/llm``): registering the
same file again skips the conversion (about half a minute for a 135M model).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from mcp2026ai.errors import ModelImportError
from mcp2026ai.extras import require
from mcp2026ai.ir.conversion import first_line, quiet_stdout
from mcp2026ai.ir.llm_architecture import check_convertible
from mcp2026ai.ir.llm_defaults import complete_folder
from mcp2026ai.ir.llm_info import INFO_FILE, LLMPrecision, read_llm_info, save_llm_info
from mcp2026ai.ir.llm_sampling import sampling_of_gguf, sampling_of_hf, write_sampling

SOURCE_GGUF = "gguf"
SOURCE_HF = "huggingface"
CONVERTER_REVISION = "3"
"""Bump when this module's output changes for the same source and builder version (3: the model's sampling
defaults and Gemma 3's own chat template are written beside the decoder)."""
CACHE_VARIABLE = "MCP_LLM_CACHE"
_CHUNK = 1 << 20
_INT64_MAX = 2**63 - 1
NUM_LOGITS = "num_logits"
"""Decoder input (int64, shape [1]): how many trailing positions get logits (revision 2 on)."""


def is_llm_source(path: Path) -> bool:
    """A ``.gguf`` file, or a folder with a Hugging Face ``config.json``."""
    return path.suffix.lower() == ".gguf" or (path.is_dir() and (path / "config.json").is_file())


def source_format(path: Path) -> str:
    return SOURCE_GGUF if path.suffix.lower() == ".gguf" else SOURCE_HF


def source_digest(path: Path) -> str:
    """sha256 of a file, or of a folder's relative file names and contents."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with file.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def builder_version() -> str:
    require("onnxruntime_genai", "importing a language model", ModelImportError)
    return importlib.metadata.version("onnxruntime-genai")


def default_cache_dir(home: Path) -> Path:
    configured = os.environ.get(CACHE_VARIABLE)
    return Path(configured) if configured else home / "cache" / "llm"


def convert_llm(source: Path, precision: LLMPrecision, cache_dir: Path, digest: str | None = None) -> Path:
    """The folder of the converted model (from the cache when this source was converted before)."""
    digest = digest or source_digest(source)
    target = cache_dir / f"{digest[:24]}-{precision.value}-genai{builder_version()}-r{CONVERTER_REVISION}"
    if (target / INFO_FILE).is_file():
        return target
    check_convertible(source)
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=cache_dir, prefix=".convert-"))
    try:
        hf_folder = source if source.is_dir() else gguf_to_hf(source, work / "hf")
        out = work / "onnx"
        run_builder(hf_folder, out, precision, work / "builder-cache")
        info = complete_folder(out, read_llm_info(out, precision, source_format(source)))
        write_sampling(out, sampling_of_hf(source) if source.is_dir() else sampling_of_gguf(source))
        keep_last_logits(out / info.decoder_file, info.logits)
        save_llm_info(out, info)
        try:
            os.replace(out, target)
        except OSError:  # a concurrent conversion of the same source finished first
            if not (target / INFO_FILE).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def gguf_to_hf(gguf: Path, folder: Path) -> Path:
    """De-quantize a GGUF file into a float32 Hugging Face folder (weights, config, tokenizer, template)."""
    purpose = "importing a GGUF language model"
    require("gguf", purpose, ModelImportError)
    require("torch", purpose, ModelImportError)
    transformers = require("transformers", purpose, ModelImportError)
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    try:
        with quiet_stdout(), _no_progress_bars():
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = transformers.AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model.hf_quantizer = None  # de-quantized to float32 already; save it as a plain checkpoint
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(str(folder))
            tokenizer.save_pretrained(str(folder))
    except Exception as exc:  # transformers and gguf raise many types on a bad file  # noqa: BLE001
        raise ModelImportError(f"{gguf}: transformers cannot read this GGUF file ({first_line(exc)})") from None
    return folder


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' GGUF reader draws tqdm bars of its own on stderr: off while converting."""
    saved = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = saved


def run_builder(hf_folder: Path, out: Path, precision: LLMPrecision, cache: Path) -> None:
    """onnxruntime-genai's model builder, in a child process (it prints a lot and peaks near 2 GB)."""
    require("onnx_ir", "importing a language model", ModelImportError)
    command = [sys.executable, "-m", "mcp2026ai.ir.llm_builder_launch", "-i", str(hf_folder), "-o", str(out)]
    command += ["-p", precision.value, "-e", "cpu", "-c", str(cache)]
    command += ["--extra_options", "windowed_kv_cache=false"]  # sliding layers keep full-length KV slots
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0 or not (out / "genai_config.json").is_file():
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line or "Exception" in line]  # not a trailing warning
        reason = (errors or lines)[-1].strip()[:300] if lines else f"exit status {done.returncode}"
        raise ModelImportError(f"{hf_folder}: the onnxruntime-genai model builder failed ({reason})")


def keep_last_logits(model_path: Path, logits_name: str) -> None:
    """Feed the LM head the last ``num_logits`` positions only: ``logits`` becomes ``[batch, num_logits, vocab]``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(model_path), load_external_data=False)  # weights stay in their data file
    graph = model.graph
    index, head = next(((i, n) for i, n in enumerate(graph.node) if logits_name in n.output), (None, None))
    if head is None or index is None:
        raise ModelImportError(f"{model_path}: no node computes {logits_name!r}")
    hidden = head.input[0]
    sliced = f"{hidden}/last_positions"
    graph.input.append(helper.make_tensor_value_info(NUM_LOGITS, TensorProto.INT64, [1]))
    for name, value in (("ends", _INT64_MAX), ("axes", 1)):
        graph.initializer.append(numpy_helper.from_array(_int64([value]), f"{sliced}/{name}"))
    nodes = [
        helper.make_node("Neg", [NUM_LOGITS], [f"{sliced}/starts"], name=f"{sliced}/Neg"),
        helper.make_node(
            "Slice", [hidden, f"{sliced}/starts", f"{sliced}/ends", f"{sliced}/axes"], [sliced], name=f"{sliced}/Slice"
        ),
    ]
    head.input[0] = sliced
    for offset, node in enumerate(nodes):
        graph.node.insert(index + offset, node)
    output = next(o for o in graph.output if o.name == logits_name)
    output.type.tensor_type.shape.dim[1].ClearField("dim_value")
    output.type.tensor_type.shape.dim[1].dim_param = NUM_LOGITS
    onnx.save(model, str(model_path))


def _int64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)

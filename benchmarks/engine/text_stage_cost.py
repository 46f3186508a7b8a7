"""Per-token CPU cost of what an engine step does for each token, split by where it runs now.

On the engine thread (the step's critical path): sampling (greedy; temperature 1 with top-p 0.95),
and for a request with logprobs the copy of its logits row. On the stream's event loop, while the next
step runs (``generation/text_stage.py``): detokenizing with stop strings, and the log-probabilities.
Costs are this thread's CPU time (``time.thread_time``: other processes on the machine stretch wall
time, not this) per token, on a real logits row of SmolLM2-135M int4 and real generated tokens; the
median of ``--repeats`` passes over ``--tokens`` tokens.

Then whether the overlap can pay: a second Python thread spins (pure Python, holding the GIL whenever
it can) while the decoder runs ``--runs`` batch-8 decode steps. If onnxruntime holds the GIL during a
run, that thread gets no CPU time during it; if it releases it, the thread runs, and the cost shows as
the run's slowdown (its cores are shared). Printed: the spinner's CPU time as a share of the runs' wall
time, and the median run time with and without it.

    PYTHONPATH=src .venv/bin/python benchmarks/engine/text_stage_cost.py [--tokens 64] [--repeats 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: benchmarks.* imports

from benchmarks.engine.generation_engine import prompt_ids
from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.sampling import Sampler, token_logprob
from mcp2026ai.generation.text_stage import TextStage, TokenStep
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"


def per_token_us(run: Callable[[], None], tokens: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.thread_time()
        run()
        times.append((time.thread_time() - started) / tokens * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=30, help="batch-8 decode runs per GIL measurement")
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    engine = build_engine("cost", folder, EngineConfig(max_num_seqs=8, max_model_len=512))
    try:
        ids = prompt_ids(engine, 0, 110)
        request = GenerationRequest("cost", ids, SamplingParams(max_tokens=args.tokens, temperature=0, ignore_eos=True))

        async def generate() -> list[int]:
            return (await engine.submit(request).collect(1))[0].token_ids

        tokens = asyncio.run(generate())
        row = engine.decoder.prefill(0, ids).copy()
        gil = gil_free_share(engine, args.runs)
    finally:
        engine.close()
    vocab = engine.info.vocab_size
    n = len(tokens)
    greedy = Sampler(SamplingParams(temperature=0), ids, vocab)
    top_p = Sampler(SamplingParams(temperature=1.0, top_p=0.95, seed=1), ids, vocab)

    def stage(stop: tuple[str, ...], logprobs: int | None) -> Callable[[], None]:
        def run() -> None:
            text = TextStage(engine.tokenizer, SamplingParams(stop=stop, logprobs=logprobs), lambda *_: None)
            logits = row if logprobs is not None else None
            for token in tokens:
                text.assemble([TokenStep(0, token, logits=logits)])

        return run

    on_step = {
        "sample, greedy": lambda: [greedy.sample(row, with_logprob=False) for _ in range(n)],
        "sample, temperature 1 top-p 0.95": lambda: [top_p.sample(row, with_logprob=False) for _ in range(n)],
        "copy of the logits row (logprobs asked)": lambda: [row.copy() for _ in range(n)],
    }
    off_step = {
        "detokenize": stage((), None),
        "detokenize + 2 stop strings": stage(("zebra crossing", "\n\n\n"), None),
        "log-probabilities, 5 alternatives": lambda: [token_logprob(row, token, 5) for token in tokens],
        "detokenize + stop strings + logprobs 5": stage(("zebra crossing", "\n\n\n"), 5),
    }
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"{n} tokens, median of {args.repeats} passes, thread CPU time (load average {load})")
    print("| where | part | us per token |\n|---|---|---|")
    for where, parts in (("engine thread (on the step)", on_step), ("event loop (off the step)", off_step)):
        for name, run in parts.items():
            print(f"| {where} | {name} | {per_token_us(run, n, args.repeats):.1f} |")  # type: ignore[arg-type]
    share, alone, beside = gil
    print(
        f"\nDuring {args.runs} batch-8 decode runs a spinning Python thread got {share:.0%} of their wall time "
        f"as CPU time (onnxruntime releases the GIL while it runs); a run took {alone:.1f} ms alone and "
        f"{beside:.1f} ms beside it (median)."
    )


def gil_free_share(engine: Engine, runs: int) -> tuple[float, float, float]:
    """(spinner CPU time / decode wall time, median run ms alone, median run ms beside the spinner)."""
    tokens, lengths = [1] * 8, [64] * 8

    def timed() -> list[float]:
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            engine.decoder.decode(tokens, lengths)
            times.append((time.perf_counter() - started) * 1000)
        return times

    alone = timed()
    stop = threading.Event()
    spent: list[float] = []

    def spin() -> None:
        started = time.thread_time()
        while not stop.is_set():
            sum(range(200))
        spent.append(time.thread_time() - started)

    spinner = threading.Thread(target=spin)
    spinner.start()
    started = time.perf_counter()
    beside = timed()
    wall = time.perf_counter() - started
    stop.set()
    spinner.join()
    return spent[0] / wall, statistics.median(alone), statistics.median(beside)


if __name__ == "__main__":
    main()

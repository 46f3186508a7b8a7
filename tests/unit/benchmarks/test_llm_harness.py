"""The text-generation benchmark's own logic: aiperf's command and export, the table, server probing.

aiperf itself never runs here: exports are built in aiperf 0.13's ``profile_export_aiperf.json``
schema (metric -> {unit, avg, p50, p99, ...}), and the OpenAI probe talks to a real local HTTP server.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks.llm.llm_aiperf import AiperfError, Workload, aiperf_command, parse_export, run_aiperf, workloads
from benchmarks.llm.llm_report import render
from benchmarks.llm.llm_servers import served_model_id


def _metric(unit: str, avg: float, p50: float | None = None, p99: float | None = None) -> dict[str, Any]:
    metric: dict[str, Any] = {"unit": unit, "avg": avg}
    if p50 is not None:
        metric |= {"p50": p50, "p99": p99, "min": p50, "max": p99, "count": 8}
    return metric


def _export(**overrides: Any) -> dict[str, Any]:
    """A profile_export_aiperf.json as aiperf 0.13 writes it (the fields the harness reads, and others)."""
    document: dict[str, Any] = {
        "schema_version": "1.0",
        "aiperf_version": "0.13.0",
        "request_count": _metric("requests", 8.0),
        "benchmark_duration": _metric("sec", 9.5),
        "output_token_throughput": _metric("tokens/sec", 107.8),
        "output_sequence_length": _metric("tokens", 128.0, 128.0, 128.0),
        "time_to_first_token": _metric("ms", 402.5, 350.1, 910.7),
        "inter_token_latency": _metric("ms", 7.9, 7.6, 9.8),
        "request_latency": _metric("ms", 1400.0, 1350.0, 2100.0),
        "error_summary": [],
        "was_cancelled": False,
        "is_complete": True,
    }
    return document | overrides


def test_export_figures_are_read_from_their_metrics() -> None:
    result = parse_export(_export())
    assert (result.requests, result.errors, result.duration_s) == (8, 0, 9.5)
    assert result.output_tokens_per_s == pytest.approx(107.8)
    assert result.output_tokens_mean == pytest.approx(128.0)
    assert (result.ttft_p50_ms, result.ttft_p99_ms) == (pytest.approx(350.1), pytest.approx(910.7))
    assert (result.itl_p50_ms, result.itl_p99_ms) == (pytest.approx(7.6), pytest.approx(9.8))


def test_failed_requests_are_counted_next_to_the_figures() -> None:
    errors = [{"error_details": {"code": 500, "type": "ServerError", "message": "boom"}, "count": 3}]
    result = parse_export(_export(request_count=_metric("requests", 5.0), error_summary=errors))
    assert (result.requests, result.errors) == (5, 3)


def test_a_run_where_every_request_failed_names_the_error() -> None:
    errors = [{"error_details": {"code": 404, "type": "NotFound", "message": "model smollm2 not found"}, "count": 8}]
    document = _export(error_summary=errors)
    del document["request_count"], document["time_to_first_token"]
    with pytest.raises(AiperfError, match=r"no request succeeded \(8 errors: .*model smollm2 not found"):
        parse_export(document)


def test_a_cancelled_run_is_not_used() -> None:
    with pytest.raises(AiperfError, match="cancelled"):
        parse_export(_export(was_cancelled=True))


def test_a_missing_percentile_is_an_error_naming_it() -> None:
    with pytest.raises(AiperfError, match=r"inter_token_latency\.p99"):
        parse_export(_export(inter_token_latency={"unit": "ms", "avg": 7.9, "p50": 7.6}))


def test_command_bounds_the_client_and_sets_the_workload(tmp_path: Path) -> None:
    workload = Workload(concurrency=8, requests=32, seed=12345)
    command = aiperf_command(Path("aiperf"), "http://127.0.0.1:9", "smollm2", tmp_path / "tok", workload, tmp_path)

    def value(flag: str) -> str:
        return command[command.index(flag) + 1]

    assert command[:2] == ["aiperf", "profile"]
    assert value("--concurrency") == "8"
    assert float(value("--request-rate")) >= 8  # a rate with the concurrency: no spinning client
    assert value("--request-count") == "32"
    assert value("--random-seed") == "12345"
    assert value("--tokenizer") == str((tmp_path / "tok").resolve())  # aiperf needs an absolute folder
    assert "--streaming" in command and value("--extra-inputs") == "ignore_eos:true"
    assert value("--connection-reuse-strategy") == "never"  # no reuse of a connection the server timed out
    assert value("--prompt-input-tokens-mean") == value("--prompt-output-tokens-mean") == "128"


def test_every_run_gets_a_fresh_seed_and_a_bounded_request_count() -> None:
    first = workloads([1, 8], requests_per_stream=4, min_requests=8)
    second = workloads([1, 8], requests_per_stream=4, min_requests=8)
    assert [(w.concurrency, w.requests) for w in first] == [(1, 8), (8, 32)]
    seeds = [w.seed for w in first + second]
    assert len(set(seeds)) == len(seeds)  # the same seed would replay the same prompts into a prompt cache


def test_run_aiperf_reports_the_tail_of_a_failed_run(tmp_path: Path) -> None:
    script = tmp_path / "fake_aiperf.py"
    script.write_text("import sys\nprint('loading tokenizer')\nprint('TokenizerError: not a folder')\nsys.exit(1)\n")
    with pytest.raises(AiperfError, match=r"exited with 1: .*TokenizerError: not a folder"):
        run_aiperf([sys.executable, str(script)], tmp_path / "run", timeout_s=60)


def test_run_aiperf_parses_the_export_a_run_leaves(tmp_path: Path) -> None:
    artifacts = tmp_path / "run"
    script = tmp_path / "writes_export.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"pathlib.Path({str(artifacts)!r}, 'profile_export_aiperf.json').write_text(sys.argv[1])\n"
    )
    result = run_aiperf([sys.executable, str(script), json.dumps(_export())], artifacts, timeout_s=60)
    assert result.output_tokens_per_s == pytest.approx(107.8)
    assert (artifacts / "aiperf.out").exists()


def _row(server: str, concurrency: int, tokens_per_s: float, ttft_p50: float) -> dict[str, Any]:
    return {
        "server": server,
        "concurrency": concurrency,
        "requests": 8,
        "errors": 0,
        "output_tokens_per_s": tokens_per_s,
        "output_tokens_mean": 128.0,
        "ttft_p50_ms": ttft_p50,
        "ttft_p99_ms": ttft_p50 * 2,
        "itl_p50_ms": 8.0,
        "itl_p99_ms": 12.0,
        "server_cores": 1.9,
    }


def _cells(table: str, server: str, concurrency: int) -> list[str]:
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[:2] == [server, str(concurrency)]:
            return cells
    raise AssertionError(f"no row for {server} c={concurrency} in:\n{table}")


def test_report_gives_ratios_against_llama_server_at_the_same_concurrency() -> None:
    rows = [
        _row("llama-server", 1, 100.0, 300.0),
        _row("llama-server", 8, 200.0, 2000.0),
        _row("transformers", 1, 25.0, 600.0),
        _row("transformers", 8, 20.0, 30000.0),
    ]
    table = render(rows, 300.0, {})
    assert _cells(table, "transformers", 1)[-2:] == ["0.25", "2.00"]
    assert _cells(table, "transformers", 8)[-2:] == ["0.10", "15.00"]
    assert _cells(table, "llama-server", 8)[-2:] == ["1.00", "1.00"]
    assert _cells(table, "transformers", 1)[3:8] == ["25.0", "600 / 1200", "8.0 / 12.0", "128", "1.90"]


def test_report_lists_failed_runs_and_skipped_servers_without_ratios() -> None:
    rows = [
        _row("transformers", 1, 25.0, 600.0),
        {"server": "llama-server", "concurrency": 1, "error": "aiperf exited with 1"},
    ]
    reason = "mcp2026ai has no OpenAI routes (GET /v1/models answered 404)"
    table = render(rows, 60.0, {"mcp2026ai": reason})
    assert "not measured: aiperf exited with 1" in _cells(table, "llama-server", 1)[2]
    assert _cells(table, "transformers", 1)[-2:] == ["-", "-"]
    assert f"- mcp2026ai: not measured: {reason}" in table


class _Models(http.server.BaseHTTPRequestHandler):
    body: bytes | None = None

    def do_GET(self) -> None:
        if self.path != "/v1/models" or self.body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def models_server() -> Iterator[tuple[str, type[_Models]]]:
    handler = type("Handler", (_Models,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_probe_finds_the_model_of_an_openai_server(models_server: tuple[str, type[_Models]]) -> None:
    url, handler = models_server
    handler.body = json.dumps({"object": "list", "data": [{"id": "smollm2", "object": "model"}]}).encode()
    assert served_model_id(url) == "smollm2"


def test_probe_reads_llama_servers_models_list_too(models_server: tuple[str, type[_Models]]) -> None:
    url, handler = models_server
    handler.body = json.dumps({"models": [{"name": "smollm2", "model": "smollm2"}], "object": "list"}).encode()
    assert served_model_id(url) == "smollm2"


def test_probe_says_none_without_openai_routes_or_models(models_server: tuple[str, type[_Models]]) -> None:
    url, handler = models_server
    assert served_model_id(url) is None  # 404: a server with no /v1/models (mcp serve before its OpenAI routes)
    handler.body = json.dumps({"object": "list", "data": []}).encode()
    assert served_model_id(url) is None
    assert served_model_id("http://127.0.0.1:9") is None  # nothing listening

"""The text-generation benchmark's markdown table: one row per (server, concurrency), ratios vs llama-server."""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]
REFERENCE = "llama-server"


def _ratio(value: float | None, reference: float | None) -> str:
    if value is None or not reference:
        return "-"
    return f"{value / reference:.2f}"


def _reference(rows: list[Row], concurrency: int) -> Row | None:
    for row in rows:
        if row["server"] == REFERENCE and row["concurrency"] == concurrency and "error" not in row:
            return row
    return None


def render(rows: list[Row], seconds: float, skipped: dict[str, str]) -> str:
    """The table of ``rows`` (one per aiperf run; a row with ``error`` is listed as not measured)
    plus a line per server that could not run (``skipped``: server -> reason)."""
    lines = [
        f"One run: {seconds:.0f} s. Each cell is one bounded aiperf run (streamed chat completions, "
        "~128-token prompts, 128 output tokens); TTFT and ITL percentiles are over requests "
        "(ITL: a request's mean gap between tokens after the first). Server cores: the server's CPU "
        "seconds per second of the run (2 at most here; less while saturated means others took CPU).",
        "",
        "| server | c | requests | output tok/s | TTFT p50 / p99 (ms) | ITL p50 / p99 (ms) | mean output tokens"
        f" | server cores | tok/s vs {REFERENCE} | TTFT p50 vs {REFERENCE} |",
        "|---" * 10 + "|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['server']} | {row['concurrency']} | not measured: {row['error']} |" + " |" * 7)
            continue
        reference = _reference(rows, row["concurrency"])
        errors = f" ({row['errors']} failed)" if row.get("errors") else ""
        ttft = f"{row['ttft_p50_ms']:.0f} / {row['ttft_p99_ms']:.0f}"
        itl = f"{row['itl_p50_ms']:.1f} / {row['itl_p99_ms']:.1f}"
        cores = f"{row['server_cores']:.2f}" if "server_cores" in row else "-"
        lines.append(
            f"| {row['server']} | {row['concurrency']} | {row['requests']}{errors} | {row['output_tokens_per_s']:.1f}"
            f" | {ttft} | {itl} | {row['output_tokens_mean']:.0f} | {cores}"
            f" | {_ratio(row['output_tokens_per_s'], reference and reference['output_tokens_per_s'])}"
            f" | {_ratio(row['ttft_p50_ms'], reference and reference['ttft_p50_ms'])} |"
        )
    if skipped:
        lines.append("")
        lines += [f"- {server}: not measured: {reason}" for server, reason in skipped.items()]
    return "\n".join(lines) + "\n"

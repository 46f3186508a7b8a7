"""Turn benchmark rows into the markdown tables of docs/notebook/benchmarks.md (medians over rounds)."""

from __future__ import annotations

from collections import defaultdict
from statistics import median
from typing import Any

Row = dict[str, Any]
OURS = "mcp2026ai"
OURS_VARIANTS = (OURS, "mcp2026ai-w2", "mcp2026ai-tput")
"""Our server as one process (the default) and with ``--workers 2``: both are compared with the peers."""
TARGET_CEILING = 0.9
TARGET_VS = {"mlserver": 1.5, "pytriton": 1.0}


def _median(rows: list[Row], key: str) -> float | None:
    values = [row[key] for row in rows if key in row]
    return median(values) if values else None


def _group(rows: list[Row], kind: str, *keys: str) -> dict[tuple[Any, ...], list[Row]]:
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        if row.get("kind") == kind:
            groups[tuple(row.get(key) for key in keys)].append(row)
    return groups


def ceilings(rows: list[Row], key: str = "rows_per_s") -> dict[str, dict[int, float]]:
    """The best runtime's ceiling per model and batch: each runtime's median over rounds, then the best
    (most rows/s; for CPU per row, that same runtime's figure). Rows of older runs carry no runtime: onnxruntime's."""
    best: dict[tuple[str, int], tuple[float, float]] = {}
    for (model, batch, _), group in _group(rows, "ceiling", "model", "batch", "runtime").items():
        speed, value = _median(group, "rows_per_s"), _median(group, key)
        if speed is not None and value is not None and speed > best.get((model, batch), (-1.0, 0.0))[0]:
            best[(model, batch)] = (speed, value)
    table: dict[str, dict[int, float]] = defaultdict(dict)
    for (model, batch), (_, value) in best.items():
        table[model][batch] = value
    return table


def served(rows: list[Row]) -> dict[tuple[str, str, str, int | None], list[Row]]:
    return _group(rows, "served", "model", "server", "protocol", "concurrency")


def _errors(rows: list[Row]) -> dict[tuple[str, str, str], str]:
    found = {}
    for row in rows:
        if row.get("kind") == "served" and "error" in row:
            found.setdefault((row["model"], row["server"], row["protocol"]), row["error"])
    return found


def render(rows: list[Row], levels: list[int], seconds: float, hangs: int = 0) -> str:
    ceiling = ceilings(rows)
    cells = served(rows)
    rounds = 1 + max((row.get("round", 0) for row in rows), default=0)
    lines = [
        f"One run: {seconds:.0f} s, {rounds} interleaved round(s); figures are medians over rounds,"
        f" each from one bounded perf_analyzer run. perf_analyzer hangs retried: {hangs}.",
        "",
        "### Ceiling: the best runtime (onnxruntime, OpenVINO where installed), offline (rows/s, CPU ms per row)",
        "",
        "| model | " + " | ".join(f"batch {b}" for b in levels) + " |",
        "|---" * (1 + len(levels)) + "|",
    ]
    cpu = ceilings(rows, "cpu_ms_per_row")
    for model, by_batch in ceiling.items():
        cells_text = [f"{by_batch.get(b, 0):.1f} /s, cpu {cpu.get(model, {}).get(b, 0):.3g}" for b in levels]
        lines.append(f"| {model} | " + " | ".join(cells_text) + " |")
    lines += ["", "### Served under perf_analyzer (infer/s, p99 ms, server CPU ms per request)", ""]
    lines.append("| model | server | protocol | " + " | ".join(f"c={c}" for c in levels) + " | best / ceiling |")
    lines.append("|---" * (4 + len(levels)) + "|")
    errors = _errors(rows)
    combos = sorted({key[:3] for key in cells})
    for model, server, protocol in combos:
        if (model, server, protocol) in errors and not _has_figures(cells, model, server, protocol, levels):
            continue
        figures = [_cell(cells.get((model, server, protocol, c), [])) for c in levels]
        best = max((_median(cells.get((model, server, protocol, c), []), "throughput") or 0 for c in levels), default=0)
        top = max(ceiling.get(model, {}).values(), default=0)
        ratio = f"{best / top:.2g}" if top else "-"
        lines.append(f"| {model} | {server} | {protocol} | " + " | ".join(figures) + f" | {ratio} |")
    lines += ["", *_ratios(cells, levels), "", *_targets(cells, ceiling, levels), *_efficiency(cells, cpu, levels)]
    lines += _per_level(cells, ceiling, levels)
    lines += _plans(rows)
    if errors:
        lines += ["", "Not measured:", ""]
        lines += [f"- {m} / {s} / {p}: {reason}" for (m, s, p), reason in sorted(errors.items())]
    return "\n".join(lines) + "\n"


def _plans(rows: list[Row]) -> list[str]:
    """The execution plan our policy chose for each (model, server): it explains a surprising figure."""
    chosen = [row for row in rows if row.get("kind") == "plan"]
    if not chosen:
        return []
    return ["", "### Plans our policy chose", "", *(f"- {r['model']} / {r['server']}: {r['plan']}" for r in chosen)]


def _has_figures(cells: dict, model: str, server: str, protocol: str, levels: list[int]) -> bool:
    return any(_median(cells.get((model, server, protocol, c), []), "throughput") for c in levels)


def _cell(group: list[Row]) -> str:
    throughput, p99, cpu = _median(group, "throughput"), _median(group, "p99_ms"), _median(group, "cpu_ms_per_request")
    if throughput is None or p99 is None:
        return "n/a"
    shown = f"{throughput:.1f}" if throughput < 10 else f"{throughput:.0f}"
    return f"{shown} /s, p99 {p99:.1f}" + (f", cpu {cpu:.2f}" if cpu is not None else "")


def _ratios(cells: dict, levels: list[int]) -> list[str]:
    top = max(levels)
    lines = [
        f"### mcp2026ai vs peers at concurrency {top} (same run)",
        "",
        "| model | protocol | ours | peer | req/s ratio | p99 ours / peer (ms) | server CPU ms/request ours / peer |",
        "|---|---|---|---|---|---|---|",
    ]
    peers = sorted(k for k in cells if k[1] not in OURS_VARIANTS and k[3] == top)
    for variant in OURS_VARIANTS:
        for model, server, protocol, level in peers:
            ours, peer = cells.get((model, variant, protocol, top), []), cells[(model, server, protocol, level)]
            a, b = _median(ours, "throughput"), _median(peer, "throughput")
            pa, pb = _median(ours, "p99_ms"), _median(peer, "p99_ms")
            ca, cb = _median(ours, "cpu_ms_per_request"), _median(peer, "cpu_ms_per_request")
            cpu = f"{ca:.2f} / {cb:.2f}" if ca is not None and cb is not None else "-"
            if a and b and pa and pb:
                row = f"| {model} | {protocol} | {variant} | {server} | {a / b:.2f} | {pa:.1f} / {pb:.1f} | {cpu} |"
                lines.append(row)
    return lines


def _per_level(cells: dict, ceiling: dict, levels: list[int]) -> list[str]:
    """Issue 23's figures for the image models: each of our variants at each concurrency c against the
    best runtime's ceiling at batch c and against PyTriton at the same c and protocol."""
    lines = ["", "### Served / ceiling and vs PyTriton at each concurrency (image models)", ""]
    lines += ["| model | server | protocol | " + " | ".join(f"c={c}: / ceiling, / pytriton" for c in levels) + " |"]
    lines += ["|---|---|---|" + "---|" * len(levels)]
    keys = sorted({(m, s, p) for (m, s, p, _) in cells if m != "mlp" and s in OURS_VARIANTS})
    for model, server, protocol in keys:
        parts = []
        for level in levels:
            ours = _median(cells.get((model, server, protocol, level), []), "throughput")
            peer = _median(cells.get((model, "pytriton", protocol, level), []), "throughput")
            top = ceiling.get(model, {}).get(level)
            vs_ceiling = f"{ours / top:.2f}" if ours and top else "-"
            vs_peer = f"{ours / peer:.2f}x" if ours and peer else "-"
            parts.append(f"{vs_ceiling}, {vs_peer}")
        lines.append(f"| {model} | {server} | {protocol} | " + " | ".join(parts) + " |")
    return lines if len(lines) > 4 else []


def _efficiency(cells: dict, cpu: dict, levels: list[int]) -> list[str]:
    """Served CPU per request against the ceiling's CPU per row, at the same batch/concurrency level."""
    lines = []
    for protocol in ("http", "grpc"):
        pairs = []
        for level in levels:
            served_cpu = _median(cells.get(("resnet50", OURS, protocol, level), []), "cpu_ms_per_request")
            ceiling_cpu = cpu.get("resnet50", {}).get(level)
            if served_cpu and ceiling_cpu:
                pairs.append(f"c={level}: {ceiling_cpu:.0f} / {served_cpu:.0f} = {ceiling_cpu / served_cpu:.2f}")
        if pairs:
            lines.append(
                f"- ResNet-50 {protocol} CPU efficiency, ceiling ms/row / served ms/request: " + "; ".join(pairs)
            )
    return lines


def _targets(cells: dict, ceiling: dict, levels: list[int]) -> list[str]:
    lines = ["### Targets (issue 4)", ""]
    top_level = max(levels)
    for protocol in ("http", "grpc"):
        best = max(_median(cells.get(("resnet50", OURS, protocol, c), []), "throughput") or 0 for c in levels)
        top = max(ceiling.get("resnet50", {}).values(), default=0)
        if best and top:
            verdict = "met" if best >= TARGET_CEILING * top else "MISSED"
            lines.append(
                f"- ResNet-50 served {protocol} >= {TARGET_CEILING} x ceiling: "
                f"{best:.2f} / {top:.2f} = {best / top:.2f} ({verdict})"
            )
    for variant in OURS_VARIANTS:
        for peer, factor in TARGET_VS.items():
            for protocol in ("http", "grpc"):
                ours = cells.get(("mlp", variant, protocol, top_level), [])
                theirs = cells.get(("mlp", peer, protocol, top_level), [])
                a, b = _median(ours, "throughput"), _median(theirs, "throughput")
                pa, pb = _median(ours, "p99_ms"), _median(theirs, "p99_ms")
                if not (a and b and pa and pb):
                    continue
                met = a >= factor * b and pa < pb
                lines.append(
                    f"- MLP c={top_level} {protocol}, {variant}: >= {factor} x {peer} req/s with lower p99: "
                    f"{a:.0f} vs {b:.0f} = {a / b:.2f}x, p99 {pa:.1f} vs {pb:.1f} ms ({'met' if met else 'MISSED'})"
                )
    return lines

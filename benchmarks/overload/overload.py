"""Overload at a multiple of capacity with thousands of connections: goodput, per-class p99 and
rejection share, server memory.

1. `mcp serve` runs a model of known per-batch cost (tests/support/models.py chained matmul: batches
   of at most 4 rows, each costing about the same), and its capacity is measured closed-loop, before
   the overload and again after it (the ratios use the mean of both).
2. Three open-loop `mcp bench` clients (latency-critical, throughput-guaranteed, best-effort, by the
   X-SLA-Class header) each offer ``--load / 3`` times that capacity for ``--seconds``, with up to
   ``--connections / 3`` requests (connections) in flight each; they open their connections first and
   begin sending together (``--start-at``; ``--no-sync-start``: each as soon as it is connected).
3. The table: goodput (answered 200 per second) against capacity, each class's p99 and share of
   refusals, the server's resident memory before, at its peak, and after, and the CPU time of the
   server's event loop (its main thread: HTTP parsing, admission, JSON, refusals; the model runs on
   other threads) over the overload phase per request sent, a figure that other load on the
   machine moves much less than the rates.

    .venv/bin/python benchmarks/overload/overload.py [--load 4] [--connections 3000] [--seconds 10]

The clients share the machine with the server (2 cores here): their CPU is load too, so goodput is
quoted against the capacity measured with the same client, and the run is bounded in time.
``--split-cores`` pins the server to half of the CPUs and every client (the capacity one too) to
the other half, as if the clients ran on other machines.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # tests/support/models.py: the project's generated test models

from support.models import chained_matmul_model  # noqa: E402

sys.path.insert(0, str(ROOT))  # benchmarks.* imports
from benchmarks.local_server import MCP, serve_model  # noqa: E402
from benchmarks.overload import loop_accounting, request_breakdown  # noqa: E402

CLASSES = ("latency-critical", "throughput-guaranteed", "best-effort")
CONTRACT = "batching: {max_batch_size: 4, max_queue_delay_ms: 2}\n"
# How often the server's /metrics is read during the load: a scrape with 8,000 connections open costs the
# the server about 11 ms (py-spy, under the overload: its process collector lists every open descriptor),
# so reading it every 0.25 s took 4-5 % of a core from the server being measured.
SCRAPE_EVERY_S = 1.0
START_AFTER_S = 5.0
"""The overload clients begin sending together this long after their launch (``mcp bench --start-at``):
three of them importing on two busy cores took 1.5-2.5 s, and opening 2,667 connections each 0.3-1.2 s.
Unsynchronized, the first one ready sent while the others still opened theirs, and the latency-critical
client's first half second measured that connection storm (11 of its 51 requests over 50 ms in one run)."""


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) / 1024 if match else 0.0


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU time so far of a process, or of one of its threads (/proc stat fields 14, 15)."""
    stat = Path(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU-seconds of the whole machine so far, over every CPU (/proc/stat's first line;
    busy is all but idle and iowait)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is counted in user)
    return (total - fields[3] - fields[4]) / ticks, total / ticks


def run_queue_wait(pid: int) -> tuple[float, float, float, float]:
    """Seconds the server's event loop (its main thread) and its other threads (the model's) ran, and
    seconds they were runnable but waited for a CPU, so far (/proc/<pid>/task/*/schedstat; threads that
    ended are not counted)."""
    totals = [0.0, 0.0, 0.0, 0.0]
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ran, waited = (int(value) / 1e9 for value in (task / "schedstat").read_text().split()[:2])
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
        offset = 0 if task.name == str(pid) else 2
        totals[offset] += ran
        totals[offset + 1] += waited
    return totals[0], totals[1], totals[2], totals[3]


def listen_overflows() -> int:
    """Connections the kernel dropped so far because a listening socket's accept queue was full (this
    network namespace's, every listener's: /proc/net/netstat TcpExt ListenOverflows)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    names, values = lines[0].split(), lines[1].split()
    return int(values[names.index("ListenOverflows")]) if "ListenOverflows" in names else 0


def children_cpu_seconds() -> float:
    """User + system CPU of this process's children that have been waited for (the finished clients)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_counts(port: int) -> dict[str, float]:
    """From the server's /metrics: requests answered so far (``all``) and answered 200 (``ok``),
    latency-critical requests timed in the server (decode to encode: ``lc``) and those of them done
    within 50 ms (``lc_50ms``), and the same for throughput-guaranteed ones within 2 s (``tg``, ``tg_2s``);
    refusals (429/503) from the headers (``early``) and after the body was read (``late``);
    ``lc_admitted`` and ``lc_admitted_50ms`` count only the latency-critical requests that reached the
    model's scheduler (refusals from the headers carry no version label)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    names = ("all", "ok", "lc", "lc_50ms", "tg", "tg_2s", "lc_admitted", "lc_admitted_50ms", "early", "late")
    names += ("batches", "batch_rows", "compute_s")
    counts = dict.fromkeys(names, 0.0)
    deadlines = {"latency-critical": ("lc", "0.05", "lc_50ms"), "throughput-guaranteed": ("tg", "2.0", "tg_2s")}
    for line in text.splitlines():
        value = float(line.rsplit(" ", 1)[1]) if line[:1] != "#" and " " in line else 0.0
        if line.startswith("mcp_requests_total{"):
            counts["all"] += value
            counts["ok"] += value if 'code="200"' in line else 0.0
            if 'code="429"' in line or 'code="503"' in line:  # refused from the headers: no version yet
                counts["early" if 'version=""' in line else "late"] += value
        for prefix, key in (
            ("mcp_scheduler_batch_rows_count{", "batches"),
            ("mcp_scheduler_batch_rows_sum{", "batch_rows"),
            ("mcp_compute_duration_seconds_sum{", "compute_s"),
        ):
            counts[key] += value if line.startswith(prefix) else 0.0
        for sla_class, (total, bound, within) in deadlines.items():
            if not line.startswith("mcp_request_duration_seconds_") or f'sla_class="{sla_class}"' not in line:
                continue
            admitted = total == "lc" and 'version=""' not in line
            if line.startswith("mcp_request_duration_seconds_count{"):
                counts[total] += value
                counts["lc_admitted"] += value if admitted else 0.0
            elif f'le="{bound}"' in line:
                counts[within] += value
                counts["lc_admitted_50ms"] += value if admitted else 0.0
    return counts


def first_requests(port: int, counts: dict[str, float], clients: Iterable[subprocess.Popen[str]]) -> dict[str, float]:
    """The server's counts once the first requests of the load were answered: the clients open all
    their connections before they send, so the offered window starts then, not at their launch."""
    while all(client.poll() is None for client in clients):
        now = server_counts(port)
        if now["all"] > counts["all"]:
            return now
        time.sleep(0.1)
    return counts


def split_cpus() -> tuple[set[int], set[int]]:
    """This process's CPUs in two halves: the server's and the clients'."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--split-cores needs at least 2 CPUs")
    half = len(cpus) // 2
    return set(cpus[:half]), set(cpus[half:])


def start_server(
    home: Path,
    model: Path,
    port: int,
    accounting: Path | None,
    server_src: Path | None = None,
    objective: str | None = None,
    backend: str = "onnxruntime",
    breakdown: Path | None = None,
    host_tuning: str = "off",
) -> subprocess.Popen[str]:
    """``mcp serve`` for the model; with ``accounting`` its event loop's callbacks are timed, and with
    ``server_src`` it runs the package found there (another checkout's ``src``) while the clients keep
    this one's. Without ``objective`` the plan is ``backend``'s default (one batch on every core); with
    it the contract names that objective and the policy measures ``backend``'s plans (every installed
    runtime's for ``any``) at start-up and picks one."""
    contract = home.parent / "contract.yaml"
    contract.write_text(CONTRACT + (f"objective: {objective}\n" if objective else ""))
    serve = ["--port", str(port), "--grpc-port", "-1"]
    serve += ([] if backend == "any" else ["--backend", backend]) + ([] if objective else ["--no-policy"])
    serve += [] if host_tuning == "off" else ["--host-tuning", host_tuning]  # (a tree before issue 49: no such flag)
    saved = dict(os.environ)
    paths = [str(server_src)] if server_src else []
    if breakdown is not None:
        paths.insert(0, str(request_breakdown.HOOK))
        os.environ["MCP_REQUEST_BREAKDOWN"] = str(breakdown)
    if accounting is not None:  # the hook times asyncio's own loop's callbacks: not uvloop's
        serve += ["--loop", "asyncio"]
        paths.insert(0, str(loop_accounting.HOOK))
        os.environ["MCP_LOOP_ACCOUNTING"] = str(accounting)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [*paths, os.environ.get("PYTHONPATH")]))
    try:  # the server alone: the clients started later get the environment back
        return serve_model(home, "heavy", model, serve, ["--contract", str(contract)])
    finally:
        os.environ.clear()
        os.environ.update(saved)


def bench(port: int, *args: str) -> subprocess.Popen[str]:
    command = [*MCP, "bench", "-u", f"127.0.0.1:{port}", "-m", "heavy", "--output-format", "json", "-q", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def report(process: subprocess.Popen[str]) -> dict[str, object]:
    out, err = process.communicate(timeout=600)
    if process.returncode != 0:
        raise RuntimeError(err[-500:])
    return json.loads(out)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=float, default=4.0, help="Offered load as a multiple of capacity.")
    parser.add_argument("--connections", type=int, default=3000, help="Requests in flight at most, all clients.")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--depth", type=int, default=200, help="Matmuls per batch (the model's cost).")
    parser.add_argument("--port", type=int, default=18600)
    parser.add_argument(
        "--split-cores",
        action="store_true",
        help="Server on the first half of this process's CPUs, the clients on the other half (capacity too): "
        "the clients' own CPU then leaves the server's alone, as with clients on other machines.",
    )
    parser.add_argument(
        "--loop-accounting",
        action="store_true",
        help="Also time every event-loop callback of the server (loop_accounting/) and print where the loop's "
        "CPU went while the load was offered (costs about a microsecond a callback).",
    )
    parser.add_argument(
        "--server-src",
        type=Path,
        help="Run the server from this source folder (e.g. another checkout's src/) with the same clients: "
        "before/after comparisons of the server alone.",
    )
    parser.add_argument(
        "--objective",
        choices=["latency", "throughput"],
        help="Serve the plan the policy picks for the contract with this objective (the plans of --backend, measured "
        "at start-up) instead of that runtime's default plan.",
    )
    parser.add_argument(
        "--backend",
        choices=["onnxruntime", "openvino", "any"],
        default="onnxruntime",
        help="The runtime serving the model: its default plan, or with --objective the policy's pick of its plans "
        "(any: of every installed runtime's plans).",
    )
    parser.add_argument(
        "--no-sync-start",
        action="store_true",
        help="Let each client begin sending as soon as its own connections are open (before 2026-12-05: the first "
        "one ready then sends while the others still open theirs) instead of all together (START_AFTER_S).",
    )
    parser.add_argument(
        "--request-breakdown",
        action="store_true",
        help="Also record where each request's time went in the server's batcher (request_breakdown/) and print "
        "the latency-critical requests' wait, hops and run once the server stopped.",
    )
    parser.add_argument(
        "--host-tuning",
        choices=["off", "latency"],
        default="off",
        help="The server's host tuning (docs/serving.md): off, as `mcp serve` ships, or the latency preset, what "
        "every figure of this benchmark recorded before 2026-12-06 (issue 49) ran with.",
    )
    args = parser.parse_args()
    server_cpus, client_cpus = split_cpus() if args.split_cores else (None, None)
    with tempfile.TemporaryDirectory(prefix="mcp-overload-") as folder:
        root = Path(folder)
        model = chained_matmul_model(root / "heavy.onnx", depth=args.depth)
        if server_cpus is not None:
            os.sched_setaffinity(0, server_cpus)  # the server inherits it ...
        args.accounting = root / "loop.jsonl" if args.loop_accounting else None
        breakdown = root / "requests.jsonl" if args.request_breakdown else None
        server = start_server(
            root / "home",
            model,
            args.port,
            args.accounting,
            args.server_src,
            args.objective,
            args.backend,
            breakdown,
            args.host_tuning,
        )
        if client_cpus is not None:
            os.sched_setaffinity(0, client_cpus)  # ... and the clients this
            print(f"server on CPUs {sorted(server_cpus or [])}, clients on CPUs {sorted(client_cpus)}")
        try:
            run(server, args)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
        if breakdown is not None and breakdown.exists():
            columns = request_breakdown.parts(breakdown, CLASSES[0], since=args.offered_from)
            print("\n" + request_breakdown.render(columns, CLASSES[0]))
            print(request_breakdown.loop_stalls(breakdown, args.offered_from, args.offered_from + args.seconds))


SHAPE = ["--shape", "x:1024"]


def measure_capacity(server: subprocess.Popen[str], port: int) -> float:
    """Closed-loop requests per second at c=16 for 5 s; also prints the event loop's CPU per request and
    the model's wall time per batch (against the same figure under overload: what the loop takes from it)."""
    loop_cpu_before, counts_before = cpu_seconds(server.pid, thread=server.pid), server_counts(port)
    server_cpu_before, waits_before = cpu_seconds(server.pid), run_queue_wait(server.pid)
    capacity_report = report(bench(port, "-c", "16", "--duration", "5", "-n", "1000000", *SHAPE))
    capacity = float(capacity_report["throughput_rps"])  # type: ignore[arg-type]
    loop_cpu = cpu_seconds(server.pid, thread=server.pid) - loop_cpu_before
    counts = {key: value - counts_before[key] for key, value in server_counts(port).items()}
    model_cpu = cpu_seconds(server.pid) - server_cpu_before - loop_cpu
    waits = [now - then for now, then in zip(run_queue_wait(server.pid), waits_before, strict=True)]
    capacity_sent = max(1, int(capacity_report["sent"]))  # type: ignore[call-overload]
    print(
        f"capacity (closed loop, c=16): {capacity:.0f} req/s; event loop {loop_cpu:.1f} s, "
        f"{loop_cpu / capacity_sent * 1e6:.0f} us per request; {batch_summary(counts, model_cpu)}; waiting for a "
        f"CPU: the loop {waits[1]:.2f} s, the other threads {waits[3]:.2f} s"
    )
    return capacity


def batch_summary(counts: dict[str, float], model_cpu_s: float | None = None) -> str:
    """Batches, rows per batch and the model's wall time per batch; with ``model_cpu_s`` (the server's
    CPU less its event loop's) also the CPU its threads took per batch."""
    batches = max(1.0, counts["batches"])
    cpu = "" if model_cpu_s is None else f", CPU of the other threads {model_cpu_s / batches * 1000:.1f} ms per batch"
    return (
        f"batches run: {counts['batches']:.0f}, {counts['batch_rows'] / batches:.2f} rows each, model compute "
        f"{counts['compute_s']:.1f} s ({counts['compute_s'] / batches * 1000:.1f} ms per batch{cpu})"
    )


def run(server: subprocess.Popen[str], args: argparse.Namespace) -> None:
    capacity_first = measure_capacity(server, args.port)
    shape = SHAPE
    rss_before = rss_mib(server.pid)
    cpu_before = cpu_seconds(server.pid), cpu_seconds(server.pid, thread=server.pid)
    machine_before, clients_before = machine_cpu_seconds(), children_cpu_seconds()
    waits_before, overflows_before = run_queue_wait(server.pid), listen_overflows()
    per_class_rate = capacity_first * args.load / len(CLASSES)
    per_class_flight = max(1, args.connections // len(CLASSES))
    start_at = None if args.no_sync_start else time.time() + START_AFTER_S
    started = args.offered_from = time.monotonic() + (0.0 if start_at is None else START_AFTER_S)
    together = [] if start_at is None else ["--start-at", f"{start_at:.3f}"]
    # each class its own seed: three independent Poisson streams (one seed would send the three classes'
    # requests at the same instants, bursts of three that no set of independent tenants produces)
    clients = {
        cls: bench(
            args.port,
            *("--rate", f"{per_class_rate:.1f}", "--max-in-flight", str(per_class_flight), "--seed", str(seed)),
            *("--duration", str(args.seconds), "-n", "10000000", "-H", f"x-sla-class:{cls}", "--timeout", "30"),
            *together,
            *shape,
        )
        for seed, cls in enumerate(CLASSES)
    }
    counts_before = first_requests(args.port, server_counts(args.port), clients.values())
    offered_from, peak, ok_in_window = time.monotonic(), rss_before, None
    answered = [(time.time(), counts_before["ok"])]  # (Unix time, the server's 200s so far)
    while any(client.poll() is None for client in clients.values()):
        peak = max(peak, rss_mib(server.pid))
        if time.time() - answered[-1][0] >= SCRAPE_EVERY_S:
            answered.append((time.time(), server_counts(args.port)["ok"]))
        if ok_in_window is None and time.monotonic() - offered_from >= args.seconds:
            ok_in_window = server_counts(args.port)["ok"] - counts_before["ok"]
        time.sleep(0.05)
    offered_until = offered_from + args.seconds
    counts = {key: value - counts_before[key] for key, value in server_counts(args.port).items()}
    elapsed = time.monotonic() - started
    cpu = cpu_seconds(server.pid) - cpu_before[0], cpu_seconds(server.pid, thread=server.pid) - cpu_before[1]
    machine = [now - then for now, then in zip(machine_cpu_seconds(), machine_before, strict=True)]
    waits = [now - then for now, then in zip(run_queue_wait(server.pid), waits_before, strict=True)]
    overflows = listen_overflows() - overflows_before
    reports = {cls: report(client) for cls, client in clients.items()}
    clients_cpu = children_cpu_seconds() - clients_before  # the three clients, reaped by report()
    # capacity again after the overload: the ratios use the mean of both (it drifts by 10-20 % between
    # runs on a shared machine, and one measurement before would carry all of that into the ratios)
    capacity_last = measure_capacity(server, args.port)
    capacity = (capacity_first + capacity_last) / 2
    print_table(capacity, args, reports, elapsed, rss_before, peak, rss_mib(server.pid))
    if ok_in_window is not None:
        window = ok_in_window / args.seconds
        print(
            f"\nserver-side goodput while the load was offered (its 200s over the {args.seconds:g} s from the first "
            "answer): "
            f"{window:.0f} req/s = {window / capacity:.2f} x capacity"
        )
        seconds = [ok_at(answered, answered[0][0] + second) for second in range(int(args.seconds) + 1)]
        per_second = " ".join(f"{(after - before) / capacity:.2f}" for before, after in itertools.pairwise(seconds))
        print(f"  second by second: {per_second}")
    print_all_sending(answered, reports, args.seconds, capacity, max(capacity_first, capacity_last))
    print(f"connections dropped by a full accept queue meanwhile (any listener here): {overflows:.0f}")
    for name, total, within, bound in (
        ("latency-critical", "lc", "lc_50ms", "50 ms"),
        ("throughput-guaranteed", "tg", "tg_2s", "2 s"),
    ):
        if counts[total]:
            print(
                f"{name} in the server (decode to encode, refusals included): {counts[within]:.0f} of "
                f"{counts[total]:.0f} within {bound} ({counts[within] / counts[total]:.1%})"
            )
    if counts["lc_admitted"]:
        within, admitted = counts["lc_admitted_50ms"], counts["lc_admitted"]
        print(
            f"latency-critical admitted to the scheduler: {within:.0f} of {admitted:.0f} within 50 ms in the "
            f"server ({within / admitted:.1%})"
        )
    print(f"refused from the headers: {counts['early']:.0f}; after reading the body: {counts['late']:.0f}")
    print(batch_summary(counts, cpu[0] - cpu[1]))
    sent = sum(int(r["sent"]) for r in reports.values())  # type: ignore[call-overload]
    per_request = [seconds / max(1, sent) * 1e6 for seconds in cpu]
    print(f"\nserver CPU over the overload phase: {cpu[0]:.1f} s, {per_request[0]:.0f} us per request sent;")
    print(f"its event loop (main thread): {cpu[1]:.1f} s, {per_request[1]:.0f} us per request sent")
    loading = sum(float(str(r["client_cpu_ms_per_request"])) * int(str(r["sent"])) for r in reports.values()) / 1000
    print(
        f"the clients: {clients_cpu:.1f} s ({loading:.1f} s of it connecting and sending, "
        f"{loading / max(1, sent) * 1e6:.0f} us per request sent; the rest starting up); the machine: "
        f"{machine[0]:.1f} of {machine[1]:.1f} CPU-seconds busy, of which {machine[0] - cpu[0] - clients_cpu:.1f} s "
        "neither the server's nor the clients' (other processes, interrupts)"
    )
    print(
        f"waiting for a CPU while runnable: the event loop {waits[1]:.1f} s (it ran {waits[0]:.1f} s), the other "
        f"threads {waits[3]:.1f} s (they ran {waits[2]:.1f} s)"
    )
    if args.accounting is not None:
        print("\n" + loop_accounting.render(*loop_accounting.window(args.accounting, offered_from, offered_until)))


def ok_at(answered: list[tuple[float, float]], when: float) -> float:
    """The server's count of 200s at Unix time ``when``, interpolated between the samples around it."""
    for (before, count_before), (after, count_after) in itertools.pairwise(answered):
        if before <= when <= after:
            return count_before + (count_after - count_before) * (when - before) / max(after - before, 1e-9)
    return answered[0][1] if when < answered[0][0] else answered[-1][1]


def print_all_sending(
    answered: list[tuple[float, float]],
    reports: dict[str, dict[str, object]],
    seconds: float,
    capacity: float,
    higher_capacity: float,
) -> None:
    """The server's goodput while all three clients were sending: each opens its connections first (with
    thousands of them, on shared cores, that takes seconds), then sends for ``seconds``, all from the same
    instant unless ``--no-sync-start`` (then the window from the first answer starts with the first
    client's, while the others are still connecting)."""
    starts = [float(str(row["started_unix"])) for row in reports.values()]
    connects = ", ".join(f"{float(str(row['connect_s'])):.1f}" for row in reports.values())
    begin, end = max(starts), min(starts) + seconds
    spread = begin - min(starts)
    print(f"the clients took {connects} s to open their connections, and started sending within {spread:.1f} s")
    if end - begin >= 1.0:
        rate = (ok_at(answered, end) - ok_at(answered, begin)) / (end - begin)
        print(
            f"server-side goodput while all three clients were sending ({end - begin:.1f} s): {rate:.0f} req/s = "
            f"{rate / capacity:.2f} x capacity ({rate / higher_capacity:.2f} x the higher of the two capacity "
            "measurements: other load on the machine only ever lowers one)"
        )


def print_table(
    capacity: float,
    args: argparse.Namespace,
    reports: dict[str, dict[str, object]],
    elapsed: float,
    rss_before: float,
    rss_peak: float,
    rss_after: float,
) -> None:
    ok = sum(int(r["ok"]) for r in reports.values())  # type: ignore[call-overload]
    sent = sum(int(r["sent"]) for r in reports.values())  # type: ignore[call-overload]
    goodput = ok / elapsed
    # each client's own rate, from its first send to its last answer (not its start-up or connecting)
    client_goodput = sum(float(r["throughput_rps"]) for r in reports.values())  # type: ignore[arg-type]
    print(f"capacity, mean of before and after: {capacity:.0f} req/s; offered {args.load:g}x the one before")
    print(f"over {elapsed:.1f} s with up to {args.connections} requests in flight: sent {sent}, answered 200: {ok}")
    print(f"goodput {goodput:.0f} req/s = {goodput / capacity:.2f} x capacity (from the clients' start)")
    print(
        f"goodput from the clients' first send to their last answer: {client_goodput:.0f} req/s = "
        f"{client_goodput / capacity:.2f} x capacity"
    )
    print(f"server RSS: {rss_before:.0f} MiB before, {rss_peak:.0f} MiB peak, {rss_after:.0f} MiB after")
    print()
    print("| class | sent | 200 | refused (429/503) | other errors | p50 ms | p99 ms | client send lag p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for cls, row in reports.items():
        errors: dict[str, int] = row["errors"]  # type: ignore[assignment]
        refused = sum(n for code, n in errors.items() if code.startswith(("429", "503")))
        other = sum(errors.values()) - refused
        latency: dict[str, float] = row["latency_ms"]  # type: ignore[assignment]
        lag: dict[str, float] = row.get("send_lag_ms") or {}  # type: ignore[assignment]
        share = refused / max(1, int(row["sent"]))  # type: ignore[call-overload]
        print(
            f"| {cls} | {row['sent']} | {row['ok']} | {refused} ({share:.0%}) | {other} | "
            f"{latency.get('p50', 0):.1f} | {latency.get('p99', 0):.1f} | {lag.get('p99', 0):.1f} |"
        )


if __name__ == "__main__":
    main()

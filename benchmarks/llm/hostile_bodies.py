"""Finding 2 of issue 38, measured: large chat bodies against `mcp serve`'s default text limits.

Starts a separate `mcp serve --name smollm2` (default GenerationLimits) and, for each body, measures
the time to its answer, the slowest `/v2/health/ready` probe on another connection meanwhile, and
the server's RSS before and after (from /proc). The bodies: the 15.5 MB / 500,000-message body of the
finding (413, over max_body_bytes), 110,000 messages under the body limit (400, over max_messages),
1,000 messages of 400 characters (400, over max_prompt_chars), and one normal request.

    MCP_HOME=... .venv/bin/python benchmarks/llm/hostile_bodies.py   # smollm2 registered in MCP_HOME
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import httpx


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        match = re.search(r"VmRSS:\s+(\d+) kB", status.read())
    return int(match.group(1)) / 1024 if match else 0.0


def chat(messages: list[dict[str, str]]) -> bytes:
    return json.dumps({"model": "smollm2", "messages": messages, "max_tokens": 4}).encode()


BODIES = {
    "500k messages, 15.5 MB": chat([{"role": "user", "content": "hi"}] * 500_000),
    "110k messages, 3.7 MB": chat([{"role": "user", "content": "hi"}] * 110_000),
    "1000 x 400 chars": chat([{"role": "user", "content": "word " * 80}] * 1000),
    "normal": chat([{"role": "user", "content": "Say hi."}]),
}


def measure(url: str, pid: int, name: str, body: bytes) -> None:
    done, slowest = threading.Event(), [0.0]

    def probe() -> None:
        with httpx.Client(timeout=60) as other:
            while not done.is_set():
                started = time.perf_counter()
                other.get(f"{url}/v2/health/ready")
                slowest[0] = max(slowest[0], time.perf_counter() - started)

    watcher = threading.Thread(target=probe)
    before = rss_mb(pid)
    watcher.start()
    started = time.perf_counter()
    answer = httpx.post(f"{url}/v1/chat/completions", content=body, timeout=120)
    seconds = time.perf_counter() - started
    done.set()
    watcher.join()
    error = answer.json().get("error", {}).get("message", "")[:90] if answer.status_code != 200 else ""
    print(
        f"{name:24} {answer.status_code} in {seconds * 1000:7.1f} ms; slowest health probe "
        f"{slowest[0] * 1000:6.1f} ms; RSS {before:.0f} -> {rss_mb(pid):.0f} MB  {error}"
    )


def main() -> None:
    command = [sys.executable, "-m", "mcp2026ai.cli", "serve", "--name", "smollm2", "--port", "0"]
    command += ["--grpc-port", "-1", "--no-policy"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=os.environ)
    assert process.stdout is not None
    url = ""
    for line in process.stdout:
        match = re.search(r"http=(\d+)", line)
        if match:
            url = f"http://127.0.0.1:{match.group(1)}"
            break
    try:
        for name, body in BODIES.items():
            measure(url, process.pid, name, body)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


if __name__ == "__main__":
    main()

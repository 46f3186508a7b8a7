"""A thread's CPU priority, and what a model built on a lowered thread computes at.

Linux gives each thread a nice value of its own, and a thread starts with the nice value of the
thread that created it. onnxruntime creates a session's intra-op worker threads when the session is
built, and a language-model engine starts its step thread when it is built: so the thread a model is
built on decides the priority of the threads it computes on for its whole life. :func:`run_lowered`
runs a build on a short-lived thread that much nicer (scheduling/load_priority.py: best-effort models).

A session built on a thread nicer than the process's main thread also has its intra-op workers block
instead of spinning between parallel sections (:func:`lowered_session_config`): a niced worker spinning
at a barrier holds a core that normal-priority threads want, and a descheduled niced worker would keep
its normal-priority peers spinning for it. Raising a nice value needs no privilege; lowering it back
would, so it never is.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")

THREAD_PRIORITIES = sys.platform == "linux"
"""Whether threads have nice values of their own here."""
BLOCKING_WORKERS = {"session.intra_op.allow_spinning": "0"}
"""The session config entry that makes onnxruntime's intra-op workers block instead of spinning."""


def thread_nice(native_id: int | None = None) -> int:
    """The nice value of a thread (the calling one by default); 0 where threads have none of their own."""
    if not THREAD_PRIORITIES:
        return 0
    return os.getpriority(os.PRIO_PROCESS, native_id if native_id is not None else threading.get_native_id())


def lower_thread_priority(by: int) -> None:
    """Raise the calling thread's nice value by ``by`` (at most to 19); a refusal is logged, not raised."""
    if not THREAD_PRIORITIES:
        return
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread, min(19, thread_nice(thread) + by))
    except OSError as exc:
        logger.warning("could not lower the priority of thread %d: %s", thread, exc)


def on_lowered_thread() -> bool:
    """Whether the calling thread runs nicer than the process's main thread (whose thread id is the pid)."""
    return THREAD_PRIORITIES and thread_nice() > thread_nice(os.getpid())


def lowered_session_config() -> dict[str, str]:
    """Session config entries for a session built on the calling thread: its workers block instead of
    spinning when the thread is lowered (they inherit its priority); none otherwise."""
    return dict(BLOCKING_WORKERS) if on_lowered_thread() else {}


def run_lowered(build: Callable[[], T], by: int) -> T:
    """``build()`` on a short-lived thread ``by`` nicer, waiting for it: every thread it starts (an
    onnxruntime session's workers, an engine's step thread) starts that much nicer too."""
    outcome: dict[str, object] = {}

    def lowered() -> None:
        lower_thread_priority(by)
        try:
            outcome["value"] = build()
        except BaseException as exc:  # re-raised on the caller's thread  # noqa: BLE001
            outcome["error"] = exc

    builder = threading.Thread(target=lowered, name="mcp-session-build-lowered", daemon=True)
    builder.start()
    builder.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]

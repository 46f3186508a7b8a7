"""A thread's CPU priority, and what a runtime built on a lowered thread does about it.

Linux gives each thread a nice value of its own, and a thread starts with the nice value of the
thread that created it. onnxruntime creates a session's intra-op worker threads when the session is
built, and a language-model engine starts its step thread when it is built: so whatever a model's
load runs on decides the priority of every thread that model computes on, for its whole life.

A session built on a thread nicer than the process's main thread (scheduling/load_priority.py builds
best-effort models there) also has its intra-op workers block instead of spinning between parallel
sections: a niced worker spinning at a barrier holds a core that the normal-priority threads of a
latency-critical model want, and a descheduled niced worker would keep its normal-priority peers
spinning for it. Raising a nice value needs no privilege; lowering it back would, so it never is.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

logger = logging.getLogger(__name__)

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

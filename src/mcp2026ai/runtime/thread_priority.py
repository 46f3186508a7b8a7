"""A thread's CPU priority, and onnxruntime sessions whose worker threads run at a lower one.

Linux gives each thread a nice value of its own, and a thread starts with the nice value of the
thread that created it. onnxruntime creates a session's intra-op worker threads when the session is
built: so the thread a session is built on decides the priority its workers compute at for the
session's whole life.

Inside :func:`sessions_lowered` (scheduling/load_priority.py wraps a best-effort model's load in it),
:func:`build_session` builds each session on a short-lived thread that much nicer, so its workers
start there, and those workers block instead of spinning between parallel sections: a niced worker
spinning at a barrier holds a core that normal-priority threads want, and a descheduled niced worker
would keep its normal-priority peers spinning for it. Python threads (the load's, a language-model
engine's step thread) keep their priority: a niced thread descheduled while it holds the GIL would
keep the event loop waiting. Raising a nice value needs no privilege; lowering it back would, so it
never is.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")

THREAD_PRIORITIES = sys.platform == "linux"
"""Whether threads have nice values of their own here."""
BLOCKING_WORKERS = {"session.intra_op.allow_spinning": "0"}
"""The session config entry that makes onnxruntime's intra-op workers block instead of spinning."""
_SESSIONS_LOWERED_BY: ContextVar[int | None] = ContextVar("sessions_lowered_by", default=None)


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


@contextmanager
def sessions_lowered(by: int | None) -> Iterator[None]:
    """Within it (this thread's context), :func:`build_session` builds sessions ``by`` nicer; None: as is."""
    token = _SESSIONS_LOWERED_BY.set(by if THREAD_PRIORITIES else None)
    try:
        yield
    finally:
        _SESSIONS_LOWERED_BY.reset(token)


def session_lowering() -> int | None:
    """How much nicer :func:`build_session` builds sessions here (None: at this thread's priority)."""
    return _SESSIONS_LOWERED_BY.get()


def build_session(build: Callable[[], T], lowered_by: int | None = None) -> T:
    """``build()`` (which creates an onnxruntime session and its workers) on a thread ``lowered_by``
    nicer (default: :func:`session_lowering`), waiting for it; on the calling thread when neither asks."""
    by = lowered_by if lowered_by is not None else session_lowering()
    if not by or not THREAD_PRIORITIES:
        return build()
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

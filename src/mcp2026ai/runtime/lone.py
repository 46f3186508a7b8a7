"""A lone batch on every core, concurrent batches on the instances: the load-adaptive half of a plan.

A multi-instance plan (single-threaded instances, run side by side) serves concurrent requests without
the synchronisation of one multi-threaded run, but a lone request then runs on one core of several.
With ``Plan.lone_threads`` the backend also holds a session of that many threads, and :class:`LoneGate`
decides call by call: a call that finds no other running runs alone on that session; a call that
arrives meanwhile waits for it (running beside it would put more threads than cores on the CPU) and
then runs as an instance, as does any call that finds instances running. Having had to wait is the
sign of concurrent load, so under load the backend settles on its instances.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class LoneGate:
    """Which session the next ``infer`` call runs on: alone (True) or as one of the instances (False)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._instances = 0
        self._alone = False
        self.lone_runs = 0
        """Calls that ran alone so far."""
        self.waiting = 0
        """Calls now waiting for a lone run to end."""

    @contextmanager
    def enter(self) -> Iterator[bool]:
        with self._changed:
            alone = not self._alone and self._instances == 0
            if alone:
                self._alone = True
                self.lone_runs += 1
            else:
                self.waiting += 1
                self._changed.wait_for(lambda: not self._alone)
                self.waiting -= 1
                self._instances += 1
        try:
            yield alone
        finally:
            with self._changed:
                if alone:
                    self._alone = False
                else:
                    self._instances -= 1
                self._changed.notify_all()

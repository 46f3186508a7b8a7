"""How `make test` spreads the suite over pytest-xdist workers, as a plugin (tests/conftest.py loads it;
a nested run can name it with ``-p tests.support.xdist_policy``).

- Scheduling: ``--dist loadfile`` (a module's tests on one worker, so its servers start once), with
  SHARED_WORKER's modules counted as one module, and the longest modules first: a worker that takes
  a five-minute module last keeps the run going alone that long. Each module's seconds come from
  MODULE_SECONDS (written by ``make test-weights``: ``--record-module-seconds PATH``); a module not in
  it counts DEFAULT_TEST_SECONDS per test.
- A worker that dies (a crash, a segfault, an out-of-memory kill) fails the run at once, naming the test
  it was running, instead of being replaced: pytest-xdist 3.8 re-queues a dead worker's module on its
  replacement under loadfile, which dies the same way, and after that the run waits forever with both
  workers idle (seen on an AVX2 host: a CI run would have hit its 90-minute limit).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

SHARED_WORKER = {
    "tests/integration/test_ray_serve.py": "ray modules",
    "tests/integration/test_ray_multinode.py": "ray modules",
}
"""Modules that must not run at the same time on two workers: the Ray tests find replicas by process name
and start Ray clusters on the default dashboard port."""

MODULE_SECONDS = Path(__file__).with_name("module_seconds.json")
"""Seconds each scheduling scope took in a recorded full run (setup, call and teardown of its tests)."""
DEFAULT_TEST_SECONDS = 0.5
"""A test of a module MODULE_SECONDS does not know yet: most unit tests take far less, servers more."""


def scope_of(nodeid: str) -> str:
    """The scheduling scope of a test: its module, or the name SHARED_WORKER gives its module."""
    module = nodeid.split("::", 1)[0]
    return SHARED_WORKER.get(module, module)


def recorded_seconds() -> dict[str, float]:
    try:
        return {str(scope): float(seconds) for scope, seconds in json.loads(MODULE_SECONDS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-module-seconds",
        metavar="PATH",
        default=None,
        help="write each scheduling scope's total test seconds to PATH as JSON (tests/support/module_seconds.json)",
    )


class ScopeTimes:
    """Adds up the reports' durations per scope (on the controller, which gets every worker's reports)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[scope_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        ranked = dict(
            sorted(((scope, round(total, 1)) for scope, total in self.seconds.items()), key=lambda row: -row[1])
        )
        self.path.write_text(json.dumps(ranked, indent=1) + "\n")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None):
        config.option.maxworkerrestart = "0"
    record = config.getoption("record_module_seconds", None)
    if record and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ScopeTimes(Path(record)), "mcp-scope-times")


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """loadfile with SHARED_WORKER's modules on one worker (pytest-xdist's own `xdist_group` marks do
    nothing under pytest 9.2: xdist 3.8 renames `item._nodeid`, which pytest no longer reads)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    known = recorded_seconds()

    class ModuleScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(str(super()._split_scope(nodeid)))

        def _assign_work_unit(self, node: object) -> None:
            if len(self.workqueue) > 1:  # the longest scope left goes next
                longest = max(self.workqueue, key=lambda scope: expected_seconds(scope, len(self.workqueue[scope])))
                self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    def expected_seconds(scope: str, tests: int) -> float:
        return known.get(scope, tests * DEFAULT_TEST_SECONDS)

    return ModuleScheduling(config, log)

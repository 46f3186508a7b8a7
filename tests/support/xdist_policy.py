"""How `make test` spreads the suite over pytest-xdist workers, as a plugin (tests/conftest.py loads it;
a nested run can name it with ``-p tests.support.xdist_policy``).

- Scheduling: ``--dist loadfile`` (a module's tests on one worker, so its servers start once), with
  SHARED_WORKER's modules counted as one module.
- A worker that dies (a crash, a segfault, an out-of-memory kill) fails the run at once, naming the test
  it was running, instead of being replaced: pytest-xdist 3.8 re-queues a dead worker's module on its
  replacement under loadfile, which dies the same way, and after that the run waits forever with both
  workers idle (seen on an AVX2 host: a CI run would have hit its 90-minute limit).
"""

from __future__ import annotations

import pytest

SHARED_WORKER = {
    "tests/integration/test_ray_serve.py": "ray modules",
    "tests/integration/test_ray_multinode.py": "ray modules",
}
"""Modules that must not run at the same time on two workers: the Ray tests find replicas by process name
and start Ray clusters on the default dashboard port."""


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None):
        config.option.maxworkerrestart = "0"


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """loadfile with SHARED_WORKER's modules on one worker (pytest-xdist's own `xdist_group` marks do
    nothing under pytest 9.2: xdist 3.8 renames `item._nodeid`, which pytest no longer reads)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModuleScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = str(super()._split_scope(nodeid))
            return SHARED_WORKER.get(module, module)

    return ModuleScheduling(config, log)

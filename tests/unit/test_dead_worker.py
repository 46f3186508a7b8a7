"""`make test`'s worker policy (tests/support/xdist_policy.py), run on a small suite: a test that kills its
pytest-xdist worker fails the run, naming the test, and the run ends instead of waiting for the worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SUITE = {
    "test_dies.py": "import os\n\ndef test_fine():\n    pass\n\ndef test_kills_its_worker():\n    os._exit(3)\n",
    "test_other.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
}


def test_a_worker_that_dies_fails_the_run_naming_its_test(tmp_path: Path) -> None:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the nested run's own rootdir and settings
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.support.xdist_policy"]
    command += ["-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider", str(tmp_path)]
    finished = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=180)
    assert finished.returncode != 0, finished.stdout
    assert "crashed while running 'test_dies.py::test_kills_its_worker'" in finished.stdout, finished.stdout

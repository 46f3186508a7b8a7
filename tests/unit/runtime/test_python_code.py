"""User Python code: checked before it runs, loaded from bytes, errors name file and line."""

from __future__ import annotations

import types

import pytest

from mcp2026ai.errors import ModelImportError
from mcp2026ai.runtime.python_code import check_source, load_class

GOOD = b"""
import numpy as np

class Step:
    def execute(self, batch):
        return {"y": np.asarray(batch["x"]) * 2}
"""


def test_a_good_file_gives_its_class() -> None:
    step_class = load_class(GOOD, label="double.py", class_name="Step", module_name="user_step_double")
    assert step_class().execute({"x": [1, 2]})["y"].tolist() == [2, 4]


def test_a_syntax_error_names_file_and_line() -> None:
    with pytest.raises(ModelImportError, match=r"bad.py:3: syntax error"):
        check_source(b"x = 1\n\ndef f(:\n", label="bad.py")


def test_a_missing_import_names_the_module_and_line() -> None:
    with pytest.raises(ModelImportError, match=r"imports modules not installed here: no_such_module_xyz \(line 2\)"):
        check_source(b"import os\nimport no_such_module_xyz.sub\n", label="step.py")


def test_provided_modules_satisfy_imports() -> None:
    utils = types.ModuleType("fake_backend_utils_for_test")
    utils.VALUE = 7  # type: ignore[attr-defined]
    source = b"import fake_backend_utils_for_test as u\nclass M:\n    value = u.VALUE\n"
    model = load_class(
        source, label="m.py", class_name="M", module_name="m", provided={"fake_backend_utils_for_test": utils}
    )
    assert model.value == 7  # type: ignore[attr-defined]


def test_a_missing_class_and_a_failing_body_are_named() -> None:
    with pytest.raises(ModelImportError, match="defines no class 'Step'"):
        load_class(b"x = 1\n", label="s.py", class_name="Step", module_name="s")
    with pytest.raises(ModelImportError, match="running the module failed: ZeroDivisionError"):
        load_class(b"x = 1 / 0\n", label="s.py", class_name="Step", module_name="s")

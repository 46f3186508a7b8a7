"""The mcp2026ai wheel the image's builder stage installs: the one given, else built from the source
checkout this package runs from."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import mcp2026ai
from mcp2026ai.errors import InvalidArgumentError

WHEEL_PREFIX = "mcp2026ai-"
BUILD_TIMEOUT_S = 300


def provide_wheel(given: Path | None, dist: Path) -> str:
    """Put the wheel in ``dist`` (emptied of older mcp2026ai wheels) and return its file name."""
    dist.mkdir(parents=True, exist_ok=True)
    for old in dist.glob(f"{WHEEL_PREFIX}*.whl"):
        old.unlink()
    if given is not None:
        if not given.is_file() or given.suffix != ".whl" or not given.name.startswith(WHEEL_PREFIX):
            raise InvalidArgumentError(f"--wheel: {given} is not an mcp2026ai wheel file (mcp2026ai-*.whl)")
        shutil.copyfile(given, dist / given.name)
        return given.name
    return build_wheel(source_checkout(), dist)


def source_checkout() -> Path:
    root = Path(mcp2026ai.__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or 'name = "mcp2026ai"' not in pyproject.read_text(encoding="utf-8"):
        raise InvalidArgumentError(
            "mcp2026ai is not running from a source checkout: pass --wheel FILE (e.g. from `pip download mcp2026ai`)"
        )
    return root


def build_wheel(root: Path, dist: Path) -> str:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(root)]
    if importlib.util.find_spec("hatchling") is not None:
        command.insert(4, "--no-build-isolation")  # the build backend is here: no download
    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    built = sorted(dist.glob(f"{WHEEL_PREFIX}*.whl"))
    if done.returncode != 0 or not built:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InvalidArgumentError(f"building the mcp2026ai wheel from {root} failed ({last}); pass --wheel FILE")
    return built[-1].name

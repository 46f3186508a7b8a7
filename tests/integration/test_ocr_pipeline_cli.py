"""The bundled OCR pipeline from the command line, as a user types it: ``mcp policy plan|explain --model
ocr`` (each model step measured on what the pipeline gives it for a real page, the whole at c=4) and
``mcp predict --model ocr --input image=@page.png`` (its lines, boxes and scores; bad input one line).

Every command runs the real CLI in a subprocess against a registry the real CLI filled
(``mcp bundled ocr`` then ``mcp model register``). Planning is bounded by the CLI's own options.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.integration.conftest import mcp_command
from tests.support.ocr_pages import PAGE_SIDE, TEXT_IMAGES

pytest.importorskip("cv2")
pytest.importorskip("pyclipper")

PAGE = next(image for image in TEXT_IMAGES if image.name == "three-lines")
PLAN_BUDGET = ["--seconds-per-plan", "0.5", "--total-seconds", "12", "--measure-seconds", "5"]
"""Per step at most 12 s of plan measurements, then at most 5 s at c=4 (the test's bound)."""


def mcp(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    command = [*mcp_command(), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    environment = {**os.environ, "MCP_HOME": str(home), "COLUMNS": "220"}
    written = mcp(environment, "bundled", "ocr")
    assert written.returncode == 0, written.stderr
    registered = mcp(environment, "model", "register", "--name", "ocr", "--path", written.stdout.strip())
    assert registered.returncode == 0, registered.stdout + registered.stderr
    return environment


@pytest.fixture(scope="module")
def spec_folder(env: dict[str, str]) -> Path:
    return Path(env["MCP_HOME"]) / "bundled" / "ocr"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pages") / "page.png"
    path.write_bytes(PAGE.encoded())
    return path


@pytest.mark.slow
def test_policy_plans_each_ocr_step_on_a_real_page_and_explains_the_contract_at_c4(
    env: dict[str, str], page: Path, spec_folder: Path
) -> None:
    """No --input: the spec's own example page (sample.png, the same three lines as ``page``)."""
    assert (spec_folder / "sample.png").read_bytes() == page.read_bytes()
    planned = mcp(env, "policy", "plan", "--model", "ocr", *PLAN_BUDGET)
    assert planned.returncode == 0, planned.stdout + planned.stderr

    explained = mcp(env, "policy", "explain", "--model", "ocr")
    assert explained.returncode == 0, explained.stderr
    text = explained.stdout
    assert "plan per step" in text and "contract vs the pipeline measured end to end" in text
    assert "measured on the spec's image example (" in text
    for step in ("det", "cls", "rec"):
        assert f"ocr.{step}:1.0.0" in text
    assert "latency.p99_ms: " in text and " at c=4: p99 " in text

    document: dict[str, Any] = json.loads(mcp(env, "policy", "explain", "--model", "ocr", "--json").stdout)
    steps = {step["step"]: step for step in document["steps"]}
    assert list(steps) == ["det", "cls", "rec"]
    assert document["python_steps"] == ["det_pre", "det_post", "crop", "rec_pre", "ctc_decode"]
    for step in steps.values():
        assert step["precision"] == "fp32" and step["runtime"] in ("onnxruntime", "openvino"), step
        assert step["threads"] >= 0 and step["max_batch_size"] >= 1 and step["cores"] >= 1, step
        assert f"batch<={step['max_batch_size']}" in step["plan"], step
    # measured on the page the detector really sees (its short side scaled to 736), not a synthetic 32x32
    assert steps["det"]["input_shapes"] == {"x": [1, 3, PAGE_SIDE, PAGE_SIDE]}
    assert steps["cls"]["input_shapes"]["x"][:2] == [len(PAGE.lines), 3]
    assert steps["det"]["cost_ms"] > steps["cls"]["cost_ms"]

    end_to_end = document["end_to_end"]
    assert end_to_end["concurrency"] == 4 and end_to_end["requests"] > 0
    latency = document["contract_rows"][0]
    bound = document["contract"]["latency"]["p99_ms"]
    met = end_to_end["p99_ms"] <= bound
    assert latency["constraint"] == "latency.p99_ms" and latency["ok"] == ("yes" if met else "NO")
    assert latency["margin"].endswith(f"({end_to_end['p99_ms'] / bound:.4g}x the bound)"), latency
    assert ("to spare" if met else "over") in latency["margin"]


def test_predict_prints_the_lines_boxes_and_scores(env: dict[str, str], page: Path) -> None:
    done = mcp(env, "predict", "--model", "ocr", "--input", f"image=@{page}", "--json")
    assert done.returncode == 0, done.stderr
    outputs = json.loads(done.stdout)
    reference = pytest.importorskip("rapidocr_onnxruntime").RapidOCR()
    result, _ = reference(page.read_bytes())
    assert outputs["text"]["data"] == [line[1] for line in result]
    boxes = np.asarray(outputs["boxes"]["data"], dtype=np.float32)
    assert boxes.shape == (len(result), 4, 2)
    assert np.abs(boxes - np.array([line[0] for line in result], dtype=np.float32)).max() <= 1.0
    assert np.allclose(outputs["scores"]["data"], [line[2] for line in result], atol=1e-4)

    shown = mcp(env, "predict", "--model", "ocr", "--image", str(page))
    assert shown.returncode == 0, shown.stderr
    assert "ocr:1.0.0" in shown.stdout and "text: dtype=object shape=[3]" in shown.stdout
    for index, line in enumerate(outputs["text"]["data"]):
        assert f"  [{index}] {line}" in shown.stdout
    assert "boxes: dtype=float32 shape=[3, 4, 2]" in shown.stdout and "scores: dtype=float32 shape=[3]" in shown.stdout


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("image=@{tmp}/notes.txt", "pipeline step 'det_pre': image (9 bytes) does not decode"),
        ("image=@{tmp}/missing.png", "missing.png: no such file"),
        ("image=@{tmp}", "is not a file of at most 67108864 bytes"),
        ("picture=@{tmp}/notes.txt", "expected NAME=FILE with NAME one of ['image']"),
    ],
    ids=["not-an-image", "no-such-file", "a-folder", "unknown-input"],
)
def test_predict_bad_input_is_one_line_naming_it(
    env: dict[str, str], tmp_path: Path, given: str, expected: str
) -> None:
    (tmp_path / "notes.txt").write_bytes(b"not a png")
    argument = given.format(tmp=tmp_path)
    done = mcp(env, "predict", "--model", "ocr", "--input", argument)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"error: --input {argument}") and expected in lines[0], lines[0]


def test_predict_refuses_an_unreadable_file(env: dict[str, str], tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    locked = tmp_path / "locked.png"
    locked.write_bytes(PAGE.encoded())
    locked.chmod(0)
    done = mcp(env, "predict", "--model", "ocr", "--input", f"image=@{locked}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"error: --input image=@{locked}: {locked}: not readable (permission denied)"

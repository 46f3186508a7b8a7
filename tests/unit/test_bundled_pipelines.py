"""`mcp bundled ocr`: the bundled OCR pipeline's folder written under MCP_HOME/bundled/ocr/, idempotently."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from mcp2026ai import bundled
from mcp2026ai.bundled_pipelines import bundled_pipeline_names, materialize_pipeline
from mcp2026ai.errors import NotFoundError, PermissionDeniedError
from tests.support.cli import run_main


def named_files(spec_path: Path) -> set[str]:
    """Every file the spec names: its steps' Python files and models, and its examples."""
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    return {step.get("python") or step["model"] for step in spec["steps"]} | set(spec.get("examples", {}).values())


def file_identities(folder: Path) -> dict[Path, tuple[int, int]]:
    return {path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in folder.rglob("*") if path.is_file()}


def test_mcp_bundled_ocr_prints_a_spec_whose_folder_holds_everything_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "home"))
    outcome = run_main(["bundled", "ocr"], capsys, monkeypatch)
    assert outcome.code == 0, outcome.err
    spec_path = Path(outcome.out.strip())
    assert spec_path == tmp_path / "home" / "bundled" / "ocr" / "pipeline.yaml"
    names = named_files(spec_path)
    assert names == {
        "ocr_image.py",
        "ocr_boxes.py",
        "ocr_lines.py",
        "models/ch_PP-OCRv4_det_infer.onnx",
        "models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "models/ch_PP-OCRv4_rec_infer.onnx",
        "sample.png",
    }
    for name in names:
        assert (spec_path.parent / name).is_file() and (spec_path.parent / name).stat().st_size > 1000


def test_the_list_of_bundled_names_starts_with_the_pipelines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = run_main(["bundled"], capsys, monkeypatch)
    assert outcome.code == 0 and outcome.out.splitlines()[:2] == ["ocr", "ocr-cls"]
    assert bundled_pipeline_names() == ["ocr"]


def test_writing_twice_changes_nothing_and_repairs_an_edited_file(tmp_path: Path) -> None:
    spec_path = materialize_pipeline("ocr", tmp_path)
    folder = spec_path.parent
    before = file_identities(folder)
    assert materialize_pipeline("ocr", tmp_path) == spec_path
    assert file_identities(folder) == before
    original = (folder / "ocr_lines.py").read_bytes()
    (folder / "ocr_lines.py").write_text("edited")
    materialize_pipeline("ocr", tmp_path)
    assert (folder / "ocr_lines.py").read_bytes() == original
    assert not [path for path in folder.rglob(".*") if path.is_file()], "no temporary file is left behind"


@pytest.mark.parametrize("link", ["bundled", "bundled/ocr", "bundled/ocr/models", "bundled/ocr/pipeline.yaml"])
def test_a_symlink_it_did_not_make_is_refused(tmp_path: Path, link: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    (home / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere if not link.endswith(".yaml") else elsewhere / "spec.yaml", home / link)
    with pytest.raises(PermissionDeniedError, match=rf"{home / link} is a symlink that mcp did not make"):
        materialize_pipeline("ocr", home)
    assert not any(elsewhere.iterdir()), "nothing is written through the link"


def test_a_file_where_a_folder_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bundled").write_text("not a folder")
    with pytest.raises(PermissionDeniedError, match=r"bundled exists and is not a directory"):
        materialize_pipeline("ocr", tmp_path)


def test_an_unknown_pipeline_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match=r"no bundled pipeline 'nope' \(known: ocr\)"):
        materialize_pipeline("nope", tmp_path)
    assert not (tmp_path / "bundled").exists()


def test_without_the_models_package_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundled.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(NotFoundError, match=r"package 'rapidocr_onnxruntime' is not installed \(pip install --no-deps"):
        materialize_pipeline("ocr", tmp_path)
    assert not (tmp_path / "bundled").exists()

"""``mcp predict`` with .npy, .npz, .json and --image inputs (CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import InvalidArgumentError, InvalidInputError, NotFoundError
from tests.support.cli import PREPROCESSING, Invoke, ok
from tests.support.images import render_text

X = np.arange(8, dtype=np.float32).reshape(2, 4) / 8


def direct(path: Path, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def predict_json(cli: Invoke, *args: str | Path) -> dict[str, dict[str, list]]:
    return json.loads(ok(cli("predict", *args, "--json")))


@pytest.fixture
def mlp(cli: Invoke, mlp_path: Path) -> Path:
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    return mlp_path


@pytest.fixture
def two(cli: Invoke, two_input_path: Path) -> Path:
    ok(cli("model", "register", "--name", "two", "--path", two_input_path))
    return two_input_path


@pytest.fixture
def ocr(cli: Invoke) -> None:
    path = bundled_model_path("ocr-cls")
    ok(cli("model", "register", "--name", "ocr", "--path", path, "--preprocessing", PREPROCESSING))


def test_npy_json_output_equals_a_direct_session(cli: Invoke, mlp: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", X)
    out = predict_json(cli, "--name", "mlp", "--input", tmp_path / "x.npy")
    (want,) = direct(mlp, {"x": X})
    assert out["y"]["shape"] == [2, 3]
    assert np.array_equal(np.asarray(out["y"]["data"], dtype=np.float32), want)


def test_text_output(cli: Invoke, mlp: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", X)
    text = ok(cli("predict", "--name", "mlp", "--input", tmp_path / "x.npy"))
    assert "mlp:1.0.0" in text and "y: dtype=float32 shape=[2, 3]" in text


def test_npz_with_two_inputs(cli: Invoke, two: Path, tmp_path: Path) -> None:
    a, b = X[:, :3], np.full((2, 3), 3.0, np.float32)
    np.savez(tmp_path / "ab.npz", a=a, b=b)
    out = predict_json(cli, "--name", "two", "--input", tmp_path / "ab.npz")
    assert np.allclose(out["sum"]["data"], a + b)
    assert np.allclose(out["prod"]["data"], a * b)


@pytest.mark.parametrize(
    "document",
    [
        [[0.0, 0.125, 0.25, 0.375]],
        [0.0, 0.125, 0.25, 0.375],
        {"x": [[0.0, 0.125, 0.25, 0.375]]},
        {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [0.0, 0.125, 0.25, 0.375]}]},
    ],
    ids=["nested-list", "one-row-without-batch", "named", "v2-request"],
)
def test_json_inputs(cli: Invoke, mlp: Path, tmp_path: Path, document: object) -> None:
    (tmp_path / "x.json").write_text(json.dumps(document), encoding="utf-8")
    out = predict_json(cli, "--name", "mlp", "--input", tmp_path / "x.json")
    (want,) = direct(mlp, {"x": X[:1]})
    assert out["y"]["shape"] == [1, 3]
    assert np.array_equal(np.asarray(out["y"]["data"], dtype=np.float32), want)


def test_json_integers_are_cast_to_the_model_dtype(cli: Invoke, int64_path: Path, tmp_path: Path) -> None:
    ok(cli("model", "register", "--name", "ids", "--path", int64_path))
    (tmp_path / "ids.json").write_text(json.dumps({"ids": [[1, 2, 3, 4, 5]]}), encoding="utf-8")
    out = predict_json(cli, "--name", "ids", "--input", tmp_path / "ids.json")
    assert out["doubled"]["data"] == [[2, 4, 6, 8, 10]]


def test_version_option(cli: Invoke, mlp: Path, other_mlp_path: Path, tmp_path: Path) -> None:
    ok(cli("model", "register", "--name", "mlp", "--path", other_mlp_path))
    np.save(tmp_path / "x.npy", X)
    first = predict_json(cli, "--name", "mlp", "--version", "1.0.0", "--input", tmp_path / "x.npy")
    latest = predict_json(cli, "--name", "mlp", "--input", tmp_path / "x.npy")
    assert np.array_equal(np.asarray(first["y"]["data"], np.float32), direct(mlp, {"x": X})[0])
    assert np.array_equal(np.asarray(latest["y"]["data"], np.float32), direct(other_mlp_path, {"x": X})[0])


@pytest.mark.parametrize(("rotate", "label"), [(False, "0"), (True, "180")])
def test_image_top_k_on_the_real_ocr_classifier(
    cli: Invoke, ocr: None, tmp_path: Path, rotate: bool, label: str
) -> None:
    render_text(rotate=rotate).save(tmp_path / "text.png")
    text = ok(cli("predict", "--name", "ocr", "--image", tmp_path / "text.png", "--top-k", "2"))
    assert "ocr:1.0.0" in text
    other = "180" if label == "0" else "0"
    assert f"row 0: {label}=1.0000, {other}=0.0000" in text


def test_image_json(cli: Invoke, ocr: None, tmp_path: Path) -> None:
    render_text().save(tmp_path / "text.png")
    out = predict_json(cli, "--name", "ocr", "--image", tmp_path / "text.png")
    (scores,) = out.values()
    assert scores["shape"] == [1, 2] and scores["data"][0][0] > 0.99


def _error(cli: Invoke, *args: str | Path) -> BaseException:
    result = cli("predict", *args)
    assert result.exception is not None and result.exit_code != 0, result.output
    assert "\n" not in str(result.exception)
    return result.exception


def test_input_errors(cli: Invoke, mlp: Path, two: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "f64.npy", X.astype(np.float64))
    np.save(tmp_path / "wide.npy", np.zeros((2, 5), np.float32))
    (tmp_path / "garbage.npy").write_bytes(b"not numpy")
    (tmp_path / "garbage.npz").write_bytes(b"PK\x03\x04 broken zip")
    (tmp_path / "x.csv").write_text("1,2,3,4", encoding="utf-8")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    (tmp_path / "ragged.json").write_text('{"x": [[1, 2], [3]]}', encoding="utf-8")
    (tmp_path / "reshape.json").write_text(
        '{"inputs": [{"name": "x", "shape": [3, 4], "data": [1]}]}', encoding="utf-8"
    )
    (tmp_path / "noname.json").write_text('{"inputs": [{"data": [1]}]}', encoding="utf-8")
    (tmp_path / "scalar.json").write_text("5", encoding="utf-8")
    cases = [
        (("--name", "mlp"), InvalidArgumentError, "give exactly one of --input or --image"),
        (
            ("--name", "mlp", "--input", tmp_path / "x.npy", "--image", tmp_path / "x.npy"),
            InvalidArgumentError,
            "exactly one",
        ),
        (("--name", "mlp", "--input", tmp_path / "absent.npy"), InvalidArgumentError, "absent.npy: no such input file"),
        (("--name", "mlp", "--input", tmp_path / "x.csv"), InvalidArgumentError, "unsupported input file type '.csv'"),
        (
            ("--name", "mlp", "--input", tmp_path / "garbage.npy"),
            InvalidArgumentError,
            "garbage.npy: not a readable numpy file",
        ),
        (
            ("--name", "two", "--input", tmp_path / "garbage.npz"),
            InvalidArgumentError,
            "garbage.npz: not a readable numpy file",
        ),
        (("--name", "two", "--input", tmp_path / "x.npy"), InvalidArgumentError, "the model takes 2 inputs ['a', 'b']"),
        (("--name", "mlp", "--input", tmp_path / "f64.npy"), InvalidInputError, "input 'x': datatype FP64"),
        (("--name", "mlp", "--input", tmp_path / "wide.npy"), InvalidInputError, "input 'x': shape [2, 5]"),
        (("--name", "mlp", "--input", tmp_path / "bad.json"), InvalidArgumentError, "bad.json: not valid JSON"),
        (("--name", "mlp", "--input", tmp_path / "ragged.json"), InvalidArgumentError, "input 'x' cannot be converted"),
        (
            ("--name", "mlp", "--input", tmp_path / "reshape.json"),
            InvalidArgumentError,
            "inputs[0] 'x': cannot reshape",
        ),
        (
            ("--name", "mlp", "--input", tmp_path / "noname.json"),
            InvalidArgumentError,
            "inputs[0] needs 'name' and 'data'",
        ),
        (("--name", "mlp", "--input", tmp_path / "scalar.json"), InvalidArgumentError, "expected an object mapping"),
        (("--name", "mlp", "--image", tmp_path / "x.npy"), InvalidArgumentError, "mlp:1.0.0 has no preprocessing"),
        (("--name", "ghost", "--input", tmp_path / "x.npy"), NotFoundError, "unknown model 'ghost'"),
    ]
    for args, error, text in cases:
        raised = _error(cli, *args)
        assert isinstance(raised, error), (args, raised)
        assert text in str(raised), (args, str(raised))


def test_image_errors(cli: Invoke, ocr: None, tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    missing = _error(cli, "--name", "ocr", "--image", tmp_path / "absent.png")
    assert isinstance(missing, InvalidArgumentError) and "absent.png: no such image file" in str(missing)
    directory = _error(cli, "--name", "ocr", "--image", tmp_path)
    assert isinstance(directory, InvalidArgumentError) and "no such image file" in str(directory)
    broken = _error(cli, "--name", "ocr", "--image", tmp_path / "broken.png")
    assert isinstance(broken, InvalidInputError)
    assert str(broken).startswith(f"{tmp_path / 'broken.png'}: cannot decode image")

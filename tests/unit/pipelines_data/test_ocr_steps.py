"""The OCR pipeline's step files on their own: loadable by the checked loader, self-contained, and
faithful to RapidOCR in the parts that need no model (image decoding, the box geometry, CTC decoding)."""

from __future__ import annotations

import ast
import io
import sys
from importlib.resources import files
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image

from mcp2026ai.contract import parse_contract
from mcp2026ai.errors import InvalidInputError
from mcp2026ai.runtime.python_code import imported_modules, load_class

FOLDER = files("mcp2026ai").joinpath("pipelines_data", "ocr")
SPEC = yaml.safe_load(FOLDER.joinpath("pipeline.yaml").read_text("utf-8"))
PYTHON_STEPS = [step for step in SPEC["steps"] if "python" in step]
FILE_OF = {spec_step["class"]: spec_step["python"] for spec_step in PYTHON_STEPS}


def step_class(class_name: str) -> type:
    file_name = FILE_OF[class_name]
    source = FOLDER.joinpath(file_name).read_bytes()
    return load_class(source, label=file_name, class_name=class_name, module_name=f"test.{class_name}")


def step(class_name: str, **config: Any) -> Any:
    instance = step_class(class_name)()
    instance.initialize(config)
    return instance


def image_tensor(data: bytes) -> dict[str, np.ndarray]:
    tensor = np.empty(1, dtype=object)
    tensor[0] = data
    return {"image": tensor}


@pytest.mark.parametrize("spec_step", PYTHON_STEPS, ids=lambda spec_step: spec_step["name"])
def test_every_python_step_loads_and_declares_what_its_file_imports(spec_step: dict[str, Any]) -> None:
    cls = step_class(spec_step["class"])
    assert all(callable(getattr(cls, method, None)) for method in ("initialize", "execute", "finalize"))
    tree = ast.parse(FOLDER.joinpath(spec_step["python"]).read_bytes())
    third_party = {module for module, _ in imported_modules(tree)} - set(sys.stdlib_module_names) - {"mcp2026ai"}
    assert third_party <= {"numpy", "cv2", "PIL", "pyclipper"}, "numpy, OpenCV, Pillow and pyclipper only"
    assert set(spec_step["requires"]) == third_party


def test_the_contract_is_a_valid_inference_contract() -> None:
    contract = parse_contract(SPEC["contract"], "pipeline.yaml: contract")
    assert contract.latency.p99_ms == 3000 and contract.sla_class == "best-effort"


def test_each_step_reads_only_pipeline_inputs_or_earlier_outputs() -> None:
    known = {tensor["name"] for tensor in SPEC["inputs"]}
    for spec_step in SPEC["steps"]:
        missing = set(spec_step["inputs"].values()) - known
        assert not missing, f"{spec_step['name']} reads {missing} before any step writes them"
        known |= set(spec_step["outputs"].values())
    assert {tensor["name"] for tensor in SPEC["outputs"]} <= known


@pytest.mark.parametrize("file_name", sorted(set(FILE_OF.values())))
def test_a_step_file_imports_nothing_of_the_package_but_its_errors_nor_relatively(file_name: str) -> None:
    tree = ast.parse(FOLDER.joinpath(file_name).read_bytes())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]
    package = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    assert {module for module in package if module.startswith("mcp2026ai")} <= {"mcp2026ai.errors"}
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import) and any("mcp2026ai" in a.name for a in n.names)]


def module_functions() -> dict[str, Any]:
    """The step file's module-level names (load_class keeps its module out of sys.modules)."""
    cls = step_class("DetPostprocess")
    names: dict[str, Any] = cls.initialize.__globals__  # type: ignore[attr-defined]
    return names


def test_box_area_and_length_are_shapelys_to_the_bit() -> None:
    shapely = pytest.importorskip("shapely.geometry")
    cv2 = pytest.importorskip("cv2")
    functions = module_functions()
    random = np.random.default_rng(7)
    for _ in range(500):
        centre = tuple(random.uniform(0, 2000, 2))
        size = tuple(random.uniform(1, 400, 2))
        box = cv2.boxPoints((centre, size, float(random.uniform(-90, 90))))
        polygon = shapely.Polygon(box)
        assert functions["_polygon_area"](box) == polygon.area
        assert functions["_polygon_length"](box) == polygon.length


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA", "P", "1", "I;16"])
def test_decoding_gives_rapidocrs_pixels_in_every_mode(mode: str) -> None:
    load_image = pytest.importorskip("rapidocr_onnxruntime.utils").LoadImage()
    random = np.random.default_rng(3)
    source = Image.fromarray(random.integers(0, 256, (40, 64, 4), dtype=np.uint8), "RGBA")
    buffer = io.BytesIO()
    (source if mode == "RGBA" else source.convert(mode)).save(buffer, format="PNG")
    data = buffer.getvalue()
    answer = step("DetPreprocess", min_side_len=1, min_height=1, width_height_ratio=-1).execute(image_tensor(data))
    np.testing.assert_array_equal(answer["page"], load_image(data))


def test_an_image_over_the_pixel_limit_is_refused_before_it_is_decoded() -> None:
    buffer = io.BytesIO()
    Image.new("1", (8000, 6000)).save(buffer, format="PNG")
    with pytest.raises(
        InvalidInputError, match=r"^image is 8000x6000 pixels, more than max_image_pixels \(40000000\)$"
    ):
        step("DetPreprocess").execute(image_tensor(buffer.getvalue()))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.array([b"a", b"b"], dtype=object), r"image must hold exactly one encoded image, got 2 elements"),
        (np.array([3], dtype=object), r"image must be BYTES \(an encoded PNG or JPEG\), got int"),
        (np.array(["text"], dtype=object), r"image must be BYTES \(an encoded PNG or JPEG\), got str"),
    ],
)
def test_the_image_tensor_must_hold_one_encoded_image(value: np.ndarray, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        step("DetPreprocess").execute({"image": value})


def test_ctc_decoding_merges_repeats_drops_blanks_and_the_weak_lines() -> None:
    decode = step("CtcDecode", characters="a\nb\nc", text_score=0.5)
    classes = 5  # blank, a, b, c, space
    probs = np.full((2, 6, classes), 0.01, dtype=np.float32)
    for row, sequence, best in ((0, [1, 1, 0, 1, 2, 4], 0.9), (1, [3, 0, 0, 0, 0, 0], 0.3)):
        probs[row, np.arange(6), sequence] = best
    boxes = np.array([[[0, 0], [10, 0], [10, 5], [0, 5]]] * 2, dtype=np.float32)
    geometry = np.array([100, 100, 1.0, 1.0, 0, 0], dtype=np.float64)
    answer = decode.execute({"rec_probs": probs, "line_boxes": boxes, "geometry": geometry})
    assert answer["text"].tolist() == [b"aab "]
    np.testing.assert_allclose(answer["scores"], [0.9])
    assert answer["boxes"].shape == (1, 4, 2)


def test_ctc_decoding_needs_the_dictionary() -> None:
    with pytest.raises(ValueError, match=r"ctc_decode needs config.characters"):
        step("CtcDecode")


def test_no_lines_give_one_blank_rec_row_the_decoder_drops() -> None:
    rec_pre = step("RecPreprocess")
    empty = rec_pre.execute(
        {
            "crops": np.zeros((0, 0, 0, 3), np.uint8),
            "crop_sizes": np.zeros((0, 2), np.int32),
            "cls_probs": np.zeros((0, 2), np.float32),
        }
    )
    assert empty["rec_input"].shape == (1, 3, 48, 320) and not empty["rec_input"].any()
    decode = step("CtcDecode", characters="a")
    answer = decode.execute(
        {
            "rec_probs": np.zeros((1, 40, 3), np.float32),
            "line_boxes": np.zeros((0, 4, 2), np.float32),
            "geometry": np.array([10, 10, 1, 1, 0, 0], np.float64),
        }
    )
    assert answer["text"].shape == (0,) and answer["boxes"].shape == (0, 4, 2) and answer["scores"].shape == (0,)

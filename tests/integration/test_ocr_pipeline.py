"""The bundled OCR pipeline, run step by step by the direct runner, answers what RapidOCR() answers.

On twenty images of rendered text (tests/support/ocr_pages.py: one to nine lines, some upside down)
the lines' text equals ``rapidocr_onnxruntime.RapidOCR()(image)`` exactly, in the same order, the
boxes agree within a pixel (they are equal on this host) and the scores are close. The spec, the
step files and the models are the folder ``mcp bundled ocr`` writes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import yaml
from PIL import Image

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.bundled_pipelines import materialize_pipeline
from mcp2026ai.errors import InvalidInputError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.pipelines import register_pipeline
from mcp2026ai.runtime.python_code import check_python_source
from mcp2026ai.testing import BackgroundServer
from tests.support.images import png_bytes, render_text
from tests.support.ocr_pages import TEXT_IMAGES, TextImage
from tests.support.pipeline_direct import DirectPipeline, ModelStep, image_request, load_pipeline

RapidOCR = pytest.importorskip("rapidocr_onnxruntime").RapidOCR

REC_BATCH_NUM = 6
"""RapidOCR recognises lines in groups of 6, each zero-padded to its own widest line; the pipeline's one
rec call pads every line to the widest of all. Up to 6 lines the inputs are identical (scores equal to
float32 rounding); past 6 the shorter lines see more padding and their scores move a little."""


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialize_pipeline("ocr", tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def direct(spec_path: Path) -> Iterator[DirectPipeline]:
    pipeline = load_pipeline(spec_path)
    yield pipeline
    pipeline.close()


@pytest.fixture(scope="module")
def reference() -> Any:
    return RapidOCR()


def reference_lines(reference: Any, image: bytes) -> tuple[list[str], np.ndarray, np.ndarray]:
    result, _ = reference(image)
    if not result:
        return [], np.zeros((0, 4, 2), dtype=np.float32), np.zeros(0)
    boxes = np.array([line[0] for line in result], dtype=np.float32).reshape(-1, 4, 2)
    return [line[1] for line in result], boxes, np.array([line[2] for line in result])


def test_the_spec_holds_the_rec_models_dictionary(spec_path: Path) -> None:
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    (decode,) = [step for step in spec["steps"] if step["name"] == "ctc_decode"]
    session = ort.InferenceSession(str(bundled_model_path("ocr-rec")), providers=["CPUExecutionProvider"])
    assert decode["config"]["characters"] == session.get_modelmeta().custom_metadata_map["character"]


def test_model_steps_use_the_models_own_tensor_names(direct: DirectPipeline) -> None:
    for step in direct.steps:
        if isinstance(step, ModelStep):
            assert set(step.inputs) == {tensor.name for tensor in step.session.get_inputs()}, step.name
            assert set(step.outputs) == {tensor.name for tensor in step.session.get_outputs()}, step.name


@pytest.mark.slow
@pytest.mark.parametrize("case", TEXT_IMAGES, ids=lambda case: case.name)
def test_lines_equal_rapidocrs(case: TextImage, direct: DirectPipeline, reference: Any) -> None:
    image = case.encoded()
    texts, boxes, scores = reference_lines(reference, image)
    answer = direct(image_request(image))

    assert texts, f"RapidOCR read nothing in {case.name}: not a useful case"
    assert [line.decode("utf-8") for line in answer["text"]] == texts
    assert answer["text"].dtype == object and answer["boxes"].dtype == np.float32
    assert answer["boxes"].shape == (len(texts), 4, 2) and answer["scores"].shape == (len(texts),)
    assert np.abs(answer["boxes"] - boxes).max() <= 1.0
    tolerance = 1e-6 if len(texts) <= REC_BATCH_NUM else 0.05
    np.testing.assert_allclose(answer["scores"], scores, atol=tolerance)


def resized_line(text: str, size: tuple[int, int] | None) -> bytes:
    line = render_text(text)
    return png_bytes(line.resize(size) if size else line)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("Small print 42", (116, 24)),  # under 30 px: scaled up, then letterboxed
        ("A very long line that needs shrinking before detection", (2400, 96)),  # over 2000 px, then letterboxed
    ],
    ids=["scaled-up-and-letterboxed", "scaled-down-and-letterboxed"],
)
def test_boxes_map_back_through_the_resizes_and_the_letterbox(
    text: str, size: tuple[int, int], direct: DirectPipeline, reference: Any
) -> None:
    image = resized_line(text, size)
    texts, boxes, _ = reference_lines(reference, image)
    answer = direct(image_request(image))
    assert texts and [line.decode("utf-8") for line in answer["text"]] == texts
    assert np.abs(answer["boxes"] - boxes).max() <= 1.0


@pytest.mark.slow
def test_a_page_without_text_gives_no_lines(direct: DirectPipeline, reference: Any) -> None:
    for blank in (TextImage("blank", ("",)).encoded(), png_bytes(Image.new("RGB", (12, 9), "white"))):
        assert reference(blank) == (None, None)
        answer = direct(image_request(blank))
        assert answer["text"].shape == (0,) and answer["boxes"].shape == (0, 4, 2) and answer["scores"].shape == (0,)


def test_bytes_that_are_no_image_are_a_value_error_naming_the_problem(direct: DirectPipeline) -> None:
    with pytest.raises(
        InvalidInputError, match=r"^image \(20 bytes\) does not decode: not a PNG, JPEG or other format Pillow reads$"
    ):
        direct(image_request(b"this is not an image"))


def test_a_truncated_png_is_a_value_error(direct: DirectPipeline) -> None:
    whole = TEXT_IMAGES[2].encoded()
    with pytest.raises(InvalidInputError, match=r"^image \(\d+ bytes\) does not decode: .*truncated"):
        direct(image_request(whole[: len(whole) // 2]))


@pytest.fixture(scope="module")
def served(spec_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    """The bundled spec registered as `mcp model register --name ocr --path "$(mcp bundled ocr)"` does."""
    registry = ModelRegistry(tmp_path_factory.mktemp("served-home"))
    register_pipeline(registry, spec_path, check_python_source, name="ocr")
    with BackgroundServer(registry, ["ocr"]) as running:
        yield running


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_served_pipeline_answers_as_rapidocr_over_http_and_grpc(served: BackgroundServer, reference: Any) -> None:
    """tritonclient, unchanged, against the served pipeline: RapidOCR's lines, boxes and scores."""
    for case in (TEXT_IMAGES[0], TEXT_IMAGES[2]):
        image = case.encoded()
        texts, boxes, scores = reference_lines(reference, image)
        tensor = httpclient.InferInput("image", [1], "BYTES")
        tensor.set_data_from_numpy(np.array([image], dtype=np.object_))
        answer = httpclient.InferenceServerClient(served.http_url).infer("ocr", [tensor])
        assert [line.decode() for line in answer.as_numpy("text")] == texts, case.name
        np.testing.assert_allclose(answer.as_numpy("boxes"), boxes, atol=1.0)
        np.testing.assert_allclose(answer.as_numpy("scores"), scores, atol=1e-5)
        stream = grpcclient.InferInput("image", [1], "BYTES")
        stream.set_data_from_numpy(np.array([image], dtype=np.object_))
        over_grpc = grpcclient.InferenceServerClient(served.grpc_url).infer("ocr", [stream])
        assert [line.decode() for line in over_grpc.as_numpy("text")] == texts, case.name


@pytest.mark.slow
def test_v1_infer_sends_the_encoded_image_and_answers_the_pipelines_outputs(
    served: BackgroundServer, reference: Any
) -> None:
    image = TEXT_IMAGES[0].encoded()
    texts, _, _ = reference_lines(reference, image)
    body = {"model": "ocr", "image": base64.b64encode(image).decode()}
    answer = httpx.post(f"http://{served.http_url}/v1/infer", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    outputs = answer.json()["outputs"]
    assert outputs["text"] == texts and len(outputs["boxes"]) == len(texts) == len(outputs["scores"])


@pytest.mark.slow
def test_the_served_pipeline_names_the_step_for_an_image_that_does_not_decode(served: BackgroundServer) -> None:
    body = {"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["this is not an image"]}]}
    answer = httpx.post(f"http://{served.http_url}/v2/models/ocr/infer", json=body, timeout=60)
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("pipeline step 'det_pre': image (20 bytes) does not decode")
    assert httpx.get(f"http://{served.http_url}/v2/models/ocr/ready", timeout=10).status_code == 200

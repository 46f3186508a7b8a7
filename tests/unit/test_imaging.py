"""Image requests: decoding, tensor layout and normalisation, top-k, and the real OCR classifier."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from mcp2026ai import imaging
from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.errors import InvalidInputError
from mcp2026ai.imaging import decode_image, image_to_tensor, top_k
from mcp2026ai.ir import import_model
from mcp2026ai.registry import Preprocessing
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from tests.support.images import png_bytes, render_text

OCR_PREP = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)


def solid(color: tuple[int, int, int], size: tuple[int, int] = (10, 10)) -> Image.Image:
    return Image.new("RGB", size, color)


def test_decode_png_and_jpeg() -> None:
    for fmt in ("PNG", "JPEG"):
        buffer = io.BytesIO()
        solid((10, 20, 30), (7, 5)).save(buffer, format=fmt)
        image = decode_image(buffer.getvalue())
        assert image.mode == "RGB" and image.size == (7, 5)


def test_decode_converts_grayscale_to_rgb() -> None:
    buffer = io.BytesIO()
    Image.new("L", (3, 3), 128).save(buffer, format="PNG")
    assert decode_image(buffer.getvalue()).mode == "RGB"


@pytest.mark.parametrize(
    "data", [b"", b"not an image", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20], ids=["empty", "text", "png-header"]
)
def test_bad_image_bytes(data: bytes) -> None:
    with pytest.raises(InvalidInputError, match=r"^cannot decode image"):
        decode_image(data)


def test_too_many_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imaging, "MAX_IMAGE_PIXELS", 50)
    with pytest.raises(InvalidInputError, match="image of 10x10 pixels is too large"):
        decode_image(png_bytes(solid((0, 0, 0))))


def test_stretch_nchw_normalisation() -> None:
    prep = Preprocessing(height=4, width=6, mean=[0.5, 0.5, 0.5], std=[0.5, 0.25, 0.5], scale=1 / 255)
    tensor = image_to_tensor(solid((255, 0, 255), (13, 9)), prep)
    assert tensor.shape == (1, 3, 4, 6) and tensor.dtype == np.float32 and tensor.flags.c_contiguous
    assert np.allclose(tensor[0, 0], 1.0)  # (1 - 0.5) / 0.5
    assert np.allclose(tensor[0, 1], -2.0)  # (0 - 0.5) / 0.25
    assert np.allclose(tensor[0, 2], 1.0)


def test_nhwc_layout_and_bgr_order() -> None:
    prep = Preprocessing(height=2, width=2, mean=[0, 0, 0], std=[1, 1, 1], scale=1.0, layout="NHWC", color="BGR")
    tensor = image_to_tensor(solid((200, 100, 50)), prep)
    assert tensor.shape == (1, 2, 2, 3)
    assert tensor[0, 0, 0].tolist() == [50.0, 100.0, 200.0]


def test_pad_keeps_aspect_ratio_and_zero_pads_width() -> None:
    prep = Preprocessing(height=4, width=20, mean=[0, 0, 0], std=[1, 1, 1], scale=1.0, resize="pad")
    tensor = image_to_tensor(solid((9, 9, 9), (8, 4)), prep)  # 2:1 -> 8 of 20 columns
    assert tensor.shape == (1, 3, 4, 20)
    assert np.all(tensor[..., :8] == 9.0)
    assert np.all(tensor[..., 8:] == 0.0)


def test_pad_never_exceeds_the_width() -> None:
    prep = Preprocessing(height=4, width=10, resize="pad")
    assert image_to_tensor(solid((1, 2, 3), (400, 4)), prep).shape == (1, 3, 4, 10)


def test_top_k_orders_and_labels() -> None:
    ranked = top_k(np.array([[0.1, 0.7, 0.2]]), 2, ["cat", "dog"])
    assert [(c["index"], c["label"]) for c in ranked] == [(1, "dog"), (2, "2")]
    assert ranked[0]["score"] == pytest.approx(0.7)
    assert len(top_k(np.array([0.5, 0.5]), 0, [])) == 1, "k below 1 still returns the best class"
    assert len(top_k(np.array([0.1, 0.9]), 10, [])) == 2


@pytest.fixture(scope="module")
def ocr_cls() -> OnnxRuntimeBackend:
    path = bundled_model_path("ocr-cls")
    backend = OnnxRuntimeBackend(path, import_model(path, path.parent).signature)
    backend.load()
    return backend


@pytest.mark.parametrize(
    ("text", "rotate", "label"),
    [
        ("Contract-driven inference", False, "0"),
        ("Contract-driven inference", True, "180"),
        ("The quick brown fox 2026", False, "0"),
        ("The quick brown fox 2026", True, "180"),
    ],
)
def test_real_ocr_classifier_reads_text_direction(
    ocr_cls: OnnxRuntimeBackend, text: str, rotate: bool, label: str
) -> None:
    image = decode_image(png_bytes(render_text(text, rotate)))
    tensor = image_to_tensor(image, OCR_PREP)
    assert tensor.shape == (1, 3, 48, 192)
    (scores,) = ocr_cls.infer({"x": tensor}).values()
    best = top_k(scores[0], 1, OCR_PREP.labels)[0]
    assert best["label"] == label
    assert best["score"] > 0.8

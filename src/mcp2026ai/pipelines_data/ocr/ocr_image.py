"""Bundled OCR pipeline, step det_pre: RapidOCR 1.4.4's image loading and detector input, operation for operation.

image BYTES [1] -> det_input FP32 [1,3,H,W], page UINT8 [h,w,3] (BGR, resized and letterboxed as RapidOCR
does before detection), geometry FP64 [6] (raw_h, raw_w, ratio_h, ratio_w, pad_top, pad_left: what maps
page points back to the image). One request per call. Client data that is not an image (or too large a
one) raises InvalidInputError naming what is wrong (the pipeline's 400, naming this step). Self-contained
but for that error class (numpy, OpenCV, Pillow): the pipeline stores the file by its hash. See
docs/pipelines.md, "The bundled OCR pipeline".
"""

from __future__ import annotations

import io
from typing import Any

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from mcp2026ai.errors import InvalidInputError

Batch = dict[str, np.ndarray]


class DetPreprocess:
    """rapidocr: LoadImage (Pillow decode, to BGR), RapidOCR.preprocess, maybe_add_letterbox, DetPreProcess."""

    def initialize(self, config: dict[str, Any]) -> None:
        self.max_image_pixels = int(config.get("max_image_pixels", 40_000_000))
        self.max_side_len = int(config.get("max_side_len", 2000))
        self.min_side_len = int(config.get("min_side_len", 30))
        self.min_height = int(config.get("min_height", 30))
        self.width_height_ratio = float(config.get("width_height_ratio", 8))
        self.limit_side_len = int(config.get("limit_side_len", 736))
        self.limit_type = str(config.get("limit_type", "min"))
        self.mean = np.array(config.get("mean", [0.5, 0.5, 0.5]))
        self.std = np.array(config.get("std", [0.5, 0.5, 0.5]))

    def execute(self, batch: Batch) -> Batch:
        raw = _one_bytes(batch["image"], "image")
        image = self._decode(raw)
        raw_h, raw_w = image.shape[:2]
        page, ratio_h, ratio_w = self._fit_sides(image)
        page, pad_top = self._letterbox(page)
        det_input = self._det_input(page)
        geometry = np.array([raw_h, raw_w, ratio_h, ratio_w, pad_top, 0], dtype=np.float64)
        return {"det_input": det_input, "page": np.ascontiguousarray(page), "geometry": geometry}

    def finalize(self) -> None:
        return None

    def _decode(self, raw: bytes) -> np.ndarray:
        try:
            with Image.open(io.BytesIO(raw)) as opened:
                width, height = opened.size
                if width * height > self.max_image_pixels:
                    raise InvalidInputError(
                        f"image is {width}x{height} pixels, more than max_image_pixels ({self.max_image_pixels})"
                    )
                pixels = np.array(opened.convert("L") if opened.mode == "1" else opened)
        except InvalidInputError:
            raise
        except UnidentifiedImageError:
            raise InvalidInputError(
                f"image ({len(raw)} bytes) does not decode: not a PNG, JPEG or other format Pillow reads"
            ) from None
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
            raise InvalidInputError(f"image ({len(raw)} bytes) does not decode: {error}") from None
        return _to_bgr(pixels)

    def _fit_sides(self, image: np.ndarray) -> tuple[np.ndarray, float, float]:
        """RapidOCR.preprocess: the last resize's ratios are the ones kept, as rapidocr keeps them."""
        ratio_h = ratio_w = 1.0
        if max(image.shape[:2]) > self.max_side_len:
            image, ratio_h, ratio_w = _resize_to_32(image, self.max_side_len, shrink=True)
        if min(image.shape[:2]) < self.min_side_len:
            image, ratio_h, ratio_w = _resize_to_32(image, self.min_side_len, shrink=False)
        return image, ratio_h, ratio_w

    def _letterbox(self, image: np.ndarray) -> tuple[np.ndarray, int]:
        h, w = image.shape[:2]
        too_wide = self.width_height_ratio != -1 and w / h > self.width_height_ratio
        if h > self.min_height and not too_wide:
            return image, 0
        new_h = max(int(w / self.width_height_ratio), self.min_height) * 2
        padding_h = int(abs(new_h - h) / 2)
        padded = cv2.copyMakeBorder(image, padding_h, padding_h, 0, 0, cv2.BORDER_CONSTANT, value=(0, 0, 0))
        return padded, padding_h

    def _det_input(self, page: np.ndarray) -> np.ndarray:
        h, w = page.shape[:2]
        limit = self.limit_side_len
        if self.limit_type != "min":
            longest = max(h, w)
            limit = 960 if longest < 960 else 1500 if longest < 1500 else 2000
        if self.limit_type == "max":
            ratio = float(limit) / max(h, w) if max(h, w) > limit else 1.0
        else:
            ratio = float(limit) / min(h, w) if min(h, w) < limit else 1.0
        resize_h = int(round(int(h * ratio) / 32) * 32)
        resize_w = int(round(int(w * ratio) / 32) * 32)
        if resize_w <= 0 or resize_h <= 0:
            raise InvalidInputError(f"image of {w}x{h} pixels is too small to detect text in")
        resized = cv2.resize(page, (resize_w, resize_h))
        normalized = (resized.astype("float32") * (1 / 255.0) - self.mean) / self.std
        return np.expand_dims(normalized.transpose((2, 0, 1)), axis=0).astype(np.float32)


def _one_bytes(tensor: np.ndarray, name: str) -> bytes:
    if tensor.size != 1:
        raise InvalidInputError(f"{name} must hold exactly one encoded image, got {tensor.size} elements")
    value = tensor.reshape(-1)[0]
    if not isinstance(value, bytes | bytearray):
        raise InvalidInputError(f"{name} must be BYTES (an encoded PNG or JPEG), got {type(value).__name__}")
    return bytes(value)


def _to_bgr(pixels: np.ndarray) -> np.ndarray:
    """rapidocr LoadImage.convert_img for images that came as bytes."""
    if pixels.ndim == 2:
        return cv2.cvtColor(pixels, cv2.COLOR_GRAY2BGR)
    if pixels.ndim != 3 or pixels.shape[2] not in (1, 2, 3, 4):
        raise InvalidInputError(f"image has an unsupported layout {pixels.shape} (expected 1 to 4 channels)")
    channels = pixels.shape[2]
    if channels == 1:
        return cv2.cvtColor(pixels, cv2.COLOR_GRAY2BGR)
    if channels == 3:
        return cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    if channels == 2:
        gray = cv2.cvtColor(pixels[..., 0], cv2.COLOR_GRAY2BGR)
        alpha = pixels[..., 1]
        not_alpha = cv2.cvtColor(cv2.bitwise_not(alpha), cv2.COLOR_GRAY2BGR)
        return cv2.add(cv2.bitwise_and(gray, gray, mask=alpha), not_alpha)
    red, green, blue, alpha = cv2.split(pixels)
    merged = cv2.merge((blue, green, red))
    bgr = cv2.bitwise_and(merged, merged, mask=alpha)
    if np.mean(bgr) <= 0.0:
        return cv2.add(bgr, cv2.cvtColor(cv2.bitwise_not(alpha), cv2.COLOR_GRAY2BGR))
    return cv2.bitwise_not(bgr)


def _resize_to_32(image: np.ndarray, side: int, *, shrink: bool) -> tuple[np.ndarray, float, float]:
    """rapidocr reduce_max_side / increase_min_side: scale one side to ``side``, both to multiples of 32."""
    h, w = image.shape[:2]
    ratio = 1.0
    if shrink and max(h, w) > side:
        ratio = float(side) / h if h > w else float(side) / w
    if not shrink and min(h, w) < side:
        ratio = float(side) / h if h < w else float(side) / w
    resize_h = int(round(int(h * ratio) / 32) * 32)
    resize_w = int(round(int(w * ratio) / 32) * 32)
    if resize_w <= 0 or resize_h <= 0:
        raise InvalidInputError(f"image of {w}x{h} pixels cannot be resized for detection")
    return cv2.resize(image, (resize_w, resize_h)), h / resize_h, w / resize_w

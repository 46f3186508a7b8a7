"""Image requests: decode, resize and normalise a picture into a model input; rank the classes."""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image, UnidentifiedImageError

from mcp2026ai.errors import InvalidInputError
from mcp2026ai.registry.records import Preprocessing

MAX_IMAGE_PIXELS = 50_000_000


def decode_image(data: bytes) -> Image.Image:
    """Pillow image from JPEG/PNG/... bytes; InvalidInputError for anything else."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                raise InvalidInputError(f"image of {image.width}x{image.height} pixels is too large")
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError, ValueError) as exc:
        raise InvalidInputError(f"cannot decode image ({exc})") from None


def image_to_tensor(image: Image.Image, prep: Preprocessing) -> np.ndarray:
    """A float32 batch of one, laid out as the model expects (NCHW or NHWC)."""
    width = prep.width if prep.resize == "stretch" else _padded_width(image, prep)
    pixels = np.asarray(image.resize((width, prep.height), Image.Resampling.BILINEAR), dtype=np.float32)
    if prep.color == "BGR":
        pixels = pixels[..., ::-1]
    mean, std = np.asarray(prep.mean, np.float32), np.asarray(prep.std, np.float32)
    pixels = ((pixels * np.float32(prep.scale) - mean) / std).astype(np.float32, copy=False)
    canvas = np.zeros((prep.height, prep.width, 3), dtype=np.float32)
    canvas[:, :width] = pixels
    tensor = canvas.transpose(2, 0, 1) if prep.layout == "NCHW" else canvas
    return np.ascontiguousarray(tensor[np.newaxis], dtype=np.float32)


def _padded_width(image: Image.Image, prep: Preprocessing) -> int:
    return min(prep.width, max(1, math.ceil(prep.height * image.width / image.height)))


def top_k(scores: np.ndarray, k: int, labels: list[str]) -> list[dict[str, object]]:
    """The k best classes of one score vector, with labels where known."""
    flat = np.asarray(scores, dtype=np.float64).reshape(-1)
    best = np.argsort(flat)[::-1][: max(1, k)]
    return [{"index": int(i), "label": labels[i] if i < len(labels) else str(i), "score": float(flat[i])} for i in best]

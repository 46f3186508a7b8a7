"""Python steps of the bundled OCR pipeline: RapidOCR 1.4.4's own pre- and post-processing, step by step.

Each class mirrors the rapidocr_onnxruntime code named in its docstring, operation for operation (same
resize rules, thresholds, box order and character dictionary), so that the pipeline's lines, boxes and
scores are RapidOCR's. The ONNX models (det, cls, rec) run as model steps between these.

Tensors (one request per call; names are the pipeline's):

- det_pre: image BYTES [1] -> det_input FP32 [1,3,H,W], page UINT8 [h,w,3] (BGR, resized and
  letterboxed as RapidOCR does before detection), geometry FP64 [6] (raw_h, raw_w, ratio_h, ratio_w,
  pad_top, pad_left: what maps page points back to the image).
- det_post: det_map FP32 [1,1,H,W], page -> line_boxes FP32 [n,4,2] (page coordinates, reading order).
- crop: page, line_boxes -> crops UINT8 [n,Hmax,Wmax,3], crop_sizes INT32 [n,2], cls_input FP32 [n,3,48,192].
- rec_pre: crops, crop_sizes, cls_probs FP32 [n,2] -> rec_input FP32 [max(n,1),3,48,W].
- ctc_decode: rec_probs FP32 [max(n,1),T,C], line_boxes, geometry -> text BYTES [m], boxes FP32 [m,4,2],
  scores FP32 [m] (the m lines whose score reaches text_score).

Client data that is not an image (or too large a one) raises ValueError naming what is wrong.
The file is self-contained (numpy, OpenCV, Pillow, pyclipper): the pipeline stores it by its hash.
"""

from __future__ import annotations

import io
import math
from typing import Any

import cv2
import numpy as np
import pyclipper
from PIL import Image, UnidentifiedImageError

Batch = dict[str, np.ndarray]


# --------------------------------------------------------------------------------------------- det_pre
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
                    raise ValueError(
                        f"image is {width}x{height} pixels, more than max_image_pixels ({self.max_image_pixels})"
                    )
                pixels = np.array(opened.convert("L") if opened.mode == "1" else opened)
        except ValueError:
            raise
        except UnidentifiedImageError:
            raise ValueError(
                f"image ({len(raw)} bytes) does not decode: not a PNG, JPEG or other format Pillow reads"
            ) from None
        except (OSError, SyntaxError, Image.DecompressionBombError) as error:
            raise ValueError(f"image ({len(raw)} bytes) does not decode: {error}") from None
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
            raise ValueError(f"image of {w}x{h} pixels is too small to detect text in")
        resized = cv2.resize(page, (resize_w, resize_h))
        normalized = (resized.astype("float32") * (1 / 255.0) - self.mean) / self.std
        return np.expand_dims(normalized.transpose((2, 0, 1)), axis=0).astype(np.float32)


def _one_bytes(tensor: np.ndarray, name: str) -> bytes:
    if tensor.size != 1:
        raise ValueError(f"{name} must hold exactly one encoded image, got {tensor.size} elements")
    value = tensor.reshape(-1)[0]
    if not isinstance(value, bytes | bytearray):
        raise ValueError(f"{name} must be BYTES (an encoded PNG or JPEG), got {type(value).__name__}")
    return bytes(value)


def _to_bgr(pixels: np.ndarray) -> np.ndarray:
    """rapidocr LoadImage.convert_img for images that came as bytes."""
    if pixels.ndim == 2:
        return cv2.cvtColor(pixels, cv2.COLOR_GRAY2BGR)
    if pixels.ndim != 3 or pixels.shape[2] not in (1, 2, 3, 4):
        raise ValueError(f"image has an unsupported layout {pixels.shape} (expected 1 to 4 channels)")
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
        raise ValueError(f"image of {w}x{h} pixels cannot be resized for detection")
    return cv2.resize(image, (resize_w, resize_h)), h / resize_h, w / resize_w


# -------------------------------------------------------------------------------------------- det_post
class DetPostprocess:
    """rapidocr: DBPostProcess, TextDetector.filter_tag_det_res, RapidOCR.sorted_boxes."""

    def initialize(self, config: dict[str, Any]) -> None:
        self.thresh = float(config.get("thresh", 0.3))
        self.box_thresh = float(config.get("box_thresh", 0.5))
        self.max_candidates = int(config.get("max_candidates", 1000))
        self.unclip_ratio = float(config.get("unclip_ratio", 1.6))
        self.score_mode = str(config.get("score_mode", "fast"))
        self.dilation_kernel = np.array([[1, 1], [1, 1]]) if config.get("use_dilation", True) else None
        self.min_size = 3

    def execute(self, batch: Batch) -> Batch:
        pred = batch["det_map"][:, 0, :, :]
        page_h, page_w = batch["page"].shape[:2]
        mask = pred > self.thresh
        bitmap: np.ndarray = mask[0]
        if self.dilation_kernel is not None:
            bitmap = cv2.dilate(np.array(mask[0]).astype(np.uint8), self.dilation_kernel)
        boxes = self._boxes_from_bitmap(pred[0], bitmap, page_w, page_h)
        kept = [box for box in (_clip(_order_clockwise(box), page_h, page_w) for box in boxes) if _big_enough(box)]
        ordered = _reading_order(kept)
        line_boxes = np.array(ordered, dtype=np.float32).reshape(-1, 4, 2)
        return {"line_boxes": line_boxes}

    def finalize(self) -> None:
        return None

    def _boxes_from_bitmap(self, pred: np.ndarray, bitmap: np.ndarray, dest_w: int, dest_h: int) -> list[np.ndarray]:
        height, width = bitmap.shape
        found = cv2.findContours((bitmap * 255).astype(np.uint8), cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        contours = found[1] if len(found) == 3 else found[0]
        boxes: list[np.ndarray] = []
        for contour in contours[: min(len(contours), self.max_candidates)]:
            points, short_side = _mini_box(contour)
            if short_side < self.min_size:
                continue
            if self.score_mode == "fast":
                score = _box_score_fast(pred, points.reshape(-1, 2))
            else:
                score = _box_score_slow(pred, contour)
            if self.box_thresh > score:
                continue
            box, short_side = _mini_box(self._unclip(points))
            if short_side < self.min_size + 2:
                continue
            box[:, 0] = np.clip(np.round(box[:, 0] / width * dest_w), 0, dest_w)
            box[:, 1] = np.clip(np.round(box[:, 1] / height * dest_h), 0, dest_h)
            boxes.append(box.astype(np.int32))
        return boxes

    def _unclip(self, box: np.ndarray) -> np.ndarray:
        """rapidocr unclip: shapely's area and length of the box, then pyclipper's round offset."""
        distance = _polygon_area(box) * self.unclip_ratio / _polygon_length(box)
        offset = pyclipper.PyclipperOffset()
        offset.AddPath(box, pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
        return np.array(offset.Execute(distance)).reshape((-1, 1, 2))


def _mini_box(contour: np.ndarray) -> tuple[np.ndarray, float]:
    rect = cv2.minAreaRect(contour)
    points = sorted(list(cv2.boxPoints(rect)), key=lambda point: point[0])
    first, fourth = (0, 1) if points[1][1] > points[0][1] else (1, 0)
    second, third = (2, 3) if points[3][1] > points[2][1] else (3, 2)
    box = np.array([points[first], points[second], points[third], points[fourth]])
    return box, min(rect[1])


def _box_score_fast(bitmap: np.ndarray, box_in: np.ndarray) -> float:
    h, w = bitmap.shape[:2]
    box = box_in.copy()
    xmin = np.clip(np.floor(box[:, 0].min()).astype(np.int32), 0, w - 1)
    xmax = np.clip(np.ceil(box[:, 0].max()).astype(np.int32), 0, w - 1)
    ymin = np.clip(np.floor(box[:, 1].min()).astype(np.int32), 0, h - 1)
    ymax = np.clip(np.ceil(box[:, 1].max()).astype(np.int32), 0, h - 1)
    mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), dtype=np.uint8)
    box[:, 0] = box[:, 0] - xmin
    box[:, 1] = box[:, 1] - ymin
    cv2.fillPoly(mask, [box.reshape(-1, 2).astype(np.int32)], 1)
    return float(cv2.mean(bitmap[ymin : ymax + 1, xmin : xmax + 1], mask)[0])


def _box_score_slow(bitmap: np.ndarray, contour_in: np.ndarray) -> float:
    h, w = bitmap.shape[:2]
    contour = np.reshape(contour_in.copy(), (-1, 2))
    xmin = np.clip(np.min(contour[:, 0]), 0, w - 1)
    xmax = np.clip(np.max(contour[:, 0]), 0, w - 1)
    ymin = np.clip(np.min(contour[:, 1]), 0, h - 1)
    ymax = np.clip(np.max(contour[:, 1]), 0, h - 1)
    mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), dtype=np.uint8)
    contour[:, 0] = contour[:, 0] - xmin
    contour[:, 1] = contour[:, 1] - ymin
    cv2.fillPoly(mask, [contour.reshape(-1, 2).astype(np.int32)], 1)
    return float(cv2.mean(bitmap[ymin : ymax + 1, xmin : xmax + 1], mask)[0])


def _ring(box: np.ndarray) -> np.ndarray:
    points = np.asarray(box, dtype=np.float64).reshape(-1, 2)
    return np.vstack([points, points[:1]])


def _polygon_area(box: np.ndarray) -> float:
    """shapely.Polygon(box).area, computed as GEOS's Area::ofRing does (x shifted by the first point)."""
    ring = _ring(box)
    x0 = ring[0, 0]
    total = 0.0
    for i in range(1, len(ring) - 1):
        total += (ring[i, 0] - x0) * (ring[i - 1, 1] - ring[i + 1, 1])
    return abs(total / 2.0)


def _polygon_length(box: np.ndarray) -> float:
    """shapely.Polygon(box).length: the closed ring's segment lengths added in order (GEOS Length::ofLine)."""
    ring = _ring(box)
    total = 0.0
    for i in range(1, len(ring)):
        dx = ring[i, 0] - ring[i - 1, 0]
        dy = ring[i, 1] - ring[i - 1, 1]
        total += math.sqrt(dx * dx + dy * dy)
    return total


def _order_clockwise(points: np.ndarray) -> np.ndarray:
    by_x = points[np.argsort(points[:, 0]), :]
    left, right = by_x[:2, :], by_x[2:, :]
    top_left, bottom_left = left[np.argsort(left[:, 1]), :]
    top_right, bottom_right = right[np.argsort(right[:, 1]), :]
    return np.array([top_left, top_right, bottom_right, bottom_left], dtype="float32")


def _clip(points: np.ndarray, height: int, width: int) -> np.ndarray:
    for index in range(points.shape[0]):
        points[index, 0] = int(min(max(points[index, 0], 0), width - 1))
        points[index, 1] = int(min(max(points[index, 1], 0), height - 1))
    return points


def _big_enough(box: np.ndarray) -> bool:
    return int(np.linalg.norm(box[0] - box[1])) > 3 and int(np.linalg.norm(box[0] - box[3])) > 3


def _reading_order(boxes: list[np.ndarray]) -> list[np.ndarray]:
    """RapidOCR.sorted_boxes: by top-left (y, x), then neighbours within 10 px in y swapped left to right."""
    ordered = sorted(boxes, key=lambda box: (box[0][1], box[0][0]))
    for i in range(len(ordered) - 1):
        for j in range(i, -1, -1):
            if abs(ordered[j + 1][0][1] - ordered[j][0][1]) < 10 and ordered[j + 1][0][0] < ordered[j][0][0]:
                ordered[j], ordered[j + 1] = ordered[j + 1], ordered[j]
            else:
                break
    return ordered


# ------------------------------------------------------------------------------------------------ crop
class CropLines:
    """rapidocr: RapidOCR.get_crop_img_list (get_rotate_crop_image) and TextClassifier.resize_norm_img."""

    def initialize(self, config: dict[str, Any]) -> None:
        self.cls_image_shape = [int(value) for value in config.get("cls_image_shape", [3, 48, 192])]

    def execute(self, batch: Batch) -> Batch:
        page = batch["page"]
        crops = [_rotate_crop(page, box.copy()) for box in batch["line_boxes"]]
        cls_input = np.zeros((len(crops), *self.cls_image_shape), dtype=np.float32)
        for row, crop in enumerate(crops):
            cls_input[row] = _resize_norm(crop, *self.cls_image_shape)
        packed, sizes = _pack(crops)
        return {"crops": packed, "crop_sizes": sizes, "cls_input": cls_input}

    def finalize(self) -> None:
        return None


def _rotate_crop(image: np.ndarray, points: np.ndarray) -> np.ndarray:
    crop_w = int(max(np.linalg.norm(points[0] - points[1]), np.linalg.norm(points[2] - points[3])))
    crop_h = int(max(np.linalg.norm(points[0] - points[3]), np.linalg.norm(points[1] - points[2])))
    target = np.array([[0, 0], [crop_w, 0], [crop_w, crop_h], [0, crop_h]]).astype(np.float32)
    matrix = cv2.getPerspectiveTransform(points, target)
    crop = cv2.warpPerspective(image, matrix, (crop_w, crop_h), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC)
    if crop.shape[0] * 1.0 / crop.shape[1] >= 1.5:
        crop = np.rot90(crop)
    return np.asarray(crop)


def _resize_norm(image: np.ndarray, channels: int, height: int, width: int) -> np.ndarray:
    """The crop resized to ``height`` keeping its aspect (at most ``width``), scaled to [-1, 1], zero-padded right."""
    h, w = image.shape[:2]
    ratio = w / float(h)
    resized_w = min(width, math.ceil(height * ratio))
    resized = cv2.resize(image, (resized_w, height)).astype("float32")
    resized = resized[np.newaxis, :] / 255 if channels == 1 else resized.transpose((2, 0, 1)) / 255
    resized -= 0.5
    resized /= 0.5
    padded = np.zeros((channels, height, width), dtype=np.float32)
    padded[:, :, :resized_w] = resized
    return padded


def _pack(crops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Crops of several sizes as one zero-padded UINT8 [n, Hmax, Wmax, 3] tensor and their INT32 [n, 2] sizes."""
    sizes = np.array([crop.shape[:2] for crop in crops], dtype=np.int32).reshape(-1, 2)
    height, width = (int(sizes[:, 0].max()), int(sizes[:, 1].max())) if len(crops) else (0, 0)
    packed = np.zeros((len(crops), height, width, 3), dtype=np.uint8)
    for row, crop in enumerate(crops):
        packed[row, : crop.shape[0], : crop.shape[1]] = crop
    return packed, sizes


def _unpack(packed: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    return [packed[row, : int(h), : int(w)] for row, (h, w) in enumerate(sizes)]


# --------------------------------------------------------------------------------------------- rec_pre
class RecPreprocess:
    """rapidocr: ClsPostProcess and TextClassifier's 180-degree turn, then TextRecognizer.resize_norm_img."""

    def initialize(self, config: dict[str, Any]) -> None:
        self.cls_thresh = float(config.get("cls_thresh", 0.9))
        self.label_list = [str(label) for label in config.get("label_list", ["0", "180"])]
        self.rec_img_shape = [int(value) for value in config.get("rec_img_shape", [3, 48, 320])]

    def execute(self, batch: Batch) -> Batch:
        crops = _unpack(batch["crops"], batch["crop_sizes"])
        probs = batch["cls_probs"]
        for row, label_index in enumerate(probs.argmax(axis=1)):
            if "180" in self.label_list[label_index] and probs[row, label_index] > self.cls_thresh:
                crops[row] = cv2.rotate(crops[row], 1)
        return {"rec_input": self._rec_input(crops)}

    def finalize(self) -> None:
        return None

    def _rec_input(self, crops: list[np.ndarray]) -> np.ndarray:
        """All crops at the width of the widest (TextRecognizer's max_wh_ratio over the batch).

        The rec model cannot run an empty batch (its Reshape fails on 0 rows): no lines gives one blank
        row, which ctc_decode drops (it decodes as many rows as there are line boxes).
        """
        channels, height, width = self.rec_img_shape
        max_wh_ratio = max([width / height, *(crop.shape[1] * 1.0 / crop.shape[0] for crop in crops)])
        batch_width = int(height * max_wh_ratio)
        rec_input = np.zeros((max(len(crops), 1), channels, height, batch_width), dtype=np.float32)
        for row, crop in enumerate(crops):
            rec_input[row] = _resize_norm(crop, channels, height, batch_width)
        return rec_input


# ------------------------------------------------------------------------------------------ ctc_decode
class CtcDecode:
    """rapidocr: CTCLabelDecode (greedy, repeats merged, blank dropped), RapidOCR._get_origin_points, filter_result."""

    def initialize(self, config: dict[str, Any]) -> None:
        characters = config.get("characters")
        if not isinstance(characters, str) or not characters:
            raise ValueError("ctc_decode needs config.characters: the rec model's dictionary, one entry a line")
        self.characters = ["blank", *characters.splitlines(), " "]
        self.text_score = float(config.get("text_score", 0.5))

    def execute(self, batch: Batch) -> Batch:
        line_boxes = batch["line_boxes"]
        probs = batch["rec_probs"][: len(line_boxes)]
        if probs.shape[0] and probs.shape[-1] != len(self.characters):
            raise ValueError(f"rec_probs has {probs.shape[-1]} classes, the dictionary {len(self.characters)}")
        lines = [
            self._decode(indices, best) for indices, best in zip(probs.argmax(axis=2), probs.max(axis=2), strict=True)
        ]
        boxes = _to_image_points(line_boxes, batch["geometry"])
        kept = [row for row, (_, score) in enumerate(lines) if float(score) >= self.text_score]
        text = np.empty(len(kept), dtype=object)
        text[:] = [lines[row][0].encode("utf-8") for row in kept]
        return {
            "text": text,
            "boxes": boxes[kept].reshape(-1, 4, 2),
            "scores": np.array([lines[row][1] for row in kept], dtype=np.float32),
        }

    def finalize(self) -> None:
        return None

    def _decode(self, indices: np.ndarray, best: np.ndarray) -> tuple[str, float]:
        selection = np.ones(len(indices), dtype=bool)
        selection[1:] = indices[1:] != indices[:-1]
        selection &= indices != 0
        confidences = np.array(best[selection]).tolist() or [0]
        text = "".join(self.characters[index] for index in indices[selection])
        return text, float(np.mean(confidences).tolist())


def _to_image_points(line_boxes: np.ndarray, geometry: np.ndarray) -> np.ndarray:
    """RapidOCR._get_origin_points: undo the letterbox, then the resize, then clip to the image."""
    raw_h, raw_w, ratio_h, ratio_w, pad_top, pad_left = (float(value) for value in geometry)
    points = np.array(line_boxes).astype(np.float32).reshape(-1, 4, 2)
    points[:, :, 0] -= pad_left
    points[:, :, 1] -= pad_top
    points[:, :, 0] *= ratio_w
    points[:, :, 1] *= ratio_h
    points = np.where(points < 0, 0, points)
    points[..., 0] = np.where(points[..., 0] > raw_w, raw_w, points[..., 0])
    points[..., 1] = np.where(points[..., 1] > raw_h, raw_h, points[..., 1])
    return points.astype(np.float32)

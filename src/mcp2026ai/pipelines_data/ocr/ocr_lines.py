"""Bundled OCR pipeline, steps crop, rec_pre and ctc_decode: RapidOCR 1.4.4's line crops, text direction and decoding.

- crop: page, line_boxes -> crops UINT8 [n,Hmax,Wmax,3], crop_sizes INT32 [n,2], cls_input FP32 [n,3,48,192].
- rec_pre: crops, crop_sizes, cls_probs FP32 [n,2] -> rec_input FP32 [max(n,1),3,48,W].
- ctc_decode: rec_probs FP32 [max(n,1),T,C], line_boxes, geometry -> text BYTES [m], boxes FP32 [m,4,2],
  scores FP32 [m] (the m lines whose score reaches text_score).

One request per call. Self-contained (numpy, OpenCV): the pipeline stores the file by its hash.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

Batch = dict[str, np.ndarray]


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

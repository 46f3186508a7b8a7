"""Bundled OCR pipeline, step det_post: RapidOCR 1.4.4's text boxes from the detector's map, in its order.

det_map FP32 [1,1,H,W], page UINT8 [h,w,3] -> line_boxes FP32 [n,4,2] (page coordinates, corners
top-left, top-right, bottom-right, bottom-left, in RapidOCR's reading order). One request per call.
Self-contained (numpy, OpenCV, pyclipper): the pipeline stores the file by its hash.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np
import pyclipper

Batch = dict[str, np.ndarray]


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

"""Summing Triton statistics over the processes of `mcp serve --workers N`."""

from __future__ import annotations

from typing import Any

from mcp2026ai.server.statistics import merge_statistics


def stats(
    version: str, success: int, ns: int, last: int, batches: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "name": "m",
        "version": version,
        "last_inference": last,
        "inference_count": success * 2,
        "execution_count": success,
        "inference_stats": {
            "success": {"count": success, "ns": ns},
            "fail": {"count": 1, "ns": 5},
            "queue": {"count": success, "ns": ns // 10},
        },
        "batch_stats": batches or [],
    }


def test_same_model_version_adds_up_and_keeps_the_latest_inference_time() -> None:
    merged = merge_statistics([[stats("1", 3, 300, last=10)], [stats("1", 4, 400, last=20)]])
    assert merged == [
        {
            "name": "m",
            "version": "1",
            "last_inference": 20,
            "inference_count": 14,
            "execution_count": 7,
            "inference_stats": {
                "success": {"count": 7, "ns": 700},
                "fail": {"count": 2, "ns": 10},
                "queue": {"count": 7, "ns": 70},
            },
            "batch_stats": [],
        }
    ]


def test_versions_stay_apart_and_inputs_are_not_modified() -> None:
    first = [stats("1", 1, 100, last=1)]
    merge_statistics([first, [stats("1", 1, 100, last=1), stats("2", 5, 500, last=2)]])
    assert first == [stats("1", 1, 100, last=1)]
    merged = merge_statistics([first, [stats("2", 5, 500, last=2)]])
    assert [(entry["version"], entry["inference_stats"]["success"]["count"]) for entry in merged] == [
        ("1", 1),
        ("2", 5),
    ]


def test_batch_statistics_add_up_per_batch_size() -> None:
    one = {"batch_size": 1, "compute_infer": {"count": 2, "ns": 20}}
    four = {"batch_size": 4, "compute_infer": {"count": 1, "ns": 40}}
    merged = merge_statistics([[stats("1", 1, 1, 1, [one])], [stats("1", 1, 1, 1, [dict(one), four])]])
    assert merged[0]["batch_stats"] == [{"batch_size": 1, "compute_infer": {"count": 4, "ns": 40}}, four]

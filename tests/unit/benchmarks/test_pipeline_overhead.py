"""benchmarks/pipelines/overhead.py's hop figure on real pipelines: the one- and two-step pipelines answer
what the direct sessions answer, and the figure is built from each round's three p50s."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from benchmarks.pipelines.overhead import hop_figure, session, write_spec


def test_the_spec_it_writes_is_the_two_models_in_a_row(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "p", "two", 16, 2, 2)
    assert "inputs: {x: mid}" in spec.read_text()
    x = np.ones((1, 16), np.float32)
    a, b = session(tmp_path / "p" / "a.onnx"), session(tmp_path / "p" / "b.onnx")
    assert b.run(None, {"x": a.run(None, {"x": x})[0]})[0].shape == (1, 16)


def test_the_hop_figure_is_each_rounds_difference(tmp_path: Path) -> None:
    figure = asyncio.run(hop_figure(tmp_path, rounds=2, requests=20))
    assert len(figure["rounds"]) == 2
    for round_ in figure["rounds"]:
        expected = round_["two_steps_p50_ms"] - round_["one_step_p50_ms"] - round_["b_direct_p50_ms"]
        assert abs(round_["hop_p50_ms"] - expected) < 1e-3
        assert round_["two_steps_p50_ms"] > round_["b_direct_p50_ms"] > 0
    assert figure["target_ms"] == 0.3 and figure["met"] == (figure["hop_p50_ms"]["median"] <= 0.3)

"""Pooling of token vectors into sentence embeddings (dataplane/embeddings.py)."""

from __future__ import annotations

import numpy as np

from mcp2026ai.dataplane.embeddings import pool, unit_length


def test_mean_pooling_ignores_the_padding() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean", normalize=False), [[2.0, 2.0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean", normalize=True), [[2**-0.5, 2**-0.5]], rtol=1e-6)


def test_cls_pooling_takes_the_first_vector() -> None:
    hidden = np.array([[[3.0, 4.0], [9.0, 9.0]]], dtype=np.float32)
    np.testing.assert_allclose(pool(hidden, np.ones((1, 2)), "cls", normalize=True), [[0.6, 0.8]], rtol=1e-6)


def test_unit_length_leaves_a_zero_vector_zero() -> None:
    np.testing.assert_array_equal(unit_length(np.zeros((1, 3), np.float32)), np.zeros((1, 3)))

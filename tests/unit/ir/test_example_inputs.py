from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import InvalidInputError, ModelImportError
from mcp2026ai.ir.example_inputs import (
    InputSpec,
    parse_input_spec,
    parse_specs_document,
    sidecar_path,
    specs_document,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x:1,3,160,160", InputSpec(name="x", shape=[1, 3, 160, 160], datatype="FP32")),
        ("ids:2,128:INT64", InputSpec(name="ids", shape=[2, 128], datatype="INT64")),
        ("ids:2,128:int32", InputSpec(name="ids", shape=[2, 128], datatype="INT32")),
        ("mask:4:bool", InputSpec(name="mask", shape=[4], datatype="BOOL")),
        ("scale::float64", InputSpec(name="scale", shape=[], datatype="FP64")),
    ],
)
def test_specs_parse(text: str, expected: InputSpec) -> None:
    assert parse_input_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x", "expected name:d1,d2"),
        (":1,2", "expected name:d1,d2"),
        ("x:1,two", "must be integers"),
        ("x:1,-1", "must be >= 1"),
        ("x:1,2:complex-ish", "unknown datatype"),
        ("x:1:2:3", "expected name:d1,d2"),
    ],
)
def test_bad_specs_name_the_text(text: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        parse_input_spec(text)


def test_examples_are_seeded_typed_and_take_a_batch() -> None:
    spec = parse_input_spec("x:1,3,4,4")
    first = spec.example(np.random.default_rng(0))
    again = spec.example(np.random.default_rng(0))
    assert first.dtype == np.float32 and first.shape == (1, 3, 4, 4)
    np.testing.assert_array_equal(first, again)
    assert spec.example(np.random.default_rng(0), batch=3).shape == (3, 3, 4, 4)
    ids = parse_input_spec("ids:2,5:INT64").example(np.random.default_rng(0))
    assert ids.dtype == np.int64 and ids.min() >= 0 and ids.max() < 10
    assert parse_input_spec("m:3:BOOL").example(np.random.default_rng(0)).dtype == np.bool_


def test_the_stored_document_round_trips_and_sits_beside_the_model(tmp_path: Path) -> None:
    specs = [parse_input_spec("x:1,576"), parse_input_spec("state:2,1,128")]
    document = parse_specs_document(specs_document(specs, dynamic_batch=True), "here")
    assert document.inputs == specs and document.dynamic_batch
    assert sidecar_path(tmp_path / "vad.pt") == tmp_path / "vad.pt.inputs.json"


def test_a_broken_document_names_where_it_came_from() -> None:
    with pytest.raises(ModelImportError, match=r"model\.pt\.inputs\.json: invalid input specs"):
        parse_specs_document('{"inputs": []}', "model.pt.inputs.json")
    with pytest.raises(ModelImportError, match="invalid input specs"):
        parse_specs_document("not json", "x")

"""Both catalogs (SQLite, and PostgreSQL on a real server): rows, stages, duplicates and annotations."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import AlreadyExistsError, NotFoundError
from mcp2026ai.ir import Signature, TensorSpec
from mcp2026ai.registry import ModelVersion, Preprocessing, Stage
from mcp2026ai.registry.catalog import Catalog
from mcp2026ai.registry.catalogs import SQLiteCatalog
from mcp2026ai.registry.catalogs.postgres import PostgresCatalog

SIGNATURE = Signature(
    inputs=[TensorSpec(name="x", datatype="FP32", shape=[-1, 4])],
    outputs=[TensorSpec(name="y", datatype="FP32", shape=[-1, 3])],
)


OpenCatalog = Callable[[], Catalog]


@pytest.fixture(params=["sqlite", "postgres"])
def open_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> OpenCatalog:
    """A function that opens the same catalog again (a new instance each call)."""
    if request.param == "sqlite":
        return lambda: SQLiteCatalog(tmp_path / "db" / "registry.db")
    url = request.getfixturevalue("postgres_server").new_database()
    return lambda: PostgresCatalog(url)


def record(version: str = "1.0.0", name: str = "m", **extra: object) -> ModelVersion:
    return ModelVersion(
        name=name, version=version, stage=Stage.DEV, format="onnx", digest="ab" * 32, signature=SIGNATURE, **extra
    )


def test_insert_get_round_trip_every_field(open_catalog: OpenCatalog) -> None:
    catalog = open_catalog()
    full = record(
        contract=InferenceContract.model_validate({"latency": {"p99_ms": 5}}),
        tags={"team": "vision", "a": "b"},
        preprocessing=Preprocessing(height=48, width=192, labels=["0", "180"]),
        parent="m:0.9.0",
    )
    catalog.insert(full)
    assert catalog.get("m", "1.0.0") == full
    assert open_catalog().get("m", "1.0.0") == full, "persists across instances"


def test_a_stored_contract_keeps_what_it_states(open_catalog: OpenCatalog) -> None:
    """Gates that apply "only when the contract states it" (generation planning, adaptive batching)
    see the same stated sections after a reload, not every default."""
    catalog = open_catalog()
    catalog.insert(record(contract=InferenceContract.model_validate({"generation": {"max_num_seqs": 2}})))
    contract = catalog.get("m", "1.0.0").contract
    assert contract is not None and contract.model_fields_set == {"generation"}
    assert contract.generation is not None and contract.generation.model_fields_set == {"max_num_seqs"}
    assert contract.accuracy.max_drift == InferenceContract().accuracy.max_drift


def test_duplicate_version(open_catalog: OpenCatalog) -> None:
    catalog = open_catalog()
    catalog.insert(record())
    with pytest.raises(AlreadyExistsError, match=r"model 'm' already has version 1\.0\.0"):
        catalog.insert(record())


def test_versions_filter_and_order(open_catalog: OpenCatalog) -> None:
    catalog = open_catalog()
    catalog.insert(record("1.0.0", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    catalog.insert(record("1.1.0", name="other", created_at=datetime(2026, 1, 2, tzinfo=UTC)))
    catalog.insert(record("0.5.0", created_at=datetime(2026, 1, 3, tzinfo=UTC)))
    assert [r.version for r in catalog.versions("m")] == ["1.0.0", "0.5.0"]
    assert [r.ref for r in catalog.versions()] == ["m:1.0.0", "m:0.5.0", "other:1.1.0"]
    assert catalog.versions("nobody") == []


def test_stage_changes_and_unknown_versions(open_catalog: OpenCatalog) -> None:
    catalog = open_catalog()
    catalog.insert(record())
    catalog.set_stage("m", "1.0.0", Stage.PRODUCTION)
    assert catalog.get("m", "1.0.0").stage is Stage.PRODUCTION
    with pytest.raises(NotFoundError, match=r"model 'm' has no version 2\.0\.0"):
        catalog.set_stage("m", "2.0.0", Stage.PRODUCTION)
    with pytest.raises(NotFoundError):
        catalog.get("m", "2.0.0")


def test_annotations_by_kind_and_version_and_deletion(open_catalog: OpenCatalog) -> None:
    catalog = open_catalog()
    catalog.insert(record("1.0.0"))
    catalog.insert(record("1.1.0"))
    at = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    catalog.annotate("m", "1.0.0", "plan", {"provider": "cpu", "threads": 2}, at)
    catalog.annotate("m", "1.1.0", "plan", {"provider": "cuda"}, at)
    catalog.annotate("m", "1.0.0", "event", {"what": "promoted"}, at)
    assert catalog.annotations("m", "plan") == [
        ("1.0.0", at, {"provider": "cpu", "threads": 2}),
        ("1.1.0", at, {"provider": "cuda"}),
    ]
    assert catalog.annotations("m", "plan", version="1.1.0") == [("1.1.0", at, {"provider": "cuda"})]
    catalog.delete("m", "1.0.0")
    assert catalog.annotations("m", "event") == []
    assert [r.version for r in catalog.versions("m")] == ["1.1.0"]


def test_annotated_lists_every_version_holding_a_kind_once(open_catalog: OpenCatalog) -> None:
    catalog = open_catalog()
    at = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    for name, version in (("a", "1.0.0"), ("a", "1.0.0"), ("b", "2.0.0")):
        catalog.annotate(name, version, "signature", {"key_id": "k"}, at)
    catalog.annotate("c", "1.0.0", "plan", {}, at)
    assert catalog.annotated("signature") == {("a", "1.0.0"), ("b", "2.0.0")}
    assert catalog.annotated("nothing") == set()


def test_digest_in_use(open_catalog: OpenCatalog) -> None:
    catalog = open_catalog()
    assert not catalog.digest_in_use("ab" * 32)
    catalog.insert(record())
    assert catalog.digest_in_use("ab" * 32)

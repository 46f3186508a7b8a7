"""Semantic versions: parsing, normalisation, ordering and the next version."""

from __future__ import annotations

import re

import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry.versioning import FIRST_VERSION, SemVer, next_version, triton_number, version_of_triton


@pytest.mark.parametrize(
    ("text", "normal"),
    [("1.2.3", "1.2.3"), ("1.2", "1.2.0"), ("1", "1.0.0"), ("0.0.0", "0.0.0"), ("10.20.30", "10.20.30")],
)
def test_parse_and_normalise(text: str, normal: str) -> None:
    assert str(SemVer.parse(text)) == normal


@pytest.mark.parametrize("text", ["", "v1.0.0", "1.2.3.4", "01.2.3", "1.02", "1.x", "-1", "1.2.3-rc1", " 1.0.0", "1."])
def test_invalid_versions(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"is not a semantic version like 1\.2\.0$"):
        SemVer.parse(text)


def test_ordering_is_numeric_not_lexical() -> None:
    assert SemVer.parse("1.10.0") > SemVer.parse("1.9.0")
    assert SemVer.parse("2.0.0") > SemVer.parse("1.99.99")
    assert SemVer.parse("1.2") == SemVer.parse("1.2.0")
    assert len({SemVer.parse("1.2"), SemVer.parse("1.2.0")}) == 1
    assert SemVer.parse("1.0.0") != "1.0.0"


def test_next_minor_resets_patch() -> None:
    assert str(SemVer.parse("1.4.7").next_minor()) == "1.5.0"


def test_next_version() -> None:
    assert next_version([]) == str(FIRST_VERSION) == "1.0.0"
    assert next_version(["1.0.0"]) == "1.1.0"
    assert next_version(["1.9.0", "1.10.0", "1.2.5"]) == "1.11.0"
    assert next_version(["2.3.4", "1.0.0"]) == "2.4.0"


@pytest.mark.parametrize(
    ("version", "number"),
    [
        ("2.1.0-rc1", 20010001),
        ("2.1.0", 20010099),
        ("1.0.0", 10000099),
        ("0.3.2-beta.4", 30204),
        ("999.999.99", 9999999999),
    ],
)
def test_triton_number_rule(version: str, number: int) -> None:
    assert triton_number(version) == number


def test_triton_numbers_keep_semver_order() -> None:
    ordered = [
        "0.9.0",
        "1.0.0-rc1",
        "1.0.0-rc2",
        "1.0.0",
        "1.0.1-alpha1",
        "1.0.1",
        "1.2.0",
        "1.10.0",
        "2.0.0-rc1",
        "2.1.0",
    ]
    numbers = [triton_number(version) for version in ordered]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("version", ["1.0.0-rc", "1.0.0-rc99", "1.1000.0", "1.0.100", "v1.0.0", "1.0"])
def test_versions_without_a_triton_number(version: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(repr(version))):
        triton_number(version)


@pytest.mark.parametrize(
    ("number", "version"), [(1, "1.0.0"), (3, "3.0.0"), (20010099, "2.1.0"), (20010001, "20010001.0.0")]
)
def test_version_of_triton_directory(number: int, version: str) -> None:
    assert version_of_triton(number) == version
    if number >= 10_000_000 and number % 100 == 99:
        assert triton_number(version) == number  # an exported repository imports back to its versions

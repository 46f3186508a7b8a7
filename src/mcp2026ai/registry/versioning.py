"""Semantic versions for model versions: parse, order, and pick the next one."""

from __future__ import annotations

import re
from functools import total_ordering

from mcp2026ai.errors import InvalidArgumentError

_PART = r"(0|[1-9]\d{0,8})"  # at most 9 digits: a part is a plain integer, never a 4,301-digit one
_SEMVER = re.compile(rf"^{_PART}\.{_PART}\.{_PART}$")
_SHORT = re.compile(rf"^{_PART}(?:\.{_PART})?$")
_ALIAS_DIGITS = 18


@total_ordering
class SemVer:
    __slots__ = ("major", "minor", "patch")

    def __init__(self, major: int, minor: int, patch: int) -> None:
        self.major, self.minor, self.patch = major, minor, patch

    @classmethod
    def parse(cls, text: str) -> SemVer:
        """Accept ``1.2.3``; ``1`` and ``1.2`` are read as ``1.0.0`` and ``1.2.0``."""
        match = _SEMVER.match(text) or _SHORT.match(text)
        if match is None:
            raise InvalidArgumentError(f"version {text!r} is not a semantic version like 1.2.0")
        parts = [int(part) if part is not None else 0 for part in match.groups()]
        parts += [0] * (3 - len(parts))
        return cls(*parts)

    def next_minor(self) -> SemVer:
        return SemVer(self.major, self.minor + 1, 0)

    def _key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SemVer) and self._key() == other._key()

    def __lt__(self, other: SemVer) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


FIRST_VERSION = SemVer(1, 0, 0)


def integer_alias(text: str) -> int | None:
    """Triton's integer version alias (``"1"`` for the first registered), or None when ``text`` is not one.

    ASCII digits only (``"²"`` is a digit to ``str.isdigit``, not to ``int``) and at most 18 of them,
    so that no client-chosen string reaches ``int()``'s digit limit.
    """
    if text.isascii() and text.isdigit() and len(text) <= _ALIAS_DIGITS:
        return int(text)
    return None


def next_version(existing: list[str]) -> str:
    """1.0.0 for a new model, else the highest existing version's next minor."""
    if not existing:
        return str(FIRST_VERSION)
    return str(max(SemVer.parse(v) for v in existing).next_minor())

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


_TRITON_VERSION = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,2})(?:-[A-Za-z.]*?(\d{1,2}))?$")
TRITON_RELEASE = 99
"""The last two digits of a release's Triton number: above every pre-release of the same version."""
_TRITON_SCALE = (10_000_000, 10_000, 100)


def triton_number(version: str) -> int:
    """Triton's integer version of a semantic version: ``major*10^7 + minor*10^4 + patch*100 + pre``,
    where ``pre`` is a pre-release's number (``-rc1`` -> 1, at most 98) and 99 for a release, so
    ``2.1.0-rc1`` -> 20010001 < ``2.1.0`` -> 20010099 < ``2.1.1-rc1`` -> 20010101. Limits, so that
    the order is kept: major <= 999, minor <= 999, patch <= 99 (Triton's versions are int64)."""
    match = _TRITON_VERSION.match(version)
    if match is None:
        raise InvalidArgumentError(
            f"version {version!r} has no Triton number: expected major.minor.patch[-preN] with "
            "minor <= 999, patch <= 99 and a pre-release number <= 98"
        )
    major, minor, patch, pre = match.groups()
    if pre is not None and int(pre) >= TRITON_RELEASE:
        raise InvalidArgumentError(f"version {version!r}: a pre-release number must be at most 98")
    if "-" in version and pre is None:
        raise InvalidArgumentError(f"version {version!r}: a pre-release needs a number (rc1, beta2)")
    tail = TRITON_RELEASE if pre is None else int(pre)
    return sum(int(part) * scale for part, scale in zip((major, minor, patch), _TRITON_SCALE, strict=True)) + tail


def version_of_triton(number: int) -> str:
    """The semantic version a Triton version directory is registered as: the release
    :func:`triton_number` maps to ``number`` when it is one (an exported repository imports back to
    its own versions; 0.x releases, below 10^7, do not come back), else ``number.0.0`` (Triton's usual
    1, 2, 3 -> 1.0.0, 2.0.0, 3.0.0)."""
    if number >= _TRITON_SCALE[0] and number % 100 == TRITON_RELEASE:
        major, rest = divmod(number, _TRITON_SCALE[0])
        minor, rest = divmod(rest, _TRITON_SCALE[1])
        if major < 1000:
            return f"{major}.{minor}.{rest // 100}"
    if not 1 <= number < 10**9:
        raise InvalidArgumentError(f"Triton version {number} is out of range (1..999999999)")
    return f"{number}.0.0"

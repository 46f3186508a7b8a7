"""The one path confinement helper: a name read from untrusted input (a Triton config field, an S3
key, a manifest entry, a stored plan) joined to the folder it must stay inside.

Every importer and downloader that turns such a name into a path calls :func:`confined_path`, so
the rule lives in one place: the name is relative, holds no ``..`` segment, and, once symlinks
already on disk are resolved, still lands inside the folder.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from mcp2026ai.errors import InvalidArgumentError


class PathEscapeError(InvalidArgumentError):
    """A name that would reach outside its folder; the message names where it came from and the value."""


def confined_path(folder: Path, name: str, source: str) -> Path:
    """``folder / name``, refused unless it stays inside ``folder``.

    ``source`` says where ``name`` came from (``"repo/m/config.pbtxt: label_filename"``) and starts
    the one-line refusal. Absolute names, ``..`` segments, empty names, NUL bytes and symlinks that
    resolve outside ``folder`` are refused.
    """
    reason = _unsafe_reason(name)
    if reason is None:
        target = folder / name
        base = folder.resolve()
        resolved = target.resolve()
        if resolved == base or base in resolved.parents:
            return target
        reason = "resolves outside its folder (a symlink)"
    raise PathEscapeError(f"{source}: {name!r} {reason}; names must stay inside the model's folder")


def _unsafe_reason(name: str) -> str | None:
    if not name or "\x00" in name:
        return "is empty or holds a NUL byte"
    posix = PurePosixPath(name.replace("\\", "/"))
    if posix.is_absolute() or Path(name).is_absolute():
        return "is an absolute path"
    if ".." in posix.parts:
        return "climbs out with '..'"
    return None

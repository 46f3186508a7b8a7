"""Every relative link in README.md and the Markdown under docs/ names a file or folder that exists, and
every link to a heading (`#anchor`, `page.md#anchor`) names a heading of that page (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:", "ftp://", "data:")


def markdown_files() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def relative_links(markdown: str) -> list[tuple[int, str]]:
    """(line number, target) of every relative link to another file, outside code."""
    return [(n, t) for n, t in _all_links(markdown) if not t.startswith(EXTERNAL) and not t.startswith("#")]


def _all_links(markdown: str) -> list[tuple[int, str]]:
    """(line number, target) of every link outside fenced code blocks and inline code."""
    links: list[tuple[int, str]] = []
    in_fence = False
    for number, line in enumerate(markdown.splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        links.extend((number, match.group(1)) for match in LINK.finditer(prose))
    return links


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    anchors: set[str] = set()
    in_fence = False
    for line in markdown.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        heading = None if in_fence else HEADING.match(line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        anchor, suffix = slug, 1
        while anchor in anchors:
            anchor, suffix = f"{slug}-{suffix}", suffix + 1
        anchors.add(anchor)
    return anchors


def link_targets(markdown: str) -> list[tuple[int, str]]:
    """Every relative link, in-page anchors (`#part`) included."""
    return relative_links(markdown) + [(n, t) for n, t in _all_links(markdown) if t.startswith("#")]


def broken_links(path: Path) -> list[str]:
    """`line: target` of every relative link in the page whose file, or heading, does not exist."""
    broken = []
    for number, target in link_targets(path.read_text(encoding="utf-8")):
        file_part, _, anchor = target.partition("#")
        linked = path.parent / file_part.split("?", 1)[0] if file_part else path
        if not linked.exists():
            broken.append(f"{number}: {target}")
        elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked.read_text(encoding="utf-8")):
            broken.append(f"{number}: {target} (no such heading)")
    return broken


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_resolves_to_an_existing_file(path: Path) -> None:
    assert broken_links(path) == []


def test_the_link_finder_sees_links_and_skips_code_and_urls(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "## Top: the `part` (1)\n"
        "[here](present.md) and [gone](missing.md#part) ![img](pic.png)\n"
        "`[inline](not-a-link.md)` [web](https://example.com) [anchor](#top-the-part-1) [bad](#nowhere)\n"
        "```\n[fenced](also-not.md)\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "present.md").write_text("x", encoding="utf-8")
    assert relative_links(page.read_text(encoding="utf-8")) == [
        (2, "present.md"),
        (2, "missing.md#part"),
        (2, "pic.png"),
    ]
    assert broken_links(page) == ["2: missing.md#part", "2: pic.png", "3: #nowhere (no such heading)"]

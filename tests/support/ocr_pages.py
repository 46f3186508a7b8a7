"""Twenty images of rendered text for the OCR pipeline's comparison with RapidOCR (and its benchmark).

Every line is drawn by scripts/make_text_image.py (tests/support/images.py): two images are that
script's own output (one line, one of them upside down), the others stack its lines on a white page,
some turned by 180 degrees, with one to nine lines each; two are JPEG, the others PNG. Pages are 736
pixels square: RapidOCR scales an image's short side up to 736 before detection, so a page that size
is the cheapest to detect.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image

from tests.support.images import png_bytes, render_text

PAGE_SIDE = 736


@dataclass(frozen=True)
class TextImage:
    name: str
    lines: tuple[str, ...]
    rotate: bool = False
    page: bool = True  # False: make_text_image.py's own image of the one line
    jpeg: bool = False  # encoded as JPEG (quality 90) instead of PNG

    def encoded(self) -> bytes:
        """The image as the pipeline's ``image`` input takes it: PNG, or JPEG where asked."""
        image = render_text(self.lines[0], self.rotate) if not self.page else self._page()
        if not self.jpeg:
            return png_bytes(image)
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=90)
        return buffer.getvalue()

    def _page(self) -> Image.Image:
        rendered = [render_text(line) for line in self.lines]
        canvas = Image.new("RGB", (PAGE_SIDE, PAGE_SIDE), "white")
        top = 24
        for index, line in enumerate(rendered):
            canvas.paste(line, (24 + 16 * (index % 3), top))
            top += line.height + 12
        return canvas.rotate(180) if self.rotate else canvas


TEXT_IMAGES: list[TextImage] = [
    TextImage("script-line", ("Contract-driven inference",), page=False),
    TextImage("script-line-rotated", ("Upside down 2026",), rotate=True, page=False),
    TextImage("one-line", ("Hello world",)),
    TextImage("one-line-rotated", ("Turned around",), rotate=True),
    TextImage("numbers-jpeg", ("Order 4711: 3 x 19.99",), jpeg=True),
    TextImage("two-lines", ("Pipelines serve", "several models")),
    TextImage("two-lines-rotated", ("Read me", "upside down"), rotate=True),
    TextImage("three-lines", ("Invoice 2026-12-07", "Total: 42.50 EUR", "Thank you!")),
    TextImage("three-lines-rotated", ("Detect", "Classify", "Recognise"), rotate=True),
    TextImage("four-lines", ("The quick brown fox", "jumps over", "the lazy dog", "again and again")),
    TextImage("address", ("Jane Doe", "12 Market Street", "Springfield 01234")),
    TextImage("address-rotated-jpeg", ("John Roe", "7 Harbour Road", "Portsmouth PO1"), rotate=True, jpeg=True),
    TextImage("five-lines", ("alpha", "beta", "gamma", "delta", "epsilon")),
    TextImage("five-lines-rotated", ("one", "two", "three", "four", "five"), rotate=True),
    TextImage("mixed-case", ("MixedCase Words", "lower and UPPER", "CamelCaseName")),
    TextImage("punctuation", ("Hello, world!", "(a + b) * c = d", "50% off; today?")),
    TextImage("six-lines", ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")),
    TextImage(
        "eight-lines",
        (
            "Pack my box",
            "with five dozen",
            "liquor jugs",
            "Sphinx of",
            "black quartz",
            "judge my vow",
            "How vexing",
            "daft zebras",
        ),
    ),
    TextImage("nine-lines-rotated", tuple(f"Line number {n}" for n in range(1, 10)), rotate=True),
    TextImage("long-line", ("A longer line of text across the page",)),
]

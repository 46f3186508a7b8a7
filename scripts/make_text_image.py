"""Render a line of text as an image (optionally upside down) for the OCR direction classifier demo."""

from __future__ import annotations

import argparse

from PIL import Image, ImageDraw, ImageFont


def render(text: str, rotate: bool) -> Image.Image:
    font = ImageFont.load_default(size=40)
    left, top, right, bottom = font.getbbox(text)
    image = Image.new("RGB", (right - left + 16, bottom - top + 16), "white")
    ImageDraw.Draw(image).text((8 - left, 8 - top), text, fill="black", font=font)
    return image.rotate(180) if rotate else image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output")
    parser.add_argument("--text", default="Contract-driven inference")
    parser.add_argument("--rotate", action="store_true", help="Turn the text upside down.")
    args = parser.parse_args()
    render(args.text, args.rotate).save(args.output)


if __name__ == "__main__":
    main()

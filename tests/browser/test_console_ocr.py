"""The console's playground with the bundled OCR pipeline: a user picks ``ocr``, uploads a page and reads
its lines, scores and boxes; the answer is the one the served pipeline gives over /v2 for the same image.

The real ``mcp serve --auth`` (the pipeline registered by the real CLI: ``mcp bundled ocr`` then ``mcp
model register``), a token with the infer scope only, and a JSON body limit of 1 MiB so that the upload
limit can be shown without a 48 MiB file.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient
from playwright.sync_api import Page, expect

from mcp2026ai.security import Scope, TokenStore
from tests.support.ocr_pages import TEXT_IMAGES

from .conftest import ConsoleServer, check_accessibility, fast_home, mcp_serve, screenshot, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
pytest.importorskip("cv2")
pytest.importorskip("pyclipper")

MAX_JSON_BYTES = 1 << 20
PAGE = next(image for image in TEXT_IMAGES if image.name == "three-lines")


@dataclass(frozen=True)
class OcrConsole:
    server: ConsoleServer
    viewer: str  # infer scope only


@pytest.fixture(scope="module")
def ocr_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OcrConsole]:
    with fast_home(tmp_path_factory, "console-ocr") as home:
        cli = [sys.executable, "-m", "mcp2026ai.cli"]
        env = {**os.environ, "MCP_HOME": str(home)}
        spec = subprocess.run([*cli, "bundled", "ocr"], env=env, check=True, capture_output=True, text=True)
        register = [*cli, "model", "register", "--name", "ocr", "--path", spec.stdout.strip()]
        subprocess.run(register, env=env, check=True, capture_output=True)
        viewer = TokenStore(home / "tokens.json").create("viewer", frozenset({Scope.INFER})).token
        args = ["--name", "ocr", "--auth", "--no-policy", "--max-json-bytes", str(MAX_JSON_BYTES)]
        with mcp_serve(home, args) as server:
            yield OcrConsole(server, viewer)


def served_over_v2(console: OcrConsole, image: bytes) -> dict[str, np.ndarray]:
    """The pipeline's answer to tritonclient over /v2 (binary tensors), with the same token."""
    client = httpclient.InferenceServerClient(console.server.base_url.removeprefix("http://"))
    given = httpclient.InferInput("image", [1], "BYTES")
    given.set_data_from_numpy(np.array([image], dtype=np.object_))
    headers = {"Authorization": f"Bearer {console.viewer}"}
    result = client.infer("ocr", [given], headers=headers)
    client.close()
    return {name: result.as_numpy(name) for name in ("text", "boxes", "scores")}


def test_an_uploaded_page_shows_its_lines_scores_and_boxes(ocr_console: OcrConsole, page: Page, tmp_path: Path) -> None:
    image = PAGE.encoded()
    upload = tmp_path / "page.png"
    upload.write_bytes(image)
    sign_in(page, ocr_console.server, "/ui/playground", ocr_console.viewer)
    page.get_by_label("Model", exact=True).select_option("ocr")
    page.get_by_label("Image (PNG or JPEG)").set_input_files(str(upload))
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#infer-result")).to_contain_text("lines read by ocr 1.0.0", timeout=60_000)

    served = served_over_v2(ocr_console, image)
    rows = page.locator("#infer-lines-table tbody tr")
    expect(rows).to_have_count(len(served["text"]))
    assert len(served["text"]) == len(PAGE.lines)
    for index, (text, score, box) in enumerate(zip(served["text"], served["scores"], served["boxes"], strict=True)):
        cells = rows.nth(index).locator("td").all_inner_texts()
        assert cells[0] == str(index)
        assert cells[1] == text.decode("utf-8")
        assert cells[2] == f"{float(score):.4f}"
        assert cells[3] == " ".join(f"({round(float(x))}, {round(float(y))})" for x, y in box)
    canvas = page.locator("#infer-canvas")
    expect(canvas).to_be_visible()
    assert canvas.evaluate("c => c.width") > 0
    check_accessibility(page)
    screenshot(page, "playground-ocr")


def test_an_image_over_the_servers_limit_is_refused_in_the_page(
    ocr_console: OcrConsole, page: Page, tmp_path: Path
) -> None:
    too_big = tmp_path / "huge.png"
    too_big.write_bytes(PAGE.encoded() + bytes(MAX_JSON_BYTES))
    sign_in(page, ocr_console.server, "/ui/playground", ocr_console.viewer)
    page.get_by_label("Model", exact=True).select_option("ocr")
    limit = int(page.get_by_label("Image (PNG or JPEG)").get_attribute("data-max-bytes") or 0)
    assert 0 < limit < too_big.stat().st_size
    page.get_by_label("Image (PNG or JPEG)").set_input_files(str(too_big))
    page.get_by_role("button", name="Run").click()
    expected = f"huge.png is {too_big.stat().st_size} bytes; this server takes images of at most {limit} bytes"
    expect(page.locator("#infer-result")).to_have_text(expected)


def test_the_upload_route_keeps_its_token_and_body_limit(ocr_console: OcrConsole) -> None:
    """What the page sends goes through /v1/infer as any client's request: no token, no answer; a body
    over the limit is a 413, whatever the page checked; an image that does not decode, a 400 naming the step."""
    body = {"model": "ocr", "image": base64.b64encode(PAGE.encoded()).decode()}
    with httpx.Client(base_url=ocr_console.server.base_url, timeout=60) as client:
        assert client.post("/v1/infer", json=body).status_code == 401
        headers = {"Authorization": f"Bearer {ocr_console.viewer}"}
        huge = {"model": "ocr", "image": base64.b64encode(bytes(MAX_JSON_BYTES)).decode()}
        assert client.post("/v1/infer", json=huge, headers=headers).status_code == 413
        garbage = {"model": "ocr", "image": base64.b64encode(b"not an image").decode()}
        refused = client.post("/v1/infer", json=garbage, headers=headers)
        assert refused.status_code == 400 and "pipeline step 'det_pre'" in refused.json()["error"]

"""``/docs`` (Swagger UI over ``/openapi.json``) rendered by headless Chromium against ``mcp serve
--auth``, with every request the page makes kept on loopback (any other is aborted and fails the test)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, expect

from support.models import mlp_model

from .conftest import mcp_serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_docs_render_from_local_files_only(page: Page, tmp_path: Path) -> None:
    requested: list[str] = []

    def keep_on_loopback(route: Route) -> None:
        requested.append(route.request.url)
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            route.abort()

    page.route("**/*", keep_on_loopback)
    model = mlp_model(tmp_path / "mlp.onnx")
    with mcp_serve(tmp_path / "home", ["--model-path", str(model), "--no-policy", "--auth"]) as server:
        page.goto(server.url("/docs"))
        expect(page.locator(".information-container .title")).to_contain_text("mcp2026ai", timeout=30_000)
        operations = page.locator(".opblock")
        expect(operations.first).to_be_visible()
        assert operations.count() > 60
        expect(page.get_by_role("button", name="Authorize")).to_be_visible()  # the bearer scheme
        page.locator(".opblock-summary-path", has_text="/v1/chat/completions").first.click()
        expect(page.get_by_text("ChatCompletionRequest").first).to_be_visible()
    assert server.url("/openapi.json") in requested
    leaving = [url for url in requested if urlsplit(url).hostname != "127.0.0.1"]
    assert leaving == []

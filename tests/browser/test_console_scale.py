"""The console with 1,000 registered models: the Models page is usable in under a second (measured
in the browser: navigation start to the filled table), and search finds one among them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from mcp2026ai.registry import ModelRegistry
from tests.support.models import add_sub_model

from .conftest import ConsoleServer, check_accessibility, fast_home, mcp_serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
MODELS = 1000
BUDGET_MS = 1000.0


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    """1,000 models registered through the registry API (one tiny ONNX file), one of them served."""
    with fast_home(tmp_path_factory, "crowded") as home:
        registry = ModelRegistry(home)
        model = add_sub_model(home / "add_sub.onnx")
        for index in range(MODELS):
            registry.register(f"m{index:04d}", model, tags={"team": f"t{index % 7}"})
        with mcp_serve(home, ["--name", "m0000", "--no-policy"]) as server:
            yield server


def _page_ready_ms(page: Page, url: str, ready: str = "#models-count") -> float:
    """Milliseconds from navigation start until ``ready`` is in the page."""
    page.goto(url)
    page.locator(ready).first.wait_for()
    return float(page.evaluate("performance.now()"))


def _best_of_three(page: Page, url: str, ready: str = "#models-count") -> float:
    """The fastest of three loads after a first one (the first request of a fresh server, cold
    caches): what the page costs, less the noise of the machine's other work."""
    _page_ready_ms(page, url, ready)
    return min(_page_ready_ms(page, url, ready) for _ in range(3))


def test_models_page_loads_under_a_second_with_1000_models(crowded: ConsoleServer, page: Page) -> None:
    elapsed = _best_of_three(page, crowded.url("/ui/models"))
    print(f"models page with {MODELS} models: {elapsed:.0f} ms")
    expect(page.locator("#models-count")).to_contain_text(f"{MODELS} of {MODELS} versions, page 1 of 20")
    assert elapsed < BUDGET_MS, f"the models page took {elapsed:.0f} ms with {MODELS} models"
    check_accessibility(page)


def test_search_finds_one_model_among_1000(crowded: ConsoleServer, page: Page) -> None:
    page.goto(crowded.url("/ui/models"))
    page.get_by_label("Search").fill("m0999")
    expect(page.locator("#models-count")).to_contain_text(f"1 of {MODELS} versions")
    expect(page.get_by_role("link", name="m0999")).to_be_visible()
    page.get_by_label("Search").fill("")
    page.get_by_role("button", name="Next").click()
    expect(page.locator("#models-count")).to_contain_text("page 2 of 20")


READY = {
    "/ui/models": "#models-count",
    "/ui/live": "#live-status:has-text('updated')",
    "/ui/rollouts": "#rollouts button",
    "/ui/audit": "#audit-count",
    "/ui/playground": "#infer-form",
    "/ui/models/m0000": "#h-trace",
}


def test_every_page_loads_under_a_second_with_1000_models(crowded: ConsoleServer, page: Page) -> None:
    """Navigation start until each page's data is shown (the Live page: its first poll answered)."""
    timings = {path: _best_of_three(page, crowded.url(path), ready) for path, ready in READY.items()}
    print("page load ms with 1,000 models:", {path: round(ms) for path, ms in timings.items()})
    slow = {path: ms for path, ms in timings.items() if ms >= BUDGET_MS}
    assert not slow, f"pages over {BUDGET_MS:.0f} ms: {slow}"

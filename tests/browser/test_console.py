"""The web console in a real browser against ``mcp serve --auth``: ocr-cls (with its contract, so
the policy measures plans), mlp with a canary rollout, and SmolLM2 for the chat.

Bounded: the plans are measured before the server starts, with a short budget (ocr-cls: 0.2 s a plan,
3 s in all, as `mcp policy plan --seconds-per-plan 0.2 --total-seconds 3` does; each mlp version: 1 s),
and `mcp serve` reuses them, where it measured each with the default budget (up to 15 s a version)."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.contract import load_contract
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.profiler import ProfileBudget
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.store import RolloutStore
from mcp2026ai.security import AuditLog, Scope, TokenStore
from tests.support.cli import CONTRACT
from tests.support.images import png_bytes, render_text
from tests.support.llm import LLM_CACHE
from tests.support.models import mlp_model

from .conftest import ConsoleServer, check_accessibility, fast_home, mcp_serve, screenshot, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@dataclass(frozen=True)
class Console:
    server: ConsoleServer
    admin: str  # infer + manage
    viewer: str  # infer only
    canary: str  # mlp's canary version


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path) -> Iterator[Console]:
    with fast_home(tmp_path_factory, "console") as home:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
            canary = _register(home)
            _plan_quickly(home)
        tokens = TokenStore(home / "tokens.json")
        admin = tokens.create("admin", frozenset({Scope.INFER, Scope.MANAGE})).token
        viewer = tokens.create("viewer", frozenset({Scope.INFER})).token
        args = ["--name", "ocr-cls", "--name", "mlp", "--name", "smollm2", "--auth"]
        with mcp_serve(home, args, {CACHE_VARIABLE: str(LLM_CACHE)}) as server:
            yield Console(server, admin, viewer, canary)


def _register(home: Path) -> str:
    registry = ModelRegistry(home, audit=AuditLog(home / "audit.jsonl"))
    preprocessing = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    contract = load_contract(CONTRACT)
    registry.register("ocr-cls", bundled_model_path("ocr-cls"), contract=contract, preprocessing=preprocessing)
    registry.register("mlp", mlp_model(home / "mlp.onnx"))
    canary = registry.register("mlp", mlp_model(home / "mlp-2.onnx", seed=10)).version
    RolloutStore(registry).put(RolloutConfig(name="mlp", canary=canary, weight=20))
    registry.register("smollm2", bundled_model_path("smollm2"))
    return canary


def _plan_quickly(home: Path) -> None:
    """Store the plans `mcp serve` would measure for each served version (its policy reuses a plan made
    on this machine): ocr-cls's (charted on its page) in 3 s, the tiny MLP's in 1 s."""
    registry = ModelRegistry(home)
    for name, budget in (("ocr-cls", ProfileBudget(seconds_per_plan=0.2, total_seconds=3)),
                         ("mlp", ProfileBudget(seconds_per_plan=0.1, total_seconds=1))):  # fmt: skip
        orchestrator = PolicyOrchestrator(registry, budget=budget)
        for record in registry.versions(name):
            orchestrator.plan_for(record, trigger="manual")


def test_without_a_token_the_console_asks_for_one_and_its_data_is_refused(console: Console, page: Page) -> None:
    for path in ("/ui/fragments/models", "/ui/api/live", "/ui/fragments/rollouts", "/ui/fragments/audit"):
        assert httpx.get(console.server.url(path)).status_code == 401, path
    page.goto(console.server.url("/ui/models"))
    expect(page.get_by_label("API token")).to_be_visible()
    expect(page.locator("#content")).to_be_hidden()
    page.get_by_label("API token").fill("mcp_000000000000_not-a-real-token-at-all")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#login-error")).to_contain_text("Token refused")
    check_accessibility(page)
    screenshot(page, "login")


def test_models_page_lists_the_served_models_and_filters(console: Console, page: Page) -> None:
    sign_in(page, console.server, "/ui/models", console.admin)
    table = page.locator("#models table")
    for name in ("ocr-cls", "mlp", "smollm2"):
        expect(table.get_by_role("link", name=name, exact=True).first).to_be_visible()
    expect(page.locator("#who")).to_contain_text("token:admin")
    # per version: its state and its part in the traffic (mlp's canary is loaded beside its stable)
    canary_row = table.locator("tr", has=page.get_by_role("cell", name=console.canary, exact=True))
    expect(canary_row.filter(has_text="mlp")).to_contain_text("canary 20%")
    expect(canary_row.filter(has_text="mlp").locator(".tag.state-loaded")).to_have_text("loaded")
    smollm2_row = table.locator("tr", has=page.get_by_role("link", name="smollm2", exact=True))
    expect(smollm2_row.locator(".tag.state-loaded")).to_have_text("loaded")
    expect(smollm2_row).to_contain_text("default")
    check_accessibility(page)
    screenshot(page, "models")
    page.get_by_label("Search").fill("ocr")
    expect(page.locator("#models-count")).to_contain_text("1 of 4 versions")


def test_model_page_charts_the_candidates_with_the_chosen_plan(console: Console, page: Page) -> None:
    sign_in(page, console.server, "/ui/models/ocr-cls", console.admin)
    expect(page.locator("#reason")).to_contain_text("Why this plan:")
    expect(page.locator("#plan-chart")).to_have_attribute("data-chosen", "1")
    datasets = page.evaluate("mcpCharts.plan.data.datasets.map(d => [d.label, d.data.length])")
    sizes = dict(datasets)
    assert sizes["chosen plan"] == 1 and sizes["Pareto front"] >= 1, datasets
    expect(page.locator("tr.chosen")).to_contain_text("chosen:")
    expect(page.locator("#running-plan")).not_to_be_empty()
    check_accessibility(page)
    page.evaluate("document.getElementById('h-candidates').scrollIntoView()")  # the chart in the picture
    screenshot(page, "model")


def test_live_charts_move_while_a_load_runs(console: Console, page: Page) -> None:
    sign_in(page, console.server, "/ui/live", console.admin)
    load = threading.Thread(target=_bounded_load, args=(console, 4.0, 400))
    load.start()
    try:
        page.wait_for_function(
            "() => mcpCharts.rps && mcpCharts.rps.data.datasets.some(d => d.data.some(v => v > 0))", timeout=15_000
        )
        page.wait_for_function(
            "() => mcpCharts.latency.data.datasets.some(d => d.label.endsWith('p99') && d.data.some(v => v > 0))"
        )
    finally:
        load.join()
    check_accessibility(page)
    screenshot(page, "live")


def _bounded_load(console: Console, seconds: float, limit: int) -> None:
    """ocr-cls through /v1/infer for at most ``seconds`` and ``limit`` requests."""
    body = {"model": "ocr-cls", "image": base64.b64encode(png_bytes(render_text())).decode(), "top_k": 1}
    headers = {"Authorization": f"Bearer {console.admin}"}
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=console.server.base_url, headers=headers, timeout=10) as client:
        for _ in range(limit):
            if time.monotonic() > deadline:
                return
            client.post("/v1/infer", json=body).raise_for_status()


def test_a_token_without_manage_sees_403_on_the_rollout_buttons(console: Console, page: Page) -> None:
    sign_in(page, console.server, "/ui/rollouts", console.viewer)
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Promote").click()
    expect(page.locator("#flash")).to_contain_text("403")
    expect(page.locator("#rollouts")).to_contain_text(f"{console.canary} at 20%")
    page.goto(console.server.url("/ui/audit"))
    expect(page.locator("#flash")).to_contain_text("403")


def test_promoting_the_canary_is_audited(console: Console, page: Page) -> None:
    sign_in(page, console.server, "/ui/rollouts", console.admin)
    expect(page.locator("#rollouts")).to_contain_text(f"{console.canary} at 20%")
    check_accessibility(page)
    screenshot(page, "rollouts")
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Promote").click()
    expect(page.get_by_role("status")).to_contain_text("promote of mlp done by token:admin")
    expect(page.locator("#rollouts dd").first).to_have_text(console.canary)  # the stable version now

    page.get_by_role("link", name="Audit").click()
    expect(page.locator("#chain")).to_contain_text("Hash chain verified")
    page.get_by_label("Action").fill("rollout.promote")
    row = page.locator("#audit tbody tr").first
    expect(row).to_contain_text("token:admin")
    expect(row).to_contain_text(f"mlp:{console.canary}")
    check_accessibility(page)
    screenshot(page, "audit")


def test_chat_streams_tokens_from_smollm2(console: Console, page: Page) -> None:
    sign_in(page, console.server, "/ui/playground", console.viewer)
    reply = page.locator("#chat-log .msg.assistant span")
    page.get_by_label("Max tokens").fill("32")
    page.get_by_label("Temperature").fill("0")
    page.evaluate(_RECORD_LENGTHS)
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-send")).to_be_enabled(timeout=60_000)
    expect(reply).not_to_be_empty()
    lengths = page.evaluate("window.replyLengths")
    assert len(set(lengths)) >= 3, f"the reply arrived in {len(set(lengths))} pieces, not streamed: {lengths}"
    expect(page.locator("#chat-speed")).to_contain_text("tokens/s")
    check_accessibility(page)
    screenshot(page, "playground-chat")


_RECORD_LENGTHS = """() => {
  window.replyLengths = [];
  new MutationObserver(() => {
    const reply = document.querySelector('#chat-log .msg.assistant span');
    if (reply) window.replyLengths.push(reply.textContent.length);
  }).observe(document.getElementById('chat-log'), {subtree: true, childList: true, characterData: true});
}"""


def test_an_uploaded_image_gets_its_orientation_label(console: Console, page: Page, tmp_path: Path) -> None:
    upside_down = tmp_path / "rotated.png"
    upside_down.write_bytes(png_bytes(render_text(rotate=True)))
    sign_in(page, console.server, "/ui/playground", console.viewer)
    page.get_by_label("Model", exact=True).select_option("ocr-cls")
    page.get_by_label("Image (PNG or JPEG)").set_input_files(str(upside_down))
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#infer-result")).to_contain_text("180", timeout=15_000)
    assert page.locator("#infer-result").inner_text().startswith("180")
    screenshot(page, "playground-image")


def test_bad_console_requests_get_a_clear_error_not_a_500(console: Console) -> None:
    admin = {"Authorization": f"Bearer {console.admin}"}
    with httpx.Client(base_url=console.server.base_url, headers=admin, timeout=10) as client:
        cases = {
            ("GET", "/ui/fragments/models?page=two"): (400, "page must be a whole number"),
            ("GET", "/ui/fragments/models/nope"): (404, "nope"),
            ("GET", "/ui/fragments/models/ocr-cls?version=9.9.9"): (404, "9.9.9"),
            ("POST", "/ui/fragments/rollouts/mlp/explode"): (404, "unknown rollout action 'explode'"),
            ("POST", "/ui/fragments/rollouts/ocr-cls/promote"): (404, "has no rollout"),
        }
        for (method, path), (status, message) in cases.items():
            response = client.request(method, path)
            assert response.status_code == status, (path, response.text)
            assert message in response.json()["error"], (path, response.text)

"""Browser tests of the web console: the real ``mcp serve`` on 127.0.0.1 (ephemeral port) driven by
Playwright through Debian's ``chromium`` (no downloaded browser; the Makefile installs the package).

Each test module starts one server; every page is checked with axe-core (vendored in ``vendor/``,
pinned) for serious or critical accessibility violations, and screenshotted into docs/screenshots/.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests.support import REPO_ROOT

CHROMIUM = Path(os.environ.get("MCP_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
SCREENSHOTS = Path(os.environ.get("MCP_SCREENSHOTS_DIR") or REPO_ROOT / "docs" / "screenshots")
"""Where the tests write the page screenshots the README links (MCP_SCREENSHOTS_DIR elsewhere)."""
VIEWPORT = {"width": 1200, "height": 800}
BLOCKING_IMPACTS = ("serious", "critical")


@dataclass(frozen=True)
class ConsoleServer:
    base_url: str
    home: Path

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"


@contextmanager
def mcp_serve(home: Path, args: list[str], env: dict[str, str] | None = None) -> Iterator[ConsoleServer]:
    """``mcp serve ARGS --port 0 --grpc-port -1`` with ``MCP_HOME=home``; SIGTERM must end it cleanly."""
    command = [sys.executable, "-m", "mcp2026ai.cli", "serve", *args, "--port", "0", "--grpc-port", "-1"]
    process = subprocess.Popen(
        command,
        env={**os.environ, "MCP_HOME": str(home), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        port = _listening_port(process)
        yield ConsoleServer(f"http://127.0.0.1:{port}", home)
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "Traceback" not in output, output


def _listening_port(process: subprocess.Popen[str]) -> int:
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        match = re.match(r"listening http=(\d+)", line)
        if match:
            return int(match.group(1))
    raise AssertionError("mcp serve ended before listening:\n" + "".join(seen))


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """Per module: Playwright's sync API runs an event loop in this thread while it is started, and
    the tests after the browser modules need it gone (asyncio.run)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium; make test does)")
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh tab (its own sessionStorage) that fails the test on any script error."""
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert not errors, errors


def sign_in(page: Page, server: ConsoleServer, path: str, token: str) -> None:
    """Open ``path`` and sign in with ``token`` through the console's login form."""
    page.goto(server.url(path))
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.locator("#content").wait_for(state="visible")


def check_accessibility(page: Page) -> None:
    """axe-core over the page as it is now: no serious or critical violation."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    blocking = [v for v in result["violations"] if v["impact"] in BLOCKING_IMPACTS]
    described = [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}" for v in blocking]
    assert not blocking, "\n".join(described)


def screenshot(page: Page, name: str) -> Path:
    """The visible part of the page (small PNGs for the README), in docs/screenshots/."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000, f"{path}: a blank page?"
    return path


@contextmanager
def fast_home(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """A registry home on tmpfs when there is one (registrations fsync: 1.4 ms each there, ~20 on disk)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix=f"mcp-{name}-", dir=shm))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    else:
        yield tmp_path_factory.mktemp(name)

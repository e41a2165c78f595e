"""Screenshots of the inbox and a run page from a realistic demo (the README shows them).

Taken on every run, into the test's directory, so the code that makes them
keeps working; written to docs/screenshots/ only when
``RUNJOURNAL_WRITE_SCREENSHOTS=1`` (then commit them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions

from runjournal import JournalClient
from tests.servers import ServerProcess
from tests.web import demo
from tests.web.conftest import WebServer, sign_in, wait
from tests.web.test_inbox_browser import row

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def full_page(browser: WebDriver, path: Path, width: int = 1400) -> None:
    """The whole page, not only the window: the viewport is made as tall as the page for the shot."""
    height = int(browser.execute_script("return document.documentElement.scrollHeight"))
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)  # type: ignore[attr-defined]
    browser.save_screenshot(str(path))
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})  # type: ignore[attr-defined]


def test_screenshots_of_the_inbox_and_a_run_page(
    browser: WebDriver, server_factory: Callable[..., ServerProcess], tmp_path: Path
):
    journal = server_factory(tmp_path / "data")  # a store of its own: the inbox shows the demo only
    web = WebServer(journal.address, tmp_path / "web.log").start()
    try:
        with JournalClient(journal.address) as client:
            demo.answer_waiting(client, "support-8812", question="Does the customer's contract allow a pause?")
            demo.refund_waiting_for_approval(client, "support-4471")
            release = demo.deploy_waiting_for_approval(client, "release-2-4-0")
        sign_in(browser, web.url)
        row(browser, release, "call_deploy")
        shots = {"inbox.png": tmp_path / "inbox.png", "run.png": tmp_path / "run.png"}
        full_page(browser, shots["inbox.png"])
        browser.get(f"{web.url}/runs/{release}")
        call = wait(browser).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, 'article.call[data-call="call_deploy"]'))
        )
        call.find_element(By.NAME, "reason").send_keys("canary first, window open until 16:00")
        full_page(browser, shots["run.png"])
    finally:
        web.stop()
    for name, path in shots.items():
        assert path.read_bytes().startswith(PNG_SIGNATURE), name
        if os.environ.get("RUNJOURNAL_WRITE_SCREENSHOTS") == "1":
            DOCS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS / name)

"""The web inbox in a real browser: a real journal server, ``runjournal web`` as a process, headless Chromium.

Chromium and its driver are Debian's ``chromium`` and ``chromium-driver``
(``.ci/run`` installs them when missing). Without them the browser tests skip
with the reason, and fail under ``CI``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.environment import unavailable

READY_PREFIX = "runjournal web on "
ACCESS_TOKEN = "web-access-token-for-tests"
WAIT_SECONDS = 20.0
"""How long a browser step waits for the page to show what it expects (a bound, not a delay)."""
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


@dataclass
class WebServer:
    """``runjournal web`` as a process, on a free loopback port it reports on its first line."""

    journal_address: str
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    process: subprocess.Popen[str] | None = None

    def start(self) -> WebServer:
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "runjournal", "web", "--address", self.journal_address, "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "RUNJOURNAL_WEB_TOKEN": ACCESS_TOKEN, "RUNJOURNAL_TOKEN": "", **self.env},
        )
        log.close()
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith(READY_PREFIX):
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"runjournal web did not start (got {line!r}); its log:\n{self.log_path.read_text()}")
        self.url = line.removeprefix(READY_PREFIX).strip().rstrip("/")
        return self

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)
        return self.process.returncode


def _first(candidates: tuple[str, ...], env: str) -> str | None:
    """``$env`` when it names a file; else the first candidate that exists, else the name on ``PATH``."""
    chosen = os.environ.get(env)
    if chosen:
        return chosen if Path(chosen).is_file() else None
    return next((path for path in candidates if Path(path).exists()), None) or shutil.which(Path(candidates[0]).name)


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """Chromium's binary and its driver; absent, the test skips (and fails under ``CI``)."""
    binary = _first(CHROMIUM_CANDIDATES, "RUNJOURNAL_CHROMIUM")
    driver = _first(DRIVER_CANDIDATES, "RUNJOURNAL_CHROMEDRIVER")
    if binary is None or driver is None:
        unavailable("headless Chromium not found: apt-get install chromium chromium-driver (.ci/run does)")
    return binary, driver


@pytest.fixture(scope="session")
def web_server(journal_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    """One web inbox for the session, on the session's file-backend journal server, journal auth off."""
    server = WebServer(journal_server.address, tmp_path_factory.mktemp("web") / "web.log").start()
    yield server
    assert server.stop() == 0, server.log_path.read_text()


@pytest.fixture
def browsers(chromium: tuple[str, str], tmp_path: Path) -> Iterator[Callable[[], WebDriver]]:
    """Start headless Chromium browsers, each with its own profile (its own cookies); all quit at the end."""
    binary, driver = chromium
    started: list[WebDriver] = []

    def start() -> WebDriver:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
            options.add_argument(argument)
        options.add_argument(f"--user-data-dir={tmp_path / f'profile-{len(started)}'}")
        browser = webdriver.Chrome(service=Service(executable_path=driver), options=options)
        started.append(browser)
        return browser

    yield start
    for browser in started:
        browser.quit()


@pytest.fixture
def browser(browsers: Callable[[], WebDriver]) -> WebDriver:
    return browsers()


def wait(browser: WebDriver) -> WebDriverWait[WebDriver]:
    return WebDriverWait(browser, WAIT_SECONDS)


def sign_in(browser: WebDriver, url: str, token: str = ACCESS_TOKEN, *, refused: bool = False) -> None:
    """Open the inbox, be sent to sign in, sign in with ``token``; wait for the inbox (or, ``refused``, the refusal).

    Waiting matters: a click returns before the browser has the session
    cookie, and a page asked for meanwhile would be sent to sign in.
    """
    browser.get(url + "/")
    field = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "access_token")))
    field.send_keys(token)
    browser.find_element(By.ID, "sign-in").click()
    landed = (By.ID, "refusal") if refused else (By.CSS_SELECTOR, "section#live[data-fragment='/fragments/inbox']")
    wait(browser).until(expected_conditions.presence_of_element_located(landed))

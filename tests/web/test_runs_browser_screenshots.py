"""Screenshots of the runs browser and of a run's journal, usage and lineage (docs/people.md shows them).

As ``test_screenshots``: taken on every run into the test's directory, so
the code that makes them keeps working; written to docs/screenshots/ only
with ``RUNJOURNAL_WRITE_SCREENSHOTS=1`` (then commit them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions

from runjournal import JournalClient, Run, make_fingerprint, text_block, tool_use_block
from tests.servers import ServerProcess
from tests.web import demo
from tests.web.conftest import WebServer, sign_in, wait
from tests.web.test_screenshots import DOCS, PNG_SIGNATURE, full_page

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _research_run(client: JournalClient) -> str:
    """A finished research run that switched to a bigger model midway and compacted once."""
    run = Run.create(
        client,
        "research-q1-pricing",
        demo.FINGERPRINT,
        "Compare our Q1 prices with the three largest competitors and draft a summary.",
        labels={"team": "research", "quarter": "2026-q1"},
        created_at=START,
    )
    run.assistant(
        1,
        [
            text_block("I'll search for each competitor's list prices."),
            tool_use_block("call_s1", "search", {"q": "Acme pricing 2026"}),
        ],
        "tool_use",
        {"input_tokens": 1840, "output_tokens": 96, "cache_write_tokens": 1600},
    )
    run.tool_result("call_s1", "Acme: Starter 19 EUR, Team 49 EUR, Enterprise on request.")
    run.assistant(
        2,
        [tool_use_block("call_s2", "search", {"q": "Globex pricing 2026"})],
        "tool_use",
        {"input_tokens": 310, "output_tokens": 40, "cache_read_tokens": 1600},
    )
    run.tool_result("call_s2", "Globex: Basic 15 EUR, Pro 59 EUR.")
    run.note("two of three competitors found", {"found": 2, "of": 3})
    bigger = make_fingerprint("anthropic", "claude-opus-4-1", demo.SYSTEM_PROMPT, "off", demo.TOOLS, 8192, 10)
    resumed = Run.claim(
        client, run.run_id, "worker-eu-2", bigger, force=True, reason="the summary needs the larger model"
    )
    resumed.compaction(
        resumed.last_seq - 2,
        "Searched Acme (19/49 EUR) and Globex (15/59 EUR).",
        trigger="auto",
        provider="anthropic",
        model="claude-haiku-4-5",
        usage={"input_tokens": 2400, "output_tokens": 120},
    )
    resumed.assistant(
        3,
        [text_block("Our Team plan (45 EUR) sits between Acme and Globex; Initech publishes no prices.")],
        "end_turn",
        {"input_tokens": 2950, "output_tokens": 410, "cache_read_tokens": 1800},
    )
    resumed.terminal("completed", "summary drafted")
    return run.run_id


def test_screenshots_of_the_runs_browser_and_a_runs_journal(
    browser: WebDriver, server_factory: Callable[..., ServerProcess], tmp_path: Path
):
    journal = server_factory(tmp_path / "data")  # a store of its own: the browser shows the demo only
    web = WebServer(journal.address, tmp_path / "web.log").start()
    try:
        with JournalClient(journal.address) as client:
            research = _research_run(client)
            client.fork_run(research, 6, "research-q1-pricing-retry")
            demo.answer_waiting(client, "support-8812", question="Does the customer's contract allow a pause?")
            demo.refund_waiting_for_approval(client, "support-4471")
            demo.deploy_waiting_for_approval(client, "release-2-4-0")
            for hours, name in ((30, "nightly-eval-0301"), (54, "nightly-eval-0228")):
                run = Run.create(
                    client,
                    name,
                    demo.FINGERPRINT,
                    "Run the nightly evaluation.",
                    labels={"team": "evals"},
                    created_at=START - timedelta(hours=hours),
                )
                run.terminal("error" if hours == 54 else "completed", "3 of 120 cases failed" if hours == 54 else "")
        sign_in(browser, web.url)
        shots = {"runs.png": tmp_path / "runs.png", "run-journal.png": tmp_path / "run-journal.png"}
        browser.get(f"{web.url}/runs")
        wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "runs")))
        full_page(browser, shots["runs.png"])
        browser.get(f"{web.url}/runs/{research}")
        wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "timeline")))
        full_page(browser, shots["run-journal.png"])
    finally:
        web.stop()
    for name, path in shots.items():
        assert path.read_bytes().startswith(PNG_SIGNATURE), name
        if os.environ.get("RUNJOURNAL_WRITE_SCREENSHOTS") == "1":
            DOCS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS / name)

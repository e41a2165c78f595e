"""The runs browser in headless Chromium: filters, paging, a run's journal as a timeline, usage, escaping."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select

from runjournal import JournalClient, Run, make_fingerprint, text_block, tool_use_block
from tests.web import demo
from tests.web.conftest import WebServer, sign_in, wait

CREATED = datetime(2020, 1, 10, 8, 0, tzinfo=UTC)


def follow(browser: WebDriver, element: WebElement) -> None:
    """Click ``element``, which loads another page, and wait until the old page is gone.

    The new page has the same ids as the old one, so waiting for an element is
    no wait at all: rows read meanwhile belong to the page being replaced (the
    "stale element reference" CI once met).
    """
    old = browser.find_element(By.TAG_NAME, "html")
    element.click()
    wait(browser).until(expected_conditions.staleness_of(old))


def listed(browser: WebDriver) -> list[str]:
    """The run ids of the browser's page, in order (after the page has loaded)."""
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "count")))
    return [row.get_attribute("data-run") or "" for row in browser.find_elements(By.CSS_SELECTOR, "tr.run-row")]


def entries(browser: WebDriver) -> list[WebElement]:
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "timeline")))
    return browser.find_elements(By.CSS_SELECTOR, "li.entry")


def no_script_ran(browser: WebDriver) -> None:
    assert browser.execute_script("return window.__pwned === undefined")
    try:
        text = browser.switch_to.alert.text
    except NoAlertPresentException:
        return
    raise AssertionError(f"an alert ran: {text!r}")


def _family(client: JournalClient, suite: str) -> dict[str, str]:
    """Five runs with one ``suite`` label, created a minute apart: statuses, tasks and a fork to filter by."""
    fingerprint = demo.FINGERPRINT
    made = {}
    for minute, (name, task, end) in enumerate(
        (
            ("done", "t-alpha", "completed"),
            ("failed", "t-alpha", "error"),
            ("waiting", "t-beta", "suspended"),
            ("busy", "", None),
        )
    ):
        run = Run.create(
            client,
            demo.new_run_id(f"{suite[:6]}-{name}"),
            fingerprint,
            f"the {name} run",
            labels={"suite": suite, "kind": name},
            task_id=task,
            created_at=CREATED + timedelta(minutes=minute),
        )
        if end:
            run.terminal(end, f"{name} for the test")
        made[name] = run.run_id
    made["fork"] = client.fork_run(made["done"], 0, made["done"] + "-fork").run_id  # created now: the newest
    return made


def test_the_browser_lists_every_run_newest_first_and_filters_by_status_label_task_and_fork_parent(
    browser: WebDriver, web_server: WebServer, journal_server
):
    suite = uuid.uuid4().hex
    with JournalClient(journal_server.address) as client:
        runs = _family(client, suite)
    sign_in(browser, web_server.url)
    browser.find_element(By.ID, "nav-runs").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "filters")))
    browser.find_element(By.ID, "filter-label").send_keys(f"suite={suite}")
    follow(browser, browser.find_element(By.ID, "filter"))
    assert listed(browser) == [runs[name] for name in ("fork", "busy", "waiting", "failed", "done")]
    fork_row = browser.find_element(By.CSS_SELECTOR, f'tr.run-row[data-run="{runs["fork"]}"]')
    assert fork_row.find_element(By.CSS_SELECTOR, "a.parent").text == runs["done"]
    waiting_row = browser.find_element(By.CSS_SELECTOR, f'tr.run-row[data-run="{runs["waiting"]}"]')
    assert "suspended" in waiting_row.text and "waiting for the test" in waiting_row.text

    Select(browser.find_element(By.ID, "filter-status")).select_by_value("error")
    follow(browser, browser.find_element(By.ID, "filter"))
    assert listed(browser) == [runs["failed"]]
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("")
    browser.find_element(By.ID, "filter-task").send_keys("t-alpha")
    follow(browser, browser.find_element(By.ID, "filter"))
    assert listed(browser) == [runs["failed"], runs["done"]]  # the fork has no task: ForkRun drops it
    browser.find_element(By.ID, "filter-task").clear()
    browser.find_element(By.ID, "filter-parent").send_keys(runs["done"])
    follow(browser, browser.find_element(By.ID, "filter"))
    assert listed(browser) == [runs["fork"]]
    # A label chip is a filter by that label: here the one run of its kind.
    browser.get(f"{web_server.url}/runs?label=suite%3D{suite}")
    follow(
        browser, browser.find_element(By.CSS_SELECTOR, f'tr.run-row[data-run="{runs["busy"]}"] a.label[href*="kind"]')
    )
    assert listed(browser) == [runs["busy"]]


def test_pages_follow_list_runs_page_tokens_without_a_run_twice_or_missed(
    browser: WebDriver, web_server: WebServer, journal_server
):
    suite = uuid.uuid4().hex
    with JournalClient(journal_server.address) as client:
        made = [
            Run.create(
                client,
                demo.new_run_id(f"page-{i}"),
                demo.FINGERPRINT,
                "hello",
                labels={"suite": suite},
                created_at=CREATED + timedelta(minutes=i),
            ).run_id
            for i in range(7)
        ]
    sign_in(browser, web_server.url)
    browser.get(f"{web_server.url}/runs?label=suite%3D{suite}&size=3")
    pages = [listed(browser)]
    while browser.find_elements(By.ID, "next-page"):
        follow(browser, browser.find_element(By.ID, "next-page"))
        pages.append(listed(browser))
    assert pages == [made[6:3:-1], made[3:0:-1], made[0:1]]
    follow(browser, browser.find_element(By.ID, "newest"))
    assert listed(browser) == made[6:3:-1]


def test_created_from_and_before_are_applied_over_the_newest_first_listing(
    browser: WebDriver, web_server: WebServer, journal_server
):
    suite = uuid.uuid4().hex
    with JournalClient(journal_server.address) as client:
        by_day = {
            day: Run.create(
                client,
                demo.new_run_id(f"day-{day}"),
                demo.FINGERPRINT,
                "hello",
                labels={"suite": suite},
                created_at=CREATED + timedelta(days=day),
            ).run_id
            for day in range(6)
        }
    sign_in(browser, web_server.url)
    browser.get(f"{web_server.url}/runs?label=suite%3D{suite}")
    browser.find_element(By.ID, "filter-created-from").send_keys("2020-01-11")
    browser.find_element(By.ID, "filter-created-before").send_keys("2020-01-14T08:00")
    follow(browser, browser.find_element(By.ID, "filter"))
    assert listed(browser) == [by_day[3], by_day[2], by_day[1]]
    count = browser.find_element(By.ID, "count").text
    assert count.startswith("3 runs; ") and "listed to find them" in count
    assert browser.find_element(By.ID, "filter-created-from").get_attribute("value") == "2020-01-11"
    browser.find_element(By.ID, "filter-created-from").send_keys("x")  # "2020-01-11x"
    follow(browser, browser.find_element(By.ID, "filter"))
    refusal = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "refusal")))
    assert refusal.text == "created from must be a date and time such as 2026-03-01T09:30"
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.run-row")


def _long_run(client: JournalClient, notes: int) -> Run:
    run = Run.create(client, demo.new_run_id("long"), demo.FINGERPRINT, "a long run")
    for i in range(notes):
        run.note(f"progress {i + 2}")
    return run


def test_a_long_journal_is_shown_a_page_of_records_at_a_time(browser: WebDriver, web_server: WebServer, journal_server):
    with JournalClient(journal_server.address) as client:
        run = _long_run(client, 249)  # seqs 1..250
    sign_in(browser, web_server.url)
    browser.get(f"{web_server.url}/runs/{run.run_id}")
    shown = entries(browser)
    assert [int(e.get_attribute("data-seq") or 0) for e in shown] == list(range(151, 251))  # the newest page
    assert shown[-1].find_element(By.CSS_SELECTOR, ".kind").text.lower() == "note"
    assert "progress 250" in shown[-1].text
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#timeline a.earlier"))
    assert "from=51" in browser.current_url
    assert [int(e.get_attribute("data-seq") or 0) for e in entries(browser)] == list(range(51, 151))
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#timeline a.first"))
    assert "from=1#" in browser.current_url
    first = entries(browser)
    assert [int(e.get_attribute("data-seq") or 0) for e in first] == list(range(1, 101))
    assert first[0].get_attribute("data-kind") == "meta"
    assert not browser.find_elements(By.CSS_SELECTOR, "#timeline a.earlier")


def test_the_timeline_shows_every_kind_and_who_answered_or_decided(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.deploy_waiting_for_approval(client)
        client.approve(run_id, "call_deploy", "denied", "oncall-dana", "not on a Friday")
        answered = client.answer(run_id, "call_ask", text="the release managers")
    sign_in(browser, web_server.url)
    browser.get(f"{web_server.url}/runs/{run_id}")
    shown = {int(e.get_attribute("data-seq") or 0): e for e in entries(browser)}
    kinds = [shown[seq].get_attribute("data-kind") for seq in sorted(shown)]
    assert kinds == [
        "meta",
        "assistant",
        "tool_result",
        "assistant",
        "deferral",
        "deferral",
        "terminal",
        "approval",
        "tool_result",
    ]
    assert "model anthropic/claude-sonnet-4-5" in shown[1].text and "team=release" in shown[1].text
    assert "tokens in 812 out 64" in shown[2].text
    assert "[call_deploy] waits for a decision from on-call" in shown[5].text
    decision = shown[8]
    assert decision.find_element(By.CSS_SELECTOR, ".who").text == "denied by oncall-dana"
    assert "not on a Friday" in decision.text
    assert "result of [call_ask]: ok, out of band" in shown[answered].text
    assert "the release managers" in shown[answered].text


def test_usage_totals_count_each_turn_for_the_model_in_force(browser: WebDriver, web_server: WebServer, journal_server):
    with JournalClient(journal_server.address) as client:
        run = Run.create(client, demo.new_run_id("usage"), demo.FINGERPRINT, "count my tokens")
        run.assistant(1, [text_block("one")], "end_turn", {"input_tokens": 100, "output_tokens": 10})
        run.assistant(2, [text_block("two")], "end_turn", {"input_tokens": 200, "output_tokens": 20})
        bigger = make_fingerprint("anthropic", "claude-opus-4-1", demo.SYSTEM_PROMPT, "off", demo.TOOLS, 4096, 10)
        resumed = Run.claim(client, run.run_id, "worker-2", bigger, force=True, reason="a harder step")
        resumed.assistant(
            3,
            [text_block("three"), tool_use_block("c1", "search", {"q": "x"})],
            "tool_use",
            {"input_tokens": 4000, "output_tokens": 300, "cache_read_tokens": 3500, "cache_write_tokens": 120},
        )
        resumed.tool_result("c1", "found")
        resumed.compaction(
            resumed.last_seq,
            "we searched and found it",
            trigger="auto",
            provider="anthropic",
            model="claude-haiku-4-5",
            usage={"input_tokens": 5000, "output_tokens": 80},
        )
        counters = client.fold(run.run_id).counters
    sign_in(browser, web_server.url)
    browser.get(f"{web_server.url}/runs/{run.run_id}")
    usage = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "usage")))

    def cells(selector: str) -> list[list[str]]:
        return [
            [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in usage.find_elements(By.CSS_SELECTOR, selector)
        ]

    assert cells("tr.model-usage") == [
        ["anthropic/claude-sonnet-4-5", "2", "300", "30", "0", "0"],
        ["anthropic/claude-opus-4-1", "1", "4000", "300", "3500", "120"],
    ]
    (total,) = cells("tr.total")
    fold = [counters.llm_calls, counters.input_tokens, counters.output_tokens]
    fold += [counters.cache_read_tokens, counters.cache_write_tokens]
    assert total == ["all models", *map(str, fold)]  # the same sums as the server's fold
    assert cells("tr.compaction-usage") == [["anthropic/claude-haiku-4-5", "1", "5000", "80", "0", "0"]]
    reconfigure = browser.find_element(By.CSS_SELECTOR, 'li.entry[data-kind="reconfigure"]')
    assert "model anthropic/claude-opus-4-1 from here on" in reconfigure.text


def test_html_and_script_in_a_runs_labels_text_and_notes_are_shown_as_text_and_never_run(
    browser: WebDriver, web_server: WebServer, journal_server
):
    marker = "runs-browser-xss"
    script = f"<script>window.__pwned = '{marker}'; alert('{marker}')</script>"
    image = f"<img src=x onerror=\"window.__pwned = '{marker}'\">"
    suite = uuid.uuid4().hex
    with JournalClient(journal_server.address) as client:
        run_id = demo.hostile_run(client, marker)  # prompt, text, arguments, result, reason, terminal
        labelled = Run.create(
            client,
            demo.new_run_id("hostile-labels"),
            demo.FINGERPRINT,
            f"prompt {image}",
            labels={"suite": suite, "note": script, "team": image},
        )
        labelled.note(f"note {script}", {"html": image})
        labelled.terminal("error", f"failed: {image}")
    sign_in(browser, web_server.url)
    browser.get(f"{web_server.url}/runs?label=suite%3D{suite}")
    assert listed(browser) == [labelled.run_id]
    row = browser.find_element(By.CSS_SELECTOR, "tr.run-row")
    assert f"note={script}" in row.text and f"team={image}" in row.text
    assert f"failed: {image}" in row.text
    no_script_ran(browser)
    browser.get(f"{web_server.url}/runs/{labelled.run_id}")
    note = browser.find_element(By.CSS_SELECTOR, 'li.entry[data-kind="note"]')
    assert f"note {script}" in note.text and '"html": "<img src=x onerror=' in note.text
    assert f"note={script}" in browser.find_element(By.CSS_SELECTOR, 'li.entry[data-kind="meta"]').text
    no_script_ran(browser)
    browser.get(f"{web_server.url}/runs/{run_id}")
    timeline = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "timeline")))
    assert f"Summarise this page {script}" in timeline.text
    assert f"reason {script}" in timeline.text
    assert f"<b>{marker}</b>" in timeline.text
    no_script_ran(browser)
    assert not browser.find_elements(By.CSS_SELECTOR, "main script, main img")

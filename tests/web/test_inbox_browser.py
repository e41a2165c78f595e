"""The web inbox in headless Chromium, against a real journal server with real runs waiting for a person."""

from __future__ import annotations

from collections.abc import Callable

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions

from runjournal import JournalClient
from runjournal.v1 import records_pb2
from tests.web import demo
from tests.web.conftest import WebServer, sign_in, wait


class Clicks:
    """Clicks a person makes, counted."""

    def __init__(self) -> None:
        self.count = 0

    def on(self, element: WebElement) -> None:
        self.count += 1
        element.click()


def records(client: JournalClient, run_id: str) -> list[records_pb2.JournalRecord]:
    return [record for record, _ in client.read(run_id)]


def row(browser: WebDriver, run_id: str, call_id: str) -> WebElement:
    selector = f'tr.waiting[data-run="{run_id}"][data-call="{call_id}"]'
    return wait(browser).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, selector)))


def notice(browser: WebDriver) -> str:
    return wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "notice"))).text


def refusal(browser: WebDriver) -> str:
    return wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "refusal"))).text


def test_a_person_approves_a_waiting_call_in_one_click_from_the_inbox(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.deploy_waiting_for_approval(client)
        sign_in(browser, web_server.url)
        clicks = Clicks()
        clicks.on(row(browser, run_id, "call_deploy").find_element(By.CSS_SELECTOR, "button.approve"))
        assert notice(browser).startswith("recorded at seq ")
        seq = int(notice(browser).removeprefix("recorded at seq "))
        assert clicks.count <= 3
        stored = records(client, run_id)
        assert stored[-1].seq == seq
        assert stored[-1].approval.tool_use_id == "call_deploy"
        assert stored[-1].approval.decision == records_pb2.DECISION_APPROVED
        assert [r for r in stored if r.WhichOneof("payload") == "approval"] == [stored[-1]]
        # The call left the inbox; the other call of the run (an answer) is still there.
        assert not browser.find_elements(By.CSS_SELECTOR, f'tr[data-run="{run_id}"][data-call="call_deploy"]')
        row(browser, run_id, "call_ask")


def test_a_person_denies_with_a_reason_from_the_run_page_in_two_clicks(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.refund_waiting_for_approval(client)
        sign_in(browser, web_server.url)
        clicks = Clicks()
        clicks.on(row(browser, run_id, "call_refund").find_element(By.CSS_SELECTOR, "a.run-link"))
        call = wait(browser).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, 'article.call[data-call="call_refund"]'))
        )
        assert '"amount_eur": 1240' in call.find_element(By.CSS_SELECTOR, "pre.args").text
        call.find_element(By.NAME, "reason").send_keys("over the quarterly limit")
        clicks.on(call.find_element(By.CSS_SELECTOR, "button.deny"))
        seq = int(notice(browser).removeprefix("recorded at seq "))
        assert clicks.count <= 3
        approval = records(client, run_id)[-1]
        assert approval.seq == seq
        assert (approval.approval.decision, approval.approval.reason) == (
            records_pb2.DECISION_DENIED,
            "over the quarterly limit",
        )
        decided = browser.find_element(By.CSS_SELECTOR, 'article.call[data-call="call_refund"] .decision').text
        assert decided.startswith(f"denied at seq {seq}")


def test_two_browsers_answering_one_call_leave_one_record_and_the_second_sees_already_answered(
    browsers: Callable[[], WebDriver], web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.answer_waiting(client)
        first, second = browsers(), browsers()
        forms = []
        for browser, text in ((first, "the gold plan"), (second, "the silver plan")):
            sign_in(browser, web_server.url)
            browser.get(f"{web_server.url}/runs/{run_id}")
            form = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "answer-call_ask")))
            form.find_element(By.NAME, "text").send_keys(text)
            forms.append(form)
        forms[0].find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        seq = int(notice(first).removeprefix("recorded at seq "))
        forms[1].find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        assert refusal(second) == f"already answered at seq {seq}"
        results = [r for r in records(client, run_id) if r.WhichOneof("payload") == "tool_result"]
        assert [(r.seq, r.tool_result.content[0].text.text) for r in results] == [(seq, "the gold plan")]


def test_two_browsers_deciding_one_call_leave_one_record_and_the_second_sees_already_decided(
    browsers: Callable[[], WebDriver], web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.refund_waiting_for_approval(client)
        first, second = browsers(), browsers()
        buttons = []
        # Each person types a reason first: a page with a half-typed form is not refreshed under them (it
        # says it changed), so the second still holds the form when the first decision lands.
        for browser, choice, reason in (
            (first, "button.approve", "customer of 10 years"),
            (second, "button.deny", "fraud?"),
        ):
            sign_in(browser, web_server.url)
            waiting = row(browser, run_id, "call_refund")
            waiting.find_element(By.NAME, "reason").send_keys(reason)
            buttons.append(waiting.find_element(By.CSS_SELECTOR, choice))
        buttons[0].click()
        seq = int(notice(first).removeprefix("recorded at seq "))
        buttons[1].click()
        assert refusal(second) == f"already decided at seq {seq}"
        approvals = [r for r in records(client, run_id) if r.WhichOneof("payload") == "approval"]
        assert [(r.seq, r.approval.decision) for r in approvals] == [(seq, records_pb2.DECISION_APPROVED)]


def test_a_script_in_a_tool_result_arguments_or_reason_is_shown_as_text_and_never_run(
    browser: WebDriver, web_server: WebServer, journal_server
):
    marker = "xss-marker-7"
    with JournalClient(journal_server.address) as client:
        run_id = demo.hostile_run(client, marker)
    script = f"<script>window.__pwned = '{marker}'; alert('{marker}')</script>"
    sign_in(browser, web_server.url)
    inbox_row = row(browser, run_id, "call_deploy")
    assert script in inbox_row.find_element(By.CSS_SELECTOR, "pre.args").text
    assert f"reason {script}" in inbox_row.find_element(By.CSS_SELECTOR, "td.reason").text
    assert f"<b>{marker}</b>" in inbox_row.text
    pages = [browser.page_source]
    browser.get(f"{web_server.url}/runs/{run_id}")
    conversation = wait(browser).until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "section.conversation"))
    )
    assert f"<img src=x onerror=\"alert('{marker}')\"> {script}" in conversation.text  # the tool result
    assert f"Summarise this page {script}" in conversation.text  # the prompt
    assert f"stopped: suspended: {script}" in browser.find_element(By.CSS_SELECTOR, ".stopped").text
    pages.append(browser.page_source)
    for _ in pages:
        assert browser.execute_script("return window.__pwned === undefined")
        try:
            text = browser.switch_to.alert.text
        except NoAlertPresentException:
            continue
        raise AssertionError(f"an alert ran: {text!r}")
    assert not browser.find_elements(By.CSS_SELECTOR, "main script, main img")


def test_an_open_inbox_shows_a_run_that_starts_waiting_without_a_reload(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        first = demo.answer_waiting(client, question="Refund or replace?")
        sign_in(browser, web_server.url)
        shown = row(browser, first, "call_ask")
        browser.execute_script("window.__same_page = true")
        second = demo.refund_waiting_for_approval(client)
        row(browser, second, "call_refund")
    assert browser.execute_script("return window.__same_page === true")  # the row came live, not by a reload
    assert shown.is_displayed()  # the row that did not change is the same node: nothing vanished under a click
    browser.refresh()
    mode = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "live-state")))
    assert mode.get_attribute("data-mode") == "watch"  # followed through WatchRuns, not by listing again


def test_an_open_run_page_shows_an_answer_written_elsewhere_without_a_reload(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.deploy_waiting_for_approval(client)  # call_deploy keeps the turn pending after the answer
        sign_in(browser, web_server.url)
        browser.get(f"{web_server.url}/runs/{run_id}")
        wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "answer-call_ask")))
        browser.execute_script("window.__same_page = true")
        seq = client.answer(run_id, "call_ask", text="answered from the command line")  # as runjournal answer
        result = wait(browser).until(
            expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, 'article.call[data-call="call_ask"] .result')
            )
        )
        assert result.text.startswith(f"answered at seq {seq}")
        assert "answered from the command line" in result.text
        assert not browser.find_elements(By.ID, "answer-call_ask")
        assert browser.execute_script("return window.__same_page === true")

"""Forking and deleting from a run's page in headless Chromium: the CLI's confirmation rules, the form token,
and who may (a read-only sign-in sees no form and its posts are refused; the journal token's scopes hold)."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions

from runjournal import JournalClient
from runjournal.errors import RunDeletedError, RunNotFoundError
from runjournal.web.guards import READ_ONLY_REFUSAL
from tests.servers import ServerProcess
from tests.web import demo
from tests.web.conftest import ACCESS_TOKEN, WebServer, sign_in, wait
from tests.web.test_access_browser import Visitor, csrf_token
from tests.web.test_access_browser import authed_journal as authed_journal  # the fixture: alice and worker-1
from tests.web.test_inbox_browser import notice, records, refusal, row

READ_TOKEN = "web-read-token-for-tests"
FORGED = "the form's token is missing or wrong: reload the page and send it again"


def run_page(browser: WebDriver, url: str, run_id: str) -> None:
    browser.get(f"{url}/runs/{run_id}")
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "timeline")))


def test_a_fork_from_the_page_branches_the_run_and_both_pages_show_the_lineage(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        source = demo.deploy_waiting_for_approval(client)
        sign_in(browser, web_server.url)
        run_page(browser, web_server.url, source)
        browser.find_element(By.ID, "new_run_id").send_keys(f"{source}-b")
        browser.find_element(By.ID, "at_seq").send_keys("4")
        browser.find_element(By.ID, "fork").click()
        assert notice(browser) == "forked at seq 4: this is the new run"
        assert browser.current_url.startswith(f"{web_server.url}/runs/{source}-b?")
        meta = records(client, f"{source}-b")[0].meta
        assert (meta.forked_from.run_id, meta.forked_from.seq) == (source, 4)
        ancestor = browser.find_element(By.CSS_SELECTOR, "li.ancestor")
        assert ancestor.get_attribute("data-run") == source
        assert f"this run was forked at seq 4 from {source}" in ancestor.text
        assert meta.forked_from.prefix_sha256 in ancestor.text
        # A fork of the fork: its page follows the chain up to the first source.
        client.fork_run(f"{source}-b", 0, f"{source}-c")
        run_page(browser, web_server.url, f"{source}-c")
        chain = [li.get_attribute("data-run") for li in browser.find_elements(By.CSS_SELECTOR, "li.ancestor")]
        assert chain == [f"{source}-b", source]
        run_page(browser, web_server.url, source)
        forks = [li.get_attribute("data-run") for li in browser.find_elements(By.CSS_SELECTOR, "li.fork")]
        assert forks == [f"{source}-b"]
        # The server's refusal is shown as it said it, and nothing is created.
        browser.find_element(By.ID, "new_run_id").send_keys(f"{source}-b")
        browser.find_element(By.ID, "fork").click()
        assert refusal(browser).startswith("RUN_EXISTS: ")
        assert len(records(client, f"{source}-b")) == 4


def test_delete_asks_first_and_deletes_only_at_the_last_seq_it_showed(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.refund_waiting_for_approval(client)
        sign_in(browser, web_server.url)
        run_page(browser, web_server.url, run_id)
        browser.find_element(By.ID, "delete-link").click()
        question = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "confirm")))
        assert "status suspended" in question.text and "last seq 4" in question.text
        assert "1 call of it waits for a person." in question.text
        assert len(records(client, run_id)) == 4  # asking wrote nothing
        client.approve(run_id, "call_refund", "approved", "someone-else")  # seq 5, after the page looked
        browser.find_element(By.ID, "confirm-delete").click()
        assert refusal(browser) == "did not delete: the run moved on to seq 5 since seq 4; look at it again"
        assert records(client, run_id)[-1].seq == 5  # nothing deleted
        assert browser.find_element(By.ID, "delete-last-seq").text == "5"  # the page looked again
        browser.find_element(By.ID, "confirm-delete").click()
        assert notice(browser) == "deleted the run (its last seq was 5)"
        assert browser.current_url.startswith(f"{web_server.url}/runs?")
        with pytest.raises(RunDeletedError):
            client.fold(run_id)


def test_a_delete_or_fork_post_without_the_pages_confirmation_or_form_token_changes_nothing(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.refund_waiting_for_approval(client)
        sign_in(browser, web_server.url)
        run_page(browser, web_server.url, run_id)
        signed_in = Visitor(web_server.url, browser.get_cookies())
        own = csrf_token(browser.page_source)
        other_session = csrf_token(Visitor(web_server.url).request("/login")[1])
        delete = {"expected_last_seq": "4", "confirm": "yes"}
        fork = {"new_run_id": f"{run_id}-forged", "at_seq": ""}
        for path, form in ((f"/runs/{run_id}/delete", delete), (f"/runs/{run_id}/fork", fork)):
            for forged in (form, {**form, "csrf_token": ""}, {**form, "csrf_token": other_session}):
                assert signed_in.request(path, forged) == (403, FORGED)
            status, text = signed_in.request(path, {**form, "csrf_token": own}, {"Origin": "https://elsewhere.example"})
            assert (status, text) == (403, "this form was sent from another site; nothing was written")
        # The delete form's own token without the confirmation the delete page adds: nothing deleted either.
        status, page = signed_in.request(f"/runs/{run_id}/delete", {"csrf_token": own, "expected_last_seq": "4"})
        assert status == 400 and "nothing deleted: confirm on this page" in page
        assert len(records(client, run_id)) == 4
        with pytest.raises(RunNotFoundError):
            client.fold(f"{run_id}-forged")
        # A page of another site posting with the browser's cookie: SameSite keeps it out, nothing deleted.
        attack = (
            f'<form id="f" method="post" action="{web_server.url}/runs/{run_id}/delete">'
            f'<input name="csrf_token" value="{own}"><input name="expected_last_seq" value="4">'
            '<input name="confirm" value="yes"></form>'
        )
        browser.get("data:text/html," + attack.replace("#", "%23"))
        browser.find_element(By.ID, "f").submit()
        wait(browser).until(lambda b: "nothing was written" in b.page_source or "sign in first" in b.page_source)
        assert len(records(client, run_id)) == 4
        # With its own token, from its own page, the same post deletes: the refusals above were right.
        status, _ = signed_in.request(f"/runs/{run_id}/delete", {**delete, "csrf_token": own})
        assert status == 303
        with pytest.raises(RunDeletedError):
            client.fold(run_id)


def test_a_read_only_sign_in_sees_no_fork_delete_answer_or_decision_and_its_posts_are_refused(
    browser: WebDriver, journal_server, tmp_path: Path
):
    web = WebServer(journal_server.address, tmp_path / "web.log", env={"RUNJOURNAL_WEB_READ_TOKEN": READ_TOKEN})
    web.start()
    try:
        with JournalClient(journal_server.address) as client:
            run_id = demo.deploy_waiting_for_approval(client)
            sign_in(browser, web.url, token=READ_TOKEN)
            assert browser.find_element(By.ID, "read-only").text == "read only"
            inbox_row = row(browser, run_id, "call_deploy")
            assert not inbox_row.find_elements(By.CSS_SELECTOR, "form, button")
            run_page(browser, web.url, run_id)
            for hidden in ("actions", "fork-form", "delete-link", "answer-call_ask"):
                assert not browser.find_elements(By.ID, hidden), hidden
            assert not browser.find_elements(By.CSS_SELECTOR, "form.decide, form.answer")
            assert browser.find_elements(By.CSS_SELECTOR, "li.entry")  # everything else is there to read
            reader = Visitor(web.url, browser.get_cookies())
            token = csrf_token(browser.page_source)  # the sign-out form's: a valid token of this session
            writes = {
                f"/runs/{run_id}/delete": {"expected_last_seq": "7", "confirm": "yes"},
                f"/runs/{run_id}/fork": {"new_run_id": f"{run_id}-read", "at_seq": ""},
                f"/runs/{run_id}/decide": {"call_id": "call_deploy", "decision": "approved", "next": "run"},
                f"/runs/{run_id}/answer": {"call_id": "call_ask", "text": "hi", "next": "run"},
            }
            for path, form in writes.items():
                assert reader.request(path, {**form, "csrf_token": token}) == (403, READ_ONLY_REFUSAL), path
            status, page = reader.request(f"/runs/{run_id}/delete")
            assert status == 403 and READ_ONLY_REFUSAL in page
            assert len(records(client, run_id)) == 7  # nothing written
            with pytest.raises(RunNotFoundError):
                client.fold(f"{run_id}-read")
            # The access token, on the same web server, sees the forms: the read token is what hid them.
            writer = Visitor(web.url)
            login = writer.request("/login")[1]
            assert writer.request("/login", {"csrf_token": csrf_token(login), "access_token": ACCESS_TOKEN})[0] == 303
            assert 'id="fork-form"' in writer.request(f"/runs/{run_id}")[1]
    finally:
        web.stop()


def test_without_the_operator_scope_the_journal_server_refuses_the_delete_and_keeps_the_run(
    browser: WebDriver, authed_journal: ServerProcess, tmp_path: Path
):
    worker = WebServer(authed_journal.address, tmp_path / "worker.log", env={"RUNJOURNAL_TOKEN": "worker-secret"})
    worker.start()
    try:
        with JournalClient(authed_journal.address, metadata=[("authorization", "Bearer worker-secret")]) as client:
            run_id = demo.refund_waiting_for_approval(client)
            sign_in(browser, worker.url)
            browser.get(f"{worker.url}/runs/{run_id}/delete")
            wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "confirm-delete"))).click()
            message = refusal(browser)
            assert message.startswith("PERMISSION_DENIED: ") and "operator" in message
            assert len(records(client, run_id)) == 4
    finally:
        worker.stop()


def test_with_journal_auth_the_timeline_names_the_operator_token_that_answered_and_approved(
    browser: WebDriver, authed_journal: ServerProcess, tmp_path: Path
):
    alice = WebServer(authed_journal.address, tmp_path / "alice.log", env={"RUNJOURNAL_TOKEN": "alice-secret"})
    alice.start()
    try:
        with JournalClient(authed_journal.address, metadata=[("authorization", "Bearer worker-secret")]) as client:
            run_id = demo.deploy_waiting_for_approval(client)
        sign_in(browser, alice.url)
        run_page(browser, alice.url, run_id)
        browser.find_element(By.CSS_SELECTOR, 'article.call[data-call="call_deploy"] button.approve').click()
        notice(browser)
        browser.find_element(By.CSS_SELECTOR, "#answer-call_ask textarea").send_keys("the release managers")
        browser.find_element(By.CSS_SELECTOR, "#answer-call_ask button").click()
        answered = (By.CSS_SELECTOR, 'li.entry[data-seq="9"]')
        wait(browser).until(expected_conditions.presence_of_element_located(answered))
        who = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "li.entry .who")]
        assert who == ["approved by alice", "answered by alice"]
    finally:
        alice.stop()

"""Who may use the web inbox: the access token, form tokens (CSRF), and the journal token behind it."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions

from runjournal import JournalClient
from runjournal.v1 import records_pb2
from runjournal_server.api.auth import token_sha256
from tests.servers import ServerProcess
from tests.web import demo
from tests.web.conftest import WebServer, sign_in, wait
from tests.web.test_inbox_browser import notice, records, refusal, row


class Visitor:
    """A plain HTTP client with a browser's cookies (no script, no redirects followed)."""

    def __init__(self, url: str, cookies: list[dict[str, str]] = ()) -> None:  # type: ignore[assignment]
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        host = urllib.parse.urlsplit(url).hostname or ""
        for cookie in cookies:
            self.jar.set_cookie(_cookie(cookie["name"], cookie["value"], host))
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirects())

    def request(
        self, path: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.url + path, data=data, headers=headers or {})
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def _cookie(name: str, value: str, host: str) -> http.cookiejar.Cookie:
    return http.cookiejar.Cookie(
        0, name, value, None, False, host, False, False, "/", True, False, None, False, None, None, {}
    )


def csrf_token(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def test_the_inbox_needs_the_access_token(browser: WebDriver, web_server: WebServer):
    browser.get(web_server.url + "/")
    assert browser.current_url == web_server.url + "/login"
    sign_in(browser, web_server.url, token="not-the-token", refused=True)
    assert refusal(browser) == "that is not the access token"
    anonymous = Visitor(web_server.url)
    for path in ("/fragments/inbox", "/events", "/runs/anything/fragment", "/runs/anything/events"):
        assert anonymous.request(path)[0] == 401, path
    assert anonymous.request("/")[0] == 303
    sign_in(browser, web_server.url)
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "live")))
    assert browser.current_url == web_server.url + "/"
    # The session cookie is not readable by a page's script, and not sent by other sites' requests.
    (cookie,) = browser.get_cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def test_without_an_access_token_set_one_is_generated_printed_and_needed(journal_server, tmp_path: Path):
    server = WebServer(journal_server.address, tmp_path / "web.log", env={"RUNJOURNAL_WEB_TOKEN": ""}).start()
    try:
        assert server.process is not None and server.process.stdout is not None
        line = server.process.stdout.readline()
        assert line.startswith("access token (set $RUNJOURNAL_WEB_TOKEN to choose it): ")
        token = line.rpartition(": ")[2].strip()
        visitor = Visitor(server.url)
        page = visitor.request("/login")[1]
        assert visitor.request("/login", {"csrf_token": csrf_token(page), "access_token": "guess"})[0] == 403
        assert visitor.request("/login", {"access_token": token})[0] == 403  # the sign-in form has its token too
        assert visitor.request("/")[0] == 303
        assert visitor.request("/login", {"csrf_token": csrf_token(page), "access_token": token})[0] == 303
        assert visitor.request("/")[0] == 200
    finally:
        server.stop()


def test_a_form_post_without_its_token_is_refused_and_writes_nothing(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.refund_waiting_for_approval(client)
        sign_in(browser, web_server.url)
        row(browser, run_id, "call_refund")
        signed_in = Visitor(web_server.url, browser.get_cookies())
        other_session = csrf_token(Visitor(web_server.url).request("/login")[1])
        decide = f"/runs/{run_id}/decide"
        form = {"call_id": "call_refund", "decision": "approved", "next": "run"}
        for refused in (form, {**form, "csrf_token": ""}, {**form, "csrf_token": other_session}):
            status, text = signed_in.request(decide, refused)
            assert (status, text) == (403, "the form's token is missing or wrong: reload the page and send it again")
        own = {**form, "csrf_token": csrf_token(browser.page_source)}
        for origin in ("https://elsewhere.example", "null"):
            status, text = signed_in.request(decide, own, {"Origin": origin})
            assert (status, text) == (403, "this form was sent from another site; nothing was written")
        assert records(client, run_id)[-1].WhichOneof("payload") == "terminal"  # nothing written

        # The same form with the page's own token, from its own origin, is accepted: the refusals were right.
        status, _ = signed_in.request(decide, own, {"Origin": web_server.url})
        assert status == 303
        assert records(client, run_id)[-1].approval.tool_use_id == "call_refund"


def test_a_form_another_site_makes_the_browser_send_writes_nothing(
    browser: WebDriver, web_server: WebServer, journal_server
):
    with JournalClient(journal_server.address) as client:
        run_id = demo.refund_waiting_for_approval(client)
        sign_in(browser, web_server.url)
        row(browser, run_id, "call_refund")
        token = csrf_token(browser.page_source)  # even a stolen token does not help without the cookie
        attack = (
            f'<form id="f" method="post" action="{web_server.url}/runs/{run_id}/decide">'
            f'<input name="csrf_token" value="{token}"><input name="call_id" value="call_refund">'
            '<input name="decision" value="approved"></form>'
        )
        browser.get("data:text/html," + urllib.parse.quote(attack))
        browser.find_element(By.ID, "f").submit()
        wait(browser).until(lambda b: "nothing was written" in b.page_source or "sign in first" in b.page_source)
        assert records(client, run_id)[-1].WhichOneof("payload") == "terminal"


@pytest.fixture
def authed_journal(server_factory: Callable[..., ServerProcess], tmp_path: Path) -> ServerProcess:
    entries = [
        ("alice", "alice-secret", '["operator"]'),
        ("worker-1", "worker-secret", '["worker"]'),
    ]
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        "\n".join(
            f'[[tokens]]\nname = "{name}"\nsha256 = "{token_sha256(secret)}"\n'
            f'run_id_prefixes = [""]\nscopes = {scopes}\n'
            for name, secret, scopes in entries
        )
    )
    return server_factory(tmp_path / "data", "--auth-tokens-file", str(tokens))


def test_with_journal_auth_the_web_servers_token_decides_and_its_name_is_the_approver(
    browsers: Callable[[], WebDriver], authed_journal: ServerProcess, tmp_path: Path
):
    alice = WebServer(authed_journal.address, tmp_path / "alice.log", env={"RUNJOURNAL_TOKEN": "alice-secret"})
    worker = WebServer(authed_journal.address, tmp_path / "worker.log", env={"RUNJOURNAL_TOKEN": "worker-secret"})
    try:
        alice.start()
        worker.start()
        metadata = [("authorization", "Bearer worker-secret")]
        with JournalClient(authed_journal.address, metadata=metadata) as client:
            run_id = demo.deploy_waiting_for_approval(client)
            for server, browser in ((worker, browsers()), (alice, browsers())):
                sign_in(browser, server.url)
                row(browser, run_id, "call_deploy").find_element(By.CSS_SELECTOR, "button.approve").click()
                if server is worker:
                    assert refusal(browser).startswith("PERMISSION_DENIED: ")
                    assert records(client, run_id)[-1].WhichOneof("payload") == "terminal"
            seq = int(notice(browser).removeprefix("recorded at seq "))
            approval = records(client, run_id)[-1]
            assert approval.seq == seq
            assert (approval.approval.approver, approval.approval.decision) == ("alice", records_pb2.DECISION_APPROVED)
    finally:
        for server in (alice, worker):
            if server.process is not None:
                server.stop()

"""The web inbox's aiohttp application: its routes, the inbox, and the answer and decision forms.

Every request has passed the checks of ``guards`` before a handler here runs;
only then does a handler talk to the journal server, through one
``AsyncJournalClient``. Live updates are in ``events``; a run's page is
``run_pages``, the runs browser ``browser``, forking and deleting
``run_actions``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from aiohttp import web

from runjournal.aio import AsyncJournalClient
from runjournal.errors import RunJournalError
from runjournal.v1 import state_pb2
from runjournal.web import browser, events, guards, run_actions, views
from runjournal.web.access import Access
from runjournal.web.keys import ACCESS, CLIENT, FEED, FOLLOWING, SETTINGS, STREAMS, TEMPLATES, USAGE, OpenStreams
from runjournal.web.live import InboxFeed
from runjournal.web.pages import done_notice, refusal_status, refusal_text, render
from runjournal.web.run_pages import CONVERSATION_ALL, run_fragment, run_page
from runjournal.web.settings import WebSettings
from runjournal.web.usage import UsageCache

INBOX_RUNS = 200
"""At most this many waiting runs on the inbox page (each is folded for its calls' arguments)."""
MAX_FORM_BYTES = 1 << 20


def create_app(settings: WebSettings) -> web.Application:
    """The web inbox for ``settings``; the journal client and the live feed start with the app."""
    app = web.Application(middlewares=[guards.headers, guards.sessions, guards.forms], client_max_size=MAX_FORM_BYTES)
    app[SETTINGS] = settings
    app[ACCESS] = Access(
        settings.access_token, session_seconds=settings.session_seconds, read_token=settings.read_token
    )
    app[TEMPLATES] = _templates()
    app[STREAMS] = OpenStreams()
    app[USAGE] = UsageCache()
    app.cleanup_ctx.append(_journal_client)
    app.on_shutdown.append(_close_streams)
    app.router.add_get("/login", login_page)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/", inbox_page)
    app.router.add_get("/fragments/inbox", inbox_fragment)
    app.router.add_get("/runs", browser.runs_page)
    app.router.add_get("/runs/{run_id}", run_page)
    app.router.add_get("/runs/{run_id}/fragment", run_fragment)
    app.router.add_post("/runs/{run_id}/answer", answer)
    app.router.add_post("/runs/{run_id}/decide", decide)
    app.router.add_post("/runs/{run_id}/fork", run_actions.fork)
    app.router.add_get("/runs/{run_id}/delete", run_actions.delete_page)
    app.router.add_post("/runs/{run_id}/delete", run_actions.delete)
    app.router.add_get("/events", events.inbox_events)
    app.router.add_get("/runs/{run_id}/events", events.run_events)
    app.router.add_get("/favicon.ico", guards.no_content)
    app.router.add_static("/static/", Path(__file__).parent / "static")
    return app


def _templates() -> jinja2.Environment:
    # Autoescape everywhere, whatever a template's name: every journal string is text, never markup.
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("runjournal.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["shown"] = views.shown
    env.filters["run_status"] = views.run_status
    env.filters["path"] = lambda text: quote(str(text), safe="")
    return env


async def _journal_client(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    client = AsyncJournalClient(settings.journal_address, metadata=settings.journal_metadata)
    app[CLIENT] = client
    app[FEED] = InboxFeed(client, settings.poll_seconds)
    app[FOLLOWING] = asyncio.create_task(app[FEED].follow())
    yield
    app[FOLLOWING].cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await app[FOLLOWING]
    await client.close()


async def _close_streams(app: web.Application) -> None:
    # Or shutdown would wait for the browsers to leave.
    for stream in list(app[STREAMS].open):
        stream.stop_streaming()


# --- sign in ------------------------------------------------------------------


async def login_page(request: web.Request) -> web.StreamResponse:
    return render(request, "login.html", failed=False)


async def login(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    offered = form.get("access_token")
    session = request.app[ACCESS].sign_in(offered) if isinstance(offered, str) else None
    if session is None:
        return render(request, "login.html", status=403, failed=True)
    request["new_session"] = session
    response = guards.see_other("/")
    guards.set_session_cookie(request, response, session)
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    session = request.app[ACCESS].new_session(signed_in=False)
    request["new_session"] = session
    response = guards.see_other("/login")
    guards.set_session_cookie(request, response, session)
    return response


# --- the inbox ----------------------------------------------------------------


async def _inbox_values(request: web.Request) -> dict[str, Any]:
    client = request.app[CLIENT]
    version, _ = request.app[FEED].snapshot
    summaries = []
    async for summary in client.inbox():
        summaries.append(summary)
        if len(summaries) >= INBOX_RUNS:
            break
    pending = dict(await asyncio.gather(*(_pending(client, s.run_id) for s in summaries)))
    rows = views.inbox_rows(summaries, pending, datetime.now(UTC))
    return {"rows": rows, "version": version, "truncated": len(summaries) >= INBOX_RUNS}


async def _pending(client: AsyncJournalClient, run_id: str) -> tuple[str, state_pb2.PendingBatch | str]:
    """The run's pending batch, for its calls' arguments; or, refused, what the row says instead.

    A run listed a moment ago can be refused now (deleted, or damaged since):
    it keeps its row, which names the refusal where the arguments would be.
    """
    try:
        return run_id, (await client.fold(run_id, conversation_from=CONVERSATION_ALL)).pending
    except RunJournalError as err:
        return run_id, refusal_text(err)


async def inbox_page(request: web.Request, notice: str = "", error: str = "", status: int = 200) -> web.StreamResponse:
    try:
        values = await _inbox_values(request)
    except RunJournalError as err:
        return render(request, "error.html", status=refusal_status(err), message=refusal_text(err))
    return render(request, "inbox.html", status=status, notice=notice or done_notice(request), error=error, **values)


async def inbox_fragment(request: web.Request) -> web.StreamResponse:
    try:
        values = await _inbox_values(request)
    except RunJournalError as err:
        return web.Response(text=refusal_text(err), status=refusal_status(err))
    return render(request, "_inbox.html", **values)


async def answer(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    run_id = request.match_info["run_id"]
    call_id = str(form.get("call_id", ""))
    text = str(form.get("text", ""))
    is_error = form.get("is_error") == "on"

    async def write() -> int:
        return await request.app[CLIENT].answer(run_id, call_id, text=text, is_error=is_error)

    return await _write(request, write, str(form.get("next", "")))


async def decide(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    run_id = request.match_info["run_id"]
    call_id = str(form.get("call_id", ""))
    decision = form.get("decision")
    if decision not in ("approved", "denied"):
        return web.Response(status=400, text="decision must be approved or denied")
    settings = request.app[SETTINGS]
    # With a journal token the server records the token's name (and refuses any other): send none.
    approver = "" if settings.journal_token else settings.approver

    async def write() -> int:
        return await request.app[CLIENT].approve(run_id, call_id, str(decision), approver, str(form.get("reason", "")))

    return await _write(request, write, str(form.get("next", "")))


async def _write(request: web.Request, write: Callable[[], Awaitable[int]], next_page: str) -> web.StreamResponse:
    """Do the write; on success go back (to the inbox or the run), on a refusal show it on the page it came from."""
    run_id = request.match_info["run_id"]
    try:
        seq = await write()
    except RunJournalError as err:
        page = inbox_page if next_page == "inbox" else run_page
        return await page(request, error=refusal_text(err), status=refusal_status(err))
    target = "/" if next_page == "inbox" else f"/runs/{quote(run_id, safe='')}"
    return guards.see_other(f"{target}?done={seq}")

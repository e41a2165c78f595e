"""Live updates to the pages, as server-sent events (aiohttp-sse).

``/events`` sends the inbox snapshot (``InboxFeed``) each time it changes. A
run page's ``/runs/{run_id}/events`` follows that one run through ``Watch``
from the seq the page shows, so it hears of every record (a worker resuming
after an approval too); where the journal server has no ``Watch``
(UNIMPLEMENTED) it takes the run's entry in the inbox snapshot instead.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import grpc
from aiohttp import web
from aiohttp_sse import EventSourceResponse, sse_response

from runjournal.errors import RunJournalError
from runjournal.web.keys import CLIENT, FEED, STREAMS


async def inbox_events(request: web.Request) -> web.StreamResponse:
    """The inbox snapshot ``{"version": n, "runs": {run_id: last_seq}}`` each time it changes (event ``inbox``)."""
    after = _number(request.headers.get(EventSourceResponse.DEFAULT_LAST_EVENT_HEADER) or request.query.get("after"))

    async def send(stream: EventSourceResponse) -> None:
        async for version, runs in request.app[FEED].changes(after):
            await stream.send(json.dumps({"version": version, "runs": runs}), id=str(version), event="inbox")

    return await _stream(request, send)


async def run_events(request: web.Request) -> web.StreamResponse:
    """The run's news after the seq its page shows: ``{"seq": n}`` per record, ``{"left": true}`` (event ``run``).

    ``left`` (the run left the inbox) comes only from the inbox snapshot, where
    there is no Watch. A refusal (the run was deleted, or is not the token's)
    is sent as event ``gone``, and the page stops listening.
    """
    run_id = request.match_info["run_id"]
    after = _number(request.query.get("after"))

    async def send(stream: EventSourceResponse) -> None:
        try:
            async for news in _run_news(request, run_id, after):
                await stream.send(json.dumps(news), event="run")
        except RunJournalError as err:
            await stream.send(json.dumps({"reason": err.reason or err.code.name}), event="gone")

    return await _stream(request, send)


async def _run_news(request: web.Request, run_id: str, after: int) -> AsyncIterator[dict[str, object]]:
    try:
        async for item in request.app[CLIENT].watch(run_id, after):
            seq = getattr(item, "seq", None)  # a stored record; the caught-up marker has none
            if seq is not None:
                yield {"seq": seq}
        return
    except RunJournalError as err:
        if err.code != grpc.StatusCode.UNIMPLEMENTED:
            raise
    async for _, runs in request.app[FEED].changes(0):
        yield {"seq": runs[run_id]} if run_id in runs else {"left": True}


async def _stream(
    request: web.Request, send: Callable[[EventSourceResponse], Coroutine[Any, Any, None]]
) -> web.StreamResponse:
    async with sse_response(request) as stream:
        request.app[STREAMS].open.add(stream)
        sending = asyncio.create_task(send(stream))
        try:
            await stream.wait()  # until the browser leaves (a ping fails) or the server shuts down
        finally:
            sending.cancel()
            request.app[STREAMS].open.discard(stream)
    return stream


def _number(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0

"""A run's page: the live part (pending calls, last turns, forms) and, below it, the journal as a timeline,
usage per model, the fork lineage, and the fork and delete forms.

The live part (``_run.html``) is what the page fetches again when its run
changes, so it stays two folds. The rest is read once per page view: one page
of the journal (``Read`` from the page's first seq, ``TIMELINE_PAGE``
records, then the stream is cancelled), the records after the usage tally
the web server keeps for the run (``usage``), and the lineage (``lineage``).
"""

from __future__ import annotations

import contextlib
from typing import Any

from aiohttp import web

from runjournal.aio import AsyncJournalClient
from runjournal.errors import RunJournalError
from runjournal.v1 import state_pb2
from runjournal.web import lineage, timeline, usage, views
from runjournal.web.keys import CLIENT, USAGE
from runjournal.web.pages import done_notice, refusal_status, refusal_text, render

CONVERSATION_ALL = lineage.CONVERSATION_NONE
"""A ``conversation_from`` past any conversation: the fold carries the pending batch and no messages."""


async def live_values(request: web.Request) -> dict[str, Any]:
    """The live part's values, and the folded state (with only the last messages) for the rest of the page."""
    client = request.app[CLIENT]
    run_id = request.match_info["run_id"]
    # Two folds: the first tells how long the conversation is, the second brings its last messages only.
    size = (await client.fold(run_id, conversation_from=CONVERSATION_ALL)).conversation_size
    state = await client.fold(run_id, conversation_from=max(0, size - views.LAST_MESSAGES))
    return {"run": views.run_view(state), "labels": sorted(state.meta.labels.items()), "state": state}


async def journal_values(request: web.Request, state: state_pb2.RunState) -> dict[str, Any]:
    """The timeline page asked for (``?from=SEQ``; the newest page without it), usage, lineage."""
    client = request.app[CLIENT]
    run_id = state.run_id
    from_text = request.query.get("from", "")
    page = timeline.page_of(int(from_text) if from_text.isdigit() else None, state.last_seq)
    entries = []
    async with contextlib.aclosing(client.read(run_id, page.first)) as records:
        async for record, line in records:
            if record.seq > page.last:
                break
            entries.append(timeline.entry(record, line))
    tally = await _usage(client, request.app[USAGE], run_id, state.last_seq)
    return {
        "page": page,
        "entries": entries,
        "usage": tally,
        "usage_total": tally.total(),
        "lineage": await lineage.lineage(client, run_id, state.meta),
        "tree": await lineage.subagent_tree(client, run_id, state.meta),
    }


async def _usage(client: AsyncJournalClient, cache: usage.UsageCache, run_id: str, last_seq: int) -> usage.UsageTally:
    tally = cache.start(run_id)
    if tally.seq < last_seq:
        async with contextlib.aclosing(client.read(run_id, tally.seq + 1)) as records:
            async for record, _ in records:
                tally.add(record)
        cache.keep(run_id, tally)
    return tally


async def run_page(request: web.Request, notice: str = "", error: str = "", status: int = 200) -> web.StreamResponse:
    try:
        values = await live_values(request)
        values |= await journal_values(request, values["state"])
    except RunJournalError as err:
        return render(request, "error.html", status=refusal_status(err), message=refusal_text(err))
    return render(request, "run.html", status=status, notice=notice or done_notice(request), error=error, **values)


async def run_fragment(request: web.Request) -> web.StreamResponse:
    try:
        values = await live_values(request)
    except RunJournalError as err:
        return web.Response(text=refusal_text(err), status=refusal_status(err))
    return render(request, "_run.html", **values)

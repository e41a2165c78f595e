"""Forking and deleting a run from its page, with the CLI's rules (``runjournal runs fork`` / ``runs delete``).

Fork: the new run's id is required and the seq is optional (empty: the
source's last record), as ``runs fork --new-run-id ID [--at SEQ]``; nothing
is asked, since the source is unchanged. Delete: as ``runs delete`` without
``--expected-last-seq``, the run is read first and its status and last seq
shown with the question (a page of its own, ``/runs/RUN/delete``); the post
deletes only at the last seq that page showed, so a record appended since is
never deleted unseen (``LAST_SEQ_MISMATCH``: the page shows the run again),
and a post without the page's confirmation deletes nothing.

Both are posts, so ``guards.forms`` has checked the form token, the origin,
and that the session may write. The journal server then checks its own
token's scopes (``DeleteRun`` needs operator, ``ForkRun`` worker) and its
refusal is shown as it said it.
"""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from runjournal.errors import LastSeqMismatchError, RunJournalError
from runjournal.render import safe_text
from runjournal.web import guards, lineage, views
from runjournal.web.keys import CLIENT, USAGE
from runjournal.web.pages import refusal_status, refusal_text, render
from runjournal.web.run_pages import run_page

CONFIRMED = "yes"


async def fork(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    run_id = request.match_info["run_id"]
    new_run_id = str(form.get("new_run_id", "")).strip()
    at_text = str(form.get("at_seq", "")).strip()
    if not new_run_id:
        return await run_page(request, error="nothing forked: a fork needs a new run id", status=400)
    if at_text and not at_text.isdigit():
        return await run_page(request, error="nothing forked: the seq is a number (empty: the last record)", status=400)
    try:
        answer = await request.app[CLIENT].fork_run(run_id, int(at_text or 0), new_run_id)
    except RunJournalError as err:
        return await run_page(request, error=refusal_text(err), status=refusal_status(err))
    return guards.see_other(f"/runs/{quote(answer.run_id, safe='')}?forked={answer.forked_from.seq}")


async def delete_page(request: web.Request, error: str = "", status: int = 200) -> web.StreamResponse:
    """The question before a delete: the run's status and last seq, read now, and the form that deletes at it."""
    if not request["session"].may_write:
        return render(request, "error.html", status=403, message=guards.READ_ONLY_REFUSAL)
    client = request.app[CLIENT]
    run_id = request.match_info["run_id"]
    try:
        state = await client.fold(run_id, conversation_from=lineage.CONVERSATION_NONE)
        forks = await client.list_runs(1, parent_run_id=run_id)
    except RunJournalError as err:
        return render(request, "error.html", status=refusal_status(err), message=refusal_text(err))
    return render(
        request,
        "delete.html",
        status=status,
        error=error,
        run_id=run_id,
        shown_id=safe_text(run_id),
        status_word=views.run_status(state.status),
        last_seq=state.last_seq,
        claimed_by=views.shown(state.claimed_by),
        waiting=sum(call.waiting_for_person for call in state.pending.calls),
        has_forks=bool(forks.runs),
        confirmed=CONFIRMED,
    )


async def delete(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    run_id = request.match_info["run_id"]
    expected = str(form.get("expected_last_seq", ""))
    if form.get("confirm") != CONFIRMED or not expected.isdigit() or int(expected) < 1:
        return await delete_page(
            request, error="nothing deleted: confirm on this page, which names the last seq it deletes at", status=400
        )
    try:
        answer = await request.app[CLIENT].delete_run(run_id, int(expected))
    except LastSeqMismatchError as err:
        moved = f"did not delete: the run moved on to seq {err.last_seq} since seq {int(expected)}; look at it again"
        return await delete_page(request, error=moved, status=409)
    except RunJournalError as err:
        return render(request, "error.html", status=refusal_status(err), message=refusal_text(err))
    request.app[USAGE].forget(run_id)
    outcome = "gone" if not answer.deleted else "deleted" if answer.erased else "erasing"
    return guards.see_other(f"/runs?{outcome}={answer.last_seq}")

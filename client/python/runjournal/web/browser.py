"""The runs browser (``/runs``): every run the journal token may see, filtered, newest first, a page at a time.

The query and the paging are ``listing``'s; this module turns the page into
rows of escaped text and renders it. A filter that is not one (a status that
does not exist, a label without ``=``, a time that does not parse) is a 400
page naming it, the form kept as typed, and nothing is asked of the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from runjournal.errors import RunJournalError
from runjournal.v1 import state_pb2
from runjournal.web import listing, views
from runjournal.web.keys import CLIENT
from runjournal.web.pages import done_notice, refusal_status, refusal_text, render


@dataclass(frozen=True)
class RunRow:
    """One run of the browser. ``run_id``, ``task``, ``parent`` and each label's first part are raw, for links
    (the template quotes them into a URL, or shows them through ``shown``); the rest is escaped text."""

    run_id: str
    shown_id: str
    status: str
    created: str
    updated: str
    last_seq: int
    model: str
    labels: list[tuple[str, str, str]]
    """(raw key=value for the filter link, shown key, shown value)."""
    task: str
    parent: str
    shown_parent: str
    waiting: int
    said: str
    """The terminal message, or what is wrong with a corrupt or unavailable run."""


def run_row(summary: state_pb2.RunSummary, now: datetime) -> RunRow:
    created = summary.created_at.ToDatetime(tzinfo=UTC) if summary.HasField("created_at") else None
    return RunRow(
        run_id=summary.run_id,
        shown_id=views.shown(summary.run_id),
        status=views.run_status(summary.status),
        created=created.strftime("%Y-%m-%d %H:%M:%S") if created else "unknown",
        updated=f"{views.waited(summary, now)} ago" if summary.HasField("updated_at") else "unknown",
        last_seq=summary.last_seq,
        model=views.shown(summary.model),
        labels=[(f"{k}={v}", views.shown(k), views.shown(v)) for k, v in sorted(summary.labels.items())],
        task=summary.task_id,
        parent=summary.parent_run_id,
        shown_parent=views.shown(summary.parent_run_id),
        waiting=len(summary.waiting_calls),
        said=views.shown(summary.corruption or summary.terminal_message, 300),
    )


def form_values(params: Any) -> dict[str, Any]:
    """The filter form as typed (also when it did not parse): the page shows what the person asked."""
    return {
        "status": params.get("status", ""),
        "labels": [text for text in params.getall("label", []) if text.strip()],
        "ids": {f.param: params.get(f.param, "") for f in listing.RUN_FILTERS},
        "created_from": params.get("created_from", ""),
        "created_before": params.get("created_before", ""),
        "stopped_before": params.get("stopped_before", ""),
        "size": params.get("size", ""),
    }


async def runs_page(request: web.Request) -> web.StreamResponse:
    values: dict[str, Any] = {
        "form": form_values(request.query),
        "statuses": listing.STATUSES,
        "run_filters": listing.RUN_FILTERS,
        "rows": [],
        "page": None,
        "query": listing.RunsQuery(),
        "scan_pages": listing.SCAN_PAGES,
    }
    try:
        query = listing.parse_query(request.query)
    except listing.QueryError as err:
        return render(request, "runs.html", status=400, error=str(err), **values)
    try:
        page = await listing.runs_page(request.app[CLIENT], query)
    except RunJournalError as err:
        return render(request, "runs.html", status=refusal_status(err), error=refusal_text(err), **values)
    now = datetime.now(UTC)
    values |= {"rows": [run_row(summary, now) for summary in page.runs], "page": page, "query": query}
    return render(request, "runs.html", notice=done_notice(request), **values)

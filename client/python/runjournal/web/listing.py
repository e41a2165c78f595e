"""The runs browser's listing: what a query asks for, and one page of runs for it from ``ListRuns``.

Every filter ``ListRuns`` has is sent with the request and paged by its page
tokens: status, labels, task, the fork parent, and "stopped before"
(``stopped_before``: only stopped runs whose last record is older). The
filters by another run's id are one table, ``RUN_FILTERS``: a new relation
that ``ListRuns`` learns (a sub-agent's parent or root) is one entry there,
and the form, the links and the request follow from it.

``ListRuns`` has no filter by creation time, so "created from" and "created
before" are applied here, over the listing, which is newest first by
creation time: runs created at or after "before" are skipped, and the walk
ends at the first run created before "from", since nothing after it can
match. One page reads at most ``SCAN_PAGES`` pages of ``ListRuns``; when that
bound ends it before the page is full, the page says so and its "next" link
goes on from where the walk stopped. A page is exact: when a page of
``ListRuns`` holds more matches than the browser's page has room for, that
page is asked for again, as many runs as fit, so its token goes on right
after the last run shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from multidict import MultiMapping

from runjournal.aio import AsyncJournalClient
from runjournal.v1 import state_pb2
from runjournal.web import views

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
SCAN_PAGES = 20
"""At most this many ListRuns calls for one page while a time filter skips runs (the walk's bound)."""
STATUSES = tuple(views.run_status(value) for value in state_pb2.RunStatus.values() if value)
"""The statuses a run can have, as the form offers them ("open", "suspended", ...)."""


@dataclass(frozen=True)
class RunFilter:
    """A filter by a run id or a task id that ``ListRuns`` answers: its query parameter, the form's words, and
    the ``list_runs`` keyword it is sent as."""

    param: str
    title: str
    keyword: str


RUN_FILTERS = (
    RunFilter("task", "task", "task_id"),
    RunFilter("parent", "forked from", "parent_run_id"),
    RunFilter("spawned_by", "sub-agent of", "spawned_by_run_id"),
    RunFilter("root", "root run", "root_run_id"),
)


class QueryError(ValueError):
    """A filter the browser cannot send: the message says which and why."""


@dataclass(frozen=True)
class RunsQuery:
    """What the browser lists: the filters, the page token, the page size."""

    status: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    ids: Mapping[str, str] = field(default_factory=dict)
    """The set ``RUN_FILTERS``, by query parameter."""
    created_from: datetime | None = None
    created_before: datetime | None = None
    stopped_before: datetime | None = None
    page_token: str = ""
    size: int = PAGE_SIZE

    @property
    def walks(self) -> bool:
        """Whether a filter is applied here (by creation time) rather than by ListRuns."""
        return self.created_from is not None or self.created_before is not None

    def list_arguments(self) -> dict[str, Any]:
        """``AsyncJournalClient.list_runs``'s filter arguments for this query."""
        arguments: dict[str, Any] = {f.keyword: self.ids[f.param] for f in RUN_FILTERS if self.ids.get(f.param)}
        if self.status:
            arguments["status"] = self.status
        if self.labels:
            arguments["labels"] = dict(self.labels)
        if self.stopped_before is not None:
            arguments["stopped_before"] = self.stopped_before
        return arguments

    def matches(self, summary: state_pb2.RunSummary) -> bool:
        """The filters applied here: creation time (a run without one, corrupt before its meta, matches none)."""
        if not self.walks:
            return True
        if not summary.HasField("created_at"):
            return False
        created = summary.created_at.ToDatetime(tzinfo=UTC)
        return (self.created_from is None or created >= self.created_from) and (
            self.created_before is None or created < self.created_before
        )

    def past_the_end(self, summary: state_pb2.RunSummary) -> bool:
        """True for a run created before "from": every later run of the listing is older still."""
        if self.created_from is None or not summary.HasField("created_at"):
            return False
        return summary.created_at.ToDatetime(tzinfo=UTC) < self.created_from

    def query_string(self, **changes: Any) -> str:
        """This query (with ``changes``) as the browser's URL query, for its links."""
        query = replace(self, **changes)
        pairs: list[tuple[str, str]] = []
        if query.status:
            pairs.append(("status", query.status))
        pairs += [("label", f"{key}={value}") for key, value in query.labels]
        pairs += [(f.param, query.ids[f.param]) for f in RUN_FILTERS if query.ids.get(f.param)]
        for name in ("created_from", "created_before", "stopped_before"):
            moment: datetime | None = getattr(query, name)
            if moment is not None:
                pairs.append((name, moment.strftime("%Y-%m-%dT%H:%M:%S")))
        if query.size != PAGE_SIZE:
            pairs.append(("size", str(query.size)))
        if query.page_token:
            pairs.append(("page", query.page_token))
        return urlencode(pairs)


def parse_query(params: MultiMapping[str]) -> RunsQuery:
    """The query of the browser's URL; ``QueryError`` names a filter that is not one."""
    status = params.get("status", "").strip()
    if status and status not in STATUSES:
        raise QueryError(f"status must be one of {', '.join(STATUSES)}")
    labels = []
    for text in params.getall("label", []):
        if not text.strip():
            continue
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise QueryError("a label filter is KEY=VALUE, e.g. team=search")
        labels.append((key.strip(), value))
    size_text = params.get("size", "")
    if size_text and not (size_text.isdigit() and 1 <= int(size_text) <= MAX_PAGE_SIZE):
        raise QueryError(f"size must be a number from 1 to {MAX_PAGE_SIZE}")
    return RunsQuery(
        status=status,
        labels=tuple(labels),
        ids={f.param: params[f.param].strip() for f in RUN_FILTERS if params.get(f.param, "").strip()},
        created_from=_moment(params, "created_from"),
        created_before=_moment(params, "created_before"),
        stopped_before=_moment(params, "stopped_before"),
        page_token=params.get("page", ""),
        size=int(size_text) if size_text else PAGE_SIZE,
    )


def _moment(params: MultiMapping[str], name: str) -> datetime | None:
    """A time as the form sends it (``2026-03-01``, ``2026-03-01T09:30``, or ISO 8601); UTC unless it says."""
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise QueryError(f"{name.replace('_', ' ')} must be a date and time such as 2026-03-01T09:30") from None
    # Kept in UTC, as the links write it back.
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class RunsPage:
    """One page of the browser: its runs, the token of the next page ("" on the last), and the walk's work."""

    runs: list[state_pb2.RunSummary]
    next_token: str
    listed: int
    """How many runs ListRuns sent for this page (more than shown while a time filter skips runs)."""
    bounded: bool
    """The walk stopped at ``SCAN_PAGES`` before the page was full: the next page goes on from there."""


async def runs_page(client: AsyncJournalClient, query: RunsQuery) -> RunsPage:
    """One page of runs for ``query``, newest first (see the module's note on the time filters)."""
    arguments = query.list_arguments()
    shown: list[state_pb2.RunSummary] = []
    token, listed = query.page_token, 0
    for _ in range(SCAN_PAGES):
        room = query.size - len(shown)
        page = await client.list_runs(query.size, token, **arguments)
        matching, ended = _take(query, page.runs)
        if len(matching) > room:
            # Ask for this page again with only the runs that fit, so its token goes on after the last shown.
            last_fitting = matching[room - 1].run_id
            fits = 1 + next(i for i, summary in enumerate(page.runs) if summary.run_id == last_fitting)
            page = await client.list_runs(fits, token, **arguments)
            matching, ended = _take(query, page.runs)
        listed += len(page.runs)
        shown += matching
        token = "" if ended else page.next_page_token
        if not token or len(shown) >= query.size:
            return RunsPage(shown, token, listed, bounded=False)
    return RunsPage(shown, token, listed, bounded=True)


def _take(query: RunsQuery, runs: Any) -> tuple[list[state_pb2.RunSummary], bool]:
    """The runs of one ListRuns page that match, and whether the walk ended in it (a run before "from")."""
    matching: list[state_pb2.RunSummary] = []
    for summary in runs:
        if query.past_the_end(summary):
            return matching, True
        if query.matches(summary):
            matching.append(summary)
    return matching, False

"""Rendering a page, and what a person reads when the journal server refused: shared by every handler."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from runjournal.errors import AlreadyAnsweredError, AlreadyDecidedError, RunJournalError
from runjournal.render import safe_text
from runjournal.web.access import CSRF_FIELD, Session
from runjournal.web.keys import ACCESS, FEED, TEMPLATES


def render(request: web.Request, template: str, status: int = 200, **values: Any) -> web.Response:
    """``template`` with ``values``, the form token of the session, and whether the session may write."""
    session: Session = request.get("new_session") or request["session"]
    values = {"notice": "", "error": "", "live_mode": request.app[FEED].mode, **values}
    page = (
        request.app[TEMPLATES]
        .get_template(template)
        .render(
            csrf_field=CSRF_FIELD,
            csrf_token=request.app[ACCESS].csrf_token(session),
            may_write=session.may_write,
            **values,
        )
    )
    return web.Response(text=page, status=status, content_type="text/html", charset="utf-8")


def refusal_text(err: RunJournalError) -> str:
    """What a person reads when the journal server refused: "already answered at seq 7", or its reason and message."""
    if isinstance(err, AlreadyAnsweredError):
        return f"already answered at seq {err.answered_at_seq}"
    if isinstance(err, AlreadyDecidedError):
        return f"already decided at seq {err.decided_at_seq}"
    return f"{safe_text(err.reason or err.code.name)}: {safe_text(err.message)}"


def refusal_status(err: RunJournalError) -> int:
    if isinstance(err, AlreadyAnsweredError | AlreadyDecidedError):
        return 409
    return {"NOT_FOUND": 404, "PERMISSION_DENIED": 403, "UNAUTHENTICATED": 502, "UNAVAILABLE": 503}.get(
        err.code.name, 400
    )


NOTICES = (
    ("done", "recorded at seq {}"),
    ("forked", "forked at seq {}: this is the new run"),
    ("deleted", "deleted the run (its last seq was {})"),
    ("erasing", "deleted the run (its last seq was {}); its records are being erased in the background"),
    ("gone", "the run was deleted already (its last seq was {})"),
)
"""The line a page shows after a redirect, by query parameter: a number is all that comes from the query."""


def done_notice(request: web.Request) -> str:
    """The notice after a redirect ("recorded at seq 7"): fixed words and one number, nothing else from the URL."""
    for param, text in NOTICES:
        value = request.query.get(param, "")
        if value.isdigit():
            return text.format(int(value))
    return ""

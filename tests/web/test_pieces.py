"""The web inbox's pure pieces: session cookies and form tokens, and what the views make of journal strings."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
from hypothesis import given
from hypothesis import strategies as st

from runjournal.errors import AlreadyAnsweredError, AlreadyDecidedError, RunNotFoundError
from runjournal.v1 import records_pb2, state_pb2
from runjournal.web import views
from runjournal.web.access import Access, Session
from runjournal.web.app import refusal_text


def test_a_session_cookie_cannot_be_promoted_forged_or_moved_to_another_server():
    access = Access("token", secret=b"s" * 32)
    visitor = access.new_session(signed_in=False)
    cookie = access.cookie_value(visitor)
    assert access.session_from_cookie(cookie) == visitor
    session_id, flag, started, signature = cookie.split(".")
    assert flag == "0"
    assert access.session_from_cookie(f"{session_id}.1.{started}.{signature}") is None  # promoted to signed in
    assert access.session_from_cookie(f"{session_id}x.0.{started}.{signature}") is None
    assert access.session_from_cookie(f"{session_id}.0.{int(started) + 3600}.{signature}") is None  # prolonged
    assert access.session_from_cookie(f"{session_id}.0.{signature}") is None  # the old form, without a start
    assert access.session_from_cookie(cookie + "0") is None
    assert Access("token", secret=b"t" * 32).session_from_cookie(cookie) is None  # another server's secret
    for junk in ("", "x", "..", "a.2.b", None):
        assert access.session_from_cookie(junk) is None


def test_a_session_ends_its_lifetime_after_it_began_whatever_the_browser_keeps():
    access = Access("token", secret=b"s" * 32, session_seconds=3600)
    began = 1_800_000_000
    session = Session("abc", True, began)
    cookie = access.cookie_value(session)
    assert access.session_from_cookie(cookie, now=began) == session
    assert access.session_from_cookie(cookie, now=began + 3599) == session
    assert access.session_from_cookie(cookie, now=began + 3600) is None  # over
    assert access.session_from_cookie(cookie, now=began - 60) == session  # a clock a minute behind
    assert access.session_from_cookie(cookie, now=began - 61) is None  # from the future: not ours to trust


def test_a_form_token_is_its_sessions_own_and_never_a_session_signature():
    access = Access("token", secret=b"s" * 32)
    one, other = Session("one", True), Session("other", True)
    assert access.csrf_matches(one, access.csrf_token(one))
    assert not access.csrf_matches(one, access.csrf_token(other))
    assert not access.csrf_matches(one, "")
    assert not access.csrf_matches(one, access.cookie_value(one).rpartition(".")[2])


def test_the_access_token_is_compared_whole():
    access = Access("the-token")
    assert access.token_matches("the-token")
    assert not access.token_matches("the-toke")
    assert not access.token_matches("")


@given(st.text())
def test_a_shown_string_has_no_control_bidi_or_line_break_characters(text: str):
    shown = views.shown(text, limit=10_000)
    assert not any(ch in shown for ch in "\n\r\x1b\u202e\u2028\u2066\x85")
    for line in views.shown_lines(text, limit=10_000):
        assert "\n" not in line and "\u202e" not in line


def test_arguments_are_pretty_printed_json_and_anything_else_is_kept_as_stored():
    assert views.arguments_lines('{"b":1,"a":"\u202e"}') == ["{", '  "b": 1,', '  "a": "\\u202e"', "}"]
    assert views.arguments_lines("not json\nsecond") == ["not json", "second"]


def test_how_long_a_run_waited_comes_from_updated_at_and_is_unknown_without_it():
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    summary = state_pb2.RunSummary(run_id="r")
    assert views.waited(summary, now) == "unknown"
    summary.updated_at.FromDatetime(datetime(2026, 12, 1, 10, 55, 30, tzinfo=UTC))
    assert views.waited(summary, now) == "1 h 4 min"
    assert [views.duration(s) for s in (5, 61, 3600 * 30)] == ["5 s", "1 min", "1 d 6 h"]


def test_a_lost_race_reads_already_answered_or_decided_at_the_winners_seq():
    answered = AlreadyAnsweredError("no", code=grpc.StatusCode.ALREADY_EXISTS, metadata={"answered_at_seq": "7"})
    decided = AlreadyDecidedError("no", code=grpc.StatusCode.ALREADY_EXISTS, metadata={"decided_at_seq": "9"})
    missing = RunNotFoundError("no run \u202e here", code=grpc.StatusCode.NOT_FOUND, reason="RUN_NOT_FOUND")
    assert refusal_text(answered) == "already answered at seq 7"
    assert refusal_text(decided) == "already decided at seq 9"
    assert refusal_text(missing) == "RUN_NOT_FOUND: no run \\u202e here"


def test_a_row_whose_run_was_refused_since_the_listing_names_the_refusal_where_the_arguments_were():
    summary = state_pb2.RunSummary(run_id="r", last_seq=4)
    summary.waiting_calls.add(tool_use_id="c1", tool_name="deploy", waiting_for=state_pb2.WAITING_FOR_DECISION)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    (row,) = views.inbox_rows([summary], {"r": "RUN_DELETED: the run was deleted"}, now)
    assert row.arguments == ["(arguments not available: RUN_DELETED: the run was deleted)"]
    assert row.waits_for == "decision"
    batch = state_pb2.PendingBatch()
    batch.calls.add().tool_use.CopyFrom(records_pb2.ToolUseBlock(id="c1", name="deploy", input_json='{"a":1}'))
    (row,) = views.inbox_rows([summary], {"r": batch}, now)
    assert row.arguments == ["{", '  "a": 1', "}"]

"""The people's views show what the server's fold says a pending call waits for, never their own reading of it.

Each state here has a ``waiting_for`` that its deferral alone would not
give (a deferral without ``needs_approval`` that the server says waits for a
decision): a view that worked it out again from the deferral would show
something else.
"""

from __future__ import annotations

from runjournal.render import render_state
from runjournal.v1 import records_pb2, state_pb2
from runjournal.web.views import call_view


def pending_state(waiting_for: int, *, waiting_for_person: bool) -> state_pb2.RunState:
    state = state_pb2.RunState(run_id="r1", last_seq=3)
    call = state.pending.calls.add(waiting_for=waiting_for, waiting_for_person=waiting_for_person)
    call.tool_use.CopyFrom(records_pb2.ToolUseBlock(id="c1", name="deploy", input_json="{}"))
    call.deferred, call.deferral_seq = True, 3
    call.deferral.CopyFrom(records_pb2.Deferral(tool_use_id="c1", reason="risky", expected_answerer="ops"))
    return state


def test_runs_show_tells_the_person_what_the_server_says_the_call_waits_for() -> None:
    shown = render_state(pending_state(state_pb2.WAITING_FOR_DECISION, waiting_for_person=True))
    assert "c1 deploy: waits for a decision from ops: risky" in shown
    assert "decide: runjournal approve r1 c1 --approve|--deny" in shown
    assert "runjournal answer" not in shown


def test_the_run_page_offers_the_form_for_what_the_server_says_the_call_waits_for() -> None:
    (call,) = pending_state(state_pb2.WAITING_FOR_DECISION, waiting_for_person=True).pending.calls
    assert call_view(call).waits_for == "decision"
    (call,) = pending_state(state_pb2.WAITING_FOR_WORKER, waiting_for_person=False).pending.calls
    view = call_view(call)
    assert (view.waits_for, view.waiting_for_person) == ("worker", False)

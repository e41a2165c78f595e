"""The people's views and the GenAI export mark a compaction where the server's fold says one is in force."""

from __future__ import annotations

from runjournal import compaction_record, meta_record
from runjournal.genai_spans import plan_run
from runjournal.render import render_state
from runjournal.v1 import records_pb2, state_pb2
from runjournal.web.views import run_view


def compacted_state(*, uncompacted: bool = False) -> state_pb2.RunState:
    state = state_pb2.RunState(run_id="r1", last_seq=9, compaction_seq=8, compacted_upto_seq=6, uncompacted=uncompacted)
    state.conversation.add(role=records_pb2.ROLE_USER).content.add().text.text = "the story so far"
    return state


def test_runs_show_says_what_the_compaction_covers_and_which_conversation_it_shows() -> None:
    assert "compacted: seqs 1..6 by the compaction at seq 8; the summary comes first" in render_state(compacted_state())
    shown = render_state(compacted_state(uncompacted=True))
    assert "the whole conversation is shown (--uncompacted)" in shown
    assert "compacted:" not in render_state(state_pb2.RunState(run_id="r1", last_seq=2))


def test_the_run_page_says_what_the_compaction_covers() -> None:
    assert run_view(compacted_state()).compacted == "seqs 1..6 are summarized by the compaction at seq 8"
    assert run_view(state_pb2.RunState(run_id="r1")).compacted == ""


def test_the_export_makes_one_span_of_a_compaction_with_what_it_covers_and_what_made_it() -> None:
    fingerprint = records_pb2.Fingerprint(provider="anthropic", model="m")
    meta = meta_record("r1", fingerprint, [records_pb2.ContentBlock(text=records_pb2.TextBlock(text="hello"))])
    meta.seq = 1
    compaction = compaction_record(1, "summary", trigger="provider", provider="anthropic", model="m2", tokens_before=99)
    compaction.seq = 2
    trace = plan_run("r1", [meta, compaction], state_pb2.RunState(run_id="r1", last_seq=2))
    (span,) = [span for span in trace.spans if span.name == "compaction"]
    assert span.attributes["runjournal.compaction.upto_seq"] == 1
    assert span.attributes["runjournal.compaction.trigger"] == "provider"
    assert span.attributes["gen_ai.request.model"] == "m2"
    assert span.attributes["runjournal.compaction.tokens_before"] == 99

"""Record and content builders: typed, deterministic, refusing what the server would refuse."""

from __future__ import annotations

import datetime
import json

import pytest

import runjournal
from runjournal.v1 import records_pb2


def test_tool_input_is_canonical_json_whatever_the_key_order() -> None:
    first = runjournal.tool_use_block("c1", "search", {"b": 1, "a": {"d": [1, "é"], "c": None}})
    second = runjournal.tool_use_block("c1", "search", {"a": {"c": None, "d": [1, "é"]}, "b": 1})
    assert first.tool_use.input_json == '{"a":{"c":null,"d":[1,"é"]},"b":1}'
    assert first.SerializeToString() == second.SerializeToString()
    assert json.loads(first.tool_use.input_json) == {"a": {"c": None, "d": [1, "é"]}, "b": 1}


@pytest.mark.parametrize("bad", [[1, 2], 3, None])
def test_tool_input_must_be_a_json_object(bad: object) -> None:
    with pytest.raises(TypeError):
        runjournal.tool_use_block("c1", "search", bad)  # type: ignore[arg-type]


def test_tool_input_given_as_text_is_kept_as_written_and_the_server_judges_it() -> None:
    """A provider's text of the input (key order, spacing, escapes) is stored verbatim; the server checks it."""
    text = '{"b": 1, "a": "\\u00e9"}'
    block = runjournal.tool_use_block("c1", "search", text, provider_json='{"id":"c1"}')
    assert block.tool_use.input_json == text
    assert block.tool_use.provider_json == '{"id":"c1"}'


def test_an_opaque_block_keeps_a_providers_text_or_writes_a_value_but_not_both() -> None:
    text = '{"type": "image",  "z": 1, "a": 2}'
    assert runjournal.opaque_block("anthropic", "image", json_text=text).opaque.json == text
    assert runjournal.opaque_block("anthropic", "image", {"z": 1, "a": 2}).opaque.json == '{"a":2,"z":1}'
    with pytest.raises(ValueError):
        runjournal.opaque_block("anthropic", "image", {"a": 1}, json_text=text)


def test_tool_input_refuses_nan() -> None:
    with pytest.raises(ValueError):
        runjournal.tool_use_block("c1", "f", {"x": float("nan")})


def test_enums_take_short_names_or_numbers() -> None:
    by_name = runjournal.assistant_record(1, [], "tool_use", {"input_tokens": 3})
    by_number = runjournal.assistant_record(1, [], records_pb2.STOP_REASON_TOOL_USE, records_pb2.Usage(input_tokens=3))
    assert by_name == by_number
    assert by_name.assistant.stop_reason == records_pb2.STOP_REASON_TOOL_USE
    assert runjournal.terminal_record("suspended").terminal.reason == records_pb2.TERMINAL_REASON_SUSPENDED
    assert runjournal.terminal_record("TERMINAL_REASON_COMPLETED").terminal.reason == (
        records_pb2.TERMINAL_REASON_COMPLETED
    )
    assert runjournal.approval_record("c1", "denied", "ops").approval.decision == records_pb2.DECISION_DENIED


def test_an_unknown_enum_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="completed, suspended, error"):
        runjournal.terminal_record("finished")


def test_drafts_have_no_seq_and_only_notes_are_optional() -> None:
    drafts = [
        runjournal.assistant_record(1, [runjournal.text_block("hi")], "end_turn"),
        runjournal.tool_result_record("c1", text="ok"),
        runjournal.deferral_record("c1", "needs a person", "ops"),
        runjournal.user_record("more"),
        runjournal.terminal_record("completed", "done"),
        runjournal.approval_record("c1", "approved", "ops"),
    ]
    assert all(d.seq == 0 and not d.optional for d in drafts)
    note = runjournal.note_record("progress", {"step": 2, "of": 5})
    assert note.optional and note.seq == 0
    assert note.note.data_json == '{"of":5,"step":2}'
    assert runjournal.note_record("plain").note.data_json == ""


def test_results_take_exactly_one_of_text_and_content() -> None:
    blocks = [runjournal.text_block("ok")]
    assert runjournal.tool_result_record("c1", blocks) == runjournal.tool_result_record("c1", text="ok")
    with pytest.raises(ValueError, match="exactly one"):
        runjournal.tool_result_record("c1")
    with pytest.raises(ValueError, match="exactly one"):
        runjournal.tool_result_record("c1", blocks, text="ok")


def test_meta_is_seq_one_with_format_version_and_an_aware_creation_time() -> None:
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    meta = runjournal.meta_record(
        "r1",
        records_pb2.Fingerprint(model="m"),
        [runjournal.text_block("go")],
        labels={"team": "x"},
        created_at=moment,
    )
    assert (meta.seq, meta.meta.format_version, meta.meta.run_id) == (1, runjournal.FORMAT_VERSION, "r1")
    assert meta.meta.created_at.ToDatetime(tzinfo=datetime.UTC) == moment
    assert dict(meta.meta.labels) == {"team": "x"}
    with pytest.raises(ValueError, match="timezone-aware"):
        runjournal.meta_record("r1", records_pb2.Fingerprint(), [], created_at=datetime.datetime(2026, 1, 1))


def test_opaque_and_thinking_blocks_are_kept_verbatim() -> None:
    opaque = runjournal.opaque_block("anthropic", "image", {"source": {"type": "url", "url": "u"}})
    assert opaque.opaque.json == '{"source":{"type":"url","url":"u"}}'
    thinking = runjournal.thinking_block("hmm", "sig==")
    assert (thinking.thinking.thinking, thinking.thinking.signature) == ("hmm", "sig==")
    assert runjournal.redacted_thinking_block("blob").thinking.redacted

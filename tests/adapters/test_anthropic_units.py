"""The Anthropic adapter's rules one at a time, on records folded by the server's own pure fold (no I/O).

What the API would do with the result is the fake model's part (test_anthropic_handoff, test_anthropic_models);
here: which shape each conversion gives, and what it refuses, with a message that says what to do.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import Message

from runjournal import (
    assistant_record,
    compaction_record,
    make_fingerprint,
    meta_record,
    opaque_block,
    text_block,
    thinking_block,
    tool_result_record,
    tool_use_block,
    user_record,
)
from runjournal.adapters import anthropic as adapter
from runjournal.fingerprint import canonical_json, system_prompt_sha256
from runjournal.v1 import records_pb2
from runjournal.v1.state_pb2 import RunState
from runjournal_server.core.fold import fold

RUN_ID = "anthropic-unit"
SYSTEM = "Be brief."
FINGERPRINT = adapter.fingerprint(model="claude-a", max_tokens=100, system=SYSTEM)


def placed(drafts: list[records_pb2.JournalRecord]) -> list[records_pb2.JournalRecord]:
    out = []
    for seq, draft in enumerate(drafts, start=1):
        record = records_pb2.JournalRecord()
        record.CopyFrom(draft)
        record.seq = seq
        out.append(record)
    return out


def folded(*drafts: records_pb2.JournalRecord, prompt: Any = "Hi.") -> tuple[RunState, list[records_pb2.JournalRecord]]:
    meta = meta_record(RUN_ID, FINGERPRINT, adapter.user_blocks(prompt))
    records = placed([meta, *drafts])
    return fold(records).state(), records


def request(*drafts: records_pb2.JournalRecord, prompt: Any = "Hi.") -> list[dict[str, Any]]:
    state, records = folded(*drafts, prompt=prompt)
    messages: list[dict[str, Any]] = adapter.request_messages(state, system=SYSTEM, records=records)["messages"]
    return messages


def message(content: list[dict[str, Any]], stop: str | None = "end_turn", **usage: int) -> Message:
    return Message.construct(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-a",
        content=content,
        stop_reason=stop,
        usage={"input_tokens": 1, "output_tokens": 1, **usage},
    )


# --- records from the SDK's objects -------------------------------------------------------


@pytest.mark.parametrize("stop", list(adapter.STOP_REASONS))
def test_every_stop_reason_has_its_journal_value(stop: str) -> None:
    record = adapter.assistant_record(message([{"type": "text", "text": "x"}], stop), iteration=1)
    name = records_pb2.StopReason.Name(record.assistant.stop_reason)
    assert name == "STOP_REASON_" + stop.upper()


def test_an_unfinished_or_unknown_stop_is_refused_and_an_empty_answer_too() -> None:
    with pytest.raises(ValueError, match="finished message"):
        adapter.assistant_record(message([{"type": "text", "text": "x"}], None), iteration=1)
    with pytest.raises(ValueError, match="unknown Anthropic stop_reason 'nap'"):
        adapter.assistant_record(message([{"type": "text", "text": "x"}], "nap"), iteration=1)
    with pytest.raises(ValueError, match="no content block"):
        adapter.assistant_record(message([]), iteration=1)


def test_the_response_json_as_a_mapping_gives_the_same_record_in_its_own_key_order() -> None:
    content = [
        {"type": "text", "text": "x", "citations": None},
        {"type": "thinking", "thinking": "t", "signature": "s"},
    ]
    body = {"content": content, "stop_reason": "end_turn", "usage": {"input_tokens": 4, "output_tokens": 2}}
    from_json = adapter.assistant_record(body, iteration=3).assistant
    from_sdk = adapter.assistant_record(message(content, input_tokens=4, output_tokens=2), iteration=3).assistant
    # A text block carrying one more key, even a null, is opaque: a typed text would drop the key. Its text is
    # what each sends back: the mapping's own order; the SDK object's, as the SDK serialises it (field order).
    assert from_json.content[0].opaque.json == '{"type":"text","text":"x","citations":null}'
    assert from_sdk.content[0].opaque.json == '{"citations":null,"text":"x","type":"text"}'
    assert from_json.content[1] == from_sdk.content[1] == thinking_block("t", "s")
    assert (from_json.stop_reason, from_json.usage) == (from_sdk.stop_reason, from_sdk.usage)


def test_user_content_keeps_its_string_or_list_shape() -> None:
    assert adapter.user_blocks("Hi.") == [text_block("Hi.")]
    one = adapter.user_blocks([{"type": "text", "text": "Hi."}])
    assert one == [opaque_block("anthropic", "text", json_text='{"type":"text","text":"Hi."}')]
    two = adapter.user_blocks([{"type": "text", "text": "A"}, {"type": "text", "text": "B"}])
    assert two == [text_block("A"), text_block("B")]
    for prompt in (
        "Hi.",
        [{"type": "text", "text": "Hi."}],
        [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}],
    ):
        assert request(prompt=prompt)[0] == {"role": "user", "content": prompt}


def test_model_blocks_cannot_be_user_content() -> None:
    for kind in ("tool_result", "tool_use", "thinking"):
        with pytest.raises(ValueError, match=f"a {kind} block cannot be user content"):
            adapter.user_blocks([{"type": kind}, {"type": "text", "text": "x"}])


def test_a_tool_result_keeps_the_shape_of_its_content() -> None:
    call = message([{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}], "tool_use")
    for content in (
        "ok",
        "",
        [{"type": "text", "text": "ok"}],
        [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    ):
        param = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content, "is_error": True}
        sent = request(adapter.assistant_record(call, iteration=1), adapter.tool_result_record(param))
        assert sent[2] == {"role": "user", "content": [param]}
    bare = {"type": "tool_result", "tool_use_id": "toolu_1"}
    assert request(adapter.assistant_record(call, iteration=1), adapter.tool_result_record(bare))[2]["content"] == [
        bare
    ]


def test_a_tool_result_drops_cache_control_rebuilds_toolset_name_and_refuses_other_keys() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}, "toolset_name": "browser"}
    call = adapter.assistant_record(message([use], "tool_use"), iteration=1)
    param = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "cache_control": {"type": "ephemeral"}}
    sent = request(call, adapter.tool_result_record({**param, "toolset_name": "browser"}))
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "toolset_name": "browser"}
    ]
    with pytest.raises(ValueError, match=r"keys the journal cannot keep: \['colour'\]"):
        adapter.tool_result_record({**param, "colour": "red"})
    with pytest.raises(ValueError, match="expected a tool_result block"):
        adapter.tool_result_record({"type": "text", "text": "x"})


def test_a_deferral_names_the_call_of_a_tool_use_block() -> None:
    block = message([{"type": "tool_use", "id": "toolu_9", "name": "f", "input": {}}]).content[0]
    record = adapter.deferral_record(block, "needs a person", "ops", needs_approval=True)
    assert (record.deferral.tool_use_id, record.deferral.needs_approval) == ("toolu_9", True)
    assert adapter.deferral_record("toolu_9", "r", "ops").deferral.tool_use_id == "toolu_9"


# --- the next request ------------------------------------------------------------------------


def test_tool_results_come_first_and_a_follow_up_after_them() -> None:
    call = assistant_record(1, [tool_use_block("toolu_1", "f", "{}")], "tool_use")
    sent = request(call, tool_result_record("toolu_1", text="ok"), user_record("And then?"))
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
        {"type": "text", "text": "And then?"},
    ]


def test_a_compaction_inside_a_message_drops_the_blocks_before_it() -> None:
    compaction = '{"type":"compaction","content":"<summary>s</summary>"}'
    turn = assistant_record(
        1,
        [text_block("before"), opaque_block("anthropic", "compaction", json_text=compaction), text_block("after")],
        "end_turn",
    )
    null = '{"type":"compaction","content":null}'
    later = assistant_record(2, [opaque_block("anthropic", "compaction", json_text=null), text_block("x")], "end_turn")
    sent = request(turn, user_record("more"), later)
    assert sent[0] == {"role": "assistant", "content": [json.loads(compaction), {"type": "text", "text": "after"}]}
    assert sent[2]["content"][0] == json.loads(null)  # a failed compaction is a no-op, sent where it was


def test_the_journal_compaction_sends_its_summary_first() -> None:
    call = assistant_record(1, [text_block("long answer")], "end_turn")
    summary = compaction_record(2, "The user said hi; the model answered at length.", trigger="manual")
    state, records = folded(call, summary, user_record("Shorter?"))
    sent = adapter.request_messages(state, system=SYSTEM, records=records)["messages"]
    assert sent == [{"role": "user", "content": [
        {"type": "text", "text": "The user said hi; the model answered at length."},
        {"type": "text", "text": "Shorter?"},
    ]}]  # fmt: skip


def test_a_state_the_api_would_refuse_is_refused_with_what_to_do() -> None:
    call = assistant_record(1, [tool_use_block("toolu_1", "f", "{}"), tool_use_block("toolu_2", "f", "{}")], "tool_use")
    state, records = folded(call, tool_result_record("toolu_1", text="ok"))
    with pytest.raises(ValueError, match=r"calls \['toolu_2'\] have no result yet"):
        adapter.request_messages(state, system=SYSTEM, records=records)
    state, records = folded()
    with pytest.raises(ValueError, match="system prompt differs"):
        adapter.request_messages(state, system="Be verbose.", records=records)
    with pytest.raises(ValueError, match="records end at seq 0"):
        adapter.request_messages(state, system=SYSTEM, records=[])
    other = placed([meta_record("other-run", FINGERPRINT, [text_block("x")])])
    with pytest.raises(ValueError, match="records of run 'other-run'"):
        adapter.request_messages(state, system=SYSTEM, records=other)
    partial = RunState()
    partial.CopyFrom(state)
    partial.conversation_offset = 1
    with pytest.raises(ValueError, match="from message 0"):
        adapter.request_messages(partial, system=SYSTEM, records=records)


def test_an_opaque_block_of_another_provider_is_refused() -> None:
    turn = assistant_record(1, [opaque_block("openai", "reasoning", json_text='{"type":"reasoning"}')], "end_turn")
    with pytest.raises(ValueError, match="cannot be sent to Anthropic"):
        request(turn)


# --- the fingerprint ------------------------------------------------------------------------


def test_the_fingerprint_reads_the_create_arguments() -> None:
    tools = [{"name": "b", "input_schema": {"type": "object"}}, {"name": "a", "input_schema": {"type": "object"}}]
    call = {"model": "claude-a", "max_tokens": 100, "system": SYSTEM, "tools": tools, "messages": [], "temperature": 0}
    thinking = {"type": "enabled", "budget_tokens": 2048}
    assert adapter.fingerprint(**call, thinking=thinking, max_iterations=7) == make_fingerprint(
        "anthropic", "claude-a", SYSTEM, "enabled", tools, 100, 7
    )
    assert adapter.fingerprint(model="m").thinking_mode == "off"
    assert adapter.fingerprint(model="m", thinking={"type": "disabled"}).thinking_mode == "off"
    assert adapter.fingerprint(model="m", thinking={"type": "adaptive"}).thinking_mode == "adaptive"
    blocks = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    assert adapter.fingerprint(model="m", system=blocks).system_prompt_sha256 == system_prompt_sha256(
        canonical_json(blocks)
    )


def test_omitted_arguments_are_absent_ones() -> None:
    from anthropic import NOT_GIVEN, omit

    assert adapter.fingerprint(model="m", system=omit, tools=NOT_GIVEN, thinking=omit) == adapter.fingerprint(model="m")

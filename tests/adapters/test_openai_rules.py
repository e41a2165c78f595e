"""The OpenAI adapter's rules that need no server: stop reasons, usage, what it refuses, the fingerprint,
the request built from a fold that the journal (not the model) wrote parts of.

SDK objects are built the way the SDK builds them from a response body (``construct_type``, no
validation), so the adapter sees what it sees in production.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import NOT_GIVEN
from openai._models import construct_type
from openai.types.responses import Response

from runjournal import make_fingerprint, opaque_block, text_block, thinking_block, tool_use_block
from runjournal.adapters import openai as oai
from runjournal.v1 import records_pb2, state_pb2
from tests.fake_model.openai import fixture

ROLE_USER, ROLE_ASSISTANT = records_pb2.ROLE_USER, records_pb2.ROLE_ASSISTANT


def response(*items: str | dict[str, Any], status: str = "completed", reason: str | None = None) -> Response:
    output = [fixture(item) if isinstance(item, str) else item for item in items]
    body = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "model": "gpt-5.2",
        "output": output,
        "usage": None,
    }
    return construct_type(type_=Response, value=body)  # type: ignore[no-any-return]


def stop(resp: Response) -> str:
    return str(records_pb2.StopReason.Name(oai.stop_reason_of(resp)))


def test_stop_reasons_come_from_status_details_and_output() -> None:
    assert stop(response("reasoning", "message_commentary", "function_call")) == "STOP_REASON_TOOL_USE"
    assert stop(response("reasoning_final", "message_final_answer")) == "STOP_REASON_END_TURN"
    refusal = {**fixture("message_closing"), "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    assert stop(response(refusal)) == "STOP_REASON_REFUSAL"
    cut = {"incomplete": "STOP_REASON_UNSPECIFIED", "max_output_tokens": "STOP_REASON_MAX_TOKENS"}
    assert (
        stop(response("message_closing", status="incomplete", reason="max_output_tokens")) == cut["max_output_tokens"]
    )
    assert stop(response("message_closing", status="incomplete", reason="content_filter")) == "STOP_REASON_REFUSAL"
    assert stop(response("message_closing", status="incomplete", reason="steered")) == "STOP_REASON_PAUSE_TURN"
    assert stop(response("message_closing", status="incomplete", reason="max_messages")) == "STOP_REASON_PAUSE_TURN"
    for status in ("failed", "cancelled", "in_progress", "queued"):
        with pytest.raises(ValueError, match=f"is {status}, not a finished turn"):
            oai.stop_reason_of(response("message_closing", status=status))


def test_usage_splits_cached_and_written_tokens_out_of_the_input() -> None:
    usage = construct_type(
        type_=Response,
        value={
            "id": "r", "status": "completed", "output": [],
            "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100},
                      "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 1050},
        },
    ).usage  # fmt: skip
    assert oai.usage_of(usage) == records_pb2.Usage(
        input_tokens=300, output_tokens=50, cache_read_tokens=600, cache_write_tokens=100
    )
    assert oai.usage_of(None) == records_pb2.Usage()


def test_a_trailing_reasoning_item_is_left_out_and_reasoning_alone_is_refused() -> None:
    record = oai.assistant_record(
        response("message_commentary", "reasoning", status="incomplete", reason="max_output_tokens"), iteration=3
    )
    assert [block.opaque.type for block in record.assistant.content] == ["message"]
    assert record.assistant.stop_reason == records_pb2.STOP_REASON_MAX_TOKENS
    with pytest.raises(ValueError, match="no output item but reasoning"):
        oai.assistant_record(response("reasoning", status="incomplete", reason="max_output_tokens"), iteration=3)


def test_calls_the_journal_cannot_track_are_refused_with_the_reason() -> None:
    custom = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "shell", "input": "ls -la"}
    with pytest.raises(ValueError, match="custom_tool_call item is a call the worker must answer"):
        oai.assistant_record(response(custom), iteration=1)
    cut = {**fixture("function_call"), "arguments": '{"location":"Par', "status": "incomplete"}
    with pytest.raises(ValueError, match="arguments that are not a JSON object"):
        oai.assistant_record(response(cut, status="incomplete", reason="max_output_tokens"), iteration=1)


def test_an_item_the_sdk_does_not_know_is_kept_whole() -> None:
    future = {"type": "hologram_call", "id": "hc_1", "status": "completed", "frames": [1, 2.5, {"x": None}]}
    [block] = oai.assistant_record(response(future, "message_closing"), iteration=1).assistant.content[:1]
    assert (block.opaque.type, json.loads(block.opaque.json)) == ("hologram_call", future)


def test_the_fingerprint_is_the_create_arguments_and_ignores_the_rest() -> None:
    tools = [{"type": "function", "name": "get_weather", "parameters": {}}, {"type": "web_search"}]
    tools += [{"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.example"}]
    got = oai.fingerprint(
        model="gpt-5.2",
        instructions="Be brief.",
        tools=tools,
        reasoning={"effort": "high", "summary": "auto"},
        max_output_tokens=2048,
        max_iterations=8,
        input=[{"role": "user", "content": "hi"}],
        store=False,
    )
    named = [tools[0], {**tools[1], "name": "web_search"}, {**tools[2], "name": "mcp:deepwiki"}]
    assert got == make_fingerprint("openai", "gpt-5.2", "Be brief.", "high", named, 2048, 8)
    bare = oai.fingerprint(model="gpt-5.2", instructions=NOT_GIVEN, tools=NOT_GIVEN, reasoning=None)
    assert bare == make_fingerprint("openai", "gpt-5.2", "", "default", [], 0, 0)


def state_of(
    *messages: records_pb2.ConversationMessage, fingerprint: records_pb2.Fingerprint | None = None
) -> state_pb2.RunState:
    fp = fingerprint or make_fingerprint("openai", "gpt-5.2", "Be brief.", "default", [])
    return state_pb2.RunState(conversation=list(messages), effective_fingerprint=fp)


def message(role: int, *blocks: records_pb2.ContentBlock) -> records_pb2.ConversationMessage:
    return records_pb2.ConversationMessage(role=role, content=list(blocks))  # type: ignore[arg-type]


def result(call_id: str, *blocks: records_pb2.ContentBlock, is_error: bool = False) -> records_pb2.ContentBlock:
    block = records_pb2.ToolResultBlock(tool_use_id=call_id, content=list(blocks), is_error=is_error)
    return records_pb2.ContentBlock(tool_result=block)


def test_what_the_journal_wrote_goes_back_as_the_smallest_items_the_api_takes() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}
    conversation = [
        message(ROLE_USER, *oai.user_blocks([{"type": "input_text", "text": "What is this?"}, image])),
        message(ROLE_ASSISTANT, text_block("A chart."), tool_use_block("call_1", "zoom", '{"x":1}')),
        message(
            ROLE_USER,
            result("call_1", text_block("approved by ops: 2x")),
            text_block("Thanks"),
        ),
        message(ROLE_ASSISTANT, tool_use_block("call_2", "zoom", "{}"), tool_use_block("call_3", "pan", "{}")),
        message(ROLE_USER, result("call_2", text_block("denied"), is_error=True),
                result("call_3", text_block("a"), text_block("b"))),
    ]  # fmt: skip
    assert oai.input_items(conversation) == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is this?"}, image]},
        {"type": "message", "role": "assistant", "content": "A chart."},
        {"type": "function_call", "call_id": "call_1", "name": "zoom", "arguments": '{"x":1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "approved by ops: 2x"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
        {"type": "function_call", "call_id": "call_2", "name": "zoom", "arguments": "{}"},
        {"type": "function_call", "call_id": "call_3", "name": "pan", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_2", "output": "denied"},
        {"type": "function_call_output", "call_id": "call_3", "output": [
            {"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]},
    ]  # fmt: skip


def test_blocks_of_another_provider_are_refused() -> None:
    thinking = message(ROLE_ASSISTANT, thinking_block("hmm", "sig"), text_block("ok"))
    with pytest.raises(ValueError, match="assistant thinking block has no Responses API form"):
        oai.input_items([thinking])
    image = message(ROLE_USER, opaque_block("anthropic", "image", {"type": "image"}))
    with pytest.raises(ValueError, match="opaque anthropic image block cannot go to the OpenAI API"):
        oai.input_items([image])


def test_a_request_is_refused_while_calls_wait_and_for_other_instructions() -> None:
    state = state_of(message(ROLE_USER, text_block("hi")))
    assert oai.request_kwargs(state, instructions="Be brief.") == {
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "instructions": "Be brief.",
    }
    with pytest.raises(ValueError, match="not the ones the run's fingerprint hashed"):
        oai.request_kwargs(state, instructions="Be verbose.")
    with pytest.raises(ValueError, match="not the ones the run's fingerprint hashed"):
        oai.request_kwargs(state)
    call = records_pb2.ToolUseBlock(id="call_1", name="zoom", input_json="{}")
    state.pending.calls.add(tool_use=call)
    with pytest.raises(ValueError, match=r"calls \['call_1'\] of the last turn have no result yet"):
        oai.request_kwargs(state, instructions="Be brief.")


def test_pending_calls_are_those_waiting_for_the_worker_with_denials_marked() -> None:
    item = fixture("function_call")
    state = state_pb2.RunState()
    calls = state.pending.calls
    text = json.dumps(item)
    calls.add(
        tool_use=tool_use_block(item["call_id"], item["name"], item["arguments"], provider_json=text).tool_use,
        waiting_for=state_pb2.WAITING_FOR_WORKER,
    )
    calls.add(tool_use=records_pb2.ToolUseBlock(id="call_b", name="pan", input_json="{}"), answered=True)
    calls.add(
        tool_use=records_pb2.ToolUseBlock(id="call_c", name="pan", input_json="{}"),
        waiting_for=state_pb2.WAITING_FOR_ANSWER,
        deferred=True,
    )
    calls.add(tool_use=records_pb2.ToolUseBlock(id="call_d", name="pan", input_json="{}"),
              waiting_for=state_pb2.WAITING_FOR_WORKER, decision=records_pb2.DECISION_DENIED)  # fmt: skip
    pending = oai.pending_calls(state)
    assert [(p.call.call_id, p.denied) for p in pending] == [(item["call_id"], False), ("call_d", True)]
    assert pending[0].call.id == item["id"] and pending[0].call.arguments == item["arguments"]


def test_a_tool_result_needs_a_function_call_output_item() -> None:
    record = oai.tool_result_record(fixture("function_call_output"), is_error=True)
    assert record.tool_result.tool_use_id == fixture("function_call_output")["call_id"] and record.tool_result.is_error
    with pytest.raises(ValueError, match="expected a function_call_output item"):
        oai.tool_result_record({"type": "custom_tool_call_output", "call_id": "c", "output": "x"})
    deferral = oai.deferral_record(fixture("function_call"), "needs a person", "ops", needs_approval=True)
    assert (deferral.deferral.tool_use_id, deferral.deferral.needs_approval) == (
        fixture("function_call")["call_id"],
        True,
    )


def test_user_content_parts_are_text_blocks_or_kept_whole() -> None:
    assert oai.user_blocks("hi") == [text_block("hi")]
    with pytest.raises(ValueError, match="'output_text' is not a content part of a user message"):
        oai.user_blocks([{"type": "output_text", "text": "no"}])

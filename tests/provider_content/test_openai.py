"""OpenAI Responses API items through Append, the stored line, Fold and back to a request, on both backends.

Every item is an opaque block whose ``json`` is the provider's text (indented,
as the API sends it). A ``function_call`` also gets a typed tool_use beside it
(id = its ``call_id``) so the journal's tool loop (pending batch, results,
deferrals, approvals) works; the request sends the item, not the typed copy.
See ``docs/provider-content.md`` for the table.
"""

from __future__ import annotations

import grpc

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal.v1.state_pb2 import WaitingFor
from tests.provider_content import shapes
from tests.provider_content.checks import assert_opaque_kept, assert_stored_as_read
from tests.provider_content.fixtures import provider_json, provider_value
from tests.provider_content.loops import OPENAI_PLACES as PLACES
from tests.provider_content.loops import OPENAI_QUESTION
from tests.provider_content.roundtrip import RoundTrip
from tests.servers import ServerProcess

PROVIDER = "openai"


def test_the_store_holds_the_lines_read_returns(openai_loop: RoundTrip) -> None:
    assert_stored_as_read(openai_loop)
    assert len(openai_loop.store) == 6


def test_reasoning_items_keep_encrypted_content_and_summary(openai_loop: RoundTrip) -> None:
    for name in ("reasoning", "reasoning_final"):
        text = assert_opaque_kept(openai_loop, PROVIDER, name, PLACES[name])
        assert text.startswith('{\n  "id": "rs_')
        assert provider_value(PROVIDER, name)["encrypted_content"].startswith("gAAAAAB")
    assert provider_value(PROVIDER, "reasoning")["summary"][0]["type"] == "summary_text"
    assert provider_value(PROVIDER, "reasoning_final")["summary"] == []


def test_function_call_keeps_its_fc_id_and_call_id(openai_loop: RoundTrip) -> None:
    text = assert_opaque_kept(openai_loop, PROVIDER, "function_call", PLACES["function_call"])
    want = provider_value(PROVIDER, "function_call")
    assert want["id"].startswith("fc_") and want["call_id"].startswith("call_")
    # The typed call right after the item: the call the journal tracks, with the model's arguments verbatim.
    [place] = PLACES["function_call"]
    typed = openai_loop.state.conversation[place.message].content[place.block + 1].tool_use
    assert (typed.id, typed.name, typed.input_json) == (want["call_id"], want["name"], want["arguments"])
    assert text.count(want["id"]) == 1 and text.count(want["call_id"]) == 1


def test_the_typed_call_is_pending_until_its_output_comes(
    openai_loop: RoundTrip, journal_server: ServerProcess
) -> None:
    with grpc.insecure_channel(journal_server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        before = stub.Fold(pb.FoldRequest(run_id=openai_loop.run_id, as_of_seq=2)).state
    [call] = before.pending.calls
    assert call.tool_use.id == provider_value(PROVIDER, "function_call")["call_id"]
    assert call.waiting_for == WaitingFor.WAITING_FOR_WORKER
    assert not openai_loop.state.HasField("pending")
    assert openai_loop.state.counters.tool_calls == 1


def test_function_call_output_answers_the_call_and_is_kept(openai_loop: RoundTrip) -> None:
    assert_opaque_kept(openai_loop, PROVIDER, "function_call_output", PLACES["function_call_output"])
    [place] = PLACES["function_call_output"]
    result = openai_loop.state.conversation[place.message].content[place.block].tool_result
    assert result.tool_use_id == provider_value(PROVIDER, "function_call_output")["call_id"]
    assert not result.is_error


def test_assistant_messages_keep_their_phase(openai_loop: RoundTrip) -> None:
    phases = {}
    for name in ("message_commentary", "message_final_answer", "message_after_compaction"):
        text = assert_opaque_kept(openai_loop, PROVIDER, name, PLACES[name])
        phases[name] = provider_value(PROVIDER, name)["phase"]
        assert f'"phase": "{phases[name]}"' in text
    assert phases == {
        "message_commentary": "commentary",
        "message_final_answer": "final_answer",
        "message_after_compaction": "final_answer",
    }


def test_compaction_item_is_kept(openai_loop: RoundTrip) -> None:
    text = assert_opaque_kept(openai_loop, PROVIDER, "compaction", PLACES["compaction"])
    want = provider_value(PROVIDER, "compaction")
    assert want["id"].startswith("cmp_") and want["encrypted_content"] in text


def test_the_input_items_convert_back_byte_for_byte(openai_loop: RoundTrip) -> None:
    items = shapes.openai_items(list(openai_loop.state.conversation))
    question = shapes.dumps(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": OPENAI_QUESTION}]}
    )
    follow_up = shapes.dumps(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And tomorrow?"}]}
    )
    fixture = [
        provider_json(PROVIDER, name)
        for name in ("reasoning", "message_commentary", "function_call", "function_call_output")
    ]
    answer = [provider_json(PROVIDER, name) for name in ("reasoning_final", "message_final_answer")]
    compacted = [provider_json(PROVIDER, name) for name in ("compaction", "message_after_compaction")]
    # The reasoning item stays right before the function call it led to; the call is sent once.
    assert items == [question, *fixture, *answer, follow_up, *compacted]

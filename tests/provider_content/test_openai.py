"""OpenAI Responses API items through Append, the stored line, Fold and back to a request, on both backends.

Every item but a function call is an opaque block whose ``json`` is the provider's text (indented, as
the API sends it). A ``function_call`` is one typed tool_use: id = its ``call_id``, ``input_json`` =
its ``arguments`` as written, ``provider_json`` = the item's text, so the journal's tool loop (pending
batch, results, deferrals, approvals) works on it and the request sends the item itself. The request
is built by the adapter (``runjournal.adapters.openai.input_item_texts``), from the newest compaction
item on. See ``docs/provider-content.md`` for the table.
"""

from __future__ import annotations

import json

import grpc

from runjournal.adapters.openai import input_item_texts
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal.v1.state_pb2 import RunState, WaitingFor
from tests.provider_content.checks import assert_opaque_kept, assert_stored_as_read
from tests.provider_content.fixtures import provider_json, provider_value
from tests.provider_content.loops import OPENAI_FOLLOW_UPS, OPENAI_QUESTION
from tests.provider_content.loops import OPENAI_PLACES as PLACES
from tests.provider_content.roundtrip import RoundTrip
from tests.servers import ServerProcess

PROVIDER = "openai"
CALLS = ("function_call", "function_call_forecast")


def fold_at(server: ServerProcess, run_id: str, seq: int) -> RunState:
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        return stub.Fold(pb.FoldRequest(run_id=run_id, as_of_seq=seq)).state


def user_message(text: str) -> str:
    """The user message item the adapter writes for the user's own text (no provider bytes to keep)."""
    return json.dumps(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def test_the_store_holds_the_lines_read_returns(openai_loop: RoundTrip) -> None:
    assert_stored_as_read(openai_loop)
    assert len(openai_loop.store) == 9


def test_reasoning_items_keep_encrypted_content_and_summary(openai_loop: RoundTrip) -> None:
    for name in ("reasoning", "reasoning_final"):
        text = assert_opaque_kept(openai_loop, PROVIDER, name, PLACES[name])
        assert text.startswith('{\n  "id": "rs_')
        assert provider_value(PROVIDER, name)["encrypted_content"].startswith("gAAAAAB")
    assert provider_value(PROVIDER, "reasoning")["summary"][0]["type"] == "summary_text"
    assert provider_value(PROVIDER, "reasoning_final")["summary"] == []


def test_function_call_is_one_typed_call_keeping_its_item(openai_loop: RoundTrip) -> None:
    for name in CALLS:
        text, want = provider_json(PROVIDER, name), provider_value(PROVIDER, name)
        assert want["id"].startswith("fc_") and want["call_id"].startswith("call_")
        [place] = PLACES[name]
        for block in (openai_loop.read_block(place), openai_loop.folded_block(place)):
            use = block.tool_use
            assert (use.id, use.name, use.input_json) == (want["call_id"], want["name"], want["arguments"])
            assert use.provider_json.encode() == text.encode()
        stored = {"id": want["call_id"], "name": want["name"], "input_json": want["arguments"], "provider_json": text}
        assert openai_loop.line_block(place) == {"tool_use": stored}
        assert json.dumps(text, ensure_ascii=False).encode() in openai_loop.store[place.seq - 1]


def test_the_typed_call_is_pending_until_its_output_comes(
    openai_loop: RoundTrip, journal_server: ServerProcess
) -> None:
    ids = [provider_value(PROVIDER, name)["call_id"] for name in CALLS]
    before = fold_at(journal_server, openai_loop.run_id, 2)
    assert [call.tool_use.id for call in before.pending.calls] == ids
    assert [call.waiting_for for call in before.pending.calls] == [WaitingFor.WAITING_FOR_WORKER] * 2
    half = fold_at(journal_server, openai_loop.run_id, 3)
    assert [call.answered for call in half.pending.calls] == [True, False]
    assert not openai_loop.state.HasField("pending")
    assert openai_loop.state.counters.tool_calls == 2


def test_function_call_output_answers_the_call_and_is_kept(openai_loop: RoundTrip) -> None:
    for name in ("function_call_output", "function_call_output_forecast"):
        assert_opaque_kept(openai_loop, PROVIDER, name, PLACES[name])
        [place] = PLACES[name]
        result = openai_loop.state.conversation[place.message].content[place.block].tool_result
        assert result.tool_use_id == provider_value(PROVIDER, name)["call_id"]
        assert not result.is_error


def test_assistant_messages_keep_their_phase(openai_loop: RoundTrip) -> None:
    phases = {}
    for name in ("message_commentary", "message_final_answer", "message_after_compaction", "message_closing"):
        text = assert_opaque_kept(openai_loop, PROVIDER, name, PLACES[name])
        phases[name] = provider_value(PROVIDER, name)["phase"]
        assert f'"phase": "{phases[name]}"' in text
    assert phases == {
        "message_commentary": "commentary",
        "message_final_answer": "final_answer",
        "message_after_compaction": "final_answer",
        "message_closing": "final_answer",
    }


def test_compaction_item_is_kept(openai_loop: RoundTrip) -> None:
    text = assert_opaque_kept(openai_loop, PROVIDER, "compaction", PLACES["compaction"])
    want = provider_value(PROVIDER, "compaction")
    assert want["id"].startswith("cmp_") and want["encrypted_content"] in text


def test_web_search_call_is_kept_and_opens_no_call(openai_loop: RoundTrip, journal_server: ServerProcess) -> None:
    assert_opaque_kept(openai_loop, PROVIDER, "web_search_call", PLACES["web_search_call"])
    # The provider ran the search: nothing waits for a result after the turn that holds it.
    [place] = PLACES["web_search_call"]
    assert not fold_at(journal_server, openai_loop.run_id, place.seq).HasField("pending")


def test_the_input_items_convert_back_byte_for_byte(openai_loop: RoundTrip, journal_server: ServerProcess) -> None:
    before_compaction = fold_at(journal_server, openai_loop.run_id, 6)
    calls = ("reasoning", "message_commentary", "function_call", "function_call_forecast")
    outputs = ("function_call_output", "function_call_output_forecast")
    answer = ("reasoning_final", "message_final_answer")
    # Each reasoning item stays right before the item it produced; each call's item is sent once, as the
    # API sent it, then the outputs, in the order the journal holds them.
    assert input_item_texts(before_compaction.conversation) == [
        user_message(OPENAI_QUESTION),
        *[provider_json(PROVIDER, name) for name in (*calls, *outputs, *answer)],
        user_message(OPENAI_FOLLOW_UPS[0]),
    ]
    # After the compaction item, the request starts with it: it stands for everything before.
    after = ("compaction", "web_search_call", "message_after_compaction")
    assert input_item_texts(openai_loop.state.conversation) == [
        *[provider_json(PROVIDER, name) for name in after],
        user_message(OPENAI_FOLLOW_UPS[1]),
        provider_json(PROVIDER, "message_closing"),
    ]

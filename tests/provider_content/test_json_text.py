"""JSON text fields come back as the very text appended: key order, escapes, non-ASCII, whitespace, numbers.

The fixture ``json_text/key_order_and_escapes.json`` is a JSON text (its
trailing newline included) that any re-serialisation would change: keys out of
order (``{"b":1,"a":2}``), a duplicate key, raw and ``\\u``-escaped non-ASCII
(a surrogate pair, U+2028, an escaped ``/``), whitespace, and numbers written
as ``1.0``, ``1e3``, ``-0``, ``2.50`` and beyond 64 bits. The server only checks
that such a field parses; it stores the string, so the same value written two
ways is two different records (the append rule compares bytes).
"""

from __future__ import annotations

import json

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1.journal_service_pb2_grpc import JournalServiceStub as Stub
from runjournal.v1.records_pb2 import ContentBlock, JournalRecord, Note, OpaqueBlock, StopReason, ToolUseBlock
from tests.api.rpc import journal_bytes, new_run_id, reason
from tests.provider_content.fixtures import ROOT
from tests.provider_content.loops import assistant, meta
from tests.provider_content.roundtrip import body_of
from tests.servers import ServerProcess
from tests.support import builders as b

TRICKY = (ROOT / "json_text" / "key_order_and_escapes.json").read_bytes().decode("utf-8")


def opaque_turn(seq: int, json_text: str) -> JournalRecord:
    block = ContentBlock(opaque=OpaqueBlock(provider="openai", type="message", json=json_text))
    return assistant(seq, seq - 1, [block], StopReason.STOP_REASON_END_TURN)


def create(stub: Stub, run_id: str) -> None:
    stub.Append(pb.AppendRequest(run_id=run_id, record=meta(run_id, "openai", [b.text("hi")])))


def test_the_fixture_is_a_text_any_reserialisation_changes() -> None:
    value = json.loads(TRICKY)
    assert TRICKY.startswith('{"b":1,"a":2, ') and TRICKY.endswith("}\n") and '"dup":1,"dup":2' in TRICKY
    assert "\\u00e9\\u00E9\\ud83d\\ude00\\u2028\\/" in TRICKY and "\u2028\u007f" in TRICKY
    assert json.dumps(value, ensure_ascii=False) != TRICKY
    assert json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) != TRICKY


def test_opaque_json_comes_back_byte_equal(stub: Stub, journal_server: ServerProcess) -> None:
    run_id = new_run_id("json-text")
    create(stub, run_id)
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=opaque_turn(2, TRICKY)))
    [item] = stub.Read(pb.ReadRequest(run_id=run_id, from_seq=2))
    state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    assert item.record.assistant.content[0].opaque.json == TRICKY
    assert state.conversation[1].content[0].opaque.json.encode() == TRICKY.encode()
    assert json.loads(body_of(item.stored_line))["payload"]["content"][0]["opaque"]["json"] == TRICKY
    # The line holds the text as one JSON string, escaped canonically (the text's own "\u00E9" stays as written).
    assert json.dumps(TRICKY, ensure_ascii=False).encode() in item.stored_line
    assert item.stored_line in journal_bytes(journal_server, run_id)


def test_tool_input_and_note_data_come_back_byte_equal(stub: Stub) -> None:
    run_id = new_run_id("json-text")
    create(stub, run_id)
    input_json = '{"query" : "caf\\u00e9",\n "b":1, "a":[2.50]}'
    call = ContentBlock(tool_use=ToolUseBlock(id="call_1", name="search", input_json=input_json))
    turn = assistant(2, 1, [call], StopReason.STOP_REASON_TOOL_USE)
    note = JournalRecord(seq=3, optional=True, note=Note(text="raw", data_json=TRICKY))
    for record in (turn, note):
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=record))
    read = list(stub.Read(pb.ReadRequest(run_id=run_id, from_seq=2)))
    pending = stub.Fold(pb.FoldRequest(run_id=run_id)).state.pending
    assert read[0].record.assistant.content[0].tool_use.input_json == input_json
    assert pending.calls[0].tool_use.input_json == input_json
    assert read[1].record.note.data_json == TRICKY


def test_the_same_value_written_another_way_is_another_record(stub: Stub) -> None:
    run_id = new_run_id("json-text")
    create(stub, run_id)
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=opaque_turn(2, '{"b":1,"a":2}')))
    again = stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=opaque_turn(2, '{"b":1,"a":2}')))
    assert again.duplicate
    with pytest.raises(grpc.RpcError) as caught:
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=opaque_turn(2, '{"a":2,"b":1}')))
    assert reason(caught.value) == "SEQ_CONFLICT"
    [item] = stub.Read(pb.ReadRequest(run_id=run_id, from_seq=2))
    assert item.record.assistant.content[0].opaque.json == '{"b":1,"a":2}'

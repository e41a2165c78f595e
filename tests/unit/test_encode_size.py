"""The size check of ``records.encode`` runs before any JSON is built.

``encode`` refuses a record whose protobuf wire size already exceeds the
limit, because that wire size is a lower bound of the canonical body: these
tests check the bound over every record kind, including the shapes where JSON
is tightest against the wire format, and check that a huge record is refused
without ever building its escaped line.
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.errors import RecordTooLargeError
from runjournal_server.core.records import encode
from tests.support import builders as b
from tests.support import strategies as valid

UNLIMITED = 1 << 40
MIB = 1 << 20

# Characters whose JSON form is longest (control characters: \u0001 is 6 bytes for 1), exactly as
# long (ASCII, multi-byte and non-BMP UTF-8 under ensure_ascii=False), and the two-byte escapes.
CHARS = ["\x01", "\x1f", "a", '"', "\\", "\n", "é", "€", "\U0001f600", "\U0010ffff"]
# Lengths at which a string's wire length prefix grows by one byte (varint boundaries).
LENGTHS = [0, 1, 127, 128, 129, 16383, 16384, 16385]


def _body_length(record: pb.JournalRecord) -> int:
    return len(encode(record, max_record_bytes=UNLIMITED).body)


def _text_block(text: str) -> pb.ContentBlock:
    block = pb.ContentBlock()
    block.text.text = text
    return block


@st.composite
def _long_texts(draw: st.DrawFn) -> str:
    """A string of one repeated character, at a varint boundary or anywhere up to 20,000 characters."""
    char = draw(st.sampled_from(CHARS))
    length = draw(st.sampled_from(LENGTHS) | st.integers(0, 20_000))
    return char * length


@st.composite
def _tight_records(draw: st.DrawFn) -> pb.JournalRecord:
    """Valid records shaped to make JSON as small as it gets against the wire format."""
    seq = draw(st.integers(2, 2**63 - 1))
    shape = draw(st.sampled_from(["blocks", "note", "usage", "claim", "terminal", "tool_result", "labels"]))
    if shape == "blocks":  # many tiny (or empty) blocks: a 2-byte tag and length each
        texts = draw(st.lists(st.sampled_from(["", "a", "\x01"]) | _long_texts(), min_size=1, max_size=300))
        return pb.JournalRecord(seq=seq, user=pb.UserFollowUp(content=[_text_block(t) for t in texts]))
    if shape == "note":
        return pb.JournalRecord(seq=seq, optional=True, note=pb.Note(text=draw(_long_texts()) or "x"))
    if shape == "usage":  # small ints and an enum: a 1-byte tag and a 1-byte varint each
        small = st.integers(0, 1) | st.integers(0, valid.INT32_MAX)
        usage = pb.Usage(
            input_tokens=draw(small),
            output_tokens=draw(small),
            cache_read_tokens=draw(small),
            cache_write_tokens=draw(small),
        )
        assistant = pb.AssistantTurn(
            iteration=draw(st.integers(1, valid.INT32_MAX)),
            content=[_text_block(draw(st.sampled_from(["", "a"])))],
            stop_reason=draw(st.sampled_from(valid.STOP_REASONS)),
            usage=usage,
        )
        return pb.JournalRecord(seq=seq, assistant=assistant)
    if shape == "claim":  # the shortest key of an int field ("pid") next to empty strings
        claim = pb.ClaimNotice(worker_id="w", host="", pid=draw(st.integers(0, valid.INT32_MAX)), reason="")
        return pb.JournalRecord(seq=seq, claim=claim)
    if shape == "terminal":
        reason = draw(st.sampled_from(valid.TERMINAL_REASONS))
        return pb.JournalRecord(seq=seq, terminal=pb.Terminal(reason=reason, message=draw(_long_texts())))
    if shape == "tool_result":  # bools and an empty content list
        result = pb.ToolResult(tool_use_id="t", is_error=draw(st.booleans()), remote=draw(st.booleans()))
        return pb.JournalRecord(seq=seq, optional=draw(st.booleans()), tool_result=result)
    meta = draw(valid.record_payloads("meta"))
    keys = draw(st.lists(st.from_regex(r"[a-z0-9]{1,3}", fullmatch=True), max_size=64, unique=True))
    meta.labels.clear()
    meta.labels.update({key: draw(st.sampled_from(["", "v", "\x01" * 200])) for key in keys})
    return pb.JournalRecord(seq=1, meta=meta)


@settings(max_examples=400)
@given(valid.records())
def test_the_json_body_of_any_valid_record_is_at_least_its_wire_size(record: pb.JournalRecord) -> None:
    assert _body_length(record) >= record.ByteSize()


@settings(max_examples=400, deadline=None)
@given(_tight_records())
def test_the_bound_holds_where_json_is_tightest_against_the_wire_format(record: pb.JournalRecord) -> None:
    assert _body_length(record) >= record.ByteSize()


@pytest.mark.parametrize("char", CHARS)
def test_the_bound_holds_for_a_multi_mebibyte_text_of_any_character(char: str) -> None:
    # 2 MiB + 1 characters: the length prefix is 4 bytes, the longest any accepted record can need.
    record = pb.JournalRecord(seq=2, optional=True, note=pb.Note(text=char * (2 * MIB + 1)))
    assert _body_length(record) >= record.ByteSize()


def test_a_huge_control_character_text_is_refused_without_building_its_line() -> None:
    # 60 MiB of \x01 would be escaped into a 360 MiB line; the refusal must come from the wire size.
    record = pb.JournalRecord(seq=2, optional=True, note=pb.Note(text="\x01" * (60 * MIB)))
    tracemalloc.start()
    try:
        with pytest.raises(RecordTooLargeError) as caught:
            encode(record, max_record_bytes=MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # ByteSize serialises the record once (upb has no cheaper size), a transient copy at wire
    # size; anything beyond it would be JSON being built.
    assert peak < record.ByteSize() + MIB, f"encode allocated {peak / MIB:.0f} MiB while refusing"
    assert int(caught.value.metadata["size"]) >= 60 * MIB
    assert caught.value.metadata["limit"] == str(MIB)


def test_unknown_fields_do_not_count_towards_the_size() -> None:
    # A newer client's field this server does not know is dropped from the line, so it must not
    # make the wire-size bound refuse a record whose line fits.
    note = pb.JournalRecord(seq=2, optional=True, note=pb.Note(text="small"))
    unknown_field_99 = b"\x9a\x06" + _varint(2 * MIB) + b"u" * (2 * MIB)
    record = pb.JournalRecord.FromString(note.SerializeToString() + unknown_field_99)
    assert record.ByteSize() > 2 * MIB
    assert encode(record, max_record_bytes=MIB).record == note


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_the_bound_holds_for_the_earliest_timestamp_whose_seconds_are_negative() -> None:
    # A negative varint is 10 wire bytes: the one integer a valid record may hold below zero.
    record = b.meta()
    record.meta.created_at.seconds, record.meta.created_at.nanos = -62135596800, 999_999_999
    assert _body_length(record) >= record.ByteSize()

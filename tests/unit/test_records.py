"""records.py: the stored form, its checksum, strict decoding, validation and the JSON Schemas."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import given, settings
from hypothesis import strategies as st

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.errors import InvalidRecordError, RecordTooLargeError
from runjournal_server.core.json_text import MAX_JSON_DEPTH
from runjournal_server.core.kinds import kind_of
from runjournal_server.core.records import (
    DEFAULT_MAX_RECORD_BYTES,
    PROTOCOL_PREFIX,
    Kind,
    RecordDecodeError,
    StoredRecord,
    decode,
    encode,
    to_line,
)
from runjournal_server.core.schema import validate
from tests.support import builders as b
from tests.support.strategies import records

# ---------------------------------------------------------------------------
# An independent statement of the stored form (docs/journal-format.md), so the
# tests check records.py against the documented format, not against itself.

ENVELOPE_BYTES = len(b'{"crc":"') + 8 + len(b'","rec":')


def canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def wrap(body: bytes) -> bytes:
    return b'{"crc":"%08x","rec":%s}' % (zlib.crc32(body), body)


def body_dict(record: pb.JournalRecord) -> dict[str, Any]:
    kind = record.WhichOneof("payload")
    assert kind is not None
    payload = json_format.MessageToDict(getattr(record, kind), preserving_proto_field_name=True)
    obj: dict[str, Any] = {"id": PROTOCOL_PREFIX + kind, "seq": record.seq, "payload": payload}
    if record.optional:
        obj["optional"] = True
    return obj


def line_of(record: pb.JournalRecord) -> bytes:
    """The documented line for ``record``, built without records.py (even for invalid records)."""
    return wrap(canonical(body_dict(record)))


# ---------------------------------------------------------------------------
# One small valid record of each kind to mutate, every optional part filled in.

BASES: dict[Kind, Callable[[], pb.JournalRecord]] = {
    Kind.META: lambda: b.meta(prompt=[b.text("hello"), b.opaque()], labels={"team": "search"}, task_id="task-7"),
    Kind.ASSISTANT: lambda: b.assistant(2, 1, ["call_1", "call_2"], say="calling", thought="hmm"),
    Kind.USER: lambda: b.user(3, "more"),
    Kind.TOOL_RESULT: lambda: b.result(4, "call_1", "42", remote=True),
    Kind.DEFERRAL: lambda: b.deferral(5, "call_2"),
    Kind.APPROVAL: lambda: b.approval(6, "call_2"),
    Kind.CLAIM: lambda: b.claim(7),
    Kind.TERMINAL: lambda: b.terminal(8),
    Kind.RECONFIGURE: lambda: b.reconfigure(9, b.fingerprint()),
    Kind.NOTE: lambda: b.note(10, "halfway", data_json='{"done":5}'),
    Kind.COMPACTION: lambda: b.compaction(11, 4),
}
"""The assistant turn's content is [thinking, text, tool_use call_1, tool_use call_2]: the cases name those places."""


@cache
def schema_for(name: str) -> jsonschema.Draft202012Validator:
    text_ = (resources.files("runjournal_server") / "schemas" / f"{name}.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text_))


# ---------------------------------------------------------------------------
# Kinds and the stored form


def test_kinds_are_exactly_the_record_payload_oneof_fields() -> None:
    fields = [f.name for f in pb.JournalRecord.DESCRIPTOR.oneofs_by_name["payload"].fields]
    assert [kind.value for kind in Kind] == fields


def test_protocol_id_is_the_namespace_plus_the_kind() -> None:
    assert Kind.META.protocol_id == "runjournal.v1.meta"
    assert Kind.TOOL_RESULT.protocol_id == "runjournal.v1.tool_result"


@pytest.mark.parametrize("kind", list(Kind))
def test_kind_of_names_the_payload_and_every_base_record_is_valid(kind: Kind) -> None:
    record = BASES[kind]()
    assert kind_of(record) is kind
    validate(record)


def test_kind_of_refuses_a_record_without_payload() -> None:
    with pytest.raises(InvalidRecordError) as caught:
        kind_of(pb.JournalRecord(seq=3))
    assert caught.value.field == "record.payload"
    assert caught.value.metadata["seq"] == "3"


def test_a_line_is_the_checksum_envelope_around_the_canonical_body() -> None:
    stored = encode(BASES[Kind.NOTE]())
    assert stored.body == (
        b'{"id":"runjournal.v1.note","optional":true,'
        b'"payload":{"data_json":"{\\"done\\":5}","text":"halfway"},"seq":10}'
    )
    assert stored.line == b'{"crc":"%08x","rec":%s}' % (zlib.crc32(stored.body), stored.body)
    assert stored.line[ENVELOPE_BYTES:-1] == stored.body
    assert to_line(stored.body) == stored.line


def test_the_optional_key_is_omitted_when_false() -> None:
    stored = encode(BASES[Kind.CLAIM]())
    assert b"optional" not in stored.body
    assert stored.optional is False


def test_non_ascii_text_is_stored_as_utf8_not_escaped() -> None:
    record = BASES[Kind.USER]()
    record.user.content[0].text.text = "héllo \u2028 😀"
    stored = encode(record)
    assert "héllo \u2028 😀".encode() in stored.body
    assert decode(stored.line) == stored


@settings(max_examples=300)
@given(records())
def test_encode_produces_exactly_the_documented_line(record: pb.JournalRecord) -> None:
    stored = encode(record)
    assert stored.line == line_of(record)
    assert json.loads(stored.line) == {
        "crc": f"{zlib.crc32(stored.body):08x}",
        "rec": json.loads(stored.body),
    }
    assert canonical(json.loads(stored.line)) == stored.line


@settings(max_examples=300)
@given(records())
def test_encode_then_decode_gives_back_the_same_stored_record(record: pb.JournalRecord) -> None:
    stored = encode(record)
    decoded = decode(stored.line)
    assert decoded == stored
    assert decoded.record is not None
    assert encode(decoded.record).line == stored.line


@given(records())
def test_stored_record_fields_describe_the_record(record: pb.JournalRecord) -> None:
    stored = encode(record)
    assert isinstance(stored, StoredRecord)
    assert stored.seq == record.seq
    assert stored.kind == record.WhichOneof("payload")
    assert isinstance(stored.kind, Kind)
    assert stored.optional == record.optional
    assert stored.record == record
    assert stored.record is not record
    assert stored.line == to_line(stored.body)
    assert not stored.line.endswith(b"\n")


@given(records())
def test_equal_records_give_equal_bytes(record: pb.JournalRecord) -> None:
    copy = pb.JournalRecord.FromString(record.SerializeToString())
    assert encode(copy).body == encode(record).body


def test_label_insertion_order_does_not_change_the_bytes() -> None:
    first, second = BASES[Kind.META](), BASES[Kind.META]()
    first.meta.labels.clear()
    second.meta.labels.clear()
    first.meta.labels.update({"a": "1", "b": "2", "c": "3"})
    for key in ("c", "a", "b"):
        second.meta.labels[key] = first.meta.labels[key]
    assert encode(first).line == encode(second).line


def test_the_stored_record_does_not_keep_unknown_proto_fields() -> None:
    record = BASES[Kind.CLAIM]()
    # Field 99 does not exist in ClaimNotice: a newer client's field.
    record.claim.MergeFromString(b"\x98\x06\x01")
    stored = encode(record)
    assert stored.record is not None
    assert stored.record.SerializeToString() == decode(stored.line).record.SerializeToString()  # type: ignore[union-attr]


def test_encode_does_not_share_state_with_the_callers_record() -> None:
    record = BASES[Kind.USER]()
    stored = encode(record)
    record.user.content[0].text.text = "changed"
    assert stored.record is not None
    assert stored.record.user.content[0].text.text == "more"


# ---------------------------------------------------------------------------
# Integrity: every change is caught


@pytest.mark.parametrize("kind", [Kind.META, Kind.ASSISTANT, Kind.NOTE, Kind.CLAIM])
def test_every_single_byte_change_to_a_line_is_refused(kind: Kind) -> None:
    line = encode(BASES[kind]()).line
    for position in range(len(line)):
        for flip in (0x01, 0x20, 0x80, 0xFF):
            changed = bytearray(line)
            changed[position] ^= flip
            with pytest.raises(RecordDecodeError):
                decode(bytes(changed))


@settings(max_examples=300)
@given(records(), st.data())
def test_a_random_single_byte_change_is_refused(record: pb.JournalRecord, data: st.DataObject) -> None:
    line = encode(record).line
    position = data.draw(st.integers(0, len(line) - 1), label="position")
    value = data.draw(st.integers(0, 255).filter(lambda v: v != line[position]), label="value")
    changed = line[:position] + bytes([value]) + line[position + 1 :]
    with pytest.raises(RecordDecodeError):
        decode(changed)


@given(records(), st.data())
def test_a_truncated_line_is_refused(record: pb.JournalRecord, data: st.DataObject) -> None:
    line = encode(record).line
    cut = data.draw(st.integers(0, len(line) - 1))
    with pytest.raises(RecordDecodeError):
        decode(line[:cut])


@given(st.binary(max_size=300))
def test_decode_refuses_arbitrary_bytes_with_a_decode_error_only(junk: bytes) -> None:
    with pytest.raises(RecordDecodeError):
        decode(junk)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300)
@given(
    st.sampled_from(list(Kind)),
    st.data(),
)
def test_decode_of_any_payload_with_a_good_checksum_either_refuses_or_round_trips(
    kind: Kind, data: st.DataObject
) -> None:
    fields = [f.name for f in getattr(BASES[kind](), kind.value).DESCRIPTOR.fields]
    payload = data.draw(st.dictionaries(st.sampled_from([*fields, "bogus"]), _json_values, max_size=4))
    body = canonical(
        {"id": kind.protocol_id, "seq": data.draw(st.integers(-2, 10)), "payload": payload}
        | ({"optional": True} if data.draw(st.booleans()) else {})
    )
    try:
        stored = decode(wrap(body))
    except RecordDecodeError as refused:
        assert refused.detail  # refused, saying why
    else:
        assert stored.record is not None
        assert encode(stored.record).line == wrap(body)


# ---------------------------------------------------------------------------
# Strict decoding: well-checksummed lines that are not canonical records


def _body_of(record: pb.JournalRecord) -> bytes:
    return encode(record).body


NON_CANONICAL: list[tuple[str, Callable[[], pb.JournalRecord], bytes, bytes]] = [
    ("whitespace", BASES[Kind.CLAIM], b'"seq":7', b'"seq": 7'),
    (
        "keys out of order",
        BASES[Kind.CLAIM],
        b'{"id":"runjournal.v1.claim",',
        b'{"seq":7,"id":"runjournal.v1.claim",',
    ),
    ("explicit optional false", BASES[Kind.CLAIM], b'"payload"', b'"optional":false,"payload"'),
    ("optional as a string", BASES[Kind.CLAIM], b'"payload"', b'"optional":"true","payload"'),
    ("enum as a number", BASES[Kind.TERMINAL], b'"TERMINAL_REASON_COMPLETED"', b"1"),
    ("camelCase field name", BASES[Kind.TOOL_RESULT], b'"tool_use_id"', b'"toolUseId"'),
    ("int32 as a string", BASES[Kind.CLAIM], b'"pid":42', b'"pid":"42"'),
    ("explicit zero", BASES[Kind.CLAIM], b'"pid":42', b'"pid":0'),
    ("seq as a float", BASES[Kind.CLAIM], b'"seq":7', b'"seq":7.0'),
    ("seq as a string", BASES[Kind.CLAIM], b'"seq":7', b'"seq":"7"'),
    ("seq as a boolean", BASES[Kind.CLAIM], b'"seq":7', b'"seq":true'),
    ("seq zero", BASES[Kind.CLAIM], b'"seq":7', b'"seq":0'),
    ("seq beyond int64", BASES[Kind.CLAIM], b'"seq":7', b'"seq":9223372036854775808'),
    ("seq with 5000 digits", BASES[Kind.CLAIM], b'"seq":7', b'"seq":' + b"9" * 5000),
    ("timestamp with an offset", BASES[Kind.META], b'"2023-11-14T22:13:20Z"', b'"2023-11-14T22:13:20+00:00"'),
    ("timestamp with zero millis", BASES[Kind.META], b'"2023-11-14T22:13:20Z"', b'"2023-11-14T22:13:20.000Z"'),
    ("escaped non-ascii", BASES[Kind.USER], b'"more"', b'"mor\\u0065"'),
    ("duplicate key", BASES[Kind.CLAIM], b'"pid":42', b'"pid":42,"pid":42'),
    ("NaN", BASES[Kind.CLAIM], b'"pid":42', b'"pid":NaN'),
    ("unknown payload key", BASES[Kind.CLAIM], b'"pid":42', b'"pid":42,"zone":"eu"'),
    ("unknown top-level key", BASES[Kind.CLAIM], b'"seq":7', b'"seq":7,"ts":1'),
    ("missing payload", BASES[Kind.CLAIM], b'"payload":{', b'"xpayload":{'),
    (
        "payload not an object",
        BASES[Kind.NOTE],
        b'"payload":{"data_json":"{\\"done\\":5}","text":"halfway"}',
        b'"payload":["halfway"]',
    ),
    ("id not a string", BASES[Kind.CLAIM], b'"runjournal.v1.claim"', b"7"),
    ("id of another namespace", BASES[Kind.CLAIM], b'"runjournal.v1.claim"', b'"runjournal.v2.claim"'),
    ("id with an upper-case kind", BASES[Kind.CLAIM], b'"runjournal.v1.claim"', b'"runjournal.v1.Claim"'),
    ("id with an empty kind", BASES[Kind.NOTE], b'"runjournal.v1.note"', b'"runjournal.v1."'),
    ("null field", BASES[Kind.CLAIM], b'"pid":42', b'"pid":42,"reason":null'),
    ("empty labels", BASES[Kind.META], b'"labels":{"team":"search"}', b'"labels":{}'),
    ("unknown enum value", BASES[Kind.TERMINAL], b'"TERMINAL_REASON_COMPLETED"', b"42"),
    ("invalid record", BASES[Kind.ASSISTANT], b'"iteration":1', b'"iteration":-1'),
    ("invalid utf-8", BASES[Kind.USER], b'"more"', b'"mo\xffre"'),
    ("lone surrogate escape", BASES[Kind.USER], b'"more"', b'"\\ud800"'),
    ("lone surrogate in a label", BASES[Kind.META], b'"search"', b'"\\udc00"'),
    ("map value not a string", BASES[Kind.META], b'"search"', b"7"),
    ("timestamp as a number", BASES[Kind.META], b'"2023-11-14T22:13:20Z"', b"1700000000"),
    ("message as a list", BASES[Kind.ASSISTANT], b'"usage":{', b'"usage":[{'),
]


@pytest.mark.parametrize(
    ("factory", "old", "new"), [case[1:] for case in NON_CANONICAL], ids=[case[0] for case in NON_CANONICAL]
)
def test_decode_refuses_a_well_checksummed_body_that_is_not_the_canonical_record(
    factory: Callable[[], pb.JournalRecord], old: bytes, new: bytes
) -> None:
    body = _body_of(factory())
    assert body.count(old) == 1
    with pytest.raises(RecordDecodeError) as caught:
        decode(wrap(body.replace(old, new)))
    assert caught.value.detail


def test_decode_refuses_a_body_nested_too_deeply_for_the_json_parser() -> None:
    with pytest.raises(RecordDecodeError):
        decode(wrap(b"[" * 100_000 + b"]" * 100_000))


@pytest.mark.parametrize("depth", [50, 400, 5000])
def test_decode_refuses_deeply_nested_content_blocks_cleanly(depth: int) -> None:
    nested = b'{"tool_result":{"content":[' * depth + b'{"text":{"text":"x"}}' + b'],"tool_use_id":"c"}}' * depth
    body = b'{"id":"runjournal.v1.user","payload":{"content":[' + nested + b']},"seq":3}'
    with pytest.raises(RecordDecodeError):
        decode(wrap(body))


def test_payload_messages_use_only_types_with_plain_json_forms() -> None:
    """No int64 (a JSON string), double or bytes: every payload number is a plain JSON integer."""
    allowed = {"string", "bool", "int32", "enum", "message"}
    type_names = {
        value: name.removeprefix("TYPE_").lower()
        for name, value in vars(FieldDescriptor).items()
        if name.startswith("TYPE_")
    }
    seen: set[str] = set()
    pending = [getattr(pb.JournalRecord(), kind.value).DESCRIPTOR for kind in Kind]
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in seen or descriptor.full_name == "google.protobuf.Timestamp":
            continue
        seen.add(descriptor.full_name)
        for field in descriptor.fields:
            assert type_names[field.type] in allowed, f"{descriptor.full_name}.{field.name}"
            if field.message_type is not None:
                pending.append(field.message_type)
    assert "runjournal.v1.ContentBlock" in seen


def test_decode_refuses_a_body_that_is_not_an_object() -> None:
    with pytest.raises(RecordDecodeError, match="not a JSON object"):
        decode(wrap(b"[1]"))


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("trailing newline", lambda line: line + b"\n"),
        ("upper-case checksum", lambda line: line[:8] + line[8:16].upper() + line[16:]),
        ("missing closing brace", lambda line: line[:-1]),
        ("empty", lambda line: b""),
        ("envelope only", lambda line: line[:ENVELOPE_BYTES]),
        ("byte order mark", lambda line: b"\xef\xbb\xbf" + line),
        ("space in the envelope", lambda line: line.replace(b'","rec":', b'", "rec":')),
    ],
)
def test_decode_refuses_a_malformed_envelope(name: str, change: Callable[[bytes], bytes]) -> None:
    line = encode(BASES[Kind.TERMINAL]()).line
    assert line.upper() != line
    with pytest.raises(RecordDecodeError):
        decode(change(line))


def test_decode_error_carries_the_seq_once_the_body_is_readable() -> None:
    body = _body_of(BASES[Kind.ASSISTANT]()).replace(b'"iteration":1', b'"iteration":-1')
    with pytest.raises(RecordDecodeError) as caught:
        decode(wrap(body))
    assert caught.value.seq == 2
    assert "assistant.iteration" in caught.value.detail


def test_decode_error_has_no_seq_when_the_checksum_is_bad() -> None:
    line = bytearray(encode(BASES[Kind.CLAIM]()).line)
    line[-3] ^= 1
    with pytest.raises(RecordDecodeError, match="checksum") as caught:
        decode(bytes(line))
    assert caught.value.seq is None


# ---------------------------------------------------------------------------
# Unknown kinds


def test_an_unknown_optional_kind_decodes_without_a_record() -> None:
    body = canonical({"id": "runjournal.v1.progress_bar", "seq": 4, "optional": True, "payload": {"pct": 40}})
    stored = decode(wrap(body))
    assert stored == StoredRecord(seq=4, kind="progress_bar", optional=True, record=None, body=body, line=wrap(body))


def test_an_unknown_kind_that_is_not_optional_is_refused() -> None:
    body = canonical({"id": "runjournal.v1.progress_bar", "seq": 4, "payload": {"pct": 40}})
    with pytest.raises(RecordDecodeError, match="not optional") as caught:
        decode(wrap(body))
    assert caught.value.seq == 4


def test_an_unknown_optional_kind_must_still_be_canonical() -> None:
    body = json.dumps({"seq": 4, "id": "runjournal.v1.progress_bar", "optional": True, "payload": {}}).encode()
    with pytest.raises(RecordDecodeError, match="canonical"):
        decode(wrap(body))


def test_an_unknown_optional_kind_needs_an_object_payload() -> None:
    body = canonical({"id": "runjournal.v1.progress_bar", "seq": 4, "optional": True, "payload": [40]})
    with pytest.raises(RecordDecodeError):
        decode(wrap(body))


# ---------------------------------------------------------------------------
# Validation: one error naming the field


def deep_json(depth: int) -> str:
    """A JSON object nested ``depth`` levels deep (an object at the top)."""
    return '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@dataclass(frozen=True)
class Bad:
    """A malformed record: the base kind, the change, the field the error must name."""

    name: str
    kind: Kind
    change: Callable[[pb.JournalRecord], object]
    field: str
    schema_catches: bool = True
    has_json_form: bool = True
    """False when proto3 JSON cannot express the record (a timestamp out of its range)."""


def _set(path: str, value: object) -> Callable[[pb.JournalRecord], None]:
    def change(record: pb.JournalRecord) -> None:
        *parents, last = path.split(".")
        target: Any = record
        for part in parents:
            target = target[int(part)] if part.isdigit() else getattr(target, part)
        setattr(target, last, value)

    return change


def _replace_content(kind: Kind, blocks: list[pb.ContentBlock]) -> Callable[[pb.JournalRecord], None]:
    def change(record: pb.JournalRecord) -> None:
        content = record.meta.prompt if kind is Kind.META else getattr(record, kind.value).content
        del content[:]
        content.extend(blocks)

    return change


def _add_labels(count: int) -> Callable[[pb.JournalRecord], None]:
    return lambda record: record.meta.labels.update({f"k{i}": "v" for i in range(count)})


BAD_RECORDS: list[Bad] = [
    Bad("seq zero", Kind.CLAIM, _set("seq", 0), "seq"),
    Bad("seq negative", Kind.CLAIM, _set("seq", -5), "seq"),
    Bad("note not optional", Kind.NOTE, _set("optional", False), "optional"),
    Bad("deferral optional", Kind.DEFERRAL, _set("optional", True), "optional"),
    Bad("meta optional", Kind.META, _set("optional", True), "optional"),
    Bad("format version zero", Kind.META, _set("meta.format_version", 0), "meta.format_version"),
    Bad("run id with a path", Kind.META, _set("meta.run_id", "../x"), "meta.run_id"),
    Bad("run id with a dot", Kind.META, _set("meta.run_id", "a.b"), "meta.run_id"),
    Bad("run id empty", Kind.META, _set("meta.run_id", ""), "meta.run_id"),
    Bad("no created_at", Kind.META, lambda r: r.meta.ClearField("created_at"), "meta.created_at"),
    Bad(
        "created_at after 9999",
        Kind.META,
        _set("meta.created_at.seconds", 253402300800),
        "meta.created_at",
        has_json_form=False,
    ),
    Bad(
        "created_at nanos out of range",
        Kind.META,
        _set("meta.created_at.nanos", 10**9),
        "meta.created_at",
        has_json_form=False,
    ),
    Bad("no fingerprint", Kind.META, lambda r: r.meta.ClearField("fingerprint"), "meta.fingerprint"),
    Bad("no provider", Kind.META, _set("meta.fingerprint.provider", ""), "meta.fingerprint.provider"),
    Bad("no model", Kind.META, _set("meta.fingerprint.model", ""), "meta.fingerprint.model"),
    Bad(
        "upper-case prompt hash",
        Kind.META,
        _set("meta.fingerprint.system_prompt_sha256", "A" * 64),
        "meta.fingerprint.system_prompt_sha256",
    ),
    Bad(
        "short tools hash",
        Kind.META,
        _set("meta.fingerprint.tools_sha256", "b" * 63),
        "meta.fingerprint.tools_sha256",
    ),
    Bad(
        "negative max_tokens",
        Kind.META,
        _set("meta.fingerprint.max_tokens", -1),
        "meta.fingerprint.max_tokens",
    ),
    Bad(
        "negative max_iterations",
        Kind.META,
        _set("meta.fingerprint.max_iterations", -1),
        "meta.fingerprint.max_iterations",
    ),
    Bad("empty prompt", Kind.META, _replace_content(Kind.META, []), "meta.prompt"),
    Bad(
        "tool_use in prompt", Kind.META, _replace_content(Kind.META, [b.tool_use("call_1")]), "meta.prompt[0].tool_use"
    ),
    Bad(
        "thinking in prompt",
        Kind.META,
        _replace_content(Kind.META, [b.text("hi"), b.thinking()]),
        "meta.prompt[1].thinking",
    ),
    Bad("empty block in prompt", Kind.META, _replace_content(Kind.META, [pb.ContentBlock()]), "meta.prompt[0]"),
    Bad("65 labels", Kind.META, _add_labels(64), "meta.labels"),
    Bad("upper-case label key", Kind.META, lambda r: r.meta.labels.update(Team="x"), 'meta.labels["Team"]'),
    Bad(
        "64-char label key",
        Kind.META,
        lambda r: r.meta.labels.update({"k" * 64: "x"}),
        f'meta.labels["{"k" * 64}"]',
    ),
    Bad(
        "label key with a dash first",
        Kind.META,
        lambda r: r.meta.labels.update({"-a": "x"}),
        'meta.labels["-a"]',
    ),
    Bad("long label value", Kind.META, lambda r: r.meta.labels.update(team="v" * 257), 'meta.labels["team"]'),
    Bad("task id with a dot", Kind.META, _set("meta.task_id", "a.b"), "meta.task_id"),
    Bad("iteration zero", Kind.ASSISTANT, _set("assistant.iteration", 0), "assistant.iteration"),
    Bad("no assistant content", Kind.ASSISTANT, _replace_content(Kind.ASSISTANT, []), "assistant.content"),
    Bad("no stop reason", Kind.ASSISTANT, _set("assistant.stop_reason", 0), "assistant.stop_reason"),
    Bad("unknown stop reason", Kind.ASSISTANT, _set("assistant.stop_reason", 99), "assistant.stop_reason"),
    Bad(
        "negative usage",
        Kind.ASSISTANT,
        _set("assistant.usage.output_tokens", -3),
        "assistant.usage.output_tokens",
    ),
    Bad(
        "tool_result block in a record",
        Kind.ASSISTANT,
        _replace_content(
            Kind.ASSISTANT, [b.text("hi"), pb.ContentBlock(tool_result=pb.ToolResultBlock(tool_use_id="c"))]
        ),
        "assistant.content[1].tool_result",
    ),
    Bad(
        "tool_use id with a space",
        Kind.ASSISTANT,
        _set("assistant.content.2.tool_use.id", "call 1"),
        "assistant.content[2].tool_use.id",
    ),
    # Python's re (like Java's) lets `$` match before a final newline; ECMA 262, which JSON Schema
    # specifies, and RE2 do not. The schemas keep plain `$` (lookaheads would break RE2 tools).
    Bad(
        "tool_use id with a newline",
        Kind.ASSISTANT,
        _set("assistant.content.2.tool_use.id", "call1\n"),
        "assistant.content[2].tool_use.id",
        schema_catches=False,
    ),
    Bad(
        "tool_use id non-ascii",
        Kind.ASSISTANT,
        _set("assistant.content.2.tool_use.id", "caé"),
        "assistant.content[2].tool_use.id",
    ),
    Bad(
        "tool_use id empty",
        Kind.ASSISTANT,
        _set("assistant.content.2.tool_use.id", ""),
        "assistant.content[2].tool_use.id",
    ),
    Bad(
        "tool_use id 257 chars",
        Kind.ASSISTANT,
        _set("assistant.content.2.tool_use.id", "c" * 257),
        "assistant.content[2].tool_use.id",
    ),
    Bad(
        "repeated tool_use id",
        Kind.ASSISTANT,
        _set("assistant.content.3.tool_use.id", "call_1"),
        "assistant.content[3].tool_use.id",
        schema_catches=False,
    ),
    Bad(
        "tool name empty",
        Kind.ASSISTANT,
        _set("assistant.content.2.tool_use.name", ""),
        "assistant.content[2].tool_use.name",
    ),
    Bad(
        "tool name 257 chars",
        Kind.ASSISTANT,
        _set("assistant.content.2.tool_use.name", "n" * 257),
        "assistant.content[2].tool_use.name",
    ),
    *(
        Bad(
            f"input_json {label}",
            Kind.ASSISTANT,
            _set("assistant.content.2.tool_use.input_json", value),
            "assistant.content[2].tool_use.input_json",
            schema_catches=catches,
        )
        for label, value, catches in [
            ("empty", "", True),
            ("not JSON", "{q: 1}", False),
            ("an array", "[1, 2]", False),
            ("a string", '"text"', False),
            ("with NaN", '{"x": NaN}', False),
            ("with Infinity", '{"x": -Infinity}', False),
            ("with trailing junk", '{"x": 1} {}', False),
            (f"nested {MAX_JSON_DEPTH + 1} deep", deep_json(MAX_JSON_DEPTH + 1), False),
            ("nested 100000 deep", deep_json(100_000), False),
        ]
    ),
    Bad(
        "redacted thinking without data",
        Kind.ASSISTANT,
        _set("assistant.content.0.thinking.redacted", True),
        "assistant.content[0].thinking.data",
    ),
    Bad(
        "thinking data without redacted",
        Kind.ASSISTANT,
        _set("assistant.content.0.thinking.data", "x"),
        "assistant.content[0].thinking.data",
    ),
    Bad(
        "opaque without provider",
        Kind.USER,
        _replace_content(Kind.USER, [b.opaque(provider="")]),
        "user.content[0].opaque.provider",
    ),
    Bad(
        "opaque provider 65 chars",
        Kind.USER,
        _replace_content(Kind.USER, [b.opaque(provider="p" * 65)]),
        "user.content[0].opaque.provider",
    ),
    Bad(
        "opaque without type",
        Kind.USER,
        _replace_content(Kind.USER, [b.opaque(type_="")]),
        "user.content[0].opaque.type",
    ),
    Bad(
        "opaque type 129 chars",
        Kind.USER,
        _replace_content(Kind.USER, [b.opaque(type_="t" * 129)]),
        "user.content[0].opaque.type",
    ),
    Bad(
        "opaque json invalid",
        Kind.USER,
        _replace_content(Kind.USER, [b.text("hi"), b.opaque(value="{")]),
        "user.content[1].opaque.json",
        schema_catches=False,
    ),
    Bad(
        "opaque json empty",
        Kind.USER,
        _replace_content(Kind.USER, [b.opaque(value="")]),
        "user.content[0].opaque.json",
    ),
    Bad("no user content", Kind.USER, _replace_content(Kind.USER, []), "user.content"),
    Bad(
        "thinking in a follow-up",
        Kind.USER,
        _replace_content(Kind.USER, [b.thinking()]),
        "user.content[0].thinking",
    ),
    Bad(
        "tool result id empty",
        Kind.TOOL_RESULT,
        _set("tool_result.tool_use_id", ""),
        "tool_result.tool_use_id",
    ),
    Bad(
        "tool_use in a result",
        Kind.TOOL_RESULT,
        _replace_content(Kind.TOOL_RESULT, [b.tool_use("call_1")]),
        "tool_result.content[0].tool_use",
    ),
    Bad("deferral without id", Kind.DEFERRAL, _set("deferral.tool_use_id", ""), "deferral.tool_use_id"),
    Bad("approval without id", Kind.APPROVAL, _set("approval.tool_use_id", ""), "approval.tool_use_id"),
    Bad("approval without decision", Kind.APPROVAL, _set("approval.decision", 0), "approval.decision"),
    Bad("unknown decision", Kind.APPROVAL, _set("approval.decision", 7), "approval.decision"),
    Bad("approval without approver", Kind.APPROVAL, _set("approval.approver", ""), "approval.approver"),
    Bad("approver 257 chars", Kind.APPROVAL, _set("approval.approver", "a" * 257), "approval.approver"),
    Bad("claim without worker", Kind.CLAIM, _set("claim.worker_id", ""), "claim.worker_id"),
    Bad("worker id 257 chars", Kind.CLAIM, _set("claim.worker_id", "w" * 257), "claim.worker_id"),
    Bad("negative pid", Kind.CLAIM, _set("claim.pid", -1), "claim.pid"),
    Bad("terminal without reason", Kind.TERMINAL, _set("terminal.reason", 0), "terminal.reason"),
    Bad("unknown terminal reason", Kind.TERMINAL, _set("terminal.reason", 42), "terminal.reason"),
    Bad(
        "reconfigure without fingerprint",
        Kind.RECONFIGURE,
        lambda r: r.reconfigure.ClearField("fingerprint"),
        "reconfigure.fingerprint",
    ),
    Bad(
        "reconfigure without model",
        Kind.RECONFIGURE,
        _set("reconfigure.fingerprint.model", ""),
        "reconfigure.fingerprint.model",
    ),
    Bad(
        "no changed fields",
        Kind.RECONFIGURE,
        lambda r: r.reconfigure.ClearField("changed_fields"),
        "reconfigure.changed_fields",
    ),
    Bad(
        "unknown changed field",
        Kind.RECONFIGURE,
        lambda r: r.reconfigure.changed_fields.append("temperature"),
        "reconfigure.changed_fields[1]",
    ),
    Bad(
        "repeated changed field",
        Kind.RECONFIGURE,
        lambda r: r.reconfigure.changed_fields.append("model"),
        "reconfigure.changed_fields[1]",
    ),
    Bad("empty note", Kind.NOTE, lambda r: r.note.Clear(), "note"),
    Bad(
        "note data not JSON",
        Kind.NOTE,
        _set("note.data_json", "{'a': 1}"),
        "note.data_json",
        schema_catches=False,
    ),
    Bad("note data with NaN", Kind.NOTE, _set("note.data_json", "NaN"), "note.data_json", schema_catches=False),
]


def _bad_record(case: Bad) -> pb.JournalRecord:
    record = BASES[case.kind]()
    case.change(record)
    return record


@pytest.mark.parametrize("case", BAD_RECORDS, ids=[case.name for case in BAD_RECORDS])
def test_validate_encode_and_decode_refuse_a_malformed_record_naming_the_field(case: Bad) -> None:
    record = _bad_record(case)
    with pytest.raises(InvalidRecordError) as caught:
        validate(record)
    assert caught.value.field == case.field
    assert caught.value.metadata["seq"] == str(record.seq)
    assert case.field in str(caught.value)
    with pytest.raises(InvalidRecordError) as from_encode:
        encode(record)
    assert from_encode.value.field == case.field
    if not case.has_json_form:
        with pytest.raises(json_format.SerializeToJsonError):
            line_of(record)
        return
    with pytest.raises(RecordDecodeError) as from_decode:
        decode(line_of(record))
    assert case.field in from_decode.value.detail or "parse" in from_decode.value.detail


@pytest.mark.parametrize(
    "case", [c for c in BAD_RECORDS if c.has_json_form], ids=[c.name for c in BAD_RECORDS if c.has_json_form]
)
def test_the_schemas_refuse_the_malformed_records_they_can_express(case: Bad) -> None:
    verdict = schema_for(case.kind.value).is_valid(body_dict(_bad_record(case)))
    assert verdict is not case.schema_catches


def test_validate_refuses_a_record_without_payload_naming_it() -> None:
    with pytest.raises(InvalidRecordError) as caught:
        validate(pb.JournalRecord(seq=1))
    assert caught.value.field == "record.payload"


def test_input_json_nested_exactly_to_the_limit_is_accepted() -> None:
    record = BASES[Kind.ASSISTANT]()
    record.assistant.content[2].tool_use.input_json = deep_json(MAX_JSON_DEPTH)
    assert json.loads(encode(record).body)["payload"]["content"][2]["tool_use"]["input_json"] == deep_json(64)


def test_text_may_hold_any_string_including_nul() -> None:
    record = BASES[Kind.USER]()
    record.user.content[0].text.text = "a\x00b\n\t"
    assert decode(encode(record).line).record == record


def test_a_user_text_block_may_be_empty() -> None:
    record = b.user(3, "")
    assert decode(encode(record).line).record == record


# ---------------------------------------------------------------------------
# Size


def _note_of(chars: int) -> pb.JournalRecord:
    return b.note(2, "x" * chars)


def test_a_line_over_the_limit_is_refused_and_a_line_at_the_limit_is_accepted() -> None:
    size = len(encode(_note_of(500)).line)
    assert len(encode(_note_of(500), max_record_bytes=size).line) == size
    with pytest.raises(RecordTooLargeError) as caught:
        encode(_note_of(500), max_record_bytes=size - 1)
    assert caught.value.metadata == {"size": str(size), "limit": str(size - 1), "seq": "2"}


def test_the_default_limit_is_one_mebibyte_of_line() -> None:
    assert DEFAULT_MAX_RECORD_BYTES == 1 << 20
    with pytest.raises(RecordTooLargeError):
        encode(_note_of(1 << 20))


def test_size_counts_utf8_bytes_not_characters() -> None:
    record = b.note(2, "é" * 400)
    size = len(encode(record).line)
    assert size > 800
    with pytest.raises(RecordTooLargeError):
        encode(record, max_record_bytes=size - 1)


# ---------------------------------------------------------------------------
# JSON Schemas


@pytest.mark.parametrize("name", [*list(Kind), "line"])
def test_every_kind_and_the_line_ship_a_valid_draft_2020_12_schema(name: str) -> None:
    validator = schema_for(name)
    jsonschema.Draft202012Validator.check_schema(validator.schema)
    assert validator.schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@settings(max_examples=300)
@given(records())
def test_every_encoded_body_and_line_matches_its_schema(record: pb.JournalRecord) -> None:
    stored = encode(record)
    body = json.loads(stored.body)
    errors = [e.message for e in schema_for(stored.kind).iter_errors(body)]
    assert errors == []
    assert schema_for("line").is_valid(json.loads(stored.line))


def test_the_fields_only_the_server_writes_match_the_schemas() -> None:
    """A fork's and a child's meta, a delegation and a child's result: written by the server, read by tools."""
    meta = BASES[Kind.META]()
    meta.meta.forked_from.run_id = "source-run"
    meta.meta.forked_from.seq = 7
    meta.meta.forked_from.prefix_sha256 = "ab" * 32
    meta.meta.spawned_by.run_id = "lead"
    meta.meta.spawned_by.tool_use_id = "toolu_01"
    meta.meta.spawned_by.seq = 4
    meta.meta.spawned_by.root_run_id = "lead"
    deferral = BASES[Kind.DEFERRAL]()
    deferral.deferral.child_run_id = "child-1"
    result = BASES[Kind.TOOL_RESULT]()
    result.tool_result.answered_by_run_id = "child-1"
    for record in (meta, deferral, result):
        stored = encode(record)
        assert [e.message for e in schema_for(stored.kind).iter_errors(json.loads(stored.body))] == []
    body = json.loads(encode(meta).body)
    body["payload"]["spawned_by"]["seq"] = 0
    assert not schema_for("meta").is_valid(body)


@pytest.mark.parametrize("kind", list(Kind))
def test_a_body_is_refused_by_the_schema_of_another_kind(kind: Kind) -> None:
    body = json.loads(encode(BASES[kind]()).body)
    for other in Kind:
        assert schema_for(other.value).is_valid(body) is (other is kind)


SCHEMA_REFUSALS: list[tuple[str, Kind, Callable[[dict[str, Any]], object]]] = [
    ("missing seq", Kind.CLAIM, lambda b: b.pop("seq")),
    ("explicit optional false", Kind.CLAIM, lambda b: b.update(optional=False)),
    ("unknown top-level key", Kind.CLAIM, lambda b: b.update(ts=1)),
    ("unknown payload key", Kind.CLAIM, lambda b: b["payload"].update(zone="eu")),
    ("explicit zero pid", Kind.CLAIM, lambda b: b["payload"].update(pid=0)),
    (
        "stop reason unspecified",
        Kind.ASSISTANT,
        lambda b: b["payload"].update(stop_reason="STOP_REASON_UNSPECIFIED"),
    ),
    ("enum as a number", Kind.TERMINAL, lambda b: b["payload"].update(reason=1)),
    ("two kinds in one block", Kind.USER, lambda b: b["payload"]["content"][0].update(opaque={})),
    (
        "timestamp with an offset",
        Kind.META,
        lambda b: b["payload"].update(created_at="2023-11-14T22:13:20+01:00"),
    ),
    ("empty labels object", Kind.META, lambda b: b["payload"].update(labels={})),
    ("note without optional", Kind.NOTE, lambda b: b.pop("optional")),
]


@pytest.mark.parametrize(
    ("kind", "change"), [case[1:] for case in SCHEMA_REFUSALS], ids=[case[0] for case in SCHEMA_REFUSALS]
)
def test_the_schemas_refuse_non_canonical_bodies(kind: Kind, change: Callable[[dict[str, Any]], object]) -> None:
    body = json.loads(encode(BASES[kind]()).body)
    assert schema_for(kind.value).is_valid(body)
    change(body)
    assert not schema_for(kind.value).is_valid(body)


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("upper-case crc", {"crc": "ABCDEF01", "rec": {"id": "runjournal.v1.note", "seq": 1, "payload": {}}}),
        ("short crc", {"crc": "abc", "rec": {"id": "runjournal.v1.note", "seq": 1, "payload": {}}}),
        (
            "extra key",
            {"crc": "abcdef01", "rec": {"id": "runjournal.v1.note", "seq": 1, "payload": {}}, "x": 1},
        ),
        ("foreign id", {"crc": "abcdef01", "rec": {"id": "other.v1.note", "seq": 1, "payload": {}}}),
        ("seq zero", {"crc": "abcdef01", "rec": {"id": "runjournal.v1.note", "seq": 0, "payload": {}}}),
    ],
)
def test_the_line_schema_refuses_a_malformed_envelope(name: str, line: dict[str, Any]) -> None:
    assert not schema_for("line").is_valid(line)


# ---------------------------------------------------------------------------
# The format document stays true


def test_every_example_line_in_the_format_document_decodes() -> None:
    doc = Path(__file__).parents[2] / "docs" / "journal-format.md"
    lines = [line for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith('{"crc":"')]
    assert len(lines) >= 3
    for line in lines:
        stored = decode(line.encode("utf-8"))
        assert stored.record is not None
        assert encode(stored.record).line == line.encode("utf-8")


@given(records())
def test_the_fast_payload_walker_equals_message_to_dict(record: pb.JournalRecord) -> None:
    from google.protobuf import json_format

    from runjournal_server.core.payload_json import to_json_dict

    payload = getattr(record, record.WhichOneof("payload"))
    assert to_json_dict(payload) == json_format.MessageToDict(payload, preserving_proto_field_name=True)


# ---------------------------------------------------------------------------
# The fast canonical encoder (orjson) on a known kind's body: exact where it is used.

_JSON_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=24)
_FLOATLESS_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4),
    max_leaves=24,
)


@settings(max_examples=1000)
@given(_FLOATLESS_JSON)
def test_the_fast_canonical_encoder_equals_the_documented_one_on_json_without_floats(value: object) -> None:
    from runjournal_server.core.records import _canonical_of_payload

    assert _canonical_of_payload(value) == canonical(value)


def test_the_fast_canonical_encoder_escapes_every_character_as_the_documented_one() -> None:
    from runjournal_server.core.records import _canonical_of_payload

    every = "".join(chr(point) for point in range(0x3000)) + "\u2028\u2029\ufeff\U0001f600\U0010ffff"
    assert _canonical_of_payload({"t": every, every: [every]}) == canonical({"t": every, every: [every]})


def test_no_record_field_is_a_float_the_one_json_shape_where_the_fast_encoder_would_differ() -> None:
    seen: set[str] = set()
    floats: list[str] = []

    def walk(message: Any) -> None:
        if message.full_name in seen:
            return
        seen.add(message.full_name)
        for field in message.fields:
            if field.cpp_type in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
                floats.append(f"{message.full_name}.{field.name}")
            if field.message_type is not None:
                walk(field.message_type)

    walk(pb.JournalRecord.DESCRIPTOR)
    assert len(seen) > 20  # the walk reached every payload's messages
    assert floats == []


def test_an_unknown_optional_kind_with_floats_is_still_read_by_the_documented_encoder() -> None:
    body = canonical({"id": "runjournal.v1.gauge", "optional": True, "payload": {"big": 1e16, "x": 0.1}, "seq": 2})
    stored = decode(wrap(body))
    assert stored.record is None
    assert stored.body == body


def test_a_body_over_the_fast_encoders_size_is_the_documented_one_too() -> None:
    from runjournal_server.core.records import FAST_BODY_BYTES

    record = BASES[Kind.NOTE]()
    record.note.text = ("large \u00e9\u2028\x01 \U0001f600 " * (FAST_BODY_BYTES // 8))[: FAST_BODY_BYTES + 1000]
    stored = encode(record)
    assert len(stored.body) > FAST_BODY_BYTES
    assert stored.line == line_of(record)
    assert decode(stored.line) == stored

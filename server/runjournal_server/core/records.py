"""The one encoder and decoder of journal records, shared by every backend.

A record is stored as one canonical JSON line (docs/journal-format.md):

    {"crc":"<crc32 of body, 8 lower-case hex>","rec":<body>}

where the body is the canonical JSON of ``{"id", "seq", "optional", "payload"}``
and the payload is the proto3 JSON of the record's payload message. Backends
store and compare these bytes and never re-serialise a record, so a run moves
between backends byte for byte and a duplicate is recognised by comparing
bodies.

Every record is validated (``schema.py``) on every write (``encode``) and on
every read (``decode``), with one ``InvalidRecordError`` naming the exact
field; the payload's JSON form comes from ``payload_json.py``. Decoding is
strict: a line is accepted only if re-encoding its record reproduces its
body exactly, so non-canonical input is refused and equal records always have
equal bytes.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.errors import InvalidRecordError, RecordTooLargeError
from runjournal_server.core.kinds import FORMAT_VERSION, MAX_SEQ, PROTOCOL_PREFIX, Kind, kind_named, kind_of
from runjournal_server.core.payload_json import PayloadError, brief, fill, load_json, to_json_dict
from runjournal_server.core.schema import validate

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "FORMAT_VERSION",
    "PROTOCOL_PREFIX",
    "Kind",
    "RecordDecodeError",
    "StoredRecord",
    "decode",
    "encode",
    "to_line",
]

DEFAULT_MAX_RECORD_BYTES = 1 << 20
"""Default maximum size of a stored line (envelope included, newline excluded)."""


@dataclass(frozen=True)
class StoredRecord:
    """One record as stored: its decoded form and its exact bytes."""

    seq: int
    kind: str
    """The short kind name: a ``Kind`` member, or a plain str for an unknown optional kind."""
    optional: bool
    record: pb.JournalRecord | None
    """The decoded record; None only for an unknown optional kind."""
    body: bytes
    """The canonical body: what the checksum covers and what duplicates compare."""
    line: bytes
    """The full stored line, without a trailing newline."""


class RecordDecodeError(ValueError):
    """A stored line is not a valid record.

    Backends turn it into ``CorruptJournalError`` (interior line) or treat it as
    a torn tail (final line). ``seq`` is set when the body was readable enough
    to tell.
    """

    def __init__(self, detail: str, *, seq: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.seq = seq


# ---------------------------------------------------------------------------
# Line envelope

_LINE_HEAD = b'{"crc":"'
_LINE_MIDDLE = b'","rec":'
_CRC_HEX_DIGITS = 8
_BODY_START = len(_LINE_HEAD) + _CRC_HEX_DIGITS + len(_LINE_MIDDLE)
_LOWER_HEX = frozenset(b"0123456789abcdef")


def to_line(record_body: bytes) -> bytes:
    """Wrap a canonical body in its checksum envelope (no trailing newline)."""
    crc = f"{zlib.crc32(record_body):08x}".encode("ascii")
    return _LINE_HEAD + crc + _LINE_MIDDLE + record_body + b"}"


def _unwrap(line: bytes) -> bytes:
    """The body of a line whose envelope and checksum are intact."""
    if len(line) <= _BODY_START + 1:
        raise RecordDecodeError(f"line of {len(line)} bytes is too short to hold a record")
    if not line.startswith(_LINE_HEAD) or line[_BODY_START - len(_LINE_MIDDLE) : _BODY_START] != _LINE_MIDDLE:
        raise RecordDecodeError('line does not start with the envelope {"crc":"<8 hex>","rec":')
    if not line.endswith(b"}"):
        raise RecordDecodeError("line does not end with '}' (a torn or newline-terminated line)")
    crc_text = line[len(_LINE_HEAD) : len(_LINE_HEAD) + _CRC_HEX_DIGITS]
    if not all(byte in _LOWER_HEX for byte in crc_text):
        raise RecordDecodeError(f"checksum {crc_text!r} is not 8 lower-case hex digits")
    body = line[_BODY_START:-1]
    actual = zlib.crc32(body)
    if actual != int(crc_text, 16):
        raise RecordDecodeError(f"checksum mismatch: line says {crc_text.decode('ascii')}, body has {actual:08x}")
    return body


# ---------------------------------------------------------------------------
# Encoding


def _canonical(obj: object) -> bytes:
    """The canonical JSON of any JSON value: keys sorted, no spaces, UTF-8 text (nothing \\u-escaped but controls)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _canonical_of_payload(obj: object) -> bytes:
    """``_canonical`` of a body whose payload ``to_json_dict`` built, in a tenth of the time (orjson).

    Exact only on what that walk produces: strings, booleans, integers of at
    most 64 bits, lists and objects, nested as shallowly as the record schema
    allows. No record field is a float or double, where the two encoders'
    number forms differ (tests/unit/test_records.py pins all of it). A
    stored body of an unknown kind may hold any JSON, so it goes through
    ``_canonical``. ``json.dumps`` was 13% of an append's Python.
    """
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


FAST_BODY_BYTES = 64 * 1024
"""A known kind's body up to this size is made canonical by orjson, a larger one by ``json.dumps``.

orjson pays off per call, on the small records of a run's steady appends.
On a large body its output buffer, grown by doubling, raised glibc's
dynamic mmap threshold past the size of the server's other large buffers,
which then stayed on the heap after use: 16 readers stalled on a run of
1000 KiB records grew the server by 109-111 MiB instead of 93-97
(docs/performance.md, section 20). The size decided on is the record's
wire size on the way in (it bounds the body from below) and the stored
body's on the way out.
"""


def _body_object(seq: int, kind_name: str, optional: bool, payload: object) -> dict[str, object]:
    obj: dict[str, object] = {"id": PROTOCOL_PREFIX + kind_name, "seq": seq, "payload": payload}
    if optional:
        obj["optional"] = True
    return obj


def _record_body(record: pb.JournalRecord, kind: Kind, size: int) -> bytes:
    """The canonical body of a known kind's record; ``size``: see ``FAST_BODY_BYTES``."""
    body = _body_object(record.seq, kind.value, record.optional, to_json_dict(getattr(record, kind.value)))
    return _canonical_of_payload(body) if size <= FAST_BODY_BYTES else _canonical(body)


def encode(
    record: pb.JournalRecord, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES, wire_size: int | None = None
) -> StoredRecord:
    """Validate ``record`` and produce its stored form.

    Raises ``InvalidRecordError`` naming the offending field, or
    ``RecordTooLargeError`` when the line would exceed ``max_record_bytes``
    (its ``size`` is then the exact line length, or a lower bound of it when
    the record was refused before its line was built). ``wire_size``: the
    record's ``ByteSize()`` when the caller has it already (see
    ``refuse_surely_too_large``).
    """
    size = record.ByteSize() if wire_size is None else wire_size
    refuse_surely_too_large(record, max_record_bytes, size)
    validate(record)
    kind = kind_of(record)
    body = _record_body(record, kind, size)
    line = to_line(body)
    if len(line) > max_record_bytes:
        raise RecordTooLargeError(len(line), max_record_bytes, seq=record.seq)
    # A private copy without unknown fields: what decode(line) would return.
    copy = pb.JournalRecord()
    copy.CopyFrom(record)
    copy.DiscardUnknownFields()
    return StoredRecord(seq=record.seq, kind=kind, optional=record.optional, record=copy, body=body, line=line)


def refuse_surely_too_large(record: pb.JournalRecord, max_record_bytes: int, wire_size: int | None = None) -> None:
    """Refuse a record whose wire size already proves its line too large, before any JSON is built.

    The protobuf wire size of a record's known fields is a lower bound of its
    canonical body (tests/unit/test_encode_size.py checks it over every kind):
    for every field the JSON spends at least what the wire does, a quoted key
    and a colon against a 1-2 byte tag, quotes or brackets against a length
    prefix of at most 5 bytes, the same UTF-8 bytes for text (ensure_ascii is
    off) and more for every escape, an enum's name against its varint.
    Negative integers, the one place where the wire is longer (10 bytes), are
    invalid in every record field but a Timestamp's seconds, whose JSON (an
    RFC 3339 string of 20 or more characters) is longer still. Unknown fields
    are the exception, handled below. Without this check a 60 MiB text of control
    characters was escaped into a 377 MB line (and its Python objects) before
    the size was known.

    ``wire_size`` is ``record.ByteSize()`` when the caller computed it already:
    upb computes it by serializing the record, so for a 4 MiB record each call
    holds the GIL (and stalls every other call) for milliseconds.
    """
    size = record.ByteSize() if wire_size is None else wire_size
    if size <= max_record_bytes:
        return
    # Unknown fields (a newer client's) count in ByteSize but are dropped from the line: size
    # them out so they cannot make this bound refuse a record that fits. A copy, but only here.
    known = pb.JournalRecord()
    known.CopyFrom(record)
    known.DiscardUnknownFields()
    size = known.ByteSize()
    if size > max_record_bytes:
        raise RecordTooLargeError(size, max_record_bytes, seq=record.seq)


# ---------------------------------------------------------------------------
# Decoding

_BODY_KEYS = frozenset({"id", "seq", "optional", "payload"})
_KIND_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _parse_body(body: bytes) -> dict[str, Any]:
    try:
        obj = load_json(body.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise RecordDecodeError(f"record body is not UTF-8: {err}") from err
    except (ValueError, RecursionError) as err:
        raise RecordDecodeError(f"record body is not valid JSON: {err}") from err
    if not isinstance(obj, dict):
        raise RecordDecodeError("record body is not a JSON object")
    return obj


def _split_body(obj: dict[str, Any]) -> tuple[int, str, bool, dict[str, Any]]:
    """Check the body's own keys; return (seq, kind name, optional, payload)."""
    raw_seq = obj.get("seq")
    seq = raw_seq if type(raw_seq) is int and 1 <= raw_seq <= MAX_SEQ else None
    unknown = sorted(set(obj) - _BODY_KEYS)
    if unknown:
        raise RecordDecodeError(f"record body has unknown keys {brief(unknown)}", seq=seq)
    if seq is None:
        raise RecordDecodeError(f"record seq must be an integer from 1 to {MAX_SEQ}, got {brief(raw_seq)}")
    protocol_id = obj.get("id")
    if not isinstance(protocol_id, str) or not protocol_id.startswith(PROTOCOL_PREFIX):
        raise RecordDecodeError(f"record id {brief(protocol_id)} is not a {PROTOCOL_PREFIX}* protocol id", seq=seq)
    kind_name = protocol_id[len(PROTOCOL_PREFIX) :]
    if _KIND_NAME.fullmatch(kind_name) is None:
        raise RecordDecodeError(f"record id {brief(protocol_id)} has a malformed kind name", seq=seq)
    optional = obj.get("optional", False)
    if "optional" in obj and optional is not True:
        raise RecordDecodeError(f"record optional flag must be true or absent, got {brief(optional)}", seq=seq)
    payload = obj.get("payload")
    if not isinstance(payload, dict):
        raise RecordDecodeError("record payload is missing or not a JSON object", seq=seq)
    return seq, kind_name, optional, payload


def _parse_record(seq: int, kind: Kind, optional: bool, payload: dict[str, Any]) -> pb.JournalRecord:
    record = pb.JournalRecord(seq=seq, optional=optional)
    message = getattr(record, kind.value)
    message.SetInParent()
    try:
        fill(message, payload, kind.value)
    except (PayloadError, ValueError, TypeError, RecursionError) as err:  # the last three from protobuf setters
        raise RecordDecodeError(f"{kind.value} payload does not parse: {err}", seq=seq) from err
    return record


def decode(line: bytes) -> StoredRecord:
    """Parse, verify and validate one stored line (without its newline).

    Any problem raises ``RecordDecodeError``: a bad envelope or checksum,
    invalid JSON, unknown keys, an unknown kind that is not optional, an
    invalid record, or bytes that are not exactly the canonical encoding.
    """
    line = bytes(line)
    body = _unwrap(line)
    seq, kind_name, optional, payload = _split_body(_parse_body(body))
    kind = kind_named(kind_name)
    record: pb.JournalRecord | None
    if kind is None:
        if not optional:
            raise RecordDecodeError(
                f"unknown record kind {PROTOCOL_PREFIX}{kind_name} is not optional; this reader cannot skip it",
                seq=seq,
            )
        record = None
        expected = _canonical(_body_object(seq, kind_name, optional, payload))
    else:
        record = _parse_record(seq, kind, optional, payload)
        try:
            validate(record)
        except InvalidRecordError as err:
            raise RecordDecodeError(f"invalid record: {err}", seq=seq) from err
        expected = _record_body(record, kind, len(body))
    if expected != body:
        raise RecordDecodeError("record body is not in canonical form (re-encoding it gives different bytes)", seq=seq)
    return StoredRecord(seq=seq, kind=kind or kind_name, optional=optional, record=record, body=body, line=line)

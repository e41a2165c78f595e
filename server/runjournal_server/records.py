"""The one encoder and decoder of journal records, shared by every backend.

A record is stored as one canonical JSON line (docs/journal-format.md):

    {"crc":"<crc32 of body, 8 lower-case hex>","rec":<body>}

where the body is the canonical JSON of ``{"id", "seq", "optional", "payload"}``
and the payload is the proto3 JSON of the record's payload message. Backends
store and compare these bytes and never re-serialise a record, so a run moves
between backends byte for byte and a duplicate is recognised by comparing
bodies.

Every record is validated here on every write (``encode``) and on every read
(``decode``), with one ``InvalidRecordError`` naming the exact field. Decoding
is strict: a line is accepted only if re-encoding its record reproduces its
body exactly, so non-canonical input is refused and equal records always have
equal bytes.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

import enum
import functools
import json
import re
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from runjournal.v1 import records_pb2 as pb
from runjournal_server.errors import InvalidRecordError, RecordTooLargeError
from runjournal_server.ids import is_valid_run_id

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "FORMAT_VERSION",
    "MAX_JSON_DEPTH",
    "PROTOCOL_PREFIX",
    "Kind",
    "RecordDecodeError",
    "StoredRecord",
    "decode",
    "encode",
    "kind_of",
    "to_line",
    "validate",
]

FORMAT_VERSION = 1
PROTOCOL_PREFIX = "runjournal.v1."
DEFAULT_MAX_RECORD_BYTES = 1 << 20
"""Default maximum size of a stored line (envelope included, newline excluded)."""
MAX_JSON_DEPTH = 64
"""Deepest nesting accepted in the JSON text fields (tool input, opaque blocks, note data)."""
MAX_SEQ = (1 << 63) - 1


class Kind(enum.StrEnum):
    """The ten record kinds; each value is the oneof field name in ``Record.payload``."""

    META = "meta"
    ASSISTANT = "assistant"
    USER = "user"
    TOOL_RESULT = "tool_result"
    DEFERRAL = "deferral"
    APPROVAL = "approval"
    CLAIM = "claim"
    TERMINAL = "terminal"
    RECONFIGURE = "reconfigure"
    NOTE = "note"

    @property
    def protocol_id(self) -> str:
        """The full protocol id, e.g. ``runjournal.v1.meta``."""
        return PROTOCOL_PREFIX + self.value


_PAYLOAD_TYPES: dict[Kind, type[Message]] = {
    Kind.META: pb.Meta,
    Kind.ASSISTANT: pb.AssistantTurn,
    Kind.USER: pb.UserFollowUp,
    Kind.TOOL_RESULT: pb.ToolResult,
    Kind.DEFERRAL: pb.Deferral,
    Kind.APPROVAL: pb.Approval,
    Kind.CLAIM: pb.ClaimNotice,
    Kind.TERMINAL: pb.Terminal,
    Kind.RECONFIGURE: pb.Reconfigure,
    Kind.NOTE: pb.Note,
}
_KINDS_BY_NAME = {kind.value: kind for kind in Kind}


@dataclass(frozen=True)
class StoredRecord:
    """One record as stored: its decoded form and its exact bytes."""

    seq: int
    kind: str
    """The short kind name: a ``Kind`` member, or a plain str for an unknown optional kind."""
    optional: bool
    record: pb.Record | None
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
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _body(seq: int, kind_name: str, optional: bool, payload: object) -> bytes:
    obj: dict[str, object] = {"id": PROTOCOL_PREFIX + kind_name, "seq": seq, "payload": payload}
    if optional:
        obj["optional"] = True
    return _canonical(obj)


def _record_body(record: pb.Record, kind: Kind) -> bytes:
    return _body(record.seq, kind.value, record.optional, to_json_dict(getattr(record, kind.value)))


def to_json_dict(message: Message) -> dict[str, object]:
    """The proto3 JSON form of a payload, as ``json_format.MessageToDict(preserving_proto_field_name=True)``.

    A direct walk over the set fields, for the shapes records use (strings,
    bools, int32, enums, nested and repeated messages, string maps,
    Timestamps): MessageToDict's generic machinery cost a quarter of a
    server's CPU per append. A test pins the two to the same output.
    """
    out: dict[str, object] = {}
    for field, value in message.ListFields():
        shape, repeated = _field_shape(field)
        if shape is _Shape.MAP:
            out[field.name] = dict(value)
        elif repeated:
            out[field.name] = [_json_value(shape, field, item) for item in value]
        else:
            out[field.name] = _json_value(shape, field, value)
    return out


class _Shape(enum.Enum):
    SCALAR = 0
    ENUM = 1
    MESSAGE = 2
    TIMESTAMP = 3
    MAP = 4


@functools.cache
def _field_shape(field: Any) -> tuple[_Shape, bool]:
    """How a field is written, worked out once per field (descriptor options are slow to read)."""
    if field.message_type is not None:
        if field.message_type.GetOptions().map_entry:
            return _Shape.MAP, False
        if field.message_type.full_name == "google.protobuf.Timestamp":
            return _Shape.TIMESTAMP, field.is_repeated
        return _Shape.MESSAGE, field.is_repeated
    if field.enum_type is not None:
        return _Shape.ENUM, field.is_repeated
    return _Shape.SCALAR, field.is_repeated


def _json_value(shape: _Shape, field: Any, value: Any) -> object:
    if shape is _Shape.SCALAR:
        return value
    if shape is _Shape.MESSAGE:
        return to_json_dict(value)
    if shape is _Shape.TIMESTAMP:
        return value.ToJsonString()
    known = field.enum_type.values_by_number.get(value)
    return known.name if known is not None else value


def kind_of(record: pb.Record) -> Kind:
    """The record's kind, from its payload oneof."""
    which = record.WhichOneof("payload")
    if which is None:
        raise InvalidRecordError(
            "record.payload", f"no payload is set; set exactly one of {', '.join(Kind)}", seq=record.seq
        )
    return _KINDS_BY_NAME[which]


def encode(record: pb.Record, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> StoredRecord:
    """Validate ``record`` and produce its stored form.

    Raises ``InvalidRecordError`` naming the offending field, or
    ``RecordTooLargeError`` when the line would exceed ``max_record_bytes``
    (its ``size`` is then the exact line length, or a lower bound of it when
    the record was refused before its line was built).
    """
    _refuse_surely_too_large(record, max_record_bytes)
    validate(record)
    kind = kind_of(record)
    body = _record_body(record, kind)
    line = to_line(body)
    if len(line) > max_record_bytes:
        raise RecordTooLargeError(len(line), max_record_bytes, seq=record.seq)
    # A private copy without unknown fields: what decode(line) would return.
    copy = pb.Record()
    copy.CopyFrom(record)
    copy.DiscardUnknownFields()
    return StoredRecord(seq=record.seq, kind=kind, optional=record.optional, record=copy, body=body, line=line)


def _refuse_surely_too_large(record: pb.Record, max_record_bytes: int) -> None:
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
    """
    size = record.ByteSize()
    if size <= max_record_bytes:
        return
    # Unknown fields (a newer client's) count in ByteSize but are dropped from the line: size
    # them out so they cannot make this bound refuse a record that fits. A copy, but only here.
    known = pb.Record()
    known.CopyFrom(record)
    known.DiscardUnknownFields()
    size = known.ByteSize()
    if size > max_record_bytes:
        raise RecordTooLargeError(size, max_record_bytes, seq=record.seq)


# ---------------------------------------------------------------------------
# Decoding

_BODY_KEYS = frozenset({"id", "seq", "optional", "payload"})
_KIND_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _brief(value: object) -> str:
    """A value for an error message, cut short (a corrupt line can hold anything)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _load_json(text: str) -> Any:
    """json.loads, refusing NaN/Infinity; raises ValueError or RecursionError."""
    return json.loads(text, parse_constant=_refuse_constant)


def _parse_body(body: bytes) -> dict[str, Any]:
    try:
        obj = _load_json(body.decode("utf-8"))
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
        raise RecordDecodeError(f"record body has unknown keys {_brief(unknown)}", seq=seq)
    if seq is None:
        raise RecordDecodeError(f"record seq must be an integer from 1 to {MAX_SEQ}, got {_brief(raw_seq)}")
    protocol_id = obj.get("id")
    if not isinstance(protocol_id, str) or not protocol_id.startswith(PROTOCOL_PREFIX):
        raise RecordDecodeError(f"record id {_brief(protocol_id)} is not a {PROTOCOL_PREFIX}* protocol id", seq=seq)
    kind_name = protocol_id[len(PROTOCOL_PREFIX) :]
    if _KIND_NAME.fullmatch(kind_name) is None:
        raise RecordDecodeError(f"record id {_brief(protocol_id)} has a malformed kind name", seq=seq)
    optional = obj.get("optional", False)
    if "optional" in obj and optional is not True:
        raise RecordDecodeError(f"record optional flag must be true or absent, got {_brief(optional)}", seq=seq)
    payload = obj.get("payload")
    if not isinstance(payload, dict):
        raise RecordDecodeError("record payload is missing or not a JSON object", seq=seq)
    return seq, kind_name, optional, payload


def _parse_record(seq: int, kind: Kind, optional: bool, payload: dict[str, Any]) -> pb.Record:
    record = pb.Record(seq=seq, optional=optional)
    message = getattr(record, kind.value)
    message.SetInParent()
    try:
        _fill(message, payload, kind.value)
    except (_PayloadError, ValueError, TypeError, RecursionError) as err:  # the last three from protobuf setters
        raise RecordDecodeError(f"{kind.value} payload does not parse: {err}", seq=seq) from err
    return record


class _PayloadError(Exception):
    pass


_INT32_RANGE = range(-(1 << 31), 1 << 31)
_SCALAR_NAMES = {
    FieldDescriptor.CPPTYPE_STRING: "a string",
    FieldDescriptor.CPPTYPE_BOOL: "true",
    FieldDescriptor.CPPTYPE_INT32: "a 32-bit integer",
    FieldDescriptor.CPPTYPE_ENUM: "an enum value name",
}


def _fill(message: Message, obj: object, path: str) -> None:
    """Set ``message`` from the proto3 JSON object ``obj``, accepting only the shapes encode writes.

    Not json_format.ParseDict: it scans every string for unpaired surrogates
    with a regex (about 100 ms per MiB of text), and strict UTF-8 decoding of
    the body already excludes them. Being exact is not this function's job:
    decode re-encodes the result and refuses the line unless the bytes match,
    so a shape this parser mishandles can only be refused, never mis-read.
    """
    if not isinstance(obj, dict):
        raise _PayloadError(f"{path}: expected a JSON object")
    fields = message.DESCRIPTOR.fields_by_name
    for name, value in obj.items():
        field = fields.get(name)
        where = f"{path}.{name}"
        if field is None:
            raise _PayloadError(f"{where}: unknown field")
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if not isinstance(value, dict) or not all(type(v) is str for v in value.values()):
                raise _PayloadError(f"{where}: expected an object of strings")
            getattr(message, name).update(value)
        elif field.is_repeated:
            if not isinstance(value, list):
                raise _PayloadError(f"{where}: expected a list")
            container = getattr(message, name)
            for index, item in enumerate(value):
                if field.message_type is not None:
                    _fill(container.add(), item, f"{where}[{index}]")
                else:
                    container.append(_scalar(field, item, f"{where}[{index}]"))
        elif field.message_type is not None:
            child = getattr(message, name)
            child.SetInParent()
            if field.message_type.full_name == "google.protobuf.Timestamp":
                if type(value) is not str:
                    raise _PayloadError(f"{where}: expected an RFC 3339 string")
                child.FromJsonString(value)
            else:
                _fill(child, value, where)
        else:
            setattr(message, name, _scalar(field, value, where))


def _scalar(field: Any, value: object, where: str) -> object:
    """The Python value for a scalar field (``field`` is a FieldDescriptor, Python or upb)."""
    cpp_type = field.cpp_type
    if cpp_type == FieldDescriptor.CPPTYPE_STRING and type(value) is str:
        return value
    if cpp_type == FieldDescriptor.CPPTYPE_BOOL and type(value) is bool:
        return value
    if cpp_type == FieldDescriptor.CPPTYPE_INT32 and type(value) is int and value in _INT32_RANGE:
        return value
    if cpp_type == FieldDescriptor.CPPTYPE_ENUM and type(value) is str:
        enum_value = field.enum_type.values_by_name.get(value)
        if enum_value is not None:
            return enum_value.number
    expected = _SCALAR_NAMES.get(cpp_type, "a supported field type")
    raise _PayloadError(f"{where}: expected {expected}, got {_brief(value)}")


def decode(line: bytes) -> StoredRecord:
    """Parse, verify and validate one stored line (without its newline).

    Any problem raises ``RecordDecodeError``: a bad envelope or checksum,
    invalid JSON, unknown keys, an unknown kind that is not optional, an
    invalid record, or bytes that are not exactly the canonical encoding.
    """
    line = bytes(line)
    body = _unwrap(line)
    seq, kind_name, optional, payload = _split_body(_parse_body(body))
    kind = _KINDS_BY_NAME.get(kind_name)
    record: pb.Record | None
    if kind is None:
        if not optional:
            raise RecordDecodeError(
                f"unknown record kind {PROTOCOL_PREFIX}{kind_name} is not optional; this reader cannot skip it",
                seq=seq,
            )
        record = None
        expected = _body(seq, kind_name, optional, payload)
    else:
        record = _parse_record(seq, kind, optional, payload)
        try:
            validate(record)
        except InvalidRecordError as err:
            raise RecordDecodeError(f"invalid record: {err}", seq=seq) from err
        expected = _record_body(record, kind)
    if expected != body:
        raise RecordDecodeError("record body is not in canonical form (re-encoding it gives different bytes)", seq=seq)
    return StoredRecord(seq=seq, kind=kind or kind_name, optional=optional, record=record, body=body, line=line)


# ---------------------------------------------------------------------------
# Validation


class _Checker:
    """Carries the record's seq so every error names it."""

    def __init__(self, seq: int) -> None:
        self.seq = seq

    def fail(self, field: str, problem: str) -> NoReturn:
        raise InvalidRecordError(field, problem, seq=self.seq)

    def length(self, value: str, field: str, low: int, high: int) -> None:
        if not low <= len(value) <= high:
            what = "is required" if not value else f"has {len(value)} characters"
            self.fail(field, f"{what}; use {low}-{high} characters")

    def at_least(self, value: int, field: str, low: int) -> None:
        if value < low:
            self.fail(field, f"must be at least {low}, got {value}")

    def enum(self, value: int, field: str, descriptor: EnumDescriptor) -> None:
        if value == 0:
            self.fail(field, f"is required; use one of {_enum_names(descriptor)}")
        if value not in descriptor.values_by_number:
            self.fail(field, f"{value} is not a known value; use one of {_enum_names(descriptor)}")

    def json_text(self, text: str, field: str, *, want_object: bool) -> None:
        problem = json_text_problem(text, want_object=want_object)
        if problem is not None:
            self.fail(field, problem)

    def tool_use_id(self, value: str, field: str) -> None:
        if _TOOL_USE_ID.fullmatch(value) is None:
            self.fail(field, "a tool_use id is 1-256 printable ASCII characters without spaces")


def json_text_problem(text: str, *, want_object: bool = False) -> str | None:
    """Why ``text`` is not an acceptable JSON value (or object), or None when it is."""
    try:
        value = _load_json(text)
    except RecursionError:
        return f"JSON is nested more than {MAX_JSON_DEPTH} levels deep"
    except ValueError as err:
        return f"is not valid JSON: {err}"
    if want_object and not isinstance(value, dict):
        return f"must be a JSON object, got {type(value).__name__}"
    if _nesting_exceeds(value, MAX_JSON_DEPTH):
        return f"JSON is nested more than {MAX_JSON_DEPTH} levels deep"
    return None


def label_problems(labels: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """``(key, problem)`` for each label that breaks the label rules (shared by runs and tasks)."""
    if len(labels) > MAX_LABELS:
        yield "", f"has {len(labels)} labels; at most {MAX_LABELS} are allowed"
        return
    for key in sorted(labels):
        if _LABEL_KEY.fullmatch(key) is None:
            yield key, "a label key is 1-63 characters of [a-z0-9_./-], starting with [a-z0-9]"
        elif len(labels[key]) > MAX_LABEL_VALUE_CHARS:
            yield key, f"a label value has at most {MAX_LABEL_VALUE_CHARS} characters"


def _enum_names(descriptor: EnumDescriptor) -> str:
    return ", ".join(v.name for v in descriptor.values if v.number != 0)


def _nesting_exceeds(value: object, limit: int) -> bool:
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[object]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


_TOOL_USE_ID = re.compile(r"[!-~]{1,256}")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_LABEL_KEY = re.compile(r"[a-z0-9][a-z0-9_./-]{0,62}")
MAX_LABELS = 64
MAX_LABEL_VALUE_CHARS = 256
_FINGERPRINT_FIELDS = frozenset(f.name for f in pb.Fingerprint.DESCRIPTOR.fields)
_TIMESTAMP_SECONDS = (-62135596800, 253402300799)  # 0001-01-01 .. 9999-12-31, as proto JSON allows
_RUN_ID_RULE = "1-128 characters of [A-Za-z0-9_-], starting with a letter or digit"
_ASSISTANT_BLOCKS = frozenset({"text", "thinking", "tool_use", "opaque"})
_PLAIN_BLOCKS = frozenset({"text", "opaque"})


def _names(names: Collection[str]) -> str:
    return ", ".join(sorted(names))


def _blocks(
    c: _Checker, blocks: Iterable[pb.ContentBlock], path: str, allowed: Collection[str], *, required: bool
) -> None:
    count = 0
    tool_use_ids: dict[str, int] = {}
    for index, block in enumerate(blocks):
        count += 1
        where = f"{path}[{index}]"
        which = block.WhichOneof("block")
        if which is None:
            c.fail(where, f"no block kind is set; set exactly one of {_names(allowed)}")
        if which not in allowed:
            c.fail(f"{where}.{which}", f"{which} blocks are not allowed here; use {_names(allowed)}")
        if which == "thinking":
            if block.thinking.redacted and not block.thinking.data:
                c.fail(f"{where}.thinking.data", "redacted thinking needs its data")
            if not block.thinking.redacted and block.thinking.data:
                c.fail(f"{where}.thinking.data", "is only for redacted thinking; set redacted or clear it")
        elif which == "tool_use":
            use = block.tool_use
            c.tool_use_id(use.id, f"{where}.tool_use.id")
            if use.id in tool_use_ids:
                c.fail(f"{where}.tool_use.id", f"{use.id!r} repeats {path}[{tool_use_ids[use.id]}]")
            tool_use_ids[use.id] = index
            c.length(use.name, f"{where}.tool_use.name", 1, 256)
            c.json_text(use.input_json, f"{where}.tool_use.input_json", want_object=True)
        elif which == "opaque":
            c.length(block.opaque.provider, f"{where}.opaque.provider", 1, 64)
            c.length(block.opaque.type, f"{where}.opaque.type", 1, 128)
            c.json_text(block.opaque.json, f"{where}.opaque.json", want_object=False)
    if required and count == 0:
        c.fail(path, "needs at least one content block")


def _fingerprint(c: _Checker, fp: pb.Fingerprint, path: str) -> None:
    if not fp.provider:
        c.fail(f"{path}.provider", "is required")
    if not fp.model:
        c.fail(f"{path}.model", "is required")
    for name in ("system_prompt_sha256", "tools_sha256"):
        value = getattr(fp, name)
        if value and _SHA256_HEX.fullmatch(value) is None:
            c.fail(f"{path}.{name}", "must be empty or 64 lower-case hex digits (a SHA-256)")
    c.at_least(fp.max_tokens, f"{path}.max_tokens", 0)
    c.at_least(fp.max_iterations, f"{path}.max_iterations", 0)


def _meta(c: _Checker, m: pb.Meta) -> None:
    c.at_least(m.format_version, "meta.format_version", 1)
    if not is_valid_run_id(m.run_id):
        c.fail("meta.run_id", _RUN_ID_RULE)
    if not m.HasField("created_at"):
        c.fail("meta.created_at", "is required")
    low, high = _TIMESTAMP_SECONDS
    if not low <= m.created_at.seconds <= high or not 0 <= m.created_at.nanos <= 999_999_999:
        c.fail("meta.created_at", "is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999999Z")
    if not m.HasField("fingerprint"):
        c.fail("meta.fingerprint", "is required")
    _fingerprint(c, m.fingerprint, "meta.fingerprint")
    _blocks(c, m.prompt, "meta.prompt", _PLAIN_BLOCKS, required=True)
    for key, problem in label_problems(m.labels):
        c.fail(f"meta.labels[{json.dumps(key, ensure_ascii=False)}]" if key else "meta.labels", problem)
    if m.task_id and not is_valid_run_id(m.task_id):
        c.fail("meta.task_id", f"must be empty or a run id: {_RUN_ID_RULE}")


def _assistant(c: _Checker, m: pb.AssistantTurn) -> None:
    c.at_least(m.iteration, "assistant.iteration", 1)
    _blocks(c, m.content, "assistant.content", _ASSISTANT_BLOCKS, required=True)
    c.enum(m.stop_reason, "assistant.stop_reason", pb.StopReason.DESCRIPTOR)
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        c.at_least(getattr(m.usage, name), f"assistant.usage.{name}", 0)


def _user(c: _Checker, m: pb.UserFollowUp) -> None:
    _blocks(c, m.content, "user.content", _PLAIN_BLOCKS, required=True)


def _tool_result(c: _Checker, m: pb.ToolResult) -> None:
    c.tool_use_id(m.tool_use_id, "tool_result.tool_use_id")
    _blocks(c, m.content, "tool_result.content", _PLAIN_BLOCKS, required=False)
    if m.answered_by:
        c.length(m.answered_by, "tool_result.answered_by", 1, 256)
        # Only an out-of-band answer has someone who answered it from outside the worker.
        if not m.remote:
            c.fail("tool_result.answered_by", "is set only on a remote result (an out-of-band answer)")


def _deferral(c: _Checker, m: pb.Deferral) -> None:
    c.tool_use_id(m.tool_use_id, "deferral.tool_use_id")


def _approval(c: _Checker, m: pb.Approval) -> None:
    c.tool_use_id(m.tool_use_id, "approval.tool_use_id")
    c.enum(m.decision, "approval.decision", pb.Decision.DESCRIPTOR)
    c.length(m.approver, "approval.approver", 1, 256)


def _claim(c: _Checker, m: pb.ClaimNotice) -> None:
    c.length(m.worker_id, "claim.worker_id", 1, 256)
    c.at_least(m.pid, "claim.pid", 0)


def _terminal(c: _Checker, m: pb.Terminal) -> None:
    c.enum(m.reason, "terminal.reason", pb.TerminalReason.DESCRIPTOR)


def _reconfigure(c: _Checker, m: pb.Reconfigure) -> None:
    if not m.HasField("fingerprint"):
        c.fail("reconfigure.fingerprint", "is required")
    _fingerprint(c, m.fingerprint, "reconfigure.fingerprint")
    if not m.changed_fields:
        c.fail("reconfigure.changed_fields", "name at least one changed fingerprint field")
    seen: set[str] = set()
    for index, name in enumerate(m.changed_fields):
        where = f"reconfigure.changed_fields[{index}]"
        if name not in _FINGERPRINT_FIELDS:
            c.fail(where, f"{name!r} is not a fingerprint field; use one of {_names(_FINGERPRINT_FIELDS)}")
        if name in seen:
            c.fail(where, f"{name!r} is listed twice")
        seen.add(name)


def _note(c: _Checker, m: pb.Note) -> None:
    if not m.text and not m.data_json:
        c.fail("note", "set text or data_json")
    if m.data_json:
        c.json_text(m.data_json, "note.data_json", want_object=False)


_VALIDATORS: dict[Kind, Callable[[_Checker, Any], None]] = {
    Kind.META: _meta,
    Kind.ASSISTANT: _assistant,
    Kind.USER: _user,
    Kind.TOOL_RESULT: _tool_result,
    Kind.DEFERRAL: _deferral,
    Kind.APPROVAL: _approval,
    Kind.CLAIM: _claim,
    Kind.TERMINAL: _terminal,
    Kind.RECONFIGURE: _reconfigure,
    Kind.NOTE: _note,
}
_MUST_BE_OPTIONAL = frozenset({Kind.NOTE})
_NEVER_OPTIONAL = frozenset({Kind.META, Kind.DEFERRAL})


def validate(record: pb.Record) -> None:
    """Check every field of ``record``; raise one ``InvalidRecordError`` naming the first bad field.

    Field paths are relative to the record, e.g.
    ``assistant.content[2].tool_use.input_json``. Rules that depend on the rest
    of the journal (meta only at seq 1, the format version, which calls are
    open) belong to fold, not here.
    """
    c = _Checker(record.seq)
    if not 1 <= record.seq <= MAX_SEQ:
        c.fail("seq", f"must be at least 1, got {record.seq}")
    kind = kind_of(record)
    if kind in _MUST_BE_OPTIONAL and not record.optional:
        c.fail("optional", f"a {kind} record is always optional; set optional")
    if kind in _NEVER_OPTIONAL and record.optional:
        c.fail("optional", f"a {kind} record is never optional; a reader must not skip it")
    _VALIDATORS[kind](c, getattr(record, kind.value))

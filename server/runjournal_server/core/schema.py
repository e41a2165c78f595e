"""Schema validation by kind: every field of every record, checked on every write and every read.

``validate`` checks a whole record; ``validate_payload`` checks one payload
as the record it will become, so a caller that has a payload and no seq yet
(a Claim's notice, an answer before it has its place) needs no made-up
record. Each refusal is one ``InvalidRecordError`` naming the exact field.
Rules that depend on the rest of the journal (meta only at seq 1, the format
version, which calls are open) belong to fold, not here; the parts of a record
only the server writes (a meta's ``forked_from``, claim and approval records),
valid once stored, are refused on the request path by ``authorship``.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, NoReturn

from google.protobuf.descriptor import EnumDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.errors import InvalidRecordError
from runjournal_server.core.ids import is_valid_run_id
from runjournal_server.core.json_text import json_text_problem, provider_call_disagreement
from runjournal_server.core.kinds import MAX_SEQ, Kind, kind_of


class _Checker:
    """Carries the record's seq so every error names it."""

    def __init__(self, seq: int | None) -> None:
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
_OPENAI_REASONING = ("openai", "reasoning")
_SUMMARY_BLOCKS = _PLAIN_BLOCKS
"""A compaction summary: text, or the provider's opaque compaction block or item; never calls or results."""


def timestamp_problem(timestamp: Timestamp) -> str | None:
    """What makes a Timestamp unusable (outside the range proto JSON can write, or nanos out of range); None if fine.

    For records and request fields alike: a request's timestamp is converted
    to a number the rules compare, and an out-of-range one is the caller's
    INVALID_ARGUMENT, never a server fault.
    """
    low, high = _TIMESTAMP_SECONDS
    if not low <= timestamp.seconds <= high or not 0 <= timestamp.nanos <= 999_999_999:
        return "is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999999Z"
    return None


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
            if use.provider_json:
                c.json_text(use.provider_json, f"{where}.tool_use.provider_json", want_object=True)
                disagreement = provider_call_disagreement(use)
                if disagreement is not None:
                    c.fail(f"{where}.tool_use.provider_json", disagreement)
        elif which == "opaque":
            c.length(block.opaque.provider, f"{where}.opaque.provider", 1, 64)
            c.length(block.opaque.type, f"{where}.opaque.type", 1, 128)
            c.json_text(block.opaque.json, f"{where}.opaque.json", want_object=False)
    if required and count == 0:
        c.fail(path, "needs at least one content block")


def validate_fingerprint(fingerprint: pb.Fingerprint, path: str = "fingerprint") -> None:
    """Check a fingerprint on its own (a Claim's, before it may become a reconfigure record)."""
    _fingerprint(_Checker(None), fingerprint, path)


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
    problem = timestamp_problem(m.created_at)
    if problem is not None:
        c.fail("meta.created_at", problem)
    if not m.HasField("fingerprint"):
        c.fail("meta.fingerprint", "is required")
    _fingerprint(c, m.fingerprint, "meta.fingerprint")
    _blocks(c, m.prompt, "meta.prompt", _PLAIN_BLOCKS, required=True)
    for key, problem in label_problems(m.labels):
        c.fail(f"meta.labels[{json.dumps(key, ensure_ascii=False)}]" if key else "meta.labels", problem)
    if m.task_id and not is_valid_run_id(m.task_id):
        c.fail("meta.task_id", f"must be empty or a run id: {_RUN_ID_RULE}")
    if m.HasField("forked_from"):
        _fork_origin(c, m.forked_from)
    if m.HasField("spawned_by"):
        _spawn_origin(c, m.spawned_by)


def _spawn_origin(c: _Checker, origin: pb.SpawnOrigin) -> None:
    if not is_valid_run_id(origin.run_id):
        c.fail("meta.spawned_by.run_id", _RUN_ID_RULE)
    c.tool_use_id(origin.tool_use_id, "meta.spawned_by.tool_use_id")
    c.at_least(origin.seq, "meta.spawned_by.seq", 1)
    if not is_valid_run_id(origin.root_run_id):
        c.fail("meta.spawned_by.root_run_id", _RUN_ID_RULE)


def _fork_origin(c: _Checker, origin: pb.ForkOrigin) -> None:
    if not is_valid_run_id(origin.run_id):
        c.fail("meta.forked_from.run_id", _RUN_ID_RULE)
    c.at_least(origin.seq, "meta.forked_from.seq", 1)
    if _SHA256_HEX.fullmatch(origin.prefix_sha256) is None:
        c.fail("meta.forked_from.prefix_sha256", "must be 64 lower-case hex digits (a SHA-256)")


def _assistant(c: _Checker, m: pb.AssistantTurn) -> None:
    c.at_least(m.iteration, "assistant.iteration", 1)
    _blocks(c, m.content, "assistant.content", _ASSISTANT_BLOCKS, required=True)
    last = m.content[-1] if m.content else None
    if last is not None and last.HasField("opaque") and (last.opaque.provider, last.opaque.type) == _OPENAI_REASONING:
        # The Responses API refuses a reasoning item sent back without the item it produced; a turn that ends
        # with one was cut short, and its next request would fail with a 400 at the worst moment: refused now.
        c.fail(
            f"assistant.content[{len(m.content) - 1}]",
            "an OpenAI reasoning item must be followed by the item it produced (a function call or a message)",
        )
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
    if m.answered_by_run_id:
        if not is_valid_run_id(m.answered_by_run_id):
            c.fail("tool_result.answered_by_run_id", _RUN_ID_RULE)
        if not m.remote:
            c.fail("tool_result.answered_by_run_id", "is set only on a remote result (a child run's outcome)")


def _deferral(c: _Checker, m: pb.Deferral) -> None:
    c.tool_use_id(m.tool_use_id, "deferral.tool_use_id")
    if m.child_run_id and not is_valid_run_id(m.child_run_id):
        c.fail("deferral.child_run_id", _RUN_ID_RULE)


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


def _compaction(c: _Checker, m: pb.Compaction) -> None:
    c.at_least(m.upto_seq, "compaction.upto_seq", 1)
    if not m.summary:
        c.fail("compaction.summary", "needs at least one message: what replaces the messages it covers")
    for index, message in enumerate(m.summary):
        where = f"compaction.summary[{index}]"
        if message.role not in (pb.Role.ROLE_USER, pb.Role.ROLE_ASSISTANT):
            c.fail(f"{where}.role", "must be ROLE_USER or ROLE_ASSISTANT")
        _blocks(c, message.content, f"{where}.content", _SUMMARY_BLOCKS, required=True)
        if all(_empty_block(block) for block in message.content):
            c.fail(f"{where}.content", "holds only empty blocks; an empty summary would silently drop the conversation")
    c.length(m.provider, "compaction.provider", 0, 64)
    c.length(m.model, "compaction.model", 0, 256)
    c.enum(m.trigger, "compaction.trigger", pb.CompactionTrigger.DESCRIPTOR)
    c.at_least(m.tokens_before, "compaction.tokens_before", 0)
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        c.at_least(getattr(m.usage, name), f"compaction.usage.{name}", 0)


def _empty_block(block: pb.ContentBlock) -> bool:
    """A block that says nothing: empty or blank text, or an opaque block whose JSON is null or empty."""
    which = block.WhichOneof("block")
    if which == "text":
        return not block.text.text.strip()
    if which == "opaque":
        return block.opaque.json.strip() in ("null", '""', "{}", "[]")
    return False


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
    Kind.COMPACTION: _compaction,
}
_MUST_BE_OPTIONAL = frozenset({Kind.NOTE})
_NEVER_OPTIONAL = frozenset({Kind.META, Kind.DEFERRAL, Kind.COMPACTION})


def validate(record: pb.JournalRecord) -> None:
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


def validate_payload(kind: Kind, payload: Message, *, seq: int | None = None) -> None:
    """Check ``payload`` as the ``kind`` record it will become, before it has a seq or a record around it.

    Field paths are as in ``validate`` (``claim.worker_id``); the record-level
    rules (the seq, the optional flag) are checked when the record is built.
    """
    _VALIDATORS[kind](_Checker(seq), payload)

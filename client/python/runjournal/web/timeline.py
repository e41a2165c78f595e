"""A run's journal as a timeline for the run page: one entry per stored record, as ``Read`` sends it.

Pure: the handler reads one page of records (``TIMELINE_PAGE``) and this
turns each into an ``Entry`` of escaped text. Every string comes from a
worker or a model, so it goes through ``views.shown``/``views.blocks`` (control
and bidi characters escaped; the templates' autoescape does the markup).
Who answered or decided is the record's own word: ``answered_by`` and
``approver`` (the server's token name with auth on), a claim's worker id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from runjournal.v1 import records_pb2
from runjournal.web import views
from runjournal.web.views import Block

TIMELINE_PAGE = 100
"""Records per timeline page: a long journal is shown a page at a time, never whole."""
UNKNOWN_LINE_CHARS = 400
"""How much of the stored line of a record of an unknown kind is shown."""


@dataclass(frozen=True)
class Entry:
    """One record: its seq, its kind, a line saying what it is, who it names, and its content."""

    seq: int
    kind: str
    summary: str
    who: str = ""
    blocks: list[Block] = field(default_factory=list)
    optional: bool = False


_Shown = tuple[str, str, list[Block]]
"""What an entry shows of a payload: its summary line, who it names, its content."""


@dataclass(frozen=True)
class TimelinePage:
    """The seqs one page shows and where the neighbouring pages start (0: there is none)."""

    first: int
    last: int
    last_seq: int
    earlier: int
    later: int
    latest: int


def page_of(from_seq: int | None, last_seq: int, size: int = TIMELINE_PAGE) -> TimelinePage:
    """The page starting at ``from_seq`` (clamped into the journal); without one, the newest page."""
    latest = max(1, last_seq - size + 1)
    first = latest if from_seq is None else min(max(1, from_seq), latest)
    last = min(last_seq, first + size - 1)
    return TimelinePage(
        first=first,
        last=last,
        last_seq=last_seq,
        earlier=max(1, first - size) if first > 1 else 0,
        later=min(first + size, latest) if last < last_seq else 0,
        latest=latest,
    )


def _word(enum: object, prefix: str, value: int) -> str:
    return str(enum.Name(value)).removeprefix(prefix).lower()  # type: ignore[attr-defined]


def _model(fingerprint: records_pb2.Fingerprint) -> str:
    return f"{views.shown(fingerprint.provider)}/{views.shown(fingerprint.model)}"


def entry(record: records_pb2.JournalRecord, stored_line: bytes = b"") -> Entry:
    """The timeline entry of one stored record (a kind this client does not know shows its stored line)."""
    kind = record.WhichOneof("payload")
    if kind is None:
        line = stored_line.decode("utf-8", errors="replace")
        return Entry(
            record.seq,
            "unknown",
            "a record of a kind this page does not know",
            "",
            [Block("text", "stored line", views.shown_lines(line, UNKNOWN_LINE_CHARS))],
            record.optional,
        )
    summary, who, blocks = _PAYLOADS[kind](getattr(record, kind))
    return Entry(record.seq, kind, summary, who, blocks, record.optional)


def _meta(meta: records_pb2.Meta) -> _Shown:
    created = meta.created_at.ToDatetime(tzinfo=UTC).isoformat(timespec="seconds")
    parts = [f"run {views.shown(meta.run_id)} created {created}", f"model {_model(meta.fingerprint)}"]
    if meta.task_id:
        parts.append(f"task {views.shown(meta.task_id)}")
    if meta.HasField("forked_from"):
        parts.append(f"forked from {views.shown(meta.forked_from.run_id)} at seq {meta.forked_from.seq}")
    if meta.interactive:
        parts.append("interactive")
    labels = [f"{views.shown(k)}={views.shown(v)}" for k, v in sorted(meta.labels.items())]
    blocks = views.blocks(meta.prompt)
    if labels:
        blocks.insert(0, Block("labels", "labels", labels))
    return ", ".join(parts), "", blocks


def _assistant(turn: records_pb2.AssistantTurn) -> _Shown:
    usage = turn.usage
    summary = (
        f"iteration {turn.iteration}, stop {_word(records_pb2.StopReason, 'STOP_REASON_', turn.stop_reason)}, "
        f"tokens in {usage.input_tokens} out {usage.output_tokens} cache read {usage.cache_read_tokens} "
        f"write {usage.cache_write_tokens}"
    )
    return summary, "", views.blocks(turn.content)


def _user(message: records_pb2.UserFollowUp) -> _Shown:
    return "a follow-up message", "", views.blocks(message.content)


def _tool_result(result: records_pb2.ToolResult) -> _Shown:
    status = "error" if result.is_error else "ok"
    remote = ", out of band" if result.remote else ""
    who = f"answered by {views.shown(result.answered_by)}" if result.answered_by else ""
    blocks = views.blocks(result.content)
    return f"result of [{views.shown(result.tool_use_id)}]: {status}{remote}", who, blocks


def _deferral(deferral: records_pb2.Deferral) -> _Shown:
    waits = "a decision" if deferral.needs_approval else "an answer"
    expected = views.shown(deferral.expected_answerer or "anyone")
    summary = f"[{views.shown(deferral.tool_use_id)}] waits for {waits} from {expected}"
    return summary, "", [Block("text", "reason", views.shown_lines(deferral.reason))]


def _approval(approval: records_pb2.Approval) -> _Shown:
    decision = _word(records_pb2.Decision, "DECISION_", approval.decision)
    blocks = [Block("text", "reason", views.shown_lines(approval.reason))] if approval.reason else []
    return (
        f"[{views.shown(approval.tool_use_id)}] {decision}",
        f"{decision} by {views.shown(approval.approver)}",
        blocks,
    )


def _claim(claim: records_pb2.ClaimNotice) -> _Shown:
    summary = f"claimed on {views.shown(claim.host)} pid {claim.pid}"
    if claim.reason:
        summary += f": {views.shown(claim.reason)}"
    return summary, f"claimed by {views.shown(claim.worker_id)}", []


def _terminal(terminal: records_pb2.Terminal) -> _Shown:
    reason = _word(records_pb2.TerminalReason, "TERMINAL_REASON_", terminal.reason)
    return (
        f"stopped: {reason}",
        "",
        [Block("text", "", views.shown_lines(terminal.message))] if terminal.message else [],
    )


def _reconfigure(change: records_pb2.Reconfigure) -> _Shown:
    changed = ", ".join(views.shown(name) for name in change.changed_fields) or "nothing named"
    return f"the fingerprint changed ({changed}); model {_model(change.fingerprint)} from here on", "", []


def _note(note: records_pb2.Note) -> _Shown:
    blocks = [Block("text", "", views.shown_lines(note.text))]
    if note.data_json:
        blocks.append(Block("data", "data", views.arguments_lines(note.data_json)))
    return "a note", "", blocks


def _compaction(compaction: records_pb2.Compaction) -> _Shown:
    trigger = _word(records_pb2.CompactionTrigger, "COMPACTION_TRIGGER_", compaction.trigger)
    by = f"{views.shown(compaction.provider)}/{views.shown(compaction.model)}" if compaction.model else "hand"
    summary = f"seqs 1..{compaction.upto_seq} summarized ({trigger}, by {by})"
    blocks = [block for message in compaction.summary for block in views.blocks(message.content)]
    return summary, "", blocks


_PAYLOADS: dict[str, Callable[[Any], _Shown]] = {
    "meta": _meta,
    "assistant": _assistant,
    "user": _user,
    "tool_result": _tool_result,
    "deferral": _deferral,
    "approval": _approval,
    "claim": _claim,
    "terminal": _terminal,
    "reconfigure": _reconfigure,
    "note": _note,
    "compaction": _compaction,
}

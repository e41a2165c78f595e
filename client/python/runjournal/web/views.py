"""What the pages show, made from the journal server's messages: plain values for the templates.

Every journal string passes through ``shown`` here: ``safe_text`` escapes the
control, bidi and line-separator characters that would make a person read
something other than what is stored (an RTL override before "deny"), and the
templates' autoescape then makes ``<``, ``&`` and quotes text. Multi-line
text is kept as lines, each escaped on its own, for the template to join.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from runjournal.render import safe_text
from runjournal.v1 import records_pb2, state_pb2

PREVIEW_CHARS = 4000
LAST_MESSAGES = 6
"""How many messages of the conversation a run page shows (the last ones)."""


def shown(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` cut to ``limit`` characters and with unsafe characters escaped (one line: newlines too)."""
    if len(text) > limit:
        text = text[:limit] + f"... ({len(text)} chars)"
    return safe_text(text)


def shown_lines(text: str, limit: int = PREVIEW_CHARS) -> list[str]:
    """``text`` as lines, each escaped on its own (any other line break stays escaped, never honoured)."""
    if len(text) > limit:
        text = text[:limit] + f"... ({len(text)} chars)"
    return [safe_text(line) for line in text.split("\n")]


def arguments_lines(input_json: str) -> list[str]:
    """A call's arguments, pretty-printed when they are JSON (they should be), else as stored."""
    try:
        pretty = json.dumps(json.loads(input_json), indent=2, ensure_ascii=False)
    except ValueError:
        pretty = input_json
    return shown_lines(pretty)


def waited(summary: state_pb2.RunSummary, now: datetime) -> str:
    """How long the run has waited: since its last record was stored (``updated_at``).

    A server that does not fill ``updated_at`` yet gets "unknown" rather than
    a guess (the run's creation time would overstate a wait after a long run).
    """
    if not summary.HasField("updated_at"):
        return "unknown"
    seconds = max(0, int((now - summary.updated_at.ToDatetime(tzinfo=UTC)).total_seconds()))
    return duration(seconds)


def duration(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def waiting_for(value: int) -> str:
    """What a call waits for, as the server said it (``WaitingFor``): "answer", "decision", "worker" or "nothing"."""
    return _enum_word(state_pb2.WaitingFor, "WAITING_FOR_", value)


@dataclass(frozen=True)
class InboxRow:
    """One call waiting for a person, as the inbox lists it."""

    run_id: str
    call_id: str
    tool: str
    arguments: list[str]
    reason: str
    expected: str
    waits_for: str
    waited: str
    last_seq: int


def inbox_rows(
    summaries: Iterable[state_pb2.RunSummary], pending: Mapping[str, state_pb2.PendingBatch | str], now: datetime
) -> list[InboxRow]:
    """Rows for every waiting call of ``summaries``.

    ``pending`` holds each run's pending batch, for the calls' arguments, or
    the refusal its fold met (shown where the arguments would be).
    """
    rows = []
    for summary in summaries:
        batch = pending.get(summary.run_id, "")
        inputs = {} if isinstance(batch, str) else {c.tool_use.id: c.tool_use.input_json for c in batch.calls}
        for call in summary.waiting_calls:
            if call.tool_use_id in inputs:
                arguments = arguments_lines(inputs[call.tool_use_id])
            else:  # refused since the listing, or the call left the batch meanwhile
                arguments = [f"(arguments not available: {batch})" if batch else "(arguments not available)"]
            rows.append(
                InboxRow(
                    run_id=summary.run_id,
                    call_id=call.tool_use_id,
                    tool=shown(call.tool_name),
                    arguments=arguments,
                    reason=shown(call.reason),
                    expected=shown(call.expected_answerer or "anyone"),
                    waits_for=waiting_for(call.waiting_for),
                    waited=waited(summary, now),
                    last_seq=summary.last_seq,
                )
            )
    return rows


@dataclass(frozen=True)
class Block:
    """One content block: a kind and its lines of text."""

    kind: str
    title: str = ""
    lines: list[str] = field(default_factory=list)
    is_error: bool = False


@dataclass(frozen=True)
class Message:
    index: int
    role: str
    blocks: list[Block]


@dataclass(frozen=True)
class CallView:
    """A call of the pending batch with what happened to it so far."""

    call_id: str
    tool: str
    arguments: list[str]
    waiting_for_person: bool
    waits_for: str
    reason: str
    expected: str
    deferral_seq: int
    result: list[Block]
    result_seq: int
    decision: str
    decision_seq: int
    decided_by: str
    decision_reason: str


@dataclass(frozen=True)
class RunView:
    run_id: str
    status: str
    last_seq: int
    model: str
    claimed_by: str
    stopped: str
    messages: list[Message]
    skipped_messages: int
    calls: list[CallView]
    pending_seq: int
    pending_said: list[Block]
    """What the model said in the pending turn besides its calls."""
    compacted: str = ""
    """Where a compaction is in force: what it covers (its summary is message 0); empty otherwise."""


def block(content: records_pb2.ContentBlock) -> Block:
    kind = content.WhichOneof("block")
    if kind == "text":
        return Block("text", lines=shown_lines(content.text.text))
    if kind == "thinking":
        return Block("thinking", "thinking", shown_lines(content.thinking.thinking or "[redacted]"))
    if kind == "tool_use":
        use = content.tool_use
        return Block("tool_use", f"{shown(use.name)} [{shown(use.id)}]", arguments_lines(use.input_json))
    if kind == "tool_result":
        result = content.tool_result
        lines = [line for inner in result.content for line in block(inner).lines]
        return Block("tool_result", f"result of [{shown(result.tool_use_id)}]", lines, result.is_error)
    if kind == "opaque":
        return Block("opaque", f"{shown(content.opaque.provider)} {shown(content.opaque.type)}")
    return Block("empty", "empty block")


def blocks(contents: Sequence[records_pb2.ContentBlock]) -> list[Block]:
    return [block(content) for content in contents]


def _enum_word(enum: object, prefix: str, value: int) -> str:
    return str(enum.Name(value)).removeprefix(prefix).lower()  # type: ignore[attr-defined]


def run_status(value: int) -> str:
    """A run's status as the server said it (``RunStatus``): "open", "suspended", "corrupt", ..."""
    return _enum_word(state_pb2.RunStatus, "RUN_STATUS_", value)


def call_view(call: state_pb2.PendingCall) -> CallView:
    decided = call.decision != records_pb2.DECISION_UNSPECIFIED
    return CallView(
        call_id=call.tool_use.id,
        tool=shown(call.tool_use.name),
        arguments=arguments_lines(call.tool_use.input_json),
        waiting_for_person=call.waiting_for_person,
        waits_for=waiting_for(call.waiting_for),
        reason=shown(call.deferral.reason) if call.deferred else "",
        expected=shown(call.deferral.expected_answerer or "anyone") if call.deferred else "",
        deferral_seq=call.deferral_seq,
        result=blocks(call.result.content) if call.answered else [],
        result_seq=call.result_seq,
        decision=_enum_word(records_pb2.Decision, "DECISION_", call.decision) if decided else "",
        decision_seq=call.approval_seq,
        decided_by=shown(call.approval.approver) if call.HasField("approval") else "",
        decision_reason=shown(call.approval.reason) if call.HasField("approval") else "",
    )


def run_view(state: state_pb2.RunState) -> RunView:
    """The run page of a state folded with ``conversation_from`` (only the last messages in ``conversation``)."""
    stopped = ""
    if state.HasField("terminal"):
        reason = _enum_word(records_pb2.TerminalReason, "TERMINAL_REASON_", state.terminal.reason)
        stopped = f"{reason}: {shown(state.terminal.message)}" if state.terminal.message else reason
    messages = [
        Message(state.conversation_offset + i, _enum_word(records_pb2.Role, "ROLE_", m.role), blocks(m.content))
        for i, m in enumerate(state.conversation)
    ]
    calls = [call_view(call) for call in state.pending.calls] if state.HasField("pending") else []
    return RunView(
        run_id=state.run_id,
        status=run_status(state.status),
        last_seq=state.last_seq,
        model=f"{shown(state.effective_fingerprint.provider)}/{shown(state.effective_fingerprint.model)}",
        claimed_by=shown(state.claimed_by),
        stopped=stopped,
        messages=messages,
        skipped_messages=state.conversation_offset,
        calls=calls,
        pending_seq=state.pending.assistant_seq if state.HasField("pending") else 0,
        pending_said=[b for b in blocks(state.pending.assistant.content) if b.kind != "tool_use"],
        compacted=(
            f"seqs 1..{state.compacted_upto_seq} are summarized by the compaction at seq {state.compaction_seq}"
            if state.compaction_seq
            else ""
        ),
    )

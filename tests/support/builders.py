"""Small builders for journal records, shared by the unit tests.

Each returns a ``JournalRecord`` proto with the given seq; defaults are the boring
valid choice so a test spells out only what it is about. The content blocks
(``text``, ``tool_use``, ``opaque``, ``thinking``) are here too, for tests that
put a block where it may or may not go. ``encoded.py`` holds the same records
as stored (``StoredRecord``), for the backend tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runjournal.v1.records_pb2 import (
    Approval,
    AssistantTurn,
    ClaimNotice,
    Compaction,
    CompactionTrigger,
    ContentBlock,
    ConversationMessage,
    Decision,
    Deferral,
    Fingerprint,
    JournalRecord,
    Meta,
    Note,
    OpaqueBlock,
    Reconfigure,
    Role,
    StopReason,
    Terminal,
    TerminalReason,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    Usage,
    UserFollowUp,
)
from runjournal_server.core.records import FORMAT_VERSION

RUN_ID = "run-1"


def text(value: str) -> ContentBlock:
    return ContentBlock(text=TextBlock(text=value))


def tool_use(call_id: str, name: str = "search", input_json: str = "{}") -> ContentBlock:
    return ContentBlock(tool_use=ToolUseBlock(id=call_id, name=name, input_json=input_json))


def opaque(provider: str = "anthropic", type_: str = "image", value: str = '{"a":1}') -> ContentBlock:
    return ContentBlock(opaque=OpaqueBlock(provider=provider, type=type_, json=value))


def thinking(thought: str = "hmm") -> ContentBlock:
    return ContentBlock(thinking=ThinkingBlock(thinking=thought, signature="sig"))


def fingerprint(**fields: object) -> Fingerprint:
    values: dict[str, object] = {
        "provider": "anthropic",
        "model": "claude-x",
        "system_prompt_sha256": "a" * 64,
        "thinking_mode": "off",
        "tools_sha256": "b" * 64,
        "max_tokens": 4096,
        "max_iterations": 50,
    }
    values.update(fields)
    return Fingerprint(**values)  # type: ignore[arg-type]


def meta(
    seq: int = 1,
    *,
    run_id: str = RUN_ID,
    prompt: str | Sequence[ContentBlock] = "hello",
    format_version: int = FORMAT_VERSION,
    fp: Fingerprint | None = None,
    labels: dict[str, str] | None = None,
    task_id: str = "",
) -> JournalRecord:
    payload = Meta(
        format_version=format_version,
        run_id=run_id,
        fingerprint=fp if fp is not None else fingerprint(),
        prompt=[text(prompt)] if isinstance(prompt, str) else list(prompt),
        labels=labels or {},
        task_id=task_id,
    )
    payload.created_at.FromSeconds(1_700_000_000)
    return JournalRecord(seq=seq, meta=payload)


def assistant(
    seq: int,
    iteration: int,
    calls: Sequence[str] = (),
    *,
    say: str = "",
    thought: str = "",
    stop_reason: StopReason | None = None,
    usage: tuple[int, int, int, int] = (10, 5, 0, 0),
) -> JournalRecord:
    """An assistant turn: a thinking block when ``thought`` is given, its text, then one tool_use block per call id."""
    content = [thinking(thought)] if thought else []
    content += [text(say or f"turn {iteration}")] + [tool_use(call_id) for call_id in calls]
    if stop_reason is None:
        stop_reason = StopReason.STOP_REASON_TOOL_USE if calls else StopReason.STOP_REASON_END_TURN
    inp, out, cache_read, cache_write = usage
    return JournalRecord(
        seq=seq,
        assistant=AssistantTurn(
            iteration=iteration,
            content=content,
            stop_reason=stop_reason,
            usage=Usage(
                input_tokens=inp,
                output_tokens=out,
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
            ),
        ),
    )


def user(seq: int, say: str = "more please") -> JournalRecord:
    return JournalRecord(seq=seq, user=UserFollowUp(content=[text(say)]))


def result(seq: int, call_id: str, say: str = "", *, is_error: bool = False, remote: bool = False) -> JournalRecord:
    return JournalRecord(
        seq=seq,
        tool_result=ToolResult(
            tool_use_id=call_id,
            content=[text(say or f"result of {call_id}")],
            is_error=is_error,
            remote=remote,
        ),
    )


def deferral(seq: int, call_id: str, reason: str = "needs a person", answerer: str = "ops") -> JournalRecord:
    return JournalRecord(seq=seq, deferral=Deferral(tool_use_id=call_id, reason=reason, expected_answerer=answerer))


def approval(seq: int, call_id: str, *, approved: bool = True, approver: str = "alice") -> JournalRecord:
    decision = Decision.DECISION_APPROVED if approved else Decision.DECISION_DENIED
    return JournalRecord(seq=seq, approval=Approval(tool_use_id=call_id, decision=decision, approver=approver))


def claim(seq: int, worker: str = "worker-2") -> JournalRecord:
    return JournalRecord(seq=seq, claim=ClaimNotice(worker_id=worker, host="host", pid=42, reason="resume"))


def terminal(
    seq: int,
    reason: TerminalReason = TerminalReason.TERMINAL_REASON_COMPLETED,
    message: str = "done",
) -> JournalRecord:
    return JournalRecord(seq=seq, terminal=Terminal(reason=reason, message=message))


def reconfigure(seq: int, fp: Fingerprint, changed: Sequence[str] = ("model",)) -> JournalRecord:
    return JournalRecord(seq=seq, reconfigure=Reconfigure(fingerprint=fp, changed_fields=list(changed)))


def note(seq: int, say: str = "progress", *, data_json: str = "") -> JournalRecord:
    return JournalRecord(seq=seq, optional=True, note=Note(text=say, data_json=data_json))


def compaction(
    seq: int,
    upto_seq: int,
    summary: str | Sequence[ContentBlock] = "the story so far",
    *,
    role: Role = Role.ROLE_USER,
    trigger: CompactionTrigger = CompactionTrigger.COMPACTION_TRIGGER_MANUAL,
) -> JournalRecord:
    """A compaction through ``upto_seq`` whose summary is one message (text, or the blocks given)."""
    blocks = [text(summary)] if isinstance(summary, str) else list(summary)
    return JournalRecord(
        seq=seq,
        compaction=Compaction(
            upto_seq=upto_seq,
            summary=[ConversationMessage(role=role, content=blocks)],
            provider="anthropic",
            model="claude-x",
            trigger=trigger,
            tokens_before=1000,
            usage=Usage(input_tokens=900, output_tokens=50),
        ),
    )


@dataclass(frozen=True)
class Stored:
    """A stand-in for ``records.StoredRecord``: what fold and the listing read."""

    seq: int
    kind: str
    optional: bool
    record: JournalRecord | None


def stored(record: JournalRecord) -> Stored:
    kind = record.WhichOneof("payload")
    assert kind is not None
    return Stored(record.seq, kind, record.optional, record)


def unknown(seq: int, kind: str = "future_thing", *, optional: bool = True) -> Stored:
    """A stored record of a protocol id this server does not know."""
    return Stored(seq, kind, optional, None)

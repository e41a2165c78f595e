"""Typed builders for content blocks and journal records.

Record builders return *drafts*: records with their payload set and ``seq``
left at 0, for a run handle (or ``JournalClient.append`` after setting
``seq``) to place. The meta record is the exception: it is always seq 1.

JSON carried as text (tool inputs, opaque blocks, note data) is serialised with
the project's one canonical JSON (``runjournal.fingerprint.canonical_json``:
sorted keys, no insignificant whitespace, portable numbers), so the same call
builds the same bytes in every language and a resent record is recognised as a
duplicate.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any, cast

from google.protobuf import timestamp_pb2

from runjournal.fingerprint import canonical_json
from runjournal.v1 import records_pb2

FORMAT_VERSION = 2
"""The journal format version this client writes in meta records."""

StopReasonLike = int | str
"""A ``StopReason`` value, or its short name: "end_turn", "tool_use", "max_tokens", ..."""
TerminalReasonLike = int | str
"""A ``TerminalReason`` value, or its short name: "completed", "suspended", "error", ..."""
DecisionLike = int | str
"""A ``Decision`` value, or its short name: "approved" or "denied"."""
UsageLike = records_pb2.Usage | Mapping[str, int]
"""A ``Usage`` message, or a mapping of its field names to token counts."""


def enum_value(enum_type: Any, prefix: str, value: int | str) -> int:
    """An enum number from a number or a short name (``"tool_use"`` -> ``STOP_REASON_TOOL_USE``)."""
    if isinstance(value, str):
        name = value.upper()
        if not name.startswith(prefix):
            name = prefix + name
        try:
            return int(enum_type.Value(name))
        except ValueError:
            names: list[str] = list(enum_type.keys())
            known = ", ".join(k.removeprefix(prefix).lower() for k in names if not k.endswith("_UNSPECIFIED"))
            raise ValueError(f"unknown value {value!r}; expected one of: {known}") from None
    return int(value)


def stop_reason_value(value: StopReasonLike) -> records_pb2.StopReason:
    return cast(records_pb2.StopReason, enum_value(records_pb2.StopReason, "STOP_REASON_", value))


def terminal_reason_value(value: TerminalReasonLike) -> records_pb2.TerminalReason:
    return cast(records_pb2.TerminalReason, enum_value(records_pb2.TerminalReason, "TERMINAL_REASON_", value))


def decision_value(value: DecisionLike) -> records_pb2.Decision:
    return cast(records_pb2.Decision, enum_value(records_pb2.Decision, "DECISION_", value))


# --- content blocks -----------------------------------------------------------


def text_block(text: str) -> records_pb2.ContentBlock:
    """A plain text block."""
    return records_pb2.ContentBlock(text=records_pb2.TextBlock(text=text))


def thinking_block(thinking: str, signature: str) -> records_pb2.ContentBlock:
    """A thinking block with the provider's signature, kept verbatim."""
    return records_pb2.ContentBlock(thinking=records_pb2.ThinkingBlock(thinking=thinking, signature=signature))


def redacted_thinking_block(data: str) -> records_pb2.ContentBlock:
    """A redacted thinking block; ``data`` is the provider's payload, kept verbatim."""
    return records_pb2.ContentBlock(thinking=records_pb2.ThinkingBlock(redacted=True, data=data))


def tool_use_block(
    id: str, name: str, input: Mapping[str, Any] | str, *, provider_json: str = ""
) -> records_pb2.ContentBlock:
    """A tool call. A mapping ``input`` (a JSON object) is stored as canonical JSON text; a str is the
    provider's text of the input, kept as written. ``provider_json`` is the provider's own call block or
    item, verbatim, when it holds more than id, name and input (OpenAI's ``function_call`` item)."""
    if isinstance(input, str):
        input_json = input
    elif isinstance(input, Mapping):
        input_json = canonical_json(dict(input))
    else:
        raise TypeError(f"tool input must be a mapping (a JSON object) or its JSON text, got {type(input).__name__}")
    return records_pb2.ContentBlock(
        tool_use=records_pb2.ToolUseBlock(id=id, name=name, input_json=input_json, provider_json=provider_json)
    )


def opaque_block(
    provider: str, type: str, value: Any = None, *, json_text: str | None = None
) -> records_pb2.ContentBlock:
    """A provider-specific block (image, citation, ...) kept as JSON text: ``value`` written as canonical
    JSON, or ``json_text``, the provider's own text, kept byte for byte (give exactly one)."""
    if json_text is None:
        json_text = canonical_json(value)
    elif value is not None:
        raise ValueError("opaque_block: pass either value or json_text, not both")
    return records_pb2.ContentBlock(opaque=records_pb2.OpaqueBlock(provider=provider, type=type, json=json_text))


def content_of(
    content: Sequence[records_pb2.ContentBlock] | None, text: str | None, *, what: str
) -> list[records_pb2.ContentBlock]:
    """Content given either as blocks or as one text; exactly one of the two."""
    if (content is None) == (text is None):
        raise ValueError(f"{what}: pass exactly one of content and text")
    if text is not None:
        return [text_block(text)]
    assert content is not None
    return list(content)


def usage_of(usage: UsageLike | None) -> records_pb2.Usage:
    if usage is None:
        return records_pb2.Usage()
    if isinstance(usage, Mapping):
        return records_pb2.Usage(**usage)
    return usage


def timestamp_of(moment: datetime.datetime) -> timestamp_pb2.Timestamp:
    if moment.tzinfo is None:
        raise ValueError("created_at must be timezone-aware (e.g. datetime.now(timezone.utc))")
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment.astimezone(datetime.UTC))
    return stamp


# --- records ------------------------------------------------------------------


def meta_record(
    run_id: str,
    fingerprint: records_pb2.Fingerprint,
    prompt: Sequence[records_pb2.ContentBlock],
    *,
    labels: Mapping[str, str] | None = None,
    interactive: bool = False,
    task_id: str = "",
    created_at: datetime.datetime | None = None,
) -> records_pb2.JournalRecord:
    """The meta record that creates a run, at seq 1 (``created_at`` defaults to now)."""
    moment = created_at if created_at is not None else datetime.datetime.now(datetime.UTC)
    return records_pb2.JournalRecord(
        seq=1,
        meta=records_pb2.Meta(
            format_version=FORMAT_VERSION,
            run_id=run_id,
            created_at=timestamp_of(moment),
            fingerprint=fingerprint,
            prompt=list(prompt),
            interactive=interactive,
            labels=dict(labels or {}),
            task_id=task_id,
        ),
    )


def assistant_record(
    iteration: int,
    content: Sequence[records_pb2.ContentBlock],
    stop_reason: StopReasonLike,
    usage: UsageLike | None = None,
) -> records_pb2.JournalRecord:
    """A draft ``assistant`` record: one model call."""
    return records_pb2.JournalRecord(
        assistant=records_pb2.AssistantTurn(
            iteration=iteration,
            content=list(content),
            stop_reason=stop_reason_value(stop_reason),
            usage=usage_of(usage),
        )
    )


def tool_result_record(
    tool_use_id: str,
    content: Sequence[records_pb2.ContentBlock] | None = None,
    *,
    text: str | None = None,
    is_error: bool = False,
    remote: bool = False,
) -> records_pb2.JournalRecord:
    """A draft ``tool_result`` record; give the result as ``content`` blocks or as ``text``."""
    return records_pb2.JournalRecord(
        tool_result=records_pb2.ToolResult(
            tool_use_id=tool_use_id,
            content=content_of(content, text, what="tool_result"),
            is_error=is_error,
            remote=remote,
        )
    )


def deferral_record(
    tool_use_id: str, reason: str, expected_answerer: str, *, needs_approval: bool = False
) -> records_pb2.JournalRecord:
    """A draft ``deferral`` record: the call awaits an out-of-band answer. Never optional.

    With ``needs_approval`` the call awaits an operator's decision instead
    (``JournalClient.approve``); once approved the worker runs it, once denied
    the worker answers it with an error result.
    """
    return records_pb2.JournalRecord(
        deferral=records_pb2.Deferral(
            tool_use_id=tool_use_id,
            reason=reason,
            expected_answerer=expected_answerer,
            needs_approval=needs_approval,
        )
    )


def user_record(
    text: str | None = None, *, content: Sequence[records_pb2.ContentBlock] | None = None
) -> records_pb2.JournalRecord:
    """A draft ``user`` record: a free-standing follow-up message."""
    return records_pb2.JournalRecord(user=records_pb2.UserFollowUp(content=content_of(content, text, what="user")))


def terminal_record(reason: TerminalReasonLike, message: str = "") -> records_pb2.JournalRecord:
    """A draft ``terminal`` record: why the run stopped."""
    return records_pb2.JournalRecord(
        terminal=records_pb2.Terminal(reason=terminal_reason_value(reason), message=message)
    )


def note_record(text: str, data: Any = None) -> records_pb2.JournalRecord:
    """A draft ``note`` record (always optional); ``data``, if given, is stored as JSON text."""
    data_json = "" if data is None else canonical_json(data)
    return records_pb2.JournalRecord(optional=True, note=records_pb2.Note(text=text, data_json=data_json))


CompactionTriggerLike = int | str
SummaryLike = str | Sequence[records_pb2.ContentBlock] | Sequence[records_pb2.ConversationMessage]


def compaction_record(
    upto_seq: int,
    summary: SummaryLike,
    *,
    trigger: CompactionTriggerLike,
    provider: str = "",
    model: str = "",
    tokens_before: int = 0,
    usage: UsageLike | None = None,
) -> records_pb2.JournalRecord:
    """A draft ``compaction`` record: from now on the model is sent ``summary`` instead of records 1..``upto_seq``.

    ``summary`` is a text (one user message), content blocks (one user
    message: e.g. the provider's compaction block as an ``opaque_block``), or
    whole messages (to give the role: Anthropic's compaction block is in an
    assistant message). ``trigger``: "manual", "auto" or "provider".
    """
    if isinstance(summary, str):
        messages = [records_pb2.ConversationMessage(role=records_pb2.ROLE_USER, content=[text_block(summary)])]
    elif all(isinstance(item, records_pb2.ConversationMessage) for item in summary):
        messages = list(summary)  # type: ignore[arg-type]
    else:
        messages = [records_pb2.ConversationMessage(role=records_pb2.ROLE_USER, content=summary)]  # type: ignore[arg-type]
    return records_pb2.JournalRecord(
        compaction=records_pb2.Compaction(
            upto_seq=upto_seq,
            summary=messages,
            provider=provider,
            model=model,
            trigger=enum_value(records_pb2.CompactionTrigger, "COMPACTION_TRIGGER_", trigger),  # type: ignore[arg-type]
            tokens_before=tokens_before,
            usage=usage_of(usage),
        )
    )


def approval_record(
    tool_use_id: str, decision: DecisionLike, approver: str, reason: str = ""
) -> records_pb2.JournalRecord:
    """A draft ``approval`` record: an operator's decision on a call of the open turn."""
    return records_pb2.JournalRecord(
        approval=records_pb2.Approval(
            tool_use_id=tool_use_id,
            decision=decision_value(decision),
            approver=approver,
            reason=reason,
        )
    )

"""Compaction: where a summary may replace the conversation, and the conversation it leaves. Pure.

A ``compaction`` record (journal format 2) says: from here on, the model is
sent ``summary`` instead of the messages of records 1..``upto_seq``. The
journal keeps every record, so the fold keeps two conversations once a run
has compacted: the whole one (``uncompacted``, for audit and export) and the
compacted one, which every later record extends as the whole one.

Where it may cut: only between two messages, and never between a call and
its result. A tool result without its call, or a call without its result, is
refused by both providers' APIs, and a summary that swallowed half of a turn
is how client-side compaction loses work (LangChain's orphan results); so
the fold refuses such a point at Append and names the call. A point inside
one user message (follow-ups merge into the message before them) is refused
too: half of a message cannot be summarized.

Each message of the whole conversation carries the seqs of the first and the
last record that built it (``starts``, ``ends``; an assistant message with
calls ends at its last result, so the pair is one unit), which is all the
check needs: O(calls) once per compaction, nothing per ordinary record.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runjournal.v1.records_pb2 import ContentBlock, ConversationMessage, Role
from runjournal_server.core.turns import Call, Turn


@dataclass(slots=True)
class Compacted:
    """The compaction in force: its seq, what it covers, and the conversation the model is sent."""

    seq: int
    upto: int
    view: list[ConversationMessage]
    """The summary's messages, then the messages of the records after ``upto``, merged as the fold merges."""

    def copy(self) -> Compacted:
        return Compacted(self.seq, self.upto, list(self.view))

    def covers(self, turn: Turn) -> bool:
        """Whether the turn's messages are in the summary (the turn began at or before ``upto``)."""
        return turn.seq <= self.upto


def append_user(messages: list[ConversationMessage], content: Iterable[ContentBlock]) -> bool:
    """Add a user message's content: merged into a trailing user message (True), or as a new message.

    Model APIs refuse two user messages in a row. The merged message is a new
    one, never the last extended in place: messages are shared between the
    fold, its copies and the compacted conversation.
    """
    if messages and messages[-1].role == Role.ROLE_USER:
        merged = ConversationMessage(role=Role.ROLE_USER, content=messages[-1].content)
        merged.content.extend(content)
        messages[-1] = merged
        return True
    messages.append(ConversationMessage(role=Role.ROLE_USER, content=content))
    return False


def cut_problem(
    upto: int,
    *,
    last_seq: int,
    in_force: Compacted | None,
    calls: Iterable[Call],
    starts: Sequence[int],
    ends: Sequence[int],
) -> str | None:
    """Why records 1..``upto`` cannot be replaced by a summary now, or None when they can."""
    if upto > last_seq:
        return f"upto_seq {upto} is beyond the journal's last seq {last_seq}; a compaction covers stored records"
    if in_force is not None and upto < in_force.upto:
        return (
            f"upto_seq {upto} is below the compaction in force (seq {in_force.seq}, through seq {in_force.upto}); "
            "a newer compaction must reach at least as far"
        )
    for call in calls:  # journal order
        if call.assistant_seq <= upto and not 0 < call.result_seq <= upto:
            where = f"at seq {call.result_seq}" if call.result_seq else "that it does not have yet"
            return (
                f"compacting through seq {upto} would separate call {call.tool_use.id!r} (asked at seq "
                f"{call.assistant_seq}) from its result {where}; compact before the call or after its result"
            )
    index = bisect.bisect_right(starts, upto) - 1
    if index >= 0 and ends[index] > upto:
        return (
            f"seq {upto} falls inside the user message built from seqs {starts[index]}..{ends[index]} (a follow-up "
            f"merges into the user message before it); compact through seq {ends[index]} or before seq "
            f"{starts[index]}"
        )
    return None


def compacted_view(
    summary: Iterable[ConversationMessage],
    conversation: Sequence[ConversationMessage],
    starts: Sequence[int],
    upto: int,
) -> list[ConversationMessage]:
    """The conversation the model is sent after compacting through ``upto``: the summary, then what came after."""
    view = [ConversationMessage(role=message.role, content=message.content) for message in summary]
    for message, start in zip(conversation, starts, strict=True):
        if start <= upto:
            continue
        if message.role == Role.ROLE_USER:
            append_user(view, message.content)
        else:
            view.append(message)
    return view

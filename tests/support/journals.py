"""Hypothesis strategies for random valid journals, shared by the unit tests.

``valid_journals()`` builds journals the way real workers write them: a meta,
turns with 0-4 calls, results in any order, deferrals and approvals on
unanswered calls, claims anywhere (also between a turn and its results),
notes, terminals (also before the results of a pending batch), follow-ups and
reconfigures. Every journal it draws must fold without error.
"""

from __future__ import annotations

from hypothesis import strategies as st

from runjournal.v1.records_pb2 import JournalRecord, StopReason, TerminalReason
from tests.support import builders as b

TERMINAL_REASONS = [
    TerminalReason.TERMINAL_REASON_COMPLETED,
    TerminalReason.TERMINAL_REASON_SUSPENDED,
    TerminalReason.TERMINAL_REASON_ERROR,
    TerminalReason.TERMINAL_REASON_BUDGET,
    TerminalReason.TERMINAL_REASON_MAX_ITERATIONS,
    TerminalReason.TERMINAL_REASON_CANCELLED,
]
"""Every terminal reason but unspecified."""
STOP_REASONS = [
    StopReason.STOP_REASON_UNSPECIFIED,
    StopReason.STOP_REASON_END_TURN,
    StopReason.STOP_REASON_TOOL_USE,
    StopReason.STOP_REASON_MAX_TOKENS,
    StopReason.STOP_REASON_STOP_SEQUENCE,
    StopReason.STOP_REASON_PAUSE_TURN,
    StopReason.STOP_REASON_REFUSAL,
]

_IDLE_ACTIONS = ["assistant", "assistant", "assistant", "user", "claim", "note", "terminal", "reconfigure"]
_PENDING_ACTIONS = [
    "result",
    "result",
    "result",
    "deferral",
    "approval",
    "claim",
    "note",
    "terminal",
    "reconfigure",
]


@st.composite
def valid_journals(draw: st.DrawFn, max_records: int = 40) -> list[JournalRecord]:
    """A random valid journal of 1 to ``max_records`` records."""
    records = [b.meta(prompt=draw(st.text(max_size=8)))]
    iteration = 0
    next_call = 0
    unanswered: list[str] = []
    deferred: set[str] = set()
    decided: set[str] = set()
    for seq in range(2, draw(st.integers(1, max_records)) + 1):
        action = draw(st.sampled_from(_PENDING_ACTIONS if unanswered else _IDLE_ACTIONS))
        if action == "deferral" and not set(unanswered) - deferred:
            action = "result"
        if action == "approval" and not set(unanswered) - decided:
            action = "result"
        if action == "assistant":
            iteration += draw(st.integers(1, 2))
            calls = [f"toolu_{next_call + i}" for i in range(draw(st.integers(0, 4)))]
            next_call += len(calls)
            usage = draw(st.tuples(*[st.integers(0, 1000)] * 4))
            stop = draw(st.sampled_from(STOP_REASONS))
            records.append(b.assistant(seq, iteration, calls, stop_reason=stop, usage=usage))
            unanswered = list(calls)
        elif action == "result":
            call_id = draw(st.sampled_from(unanswered))
            unanswered.remove(call_id)
            records.append(
                b.result(
                    seq,
                    call_id,
                    draw(st.text(max_size=6)),
                    is_error=draw(st.booleans()),
                    remote=draw(st.booleans()),
                )
            )
        elif action == "deferral":
            call_id = draw(st.sampled_from(sorted(set(unanswered) - deferred)))
            deferred.add(call_id)
            records.append(b.deferral(seq, call_id))
        elif action == "approval":
            call_id = draw(st.sampled_from(sorted(set(unanswered) - decided)))
            decided.add(call_id)
            records.append(b.approval(seq, call_id, approved=draw(st.booleans())))
        elif action == "user":
            records.append(b.user(seq, draw(st.text(max_size=8))))
        elif action == "claim":
            records.append(b.claim(seq, draw(st.sampled_from(["w1", "w2", "w3"]))))
        elif action == "note":
            records.append(b.note(seq))
        elif action == "terminal":
            records.append(b.terminal(seq, draw(st.sampled_from(TERMINAL_REASONS)), draw(st.text(max_size=6))))
        else:
            model = draw(st.sampled_from(["m1", "m2", "m3"]))
            records.append(b.reconfigure(seq, b.fingerprint(model=model)))
    return records


def renumbered(record: JournalRecord, seq: int) -> JournalRecord:
    """A copy of ``record`` at ``seq``."""
    copy = JournalRecord()
    copy.CopyFrom(record)
    copy.seq = seq
    return copy


@st.composite
def stored_journals(draw: st.DrawFn, max_records: int = 40) -> list[b.Stored]:
    """A valid journal as stored records, with unknown optional records inserted anywhere after the meta."""
    records = draw(valid_journals(max_records))
    out: list[b.Stored] = [b.stored(records[0])]
    for record in records[1:]:
        for _ in range(draw(st.integers(0, 1))):
            out.append(b.unknown(len(out) + 1))
        out.append(b.stored(renumbered(record, len(out) + 1)))
    if draw(st.booleans()):
        out.append(b.unknown(len(out) + 1))
    return out

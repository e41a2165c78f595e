"""Readable text views for people: a folded run (``runjournal runs show``), the inbox (``runjournal inbox``),
one line per record (``runjournal runs watch``) and the inbox's changes (``runjournal inbox --watch``).

Everything in a journal was written by a worker or a model, so every journal
string shown here passes through ``safe_text`` first: a raw newline in a
deferral reason forged inbox rows, an escape sequence rewrote the terminal and
an RTL override reversed what a person read before approving. The views add
their own newlines between the escaped pieces, never inside them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from runjournal.v1 import records_pb2, state_pb2

PREVIEW_CHARS = 2000
LINE_PREVIEW_CHARS = 200
"""How much of a text one line of ``render_record`` shows."""

_UNSAFE = re.compile(
    "["
    "\x00-\x1f\x7f"  # C0 controls (newline, tab and escape included) and DEL
    "\x80-\x9f"  # C1 controls (0x9b is a one-byte CSI on some terminals)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    "\u2028\u2029"  # line and paragraph separators: line breaks to some terminals and pagers
    "]"
)


def safe_text(text: str) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\u202e``), safe to put on a terminal.

    Everything else, including other scripts and emoji, is kept as written.
    """
    return _UNSAFE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def render_tree(run_id: str, tree: Iterable[state_pb2.RunSummary]) -> str:
    """The child runs spawned under ``run_id`` (from ``tree``, the runs of its root), indented, with status."""
    children: dict[str, list[state_pb2.RunSummary]] = {}
    for summary in tree:
        children.setdefault(summary.spawned_by_run_id, []).append(summary)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for child in sorted(children.get(parent, []), key=lambda s: s.run_id):
            lines.append(f"{'    ' * depth}└─ {safe_text(child.run_id)}  {_status(child.status)}")
            walk(child.run_id, depth + 1)

    walk(run_id, 1)
    return "\n".join([f"child runs of {safe_text(run_id)}:", *lines] if lines else [])


def render_state(state: state_pb2.RunState) -> str:
    """The conversation, the pending batch, the counters and the status, as text."""
    origin = state.meta.spawned_by
    spawned = (
        [
            f"spawned by run {safe_text(origin.run_id)} for call {safe_text(origin.tool_use_id)} "
            f"(root {safe_text(origin.root_run_id)})"
        ]
        if origin.run_id
        else []
    )
    lines = [
        *spawned,
        f"run {safe_text(state.run_id)}  status {_status(state.status)}  last seq {state.last_seq}  "
        f"next iteration {state.next_iteration}",
        f"model {safe_text(state.effective_fingerprint.provider)}/{safe_text(state.effective_fingerprint.model)}"
        + (f"  claimed by {safe_text(state.claimed_by)} (token {state.claim_token})" if state.claimed_by else ""),
        "",
    ]
    if state.compaction_seq:
        shown = "the whole conversation is shown (--uncompacted)" if state.uncompacted else "the summary comes first"
        lines += [
            f"compacted: seqs 1..{state.compacted_upto_seq} by the compaction at seq {state.compaction_seq}; {shown}",
            "",
        ]
    for index, message in enumerate(state.conversation):
        role = records_pb2.Role.Name(message.role).removeprefix("ROLE_").lower()
        lines.append(f"[{index}] {role}")
        lines.extend("    " + line for block in message.content for line in _block(block))
    if state.HasField("pending"):
        lines.append("")
        lines.append(f"pending batch (iteration {state.pending.iteration}, seq {state.pending.assistant_seq}):")
        waiting = []
        for call in state.pending.calls:
            marks = []
            if call.answered:
                marks.append(f"answered at seq {call.result_seq}")
            if call.deferred:
                needs = " (needs approval)" if call.deferral.needs_approval else ""
                marks.append(f"deferred at seq {call.deferral_seq}{needs}: {safe_text(call.deferral.reason)}")
            if call.decision:
                marks.append(_decision(call))
            if call.child_run_id:
                marks.append(f"delegated to child run {safe_text(call.child_run_id)} ({_status(call.child_status)})")
            if call.result.answered_by_run_id:
                marks.append(f"answered by child run {safe_text(call.result.answered_by_run_id)}")
            lines.append(f"    {_call(call.tool_use)}: {', '.join(marks) or 'waiting'}")
            if call.waiting_for_person:
                waiting.append(call)
        if waiting:
            lines.append("")
            lines.append("waiting for a person:")
            for call in waiting:  # what each waits for is the server's word (PendingCall.waiting_for)
                article = "a" if call.waiting_for == state_pb2.WAITING_FOR_DECISION else "an"
                lines.append(
                    f"    {_call(call.tool_use)}: waits for {article} {_waiting_for(call.waiting_for)} from "
                    f"{safe_text(call.deferral.expected_answerer or 'anyone')}: {safe_text(call.deferral.reason)}"
                )
                lines.append(f"        {_how_to(call.waiting_for, state.run_id, call.tool_use.id)}")
    if state.HasField("terminal"):
        reason = records_pb2.TerminalReason.Name(state.terminal.reason).removeprefix("TERMINAL_REASON_").lower()
        lines.append("")
        lines.append(f"stopped: {reason}: {safe_text(state.terminal.message)}")
    c = state.counters
    lines.append("")
    lines.append(
        f"llm calls {c.llm_calls}, tool calls {c.tool_calls} ({c.remote_tool_calls} remote), deferrals "
        f"{c.deferrals}, tokens in {c.input_tokens} out {c.output_tokens} cache read {c.cache_read_tokens} "
        f"write {c.cache_write_tokens}"
    )
    return "\n".join(lines)


INBOX_HEADER = f"{'RUN':<40} {'CALL':<24} {'TOOL':<16} {'WAITING FOR':<11} {'EXPECTED':<16} REASON"


def inbox_row(run_id: str, call: state_pb2.WaitingCall, root_run_id: str = "") -> str:
    """One call waiting for a person, in the inbox's columns; a child run's row names its root after the reason."""
    # Escaped before padding, so the columns count what is shown.
    root = f"  (sub-agent of {safe_text(root_run_id)})" if root_run_id else ""
    return (
        f"{safe_text(run_id):<40} {safe_text(call.tool_use_id):<24} {safe_text(call.tool_name):<16} "
        f"{_waiting_for(call.waiting_for):<11} {safe_text(call.expected_answerer or '-'):<16} "
        f"{safe_text(call.reason)}{root}"
    )


def render_inbox(runs: Iterable[state_pb2.RunSummary]) -> str:
    """One line per call waiting for a person, run by run (newest first), with what to run next."""
    lines = [INBOX_HEADER]
    count = 0
    for run in runs:
        for call in run.waiting_calls:
            count += 1
            lines.append(inbox_row(run.run_id, call, run.root_run_id))
    if not count:
        return "nothing waits for a person"
    lines.append("")
    lines.append(f"{count} call{'s' if count != 1 else ''} waiting for a person")
    lines.append(f"  {_how_to(state_pb2.WAITING_FOR_ANSWER, 'RUN', 'CALL')}")
    lines.append(f"  {_how_to(state_pb2.WAITING_FOR_DECISION, 'RUN', 'CALL')}")
    return "\n".join(lines)


def inbox_changes(
    run_id: str, before: Iterable[state_pb2.WaitingCall], after: Iterable[state_pb2.WaitingCall]
) -> list[str]:
    """What changed in one run's waiting calls: ``+`` and a row for a call that waits now, ``-`` for one that
    no longer does (answered, decided, or the run left the inbox)."""
    old = {call.tool_use_id: call for call in before}
    new = {call.tool_use_id: call for call in after}
    lines = [f"- {safe_text(run_id)} {safe_text(call_id)}: no longer waits" for call_id in old if call_id not in new]
    lines += [f"+ {inbox_row(run_id, call)}" for call_id, call in new.items() if old.get(call_id) != call]
    return lines


def render_record(seq: int, record: records_pb2.JournalRecord) -> str:
    """One journal record on one line: its seq, its kind and what it says (previewed, escaped)."""
    kind = record.WhichOneof("payload")
    return f"{seq:>6} {kind or '(unknown kind)':<11} {_record_gist(record, kind)}".rstrip()


def _record_gist(record: records_pb2.JournalRecord, kind: str | None) -> str:
    if kind == "meta":
        meta = record.meta
        fork = meta.forked_from
        origin = f"  forked from {safe_text(fork.run_id)} at seq {fork.seq}" if meta.HasField("forked_from") else ""
        return f"run {safe_text(meta.run_id)} {safe_text(meta.fingerprint.provider)}/" + (
            f"{safe_text(meta.fingerprint.model)}{origin}"
        )
    if kind == "assistant":
        stop = records_pb2.StopReason.Name(record.assistant.stop_reason).removeprefix("STOP_REASON_").lower()
        return f"iteration {record.assistant.iteration} ({stop}): {_blocks(record.assistant.content)}"
    if kind == "user":
        return _blocks(record.user.content)
    if kind == "tool_result":
        result = record.tool_result
        status = "error" if result.is_error else "ok"
        by = f" by {safe_text(result.answered_by)}" if result.answered_by else ""
        return f"[{safe_text(result.tool_use_id)}] {status}{by}: {_blocks(result.content)}"
    if kind == "deferral":
        deferral = record.deferral
        needs = " needs approval" if deferral.needs_approval else ""
        return f"[{safe_text(deferral.tool_use_id)}]{needs}: {safe_text(_short(deferral.reason))}"
    if kind == "approval":
        approval = record.approval
        decision = records_pb2.Decision.Name(approval.decision).removeprefix("DECISION_").lower()
        return f"[{safe_text(approval.tool_use_id)}] {decision} by {safe_text(approval.approver)}" + (
            f": {safe_text(_short(approval.reason))}" if approval.reason else ""
        )
    if kind == "claim":
        claim = record.claim
        return f"by {safe_text(claim.worker_id)} on {safe_text(claim.host)} pid {claim.pid}" + (
            f": {safe_text(claim.reason)}" if claim.reason else ""
        )
    if kind == "terminal":
        reason = records_pb2.TerminalReason.Name(record.terminal.reason).removeprefix("TERMINAL_REASON_").lower()
        return f"{reason}: {safe_text(_short(record.terminal.message))}"
    if kind == "reconfigure":
        return "changed " + safe_text(", ".join(record.reconfigure.changed_fields))
    if kind == "note":
        return safe_text(_short(record.note.text))
    return ""


def _blocks(blocks: Iterable[records_pb2.ContentBlock]) -> str:
    """Content blocks on one line: newlines are escaped with everything else (``safe_text``)."""
    shown = []
    for block in blocks:
        kind = block.WhichOneof("block")
        if kind == "text":
            shown.append(safe_text(_short(block.text.text)))
        elif kind == "tool_use":
            shown.append(f"-> {safe_text(block.tool_use.name)} [{safe_text(block.tool_use.id)}]")
        else:
            shown.append(f"({kind or 'empty block'})")
    return " ".join(shown)


def _waiting_for(what: int) -> str:
    return state_pb2.WaitingFor.Name(what).removeprefix("WAITING_FOR_").lower()


def _how_to(what: int, run_id: str, call_id: str) -> str:
    run_id, call_id = safe_text(run_id), safe_text(call_id)
    if what == state_pb2.WAITING_FOR_DECISION:
        return f"decide: runjournal approve {run_id} {call_id} --approve|--deny [--reason TEXT]"
    return f"answer: runjournal answer {run_id} {call_id} --result TEXT"


def _decision(call: state_pb2.PendingCall) -> str:
    text = records_pb2.Decision.Name(call.decision).removeprefix("DECISION_").lower()
    if call.HasField("approval"):
        text += f" at seq {call.approval_seq} by {safe_text(call.approval.approver)}"
        if call.approval.reason:
            text += f": {safe_text(call.approval.reason)}"
    return text


def _status(status: int) -> str:
    return state_pb2.RunStatus.Name(status).removeprefix("RUN_STATUS_").lower()


def _block(block: records_pb2.ContentBlock) -> list[str]:
    kind = block.WhichOneof("block")
    if kind == "text":
        # Split on newlines only, then escape each line: any other line break (\r, \x0b, \x85, U+2028, ...)
        # is shown escaped, never honoured.
        return [safe_text(line) for line in _preview(block.text.text).split("\n")]
    if kind == "thinking":
        return ["(thinking) " + safe_text(_preview(block.thinking.thinking or "[redacted]"))]
    if kind == "tool_use":
        use = block.tool_use
        return [f"-> {safe_text(use.name)} [{safe_text(use.id)}] {safe_text(_preview(use.input_json))}"]
    if kind == "tool_result":
        result = block.tool_result
        status = "error" if result.is_error else "ok"
        body = [line for inner in result.content for line in _block(inner)]
        return [f"<- [{safe_text(result.tool_use_id)}] {status}"] + ["   " + line for line in body]
    if kind == "opaque":  # its JSON previewed as a call's input is: a session store's entries are read here
        opaque = block.opaque
        return [f"({safe_text(opaque.provider)} {safe_text(opaque.type)}) {safe_text(_preview(opaque.json))}"]
    return ["(empty block)"]


def _call(use: records_pb2.ToolUseBlock) -> str:
    return f"{safe_text(use.id)} {safe_text(use.name)}"


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"... ({len(text)} chars)"


def _short(text: str) -> str:
    return text if len(text) <= LINE_PREVIEW_CHARS else text[:LINE_PREVIEW_CHARS] + f"... ({len(text)} chars)"

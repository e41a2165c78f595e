"""Readable text views for people: a folded run (``runjournal runs show``) and the inbox (``runjournal inbox``)."""

from __future__ import annotations

from collections.abc import Iterable

from runjournal.v1 import records_pb2, state_pb2

PREVIEW_CHARS = 2000


def render_state(state: state_pb2.RunState) -> str:
    """The conversation, the pending batch, the counters and the status, as text."""
    lines = [
        f"run {state.run_id}  status {_status(state.status)}  last seq {state.last_seq}  "
        f"next iteration {state.next_iteration}",
        f"model {state.effective_fingerprint.provider}/{state.effective_fingerprint.model}"
        + (f"  claimed by {state.claimed_by} (token {state.claim_token})" if state.claimed_by else ""),
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
                marks.append(f"deferred at seq {call.deferral_seq}{needs}: {call.deferral.reason}")
            if call.decision:
                marks.append(_decision(call))
            lines.append(f"    {call.tool_use.id} {call.tool_use.name}: {', '.join(marks) or 'waiting'}")
            if call.waiting_for_person:
                waiting.append(call)
        if waiting:
            lines.append("")
            lines.append("waiting for a person:")
            for call in waiting:
                what = state_pb2.WAITING_FOR_DECISION if call.deferral.needs_approval else state_pb2.WAITING_FOR_ANSWER
                article = "a" if what == state_pb2.WAITING_FOR_DECISION else "an"
                lines.append(
                    f"    {call.tool_use.id} {call.tool_use.name}: waits for {article} {_waiting_for(what)} from "
                    f"{call.deferral.expected_answerer or 'anyone'}: {call.deferral.reason}"
                )
                lines.append(f"        {_how_to(what, state.run_id, call.tool_use.id)}")
    if state.HasField("terminal"):
        reason = records_pb2.TerminalReason.Name(state.terminal.reason).removeprefix("TERMINAL_REASON_").lower()
        lines.append("")
        lines.append(f"stopped: {reason}: {state.terminal.message}")
    c = state.counters
    lines.append("")
    lines.append(
        f"llm calls {c.llm_calls}, tool calls {c.tool_calls} ({c.remote_tool_calls} remote), deferrals "
        f"{c.deferrals}, tokens in {c.input_tokens} out {c.output_tokens} cache read {c.cache_read_tokens} "
        f"write {c.cache_write_tokens}"
    )
    return "\n".join(lines)


def render_inbox(runs: Iterable[state_pb2.RunSummary]) -> str:
    """One line per call waiting for a person, run by run (newest first), with what to run next."""
    lines = [f"{'RUN':<40} {'CALL':<24} {'TOOL':<16} {'WAITING FOR':<11} {'EXPECTED':<16} REASON"]
    count = 0
    for run in runs:
        for call in run.waiting_calls:
            count += 1
            lines.append(
                f"{run.run_id:<40} {call.tool_use_id:<24} {call.tool_name:<16} {_waiting_for(call.waiting_for):<11} "
                f"{call.expected_answerer or '-':<16} {call.reason}"
            )
    if not count:
        return "nothing waits for a person"
    lines.append("")
    lines.append(f"{count} call{'s' if count != 1 else ''} waiting for a person")
    lines.append(f"  {_how_to(state_pb2.WAITING_FOR_ANSWER, 'RUN', 'CALL')}")
    lines.append(f"  {_how_to(state_pb2.WAITING_FOR_DECISION, 'RUN', 'CALL')}")
    return "\n".join(lines)


def _waiting_for(what: int) -> str:
    return state_pb2.WaitingFor.Name(what).removeprefix("WAITING_FOR_").lower()


def _how_to(what: int, run_id: str, call_id: str) -> str:
    if what == state_pb2.WAITING_FOR_DECISION:
        return f"decide: runjournal approve {run_id} {call_id} --approve|--deny [--reason TEXT]"
    return f"answer: runjournal answer {run_id} {call_id} --result TEXT"


def _decision(call: state_pb2.PendingCall) -> str:
    text = records_pb2.Decision.Name(call.decision).removeprefix("DECISION_").lower()
    if call.HasField("approval"):
        text += f" at seq {call.approval_seq} by {call.approval.approver}"
        if call.approval.reason:
            text += f": {call.approval.reason}"
    return text


def _status(status: int) -> str:
    return state_pb2.RunStatus.Name(status).removeprefix("RUN_STATUS_").lower()


def _block(block: records_pb2.ContentBlock) -> list[str]:
    kind = block.WhichOneof("block")
    if kind == "text":
        return _preview(block.text.text).splitlines() or [""]
    if kind == "thinking":
        return ["(thinking) " + _preview(block.thinking.thinking or "[redacted]")]
    if kind == "tool_use":
        return [f"-> {block.tool_use.name} [{block.tool_use.id}] {_preview(block.tool_use.input_json)}"]
    if kind == "tool_result":
        result = block.tool_result
        status = "error" if result.is_error else "ok"
        body = [line for inner in result.content for line in _block(inner)]
        return [f"<- [{result.tool_use_id}] {status}"] + ["   " + line for line in body]
    if kind == "opaque":
        return [f"({block.opaque.provider} {block.opaque.type})"]
    return ["(empty block)"]


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"... ({len(text)} chars)"

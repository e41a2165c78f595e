"""A run's journal as OpenTelemetry GenAI spans, planned in plain values (``runjournal export otel`` sends them).

The spans follow OpenTelemetry's GenAI semantic conventions (development
status, names as of semantic-conventions 1.41 / opentelemetry-semantic-conventions 0.66b2):

- one ``invoke_agent`` span (INTERNAL) for the run: the provider and model it
  started with, the run's token totals from its fold, its status;
- one ``chat {model}`` span (CLIENT) per assistant record (one model call),
  a child of the run's span: ``gen_ai.usage.*`` from the record's usage, the
  finish reason, the model in force (a ``reconfigure`` record changes it);
- one ``execute_tool {name}`` span (INTERNAL) per tool call, a child of the run's
  span, ending with the call's result (an error result is an error span); a
  call without a result ends with the journal, and ``runjournal.tool.status``
  says what the server's fold says it waits for (``TOOL_STATUS``).

The spans map records one to one; nothing here folds the journal again:
what a rule decides (totals, status, what a call waits for) comes from the
server's fold (``RunState``) as of the last record read.

Ids are derived, not random: the trace id from the run id, each span id from
(run id, seq of its record, and the call id for a tool span). Exporting a run
twice sends the same spans again, which a backend keeps once; exporting it
after it grew adds only the new spans (and the run's span again, now longer).
A forked run's span links to its source run's span.

Times: a journal records no time but the run's creation (``meta.created_at``),
so span times are positions, not measurements. The record at seq N takes the
millisecond slot starting at created_at + (N - 1) ms; a chat span is its
record's slot, a tool span runs from its call's slot to the end of its
result's slot, the run's span covers every slot. Order and nesting are true,
durations are not (every span says so in ``runjournal.timing``).

Message content (prompts, model output, tool arguments and results) is
planned only with ``content``; without it the spans carry ids, names, numbers
and reasons only. Nothing here imports OpenTelemetry or the server.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from runjournal.v1 import records_pb2, state_pb2

SLOT_NANOS = 1_000_000
"""The time slot of one record: 1 ms (see the module docstring: positions, not measurements)."""
TIMING = "journal_order"
"""The value of ``runjournal.timing`` on every span: its times come from seq order, not from clocks."""

Attributes = dict[str, str | int | bool | Sequence[str]]


@dataclass(frozen=True)
class PlannedSpan:
    """A span to send, in plain values (no OpenTelemetry types, so planning needs none installed)."""

    name: str
    span_id: int
    parent_id: int | None
    kind: str  # "internal" or "client"
    start_ns: int
    end_ns: int
    attributes: Attributes
    error: str | None = None
    """The status description of an error span; None for an unset status."""
    links: tuple[tuple[int, int], ...] = ()
    """(trace id, span id) pairs."""


@dataclass(frozen=True)
class RunTrace:
    trace_id: int
    spans: list[PlannedSpan]


def trace_id_of(run_id: str) -> int:
    return _derived(16, "trace", run_id)


def span_id_of(run_id: str, seq: int, call_id: str = "") -> int:
    return _derived(8, "span", run_id, str(seq), call_id)


def _derived(size: int, *parts: str) -> int:
    digest = hashlib.sha256("\0".join(("runjournal.v1", *parts)).encode()).digest()
    return int.from_bytes(digest[:size], "big") or 1  # an all-zero id is invalid in OTLP


@dataclass(frozen=True)
class _Run:
    """What every span of one run is placed and named by."""

    run_id: str
    content: bool
    start_ns: int

    def slot(self, seq: int) -> int:
        return self.start_ns + (seq - 1) * SLOT_NANOS


TOOL_STATUS = {
    state_pb2.WAITING_FOR_ANSWER: "deferred",
    state_pb2.WAITING_FOR_DECISION: "awaiting_decision",
    state_pb2.WAITING_FOR_WORKER: "pending",
}
"""``runjournal.tool.status`` of a call without its result, by what the server's fold says it waits for."""


def plan_run(
    run_id: str, records: Iterable[records_pb2.JournalRecord], state: state_pb2.RunState, *, content: bool = False
) -> RunTrace:
    """The spans of a run from its records in seq order (as Read sends them) and its fold as of the last one.

    The records give each span its seq, its numbers and its content; whatever
    a rule decides (the run's totals and status, what a call without a result
    waits for) is read from the fold. Records of a kind this client does not
    know (no payload) take their slot and make no span.
    """
    ordered = list(records)
    if not ordered or not ordered[0].HasField("meta"):
        raise ValueError(f"run {run_id!r} does not start with a meta record")
    meta, last_seq = ordered[0].meta, ordered[-1].seq
    run = _Run(run_id, content, meta.created_at.ToNanoseconds())
    about = _records_by_call(ordered)
    waits = {call.tool_use.id: call.waiting_for for call in state.pending.calls}
    fingerprint, spans = meta.fingerprint, []
    said = [_message("user", meta.prompt)] if content else []  # the messages the run was given
    for record in ordered[1:]:
        kind = record.WhichOneof("payload")
        if kind == "reconfigure":  # the model in force from here on
            fingerprint = record.reconfigure.fingerprint
        elif kind == "user" and content:
            said.append(_message("user", record.user.content))
        elif kind == "compaction":
            spans.append(_compaction_span(run, record.seq, record.compaction))
        elif kind == "assistant":
            spans.append(_chat_span(run, record.seq, record.assistant, fingerprint))
            for block in record.assistant.content:
                if block.WhichOneof("block") == "tool_use":
                    call = block.tool_use
                    status = TOOL_STATUS.get(waits.get(call.id, state_pb2.WAITING_FOR_UNSPECIFIED), "pending")
                    spans.append(_tool_span(run, record.seq, call, about.get(call.id, {}), status, last_seq))
    spans.insert(0, _run_span(run, meta, state, last_seq, said))
    return RunTrace(trace_id_of(run_id), spans)


def _records_by_call(records: Iterable[records_pb2.JournalRecord]) -> dict[str, dict[str, records_pb2.JournalRecord]]:
    """Call id -> its ``tool_result``, ``deferral`` and ``approval`` records (fold took at most one of each)."""
    about: dict[str, dict[str, records_pb2.JournalRecord]] = {}
    for record in records:
        kind = record.WhichOneof("payload")
        if kind in ("tool_result", "deferral", "approval"):
            about.setdefault(getattr(record, kind).tool_use_id, {})[kind] = record
    return about


def _common(run: _Run, seq: int, operation: str) -> Attributes:
    return {
        "gen_ai.operation.name": operation,
        "gen_ai.conversation.id": run.run_id,
        "runjournal.run_id": run.run_id,
        "runjournal.seq": seq,
        "runjournal.timing": TIMING,
    }


def _model(fingerprint: records_pb2.Fingerprint) -> Attributes:
    attributes: Attributes = {}
    if fingerprint.provider:
        attributes["gen_ai.provider.name"] = fingerprint.provider
    if fingerprint.model:
        attributes["gen_ai.request.model"] = fingerprint.model
    if fingerprint.max_tokens:
        attributes["gen_ai.request.max_tokens"] = fingerprint.max_tokens
    return attributes


def _usage(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> Attributes:
    # The journal's input_tokens are the uncached ones; the convention's include the cache's (which it
    # also reports apart), as a provider's bill counts them.
    return {
        "gen_ai.usage.input_tokens": input_tokens + cache_read + cache_write,
        "gen_ai.usage.output_tokens": output_tokens,
        "gen_ai.usage.cache_read.input_tokens": cache_read,
        "gen_ai.usage.cache_creation.input_tokens": cache_write,
    }


def _chat_span(
    run: _Run, seq: int, turn: records_pb2.AssistantTurn, fingerprint: records_pb2.Fingerprint
) -> PlannedSpan:
    attributes = _common(run, seq, "chat") | _model(fingerprint)
    usage = turn.usage
    attributes |= _usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    attributes["runjournal.iteration"] = turn.iteration
    finish = _finish_reason(turn.stop_reason)
    if finish:
        attributes["gen_ai.response.finish_reasons"] = [finish]
    if run.content:
        message = _message("assistant", turn.content) | ({"finish_reason": finish} if finish else {})
        attributes["gen_ai.output.messages"] = json.dumps([message], ensure_ascii=False)
    name = f"chat {fingerprint.model}" if fingerprint.model else "chat"
    return PlannedSpan(
        name, span_id_of(run.run_id, seq), span_id_of(run.run_id, 1), "client",
        run.slot(seq), run.slot(seq + 1), attributes,
    )  # fmt: skip


def _compaction_span(run: _Run, seq: int, compaction: records_pb2.Compaction) -> PlannedSpan:
    """A compaction: what it covers and what produced it. Not a chat span: a summary may be written by hand."""
    attributes = _common(run, seq, "compaction")
    trigger = records_pb2.CompactionTrigger.Name(compaction.trigger).removeprefix("COMPACTION_TRIGGER_").lower()
    attributes |= {"runjournal.compaction.upto_seq": compaction.upto_seq, "runjournal.compaction.trigger": trigger}
    attributes |= _model(records_pb2.Fingerprint(provider=compaction.provider, model=compaction.model))
    if compaction.tokens_before:
        attributes["runjournal.compaction.tokens_before"] = compaction.tokens_before
    usage = compaction.usage
    attributes |= _usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    return PlannedSpan(
        "compaction", span_id_of(run.run_id, seq), span_id_of(run.run_id, 1), "internal",
        run.slot(seq), run.slot(seq + 1), attributes,
    )  # fmt: skip


def _tool_span(
    run: _Run,
    call_seq: int,
    call: records_pb2.ToolUseBlock,
    about: dict[str, records_pb2.JournalRecord],
    status: str,
    last_seq: int,
) -> PlannedSpan:
    """A call's span, from its call to its result; ``status`` says what a call without a result waits for."""
    attributes = _common(run, call_seq, "execute_tool")
    attributes |= {"gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function"}
    if "deferral" in about:
        attributes["runjournal.tool.deferred"] = True
        if about["deferral"].deferral.expected_answerer:
            attributes["runjournal.tool.expected_answerer"] = about["deferral"].deferral.expected_answerer
    if "approval" in about:
        decision = records_pb2.Decision.Name(about["approval"].approval.decision)
        attributes["runjournal.tool.decision"] = decision.removeprefix("DECISION_").lower()
    error, end_seq = None, last_seq
    if "tool_result" in about:
        end_seq, result = about["tool_result"].seq, about["tool_result"].tool_result
        status = "error" if result.is_error else "ok"
        attributes["runjournal.tool.result_seq"] = end_seq
        attributes["runjournal.tool.remote"] = result.remote
        if result.is_error:
            error, attributes["error.type"] = "the tool's result is an error", "tool_error"
        if run.content:
            attributes["gen_ai.tool.call.result"] = json.dumps(_parts(result.content), ensure_ascii=False)
    attributes["runjournal.tool.status"] = status
    if run.content:
        attributes["gen_ai.tool.call.arguments"] = call.input_json
    return PlannedSpan(
        f"execute_tool {call.name}", span_id_of(run.run_id, call_seq, call.id), span_id_of(run.run_id, 1),
        "internal", run.slot(call_seq), run.slot(end_seq + 1), attributes, error,
    )  # fmt: skip


def _run_span(
    run: _Run, meta: records_pb2.Meta, state: state_pb2.RunState, last_seq: int, said: list[dict[str, Any]]
) -> PlannedSpan:
    attributes = _common(run, 1, "invoke_agent") | _model(meta.fingerprint)
    counters = state.counters
    attributes |= _usage(
        counters.input_tokens, counters.output_tokens, counters.cache_read_tokens, counters.cache_write_tokens
    )
    attributes["runjournal.llm_calls"] = counters.llm_calls
    attributes["runjournal.tool_calls"] = counters.tool_calls
    attributes["runjournal.last_seq"] = last_seq
    attributes["runjournal.run.status"] = state_pb2.RunStatus.Name(state.status).removeprefix("RUN_STATUS_").lower()
    if meta.task_id:
        attributes["runjournal.task_id"] = meta.task_id
    error = None
    if state.HasField("terminal"):
        reason = records_pb2.TerminalReason.Name(state.terminal.reason).removeprefix("TERMINAL_REASON_").lower()
        attributes["runjournal.terminal.reason"] = reason
        if state.terminal.reason == records_pb2.TerminalReason.TERMINAL_REASON_ERROR:
            error, attributes["error.type"] = "the run stopped with an error", "run_error"
    if run.content:
        attributes["gen_ai.input.messages"] = json.dumps(said, ensure_ascii=False)
    links: tuple[tuple[int, int], ...] = ()
    if meta.forked_from.run_id:
        source = meta.forked_from.run_id
        attributes["runjournal.forked_from.run_id"] = source
        attributes["runjournal.forked_from.seq"] = meta.forked_from.seq
        links = ((trace_id_of(source), span_id_of(source, 1)),)
    return PlannedSpan(
        "invoke_agent", span_id_of(run.run_id, 1), None, "internal", run.slot(1), run.slot(last_seq + 1),
        attributes, error, links,
    )  # fmt: skip


def _finish_reason(reason: int) -> str:
    if reason == records_pb2.StopReason.STOP_REASON_UNSPECIFIED:
        return ""
    return records_pb2.StopReason.Name(reason).removeprefix("STOP_REASON_").lower()


def _message(role: str, blocks: Iterable[records_pb2.ContentBlock]) -> dict[str, Any]:
    return {"role": role, "parts": _parts(blocks)}


def _parts(blocks: Iterable[records_pb2.ContentBlock]) -> list[dict[str, Any]]:
    """Content blocks as the convention's message parts (text, reasoning, tool_call; others by their type)."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.WhichOneof("block")
        if kind == "text":
            parts.append({"type": "text", "content": block.text.text})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": "" if block.thinking.redacted else block.thinking.thinking})
        elif kind == "tool_use":
            call = block.tool_use
            parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": _json(call.input_json)})
        elif kind == "opaque":
            parts.append({"type": block.opaque.type, "provider": block.opaque.provider, "content": block.opaque.json})
    return parts


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text

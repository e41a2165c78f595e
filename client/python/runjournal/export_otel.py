"""``runjournal export otel RUN``: a run's journal as OpenTelemetry GenAI spans, sent over OTLP.

The spans follow OpenTelemetry's GenAI semantic conventions (development
status, names as of semantic-conventions 1.41 / opentelemetry-semantic-conventions 0.66b2):

- one ``invoke_agent`` span (INTERNAL) for the run: the provider and model it
  started with, the run's token totals from its fold, its status;
- one ``chat {model}`` span (CLIENT) per assistant record (one model call),
  a child of the run's span: ``gen_ai.usage.*`` from the record's usage, the
  finish reason, the model in force (a ``reconfigure`` record changes it);
- one ``execute_tool {name}`` span (INTERNAL) per tool call, a child of the run's
  span, ending with the call's result (an error result is an error span); a
  call still waiting (deferred, awaiting a decision, or unanswered) ends with
  the journal and says so in ``runjournal.tool.status``.

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

Message content (prompts, model output, tool arguments and results) is sent
only with ``--content``; without it the spans carry ids, names, numbers and
reasons only. The command needs ``pip install 'runjournal[otel]'``; nothing
here imports OpenTelemetry until it runs, and nothing imports the server.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runjournal._cli_support import add_address, client_of
from runjournal.render import safe_text
from runjournal.v1 import records_pb2, state_pb2

OTEL_EXTRA = "pip install 'runjournal[otel]'"
NEEDS_OTEL_EXIT_CODE = 2
SLOT_NANOS = 1_000_000
"""The time slot of one record: 1 ms (see the module docstring: positions, not measurements)."""
TIMING = "journal_order"
"""The value of ``runjournal.timing`` on every span: its times come from seq order, not from clocks."""
EXPORT_BATCH_SPANS = 512
"""Spans per OTLP request, so a long run stays under a collector's 4 MiB message limit."""
DEFAULT_SERVICE_NAME = "runjournal-export"
ALL_OF_IT = 2**31 - 1
"""A Fold ``conversation_from`` past any conversation: the state without the messages, which come from Read."""

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


# ---------------------------------------------------------------- the journal as spans (pure)


@dataclass
class _ToolCall:
    call: records_pb2.ToolUseBlock
    call_seq: int
    result_seq: int = 0
    result: records_pb2.ToolResult | None = None
    deferral: records_pb2.Deferral | None = None
    decision: str = ""


@dataclass
class _Walk:
    run_id: str
    content: bool
    start_ns: int
    fingerprint: records_pb2.Fingerprint
    spans: list[PlannedSpan] = field(default_factory=list)
    calls: dict[str, _ToolCall] = field(default_factory=dict)
    user_messages: list[dict[str, Any]] = field(default_factory=list)

    def slot(self, seq: int) -> int:
        return self.start_ns + (seq - 1) * SLOT_NANOS


def plan_run(
    run_id: str, records: Iterable[records_pb2.JournalRecord], state: state_pb2.RunState, *, content: bool = False
) -> RunTrace:
    """The spans of a run from its records in seq order (as Read sends them) and its fold as of the last one.

    Records of a kind this client does not know (no payload) take their slot and make no span.
    """
    ordered = list(records)
    if not ordered or not ordered[0].HasField("meta"):
        raise ValueError(f"run {run_id!r} does not start with a meta record")
    meta = ordered[0].meta
    walk = _Walk(run_id, content, meta.created_at.ToNanoseconds(), meta.fingerprint)
    if content:
        walk.user_messages.append(_message("user", meta.prompt))
    for record in ordered[1:]:
        _visit(walk, record)
    last_seq = ordered[-1].seq
    for call in walk.calls.values():
        walk.spans.append(_tool_span(walk, call, last_seq))
    walk.spans.insert(0, _run_span(walk, meta, state, last_seq))
    return RunTrace(trace_id_of(run_id), walk.spans)


def _visit(walk: _Walk, record: records_pb2.JournalRecord) -> None:
    kind = record.WhichOneof("payload")
    if kind == "assistant":
        walk.spans.append(_chat_span(walk, record.seq, record.assistant))
        for block in record.assistant.content:
            if block.WhichOneof("block") == "tool_use":
                walk.calls[block.tool_use.id] = _ToolCall(block.tool_use, record.seq)
    elif kind == "tool_result":
        call = walk.calls.get(record.tool_result.tool_use_id)
        if call is not None:  # fold has checked the journal: a result answers a call it made
            call.result, call.result_seq = record.tool_result, record.seq
    elif kind == "deferral":
        if (call := walk.calls.get(record.deferral.tool_use_id)) is not None:
            call.deferral = record.deferral
    elif kind == "approval":
        if (call := walk.calls.get(record.approval.tool_use_id)) is not None:
            call.decision = records_pb2.Decision.Name(record.approval.decision).removeprefix("DECISION_").lower()
    elif kind == "reconfigure":
        walk.fingerprint = record.reconfigure.fingerprint
    elif kind == "user" and walk.content:
        walk.user_messages.append(_message("user", record.user.content))


def _common(walk: _Walk, seq: int, operation: str) -> Attributes:
    return {
        "gen_ai.operation.name": operation,
        "gen_ai.conversation.id": walk.run_id,
        "runjournal.run_id": walk.run_id,
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


def _chat_span(walk: _Walk, seq: int, turn: records_pb2.AssistantTurn) -> PlannedSpan:
    attributes = _common(walk, seq, "chat") | _model(walk.fingerprint)
    usage = turn.usage
    attributes |= _usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    attributes["runjournal.iteration"] = turn.iteration
    finish = _finish_reason(turn.stop_reason)
    if finish:
        attributes["gen_ai.response.finish_reasons"] = [finish]
    if walk.content:
        message = _message("assistant", turn.content) | ({"finish_reason": finish} if finish else {})
        attributes["gen_ai.output.messages"] = json.dumps([message], ensure_ascii=False)
    name = f"chat {walk.fingerprint.model}" if walk.fingerprint.model else "chat"
    return PlannedSpan(
        name, span_id_of(walk.run_id, seq), span_id_of(walk.run_id, 1), "client",
        walk.slot(seq), walk.slot(seq + 1), attributes,
    )  # fmt: skip


def _tool_span(walk: _Walk, call: _ToolCall, last_seq: int) -> PlannedSpan:
    attributes = _common(walk, call.call_seq, "execute_tool")
    attributes |= {
        "gen_ai.tool.name": call.call.name,
        "gen_ai.tool.call.id": call.call.id,
        "gen_ai.tool.type": "function",
    }
    if call.deferral is not None:
        attributes["runjournal.tool.deferred"] = True
        if call.deferral.expected_answerer:
            attributes["runjournal.tool.expected_answerer"] = call.deferral.expected_answerer
    if call.decision:
        attributes["runjournal.tool.decision"] = call.decision
    error = None
    if call.result is None:
        attributes["runjournal.tool.status"] = _waiting(call)
        end_seq = last_seq
    else:
        attributes["runjournal.tool.status"] = "error" if call.result.is_error else "ok"
        attributes["runjournal.tool.result_seq"] = call.result_seq
        attributes["runjournal.tool.remote"] = call.result.remote
        end_seq = call.result_seq
        if call.result.is_error:
            error = "the tool's result is an error"
            attributes["error.type"] = "tool_error"
    if walk.content:
        attributes["gen_ai.tool.call.arguments"] = call.call.input_json
        if call.result is not None:
            attributes["gen_ai.tool.call.result"] = json.dumps(_parts(call.result.content), ensure_ascii=False)
    return PlannedSpan(
        f"execute_tool {call.call.name}", span_id_of(walk.run_id, call.call_seq, call.call.id),
        span_id_of(walk.run_id, 1), "internal", walk.slot(call.call_seq), walk.slot(end_seq + 1), attributes, error,
    )  # fmt: skip


def _waiting(call: _ToolCall) -> str:
    if call.deferral is not None and call.deferral.needs_approval and not call.decision:
        return "awaiting_decision"
    return "deferred" if call.deferral is not None else "pending"


def _run_span(walk: _Walk, meta: records_pb2.Meta, state: state_pb2.RunState, last_seq: int) -> PlannedSpan:
    attributes = _common(walk, 1, "invoke_agent") | _model(meta.fingerprint)
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
    if walk.content:
        attributes["gen_ai.input.messages"] = json.dumps(walk.user_messages, ensure_ascii=False)
    links: tuple[tuple[int, int], ...] = ()
    if meta.forked_from.run_id:
        source = meta.forked_from.run_id
        attributes["runjournal.forked_from.run_id"] = source
        attributes["runjournal.forked_from.seq"] = meta.forked_from.seq
        links = ((trace_id_of(source), span_id_of(source, 1)),)
    return PlannedSpan(
        "invoke_agent", span_id_of(walk.run_id, 1), None, "internal", walk.slot(1), walk.slot(last_seq + 1),
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


# ---------------------------------------------------------------- sending (OpenTelemetry from here on)


def send(run: RunTrace, endpoint: str | None, service_name: str) -> None:
    """Export the spans over OTLP/gRPC (to ``endpoint``, else the standard OTEL_ variables' endpoint).

    Raises ``ExportError`` when the collector does not take them.
    """
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    resource = Resource.create({SERVICE_NAME: service_name})
    scope = InstrumentationScope("runjournal.export_otel", _version())
    kinds = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}

    def context(trace_id: int, span_id: int) -> SpanContext:
        return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

    spans = [
        ReadableSpan(
            name=planned.name,
            context=context(run.trace_id, planned.span_id),
            parent=None if planned.parent_id is None else context(run.trace_id, planned.parent_id),
            resource=resource,
            attributes=planned.attributes,
            kind=kinds[planned.kind],
            links=[Link(context(trace, span)) for trace, span in planned.links],
            status=Status(StatusCode.ERROR, planned.error) if planned.error else Status(StatusCode.UNSET),
            start_time=planned.start_ns,
            end_time=planned.end_ns,
            instrumentation_scope=scope,
        )
        for planned in run.spans
    ]
    exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    try:
        for start in range(0, len(spans), EXPORT_BATCH_SPANS):
            if exporter.export(spans[start : start + EXPORT_BATCH_SPANS]) is not SpanExportResult.SUCCESS:
                raise ExportError(f"the OTLP collector did not take the spans (sent {start} of {len(spans)})")
    finally:
        exporter.shutdown()


def _version() -> str | None:
    try:
        return importlib.metadata.version("runjournal")
    except importlib.metadata.PackageNotFoundError:
        return None


class ExportError(RuntimeError):
    """The collector refused the spans or could not be reached (the exporter logs why)."""


# ---------------------------------------------------------------- the command

DESCRIPTION = """\
Send a run's journal to an OpenTelemetry collector as GenAI spans over OTLP/gRPC:
invoke_agent for the run, chat per model call (with its token usage), execute_tool
per tool call. Ids come from the run id and the records' seqs, so exporting again
sends the same spans (a backend keeps them once).

Span times are positions, not measurements: the journal records no time but the
run's creation, so the record at seq N is placed at created_at + (N-1) ms and takes
1 ms; order and nesting are true, durations are not (runjournal.timing says so).

The collector is --endpoint, else $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
$OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4317); headers, TLS and
timeout come from the standard OTEL_EXPORTER_OTLP_* variables."""


def add_export_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``export otel``."""
    export = commands.add_parser("export", help="send a run to another system")
    formats = export.add_subparsers(dest="export_format", required=True)
    otel = formats.add_parser(
        "otel",
        help="send a run to an OpenTelemetry collector as GenAI spans (OTLP)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_address(otel)
    otel.add_argument("run_id")
    otel.add_argument(
        "--endpoint", help="OTLP/gRPC collector, e.g. http://127.0.0.1:4317 (default: the OTEL_ variables)"
    )
    otel.add_argument(
        "--content",
        action="store_true",
        help="include message content (prompt, follow-ups, model output, tool arguments and results); off by default",
    )
    otel.add_argument(
        "--service-name", help=f"the spans' service.name (default $OTEL_SERVICE_NAME, else {DEFAULT_SERVICE_NAME})"
    )
    otel.set_defaults(handler=export_otel)


def export_otel(args: argparse.Namespace) -> int:
    missing = _missing_otel()
    if missing:
        print(f"runjournal: export otel needs {OTEL_EXTRA} (missing module {missing!r})", file=sys.stderr)
        return NEEDS_OTEL_EXIT_CODE
    with client_of(args) as client:
        records = [record for record, _ in client.read(args.run_id)]
        last_seq = records[-1].seq if records else 0
        # As of the last record read, so the totals and the spans describe the same journal.
        state = client.fold(args.run_id, as_of_seq=last_seq, conversation_from=ALL_OF_IT)
    run = plan_run(args.run_id, records, state, content=args.content)
    service_name = args.service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    try:
        send(run, args.endpoint, service_name)
    except ExportError as err:
        print(f"runjournal: {err}", file=sys.stderr)
        return 1
    print(f"exported run {safe_text(args.run_id)}: {len(run.spans)} spans in trace {run.trace_id:032x}")
    return 0


def _missing_otel() -> str:
    """The OpenTelemetry module not installed, or "": checked before the run is read, to say what to install."""
    for module in ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            return err.name or module
    return ""

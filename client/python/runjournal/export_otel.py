"""``runjournal export otel RUN``: a run's journal sent to an OpenTelemetry collector as GenAI spans, over OTLP.

The run is read (Read) and folded by the server as of its last record read
(Fold), so the spans (``genai_spans.plan_run``) and the run's totals describe
the same journal. The command needs ``pip install 'runjournal[otel]'``;
nothing imports OpenTelemetry until it runs, and nothing imports the server.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import sys

from runjournal._cli_support import add_address, client_of
from runjournal.genai_spans import RunTrace, plan_run
from runjournal.render import safe_text

OTEL_EXTRA = "pip install 'runjournal[otel]'"
NEEDS_OTEL_EXIT_CODE = 2
EXPORT_BATCH_SPANS = 512
"""Spans per OTLP request, so a long run stays under a collector's 4 MiB message limit."""
DEFAULT_SERVICE_NAME = "runjournal-export"
ALL_OF_IT = 2**31 - 1
"""A Fold ``conversation_from`` past any conversation: the state without the messages, which come from Read."""


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

"""OpenTelemetry server spans over a real server, exported over OTLP to a real receiver the test starts.

Each test stops the server (SIGTERM) before it looks: a graceful stop exports
every span still queued, so what the receiver holds then is all the server
will ever send, with no waiting on the batch processor's schedule.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.trace.v1 import trace_pb2

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc as pb_grpc
from tests.api.rpc import new_run_id, reason
from tests.servers import ServerProcess
from tests.support import builders as b
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN_ID = "00f067aa0ba902b7"
SECRET = "s3cret-bearer-token-never-exported"
CONTENT = "record content that stays out of the spans"
APPEND = "/runjournal.v1.JournalService/Append"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    otlp = OtlpReceiver()
    yield otlp
    otlp.close()


def start_server(tmp_path: Path, receiver: OtlpReceiver, *args: str, **env: str) -> ServerProcess:
    otel_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "runjournal-test", **env}
    return ServerProcess(tmp_path / "data", extra_args=args, env=otel_env).start()


def traceparent(span_id: str = CALLER_SPAN_ID) -> tuple[str, str]:
    return ("traceparent", f"00-{TRACE_ID}-{span_id}-01")


def make_calls(address: str) -> str:
    """An Append that lands, one refused (a gap), and a Read stream, each in the caller's trace; the run id."""
    run_id = new_run_id("traced")
    secret = ("authorization", f"Bearer {SECRET}")
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.JournalServiceStub(channel)
        meta = b.meta(run_id=run_id, prompt=CONTENT)
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=meta), metadata=[traceparent(), secret])
        gap = pb.AppendRequest(run_id=run_id, claim_token=1, record=b.assistant(5, 1, say=CONTENT))
        with pytest.raises(grpc.RpcError) as refused:
            stub.Append(gap, metadata=[traceparent("00f067aa0ba902b8"), secret])
        assert reason(refused.value) == "SEQ_GAP"
        read = stub.Read(pb.ReadRequest(run_id=run_id), metadata=[traceparent("00f067aa0ba902b9")])
        assert [item.seq for item in read] == [1]
    return run_id


def callers_spans(receiver: OtlpReceiver) -> dict[str, ReceivedSpan]:
    """The spans of the caller's trace, by the caller's span id they hang under."""
    return {
        span.span.parent_span_id.hex(): span
        for span in receiver.spans()
        if span.span.trace_id.hex() == TRACE_ID
    }  # fmt: skip


def test_every_rpc_gets_a_server_span_in_the_callers_trace(tmp_path, receiver):
    server = start_server(tmp_path, receiver, "--tracing")
    make_calls(server.address)
    assert server.stop() == 0, server.log()

    spans = callers_spans(receiver)
    landed = spans[CALLER_SPAN_ID]
    assert landed.span.name == APPEND
    assert landed.span.kind == trace_pb2.Span.SPAN_KIND_SERVER
    assert landed.service_name == "runjournal-test"
    assert landed.scope == "opentelemetry.instrumentation.grpc"
    assert landed.attributes["rpc.system"] == "grpc"
    assert landed.attributes["rpc.service"] == "runjournal.v1.JournalService"
    assert landed.attributes["rpc.method"] == "Append"
    assert landed.attributes["rpc.grpc.status_code"] == grpc.StatusCode.OK.value[0]
    assert landed.span.status.code == trace_pb2.Status.STATUS_CODE_UNSET
    assert len(landed.span.span_id) == 8 and landed.span.span_id.hex() != CALLER_SPAN_ID

    # A refusal carries its code, and is not a server fault (OpenTelemetry's gRPC rule).
    refused = spans["00f067aa0ba902b8"]
    assert refused.attributes["rpc.grpc.status_code"] == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert refused.span.status.code == trace_pb2.Status.STATUS_CODE_UNSET
    # A stream's span.
    read = spans["00f067aa0ba902b9"]
    assert read.span.name == "/runjournal.v1.JournalService/Read"
    assert read.attributes["rpc.method"] == "Read"
    assert read.attributes["rpc.grpc.status_code"] == grpc.StatusCode.OK.value[0]


def test_spans_carry_no_credentials_and_no_record_content(tmp_path, receiver):
    server = start_server(tmp_path, receiver, "--tracing")
    run_id = make_calls(server.address)
    assert server.stop() == 0, server.log()

    assert len(callers_spans(receiver)) == 3
    exported = b"".join(request.SerializeToString() for request in receiver.requests)
    assert SECRET.encode() not in exported
    assert CONTENT.encode() not in exported
    assert run_id.encode() not in exported  # nothing of a request is copied but the method name


def test_no_span_leaves_a_server_without_tracing_even_with_the_otel_variables_set(tmp_path, receiver):
    server = start_server(tmp_path, receiver)
    make_calls(server.address)
    assert server.stop() == 0, server.log()
    assert receiver.requests == []


def test_an_exporter_the_server_does_not_have_refuses_the_start(tmp_path, receiver):
    with pytest.raises(RuntimeError, match="OTEL_TRACES_EXPORTER names zipkin"):
        start_server(tmp_path, receiver, "--tracing", OTEL_TRACES_EXPORTER="zipkin")


def test_a_server_without_tracing_loads_no_opentelemetry(tmp_path):
    script = textwrap.dedent(
        """
        import asyncio, os, signal, sys
        from runjournal_server.app import serve
        from runjournal_server.config import Config

        def ready(address):
            loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
            print("loaded:", loaded, flush=True)
            os.kill(os.getpid(), signal.SIGTERM)

        asyncio.run(serve(Config(data_dir=sys.argv[1], listen="127.0.0.1:0"), on_ready=ready))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout


def test_a_server_fault_marks_its_span_as_an_error_with_the_codes_name_only(tmp_path, receiver):
    data = tmp_path / "data"
    data.mkdir()
    (data / "broken-run.jsonl").write_bytes(b"not a record\nnot one either\n")  # interior damage: CORRUPT_JOURNAL
    server = start_server(tmp_path, receiver, "--tracing")
    with grpc.insecure_channel(server.address) as channel, pytest.raises(grpc.RpcError) as failed:
        pb_grpc.JournalServiceStub(channel).Fold(pb.FoldRequest(run_id="broken-run"), metadata=[traceparent()])
    assert failed.value.code() == grpc.StatusCode.DATA_LOSS
    assert server.stop() == 0, server.log()

    span = callers_spans(receiver)[CALLER_SPAN_ID]
    assert span.attributes["rpc.grpc.status_code"] == grpc.StatusCode.DATA_LOSS.value[0]
    assert span.span.status.code == trace_pb2.Status.STATUS_CODE_ERROR
    assert span.span.status.message == "DATA_LOSS"
    assert [event.name for event in span.span.events] == []

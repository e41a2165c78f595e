"""``runjournal export otel``: a run read from a real server, sent as GenAI spans to a real OTLP receiver.

The command's OTLP export returns once the receiver has answered, so the
receiver holds the spans when ``main`` returns: nothing is waited for.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

from runjournal import JournalClient, cli
from runjournal.genai_spans import span_id_of, trace_id_of
from runjournal.v1 import records_pb2
from tests.servers import ServerProcess
from tests.support import builders as b
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

PROMPT = "PROMPT-TEXT-only-with-content"
SAID = "MODEL-OUTPUT-only-with-content"
RESULT = "TOOL-RESULT-only-with-content"
FOLLOW_UP = "FOLLOW-UP-only-with-content"
ARGUMENTS = '{"query":"ARGUMENTS-only-with-content"}'
CONTENT_MARKERS = (PROMPT, SAID, RESULT, FOLLOW_UP, "ARGUMENTS-only-with-content")
CREATED_NS = 1_700_000_000 * 10**9  # the builders' meta.created_at
MS = 1_000_000


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    otlp = OtlpReceiver()
    yield otlp
    otlp.close()


@pytest.fixture
def run_id(journal_server: ServerProcess) -> str:
    """A finished run: two model calls, one with two tool calls (one answered out of band with an error)."""
    run_id = f"otel-{uuid.uuid4().hex[:12]}"
    first = b.assistant(2, 1, say=SAID, stop_reason=records_pb2.STOP_REASON_TOOL_USE, usage=(100, 20, 30, 40))
    first.assistant.content.append(b.tool_use("call-a", "search", ARGUMENTS))
    first.assistant.content.append(b.tool_use("call-b", "deploy"))
    records = [
        b.meta(run_id=run_id, prompt=PROMPT),
        first,
        b.result(3, "call-a", RESULT),
        b.deferral(4, "call-b", answerer="ops"),
        b.result(5, "call-b", "denied by ops", is_error=True, remote=True),
        b.user(6, FOLLOW_UP),
        b.assistant(7, 2, say="done", usage=(7, 3, 0, 0)),
        b.terminal(8),
    ]
    with JournalClient(journal_server.address) as client:
        for record in records:
            client.append(run_id, 1, record)
    return run_id


def export(server: ServerProcess, receiver: OtlpReceiver, run_id: str, *flags: str) -> list[ReceivedSpan]:
    """Run the command; the spans this export sent."""
    before = len(receiver.spans())
    args = ["export", "otel", run_id, "--address", server.address, "--endpoint", receiver.endpoint, *flags]
    assert cli.main(args) == 0
    return receiver.spans()[before:]


def by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    named: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        named.setdefault(span.span.name, []).append(span)
    return named


def test_a_run_becomes_an_invoke_agent_span_with_a_chat_per_model_call_and_a_span_per_tool_call(
    journal_server, receiver, run_id
):
    spans = export(journal_server, receiver, run_id)
    named = by_name(spans)
    assert sorted(named) == ["chat claude-x", "execute_tool deploy", "execute_tool search", "invoke_agent"]
    assert len(named["chat claude-x"]) == 2
    (run,) = named["invoke_agent"]
    run_span_id = span_id_of(run_id, 1).to_bytes(8, "big")

    assert {span.span.trace_id for span in spans} == {trace_id_of(run_id).to_bytes(16, "big")}
    assert run.span.span_id == run_span_id and run.span.parent_span_id == b""
    assert all(span.span.parent_span_id == run_span_id for span in spans if span is not run)
    assert run.span.kind == trace_pb2.Span.SPAN_KIND_INTERNAL
    assert {span.span.kind for span in named["chat claude-x"]} == {trace_pb2.Span.SPAN_KIND_CLIENT}
    assert run.service_name == "runjournal-export" and run.scope == "runjournal.export_otel"

    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.provider.name"] == "anthropic"
    assert run.attributes["gen_ai.conversation.id"] == run_id
    assert run.attributes["runjournal.run.status"] == "completed"
    # The run's totals are its fold's counters; the convention's input tokens include the cached ones.
    assert run.attributes["gen_ai.usage.input_tokens"] == 100 + 7 + 30 + 40
    assert run.attributes["gen_ai.usage.output_tokens"] == 23
    assert run.attributes["runjournal.llm_calls"] == 2

    first, second = sorted(named["chat claude-x"], key=lambda span: span.attributes["runjournal.seq"])
    assert first.span.span_id == span_id_of(run_id, 2).to_bytes(8, "big")
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "claude-x"
    assert first.attributes["gen_ai.request.max_tokens"] == 4096
    assert first.attributes["gen_ai.usage.input_tokens"] == 170
    assert first.attributes["gen_ai.usage.output_tokens"] == 20
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 30
    assert first.attributes["gen_ai.usage.cache_creation.input_tokens"] == 40
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert second.attributes["gen_ai.usage.input_tokens"] == 7
    assert second.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]

    (search,) = named["execute_tool search"]
    assert search.attributes["gen_ai.operation.name"] == "execute_tool"
    assert search.attributes["gen_ai.tool.call.id"] == "call-a"
    assert search.attributes["runjournal.tool.status"] == "ok"
    assert search.span.status.code == trace_pb2.Status.STATUS_CODE_UNSET
    (deploy,) = named["execute_tool deploy"]
    assert deploy.attributes["runjournal.tool.status"] == "error"
    assert deploy.attributes["runjournal.tool.deferred"] is True
    assert deploy.attributes["runjournal.tool.remote"] is True
    assert deploy.span.status.code == trace_pb2.Status.STATUS_CODE_ERROR

    # Times are seq positions: record N takes the millisecond from created_at + (N-1) ms.
    assert (first.span.start_time_unix_nano, first.span.end_time_unix_nano) == (CREATED_NS + MS, CREATED_NS + 2 * MS)
    assert (deploy.span.start_time_unix_nano, deploy.span.end_time_unix_nano) == (CREATED_NS + MS, CREATED_NS + 5 * MS)
    assert (run.span.start_time_unix_nano, run.span.end_time_unix_nano) == (CREATED_NS, CREATED_NS + 8 * MS)
    assert {span.attributes["runjournal.timing"] for span in spans} == {"journal_order"}


def test_every_gen_ai_attribute_is_a_name_of_the_semantic_conventions(journal_server, receiver, run_id):
    known = {value for name, value in vars(gen_ai_attributes).items() if name.startswith("GEN_AI_")}
    spans = export(journal_server, receiver, run_id, "--content")
    used = {key for span in spans for key in span.attributes if key.startswith("gen_ai.")}
    assert "gen_ai.usage.cache_read.input_tokens" in used
    assert used <= known, used - known


def test_exporting_twice_sends_the_same_spans(journal_server, receiver, run_id):
    first = export(journal_server, receiver, run_id)
    second = export(journal_server, receiver, run_id)

    def identity(spans: list[ReceivedSpan]) -> list[tuple[bytes, bytes, bytes, str, int, int]]:
        return sorted(
            (s.span.trace_id, s.span.span_id, s.span.parent_span_id, s.span.name,
             s.span.start_time_unix_nano, s.span.end_time_unix_nano)
            for s in spans
        )  # fmt: skip

    assert len(first) == 5
    assert identity(first) == identity(second)


def test_a_grown_run_adds_only_the_spans_of_its_new_records(journal_server, receiver, run_id):
    before = {span.span.span_id for span in export(journal_server, receiver, run_id)}
    with JournalClient(journal_server.address) as client:
        client.append(run_id, 1, b.user(9, "one more"))
        client.append(run_id, 1, b.assistant(10, 3, ["call-c"]))
    after = export(journal_server, receiver, run_id)
    added = {span.span.name for span in after if span.span.span_id not in before}
    assert added == {"chat claude-x", "execute_tool search"}
    (pending,) = [span for span in after if span.attributes.get("gen_ai.tool.call.id") == "call-c"]
    assert pending.attributes["runjournal.tool.status"] == "pending"


def test_a_call_without_its_result_says_what_the_servers_fold_says_it_waits_for(journal_server, receiver):
    run_id = f"otel-{uuid.uuid4().hex[:12]}"
    records = [b.meta(run_id=run_id), b.assistant(2, 1, ["ask", "deploy", "decided", "own"]), b.deferral(3, "ask")]
    for seq, call_id in ((4, "deploy"), (5, "decided")):
        records.append(b.deferral(seq, call_id))
        records[-1].deferral.needs_approval = True
    with JournalClient(journal_server.address) as client:
        for record in records:
            client.append(run_id, 1, record)
        client.approve(run_id, "decided", "approved", "alice")
    tools = [span for span in export(journal_server, receiver, run_id) if "gen_ai.tool.call.id" in span.attributes]
    status = {span.attributes["gen_ai.tool.call.id"]: span.attributes["runjournal.tool.status"] for span in tools}
    assert status == {"ask": "deferred", "deploy": "awaiting_decision", "decided": "pending", "own": "pending"}
    (decided,) = [span for span in tools if span.attributes["gen_ai.tool.call.id"] == "decided"]
    assert decided.attributes["runjournal.tool.decision"] == "approved"


def test_no_message_content_leaves_unless_asked(journal_server, receiver, run_id):
    export(journal_server, receiver, run_id)
    plain = b"".join(request.SerializeToString() for request in receiver.requests)
    assert not [marker for marker in CONTENT_MARKERS if marker.encode() in plain]

    spans = by_name(export(journal_server, receiver, run_id, "--content"))
    (run,) = spans["invoke_agent"]
    assert json.loads(run.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": PROMPT}]},
        {"role": "user", "parts": [{"type": "text", "content": FOLLOW_UP}]},
    ]
    first = min(spans["chat claude-x"], key=lambda span: span.attributes["runjournal.seq"])
    (output,) = json.loads(first.attributes["gen_ai.output.messages"])
    assert output["role"] == "assistant" and output["finish_reason"] == "tool_use"
    assert output["parts"][0] == {"type": "text", "content": SAID}
    assert output["parts"][1] == {
        "type": "tool_call", "id": "call-a", "name": "search", "arguments": {"query": "ARGUMENTS-only-with-content"}
    }  # fmt: skip
    (search,) = spans["execute_tool search"]
    assert search.attributes["gen_ai.tool.call.arguments"] == ARGUMENTS
    assert json.loads(search.attributes["gen_ai.tool.call.result"]) == [{"type": "text", "content": RESULT}]


def test_an_unknown_run_is_refused_and_nothing_is_sent(journal_server, receiver, capsys):
    args = ["export", "otel", "no-such-run", "--address", journal_server.address, "--endpoint", receiver.endpoint]
    assert cli.main(args) == 1
    assert "RUN_NOT_FOUND" in capsys.readouterr().err
    assert receiver.requests == []


def test_a_collector_that_is_not_there_fails_the_command(journal_server, run_id, capsys, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # seconds the exporter keeps retrying (default 10)
    closed = OtlpReceiver()
    closed.close()  # a port nothing listens on any more
    args = ["export", "otel", run_id, "--address", journal_server.address, "--endpoint", closed.endpoint]
    assert cli.main(args) == 1
    assert "did not take the spans" in capsys.readouterr().err


def test_without_the_otel_extra_the_command_says_what_to_install_and_the_cli_imports_none_of_it(journal_server, run_id):
    from tests.client.test_cli_without_server import runjournal_without

    done = runjournal_without(("opentelemetry",), "export", "otel", run_id, "--address", journal_server.address)
    assert done.returncode == 2, done.stderr
    assert "export otel needs pip install 'runjournal[otel]'" in done.stderr
    shown = runjournal_without(("opentelemetry",), "runs", "show", run_id, "--address", journal_server.address)
    assert shown.returncode == 0, shown.stderr
    assert "blocked imports attempted" not in shown.stderr

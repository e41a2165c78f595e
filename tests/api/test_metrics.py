"""Prometheus metrics over a real server: counters by kind, result and code; no series per run.

Each backend's server is started with ``--metrics-listen 127.0.0.1:0`` and
prints the metrics address on its second stdout line. Every scrape is parsed
with prometheus_client's own parser, so the text is well formed.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc as pb_grpc
from runjournal.v1 import records_pb2
from tests.api.rpc import new_run_id, reason
from tests.conftest import new_stream_target
from tests.servers import ServerProcess
from tests.support import builders as b

METRICS_PREFIX = "runjournal metrics on "
APPEND = "/runjournal.v1.JournalService/Append"
READ = "/runjournal.v1.JournalService/Read"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(params=("file", "jetstream"))
def metrics_server(
    request: pytest.FixtureRequest, server_factory: Callable[..., ServerProcess]
) -> Iterator[ServerProcess]:
    args: tuple[str, ...] = ("--metrics-listen", "127.0.0.1:0")
    if request.param == "jetstream":
        args += new_stream_target().server_args(request.getfixturevalue("nats_server").url)
    server = server_factory(None, *args)
    assert server.process is not None and server.process.stdout is not None
    line = server.process.stdout.readline()
    assert line.startswith(METRICS_PREFIX), line
    server.metrics_address = line.removeprefix(METRICS_PREFIX).strip()  # type: ignore[attr-defined]
    server.backend_name = request.param  # type: ignore[attr-defined]
    yield server
    assert server.stop() == 0, server.log()  # the metrics endpoint closes with the server


@pytest.fixture
def stub(metrics_server: ServerProcess) -> Iterator[pb_grpc.JournalServiceStub]:
    with grpc.insecure_channel(metrics_server.address) as channel:
        yield pb_grpc.JournalServiceStub(channel)


def scrape(server: ServerProcess) -> Samples:
    """Every sample of /metrics, parsed by prometheus_client's parser (which refuses malformed text)."""
    with urllib.request.urlopen(f"http://{server.metrics_address}/metrics", timeout=10) as answer:  # type: ignore[attr-defined]
        text = answer.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def append(stub: pb_grpc.JournalServiceStub, run_id: str, record: records_pb2.JournalRecord, token: int = 1) -> str:
    """Append one record; "OK" or the refusal's reason."""
    try:
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=token, record=record))
    except grpc.RpcError as err:
        return reason(err)
    return "OK"


def test_appends_are_counted_by_kind_and_result_and_rpcs_by_method_and_code(metrics_server, stub):
    before = scrape(metrics_server)
    run_id = new_run_id("metrics")
    outcomes = [
        append(stub, run_id, b.meta(run_id=run_id)),
        append(stub, run_id, b.assistant(2, 1, ["c1"])),
        append(stub, run_id, b.assistant(2, 1, ["c1"])),  # a retry: duplicate
        append(stub, run_id, b.assistant(2, 1, ["c2"])),  # another body at seq 2: conflict
        append(stub, run_id, b.assistant(5, 1)),  # past the next seq: gap
        append(stub, run_id, b.user(3), token=7),  # not the latest claim: fenced
        append(stub, run_id, records_pb2.JournalRecord(seq=3)),  # no payload: refused
    ]
    assert outcomes == ["OK", "OK", "OK", "SEQ_CONFLICT", "SEQ_GAP", "RUN_CLAIMED", "INVALID_RECORD"]
    assert [r.seq for r in stub.Read(pb.ReadRequest(run_id=run_id))] == [1, 2]
    after = scrape(metrics_server)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    records = "runjournal_append_records_total"
    assert moved(records, kind="meta", result="ok") == 1
    assert moved(records, kind="assistant", result="ok") == 1
    assert moved(records, kind="assistant", result="duplicate") == 1
    assert moved(records, kind="assistant", result="conflict") == 1
    assert moved(records, kind="assistant", result="gap") == 1
    assert moved(records, kind="user", result="fenced") == 1
    assert moved(records, kind="unknown", result="refused") == 1
    rpcs = "runjournal_rpcs_handled_total"
    assert moved(rpcs, method=APPEND, code="OK") == 3
    assert moved(rpcs, method=APPEND, code="ABORTED") == 1
    assert moved(rpcs, method=APPEND, code="FAILED_PRECONDITION") == 2  # the gap and the stale token
    assert moved(rpcs, method=APPEND, code="INVALID_ARGUMENT") == 1
    assert moved(rpcs, method=READ, code="OK") == 1
    assert moved("runjournal_rpc_duration_seconds_count", method=APPEND) == 7
    assert moved("runjournal_rpc_duration_seconds_count", method=READ) == 1
    # Two store writes made durable, one record each (the meta's creation, then seq 2).
    assert moved("runjournal_storage_sync_duration_seconds_count") == 2
    assert moved("runjournal_storage_batch_records_sum") == 2
    assert value(after, "runjournal_open_journals") >= 1
    assert value(after, "runjournal_warm_bytes") > 0
    assert value(after, "runjournal_read_streams_open") == 0


def test_a_batch_is_counted_per_record_and_as_one_store_write(metrics_server, stub):
    before = scrape(metrics_server)
    run_id = new_run_id("metrics")
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1"]), b.result(3, "c1", "found")]
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=batch))
    stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=[*batch[1:], b.user(4)]))
    after = scrape(metrics_server)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    records = "runjournal_append_records_total"
    assert moved(records, kind="assistant", result="ok") == 1
    assert moved(records, kind="assistant", result="duplicate") == 1
    assert moved(records, kind="tool_result", result="duplicate") == 1
    assert moved(records, kind="user", result="ok") == 1
    assert moved("runjournal_storage_batch_records_count") == 2
    assert moved("runjournal_storage_batch_records_sum") == 4  # three at creation, then the one new record
    assert moved("runjournal_storage_batch_records_bucket", le="2.0") == 1  # the second write alone fits in 2


def test_a_read_stream_is_counted_open_while_it_is_served(metrics_server, stub):
    run_id = new_run_id("metrics")
    append(stub, run_id, b.meta(run_id=run_id))
    big = "x" * (900 * 1024)
    for seq in range(2, 18):  # about 14 MiB: more than the transport buffers, so the server waits on the reader
        assert append(stub, run_id, b.note(seq, big)) == "OK"
    stream = stub.Read(pb.ReadRequest(run_id=run_id))
    assert next(stream).seq == 1
    assert value(scrape(metrics_server), "runjournal_read_streams_open") == 1
    assert [r.seq for r in stream] == list(range(2, 18))
    assert value(scrape(metrics_server), "runjournal_read_streams_open") == 0


def test_the_series_are_the_same_at_10_runs_and_at_1000(metrics_server, stub):
    """No label names a run: a thousand runs add no series to what ten made."""

    def create_runs(count: int) -> None:
        for _ in range(count):
            run_id = new_run_id("many")
            assert append(stub, run_id, b.meta(run_id=run_id)) == "OK"

    create_runs(10)
    at_10 = scrape(metrics_server)
    create_runs(990)
    at_1000 = scrape(metrics_server)
    created = "runjournal_append_records_total"
    assert value(at_1000, created, kind="meta", result="ok") - value(at_10, created, kind="meta", result="ok") == 990
    assert set(at_1000) == set(at_10)
    assert not {name for (_, labels) in at_1000 for name, _ in labels} & {"run", "run_id"}


def test_group_commit_counts_every_append_its_groups_and_their_fsyncs(metrics_server, stub):
    """File: each append into an open journal is counted in one group, each group made durable by an fsync.

    Concurrent appends to 16 runs, so groups of several appends can form
    (how many do depends on timing, so only the invariants are checked: the
    exact number of appends, and at least one fsync per group). JetStream
    counts no fsyncs of its own and has none of these series.
    """
    runs = [new_run_id("group") for _ in range(16)]
    for run_id in runs:
        assert append(stub, run_id, b.meta(run_id=run_id)) == "OK"  # a creation: its own fsync, not a group's
    before = scrape(metrics_server)
    rounds = 5

    def appender(run_id: str) -> list[str]:
        return [append(stub, run_id, b.note(seq, "grouped")) for seq in range(2, 2 + rounds)]

    with ThreadPoolExecutor(len(runs)) as pool:
        outcomes = [outcome for result in pool.map(appender, runs) for outcome in result]
    assert outcomes == ["OK"] * len(runs) * rounds
    after = scrape(metrics_server)

    def moved(name: str) -> float:
        return value(after, name) - value(before, name)

    group_series = {name for name, _ in after if name.startswith(("runjournal_group_commit", "runjournal_commit_log"))}
    if metrics_server.backend_name == "jetstream":  # type: ignore[attr-defined]
        assert not group_series
        return
    assert moved("runjournal_group_commit_appends_total") == len(runs) * rounds
    groups = moved("runjournal_group_commit_groups_total")
    assert 1 <= groups <= len(runs) * rounds
    assert moved("runjournal_commit_log_fsyncs_total") + moved("runjournal_journal_fsyncs_total") >= groups

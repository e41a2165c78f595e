"""Watch (issue 13, item 1) over a real server on both backends: stored records, one caught_up, live records
in order with no gap and no duplicate, across replicas on JetStream, resumable, and bounded in memory.

The must-shows are here: 1,000 disconnect/resume cycles during 50 appends/s with 0 gaps and 0 duplicates,
and a paused watch while 10,000 records arrive growing the server's RSS by under 32 MiB.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc as pb_grpc
from runjournal_server.api.auth import token_sha256
from runjournal_server.api.watch import watch_run
from runjournal_server.api.watch_runs import watch_runs
from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records
from runjournal_server.core.errors import RunDeletedError, RunNotFoundError
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.runs import Runs
from tests.api.conftest import BACKENDS
from tests.api.rpc import error_info, new_run_id, reason
from tests.api.test_metrics import METRICS_PREFIX, scrape, value
from tests.conftest import new_stream_target
from tests.nats_server import NatsServer
from tests.servers import ServerProcess
from tests.support import builders as b

JournalStub = pb_grpc.JournalServiceStub

MIB = 1024 * 1024
HEALTH_REQUEST = health_pb2.HealthCheckRequest(service="runjournal.v1.JournalService")


def create(stub: JournalStub, run_id: str, notes: int = 0) -> int:
    """A run with its meta and ``notes`` note records; its last seq."""
    records = [b.meta(run_id=run_id), *(b.note(seq) for seq in range(2, notes + 2))]
    return stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records)).last_seq


def append_notes(stub: JournalStub, run_id: str, first: int, count: int) -> int:
    records = [b.note(seq, f"note {seq}") for seq in range(first, first + count)]
    return stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records)).last_seq


def event(item: pb.WatchResponse) -> tuple[str, int]:
    """("record", seq) or ("caught_up", head_seq)."""
    if item.WhichOneof("event") == "record":
        return "record", item.record.seq
    assert item.WhichOneof("event") == "caught_up", item
    return "caught_up", item.caught_up.head_seq


def take(call: Iterator[pb.WatchResponse], count: int) -> list[tuple[str, int]]:
    return [event(next(call)) for _ in range(count)]


def refusal(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    return raised.value


@pytest.fixture(params=BACKENDS)
def own_server(
    request: pytest.FixtureRequest, server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> ServerProcess:
    """A server of its own (for RSS measurements and extra flags), on each backend."""
    args: tuple[str, ...] = ()
    if request.param == "jetstream":
        args = new_stream_target().server_args(request.getfixturevalue("nats_server").url)
    server = server_factory(tmp_path / "data", *args)
    server.backend = request.param
    return server


# ------------------------------------------------------------------ the stream's shape


def test_watch_sends_stored_records_then_caught_up_then_each_new_record(stub: JournalStub) -> None:
    run_id = new_run_id("watch")
    create(stub, run_id, notes=2)
    call = stub.Watch(pb.WatchRequest(run_id=run_id))
    try:
        assert take(call, 4) == [("record", 1), ("record", 2), ("record", 3), ("caught_up", 3)]
        stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(4)))
        append_notes(stub, run_id, 5, 3)
        assert take(call, 4) == [("record", 4), ("record", 5), ("record", 6), ("record", 7)]
    finally:
        call.cancel()


def test_a_watched_record_carries_the_stored_line_as_read_sends_it(stub: JournalStub) -> None:
    run_id = new_run_id("watch")
    create(stub, run_id, notes=1)
    call = stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=1))
    try:
        item = next(call)
        assert next(call).caught_up.head_seq == 2
    finally:
        call.cancel()
    (read,) = stub.Read(pb.ReadRequest(run_id=run_id, from_seq=2))
    assert item.record == read


def test_watch_after_a_seq_resumes_there_and_after_the_last_seq_sends_only_caught_up(stub: JournalStub) -> None:
    run_id = new_run_id("watch")
    create(stub, run_id, notes=4)
    call = stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=3))
    try:
        assert take(call, 3) == [("record", 4), ("record", 5), ("caught_up", 5)]
    finally:
        call.cancel()
    call = stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=5))
    try:
        assert take(call, 1) == [("caught_up", 5)]
        append_notes(stub, run_id, 6, 1)
        assert take(call, 1) == [("record", 6)]
    finally:
        call.cancel()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.integers(min_value=0, max_value=12), data=st.data())
def test_watch_from_any_seq_sends_exactly_the_records_after_it_then_caught_up_at_the_head(
    stub: JournalStub, stored: int, data: st.DataObject
) -> None:
    """For every run length and every seq a client may have seen (0 to the head): the rest, once, in order."""
    run_id = new_run_id("watch")
    last = create(stub, run_id, notes=stored)
    after = data.draw(st.integers(min_value=0, max_value=last), label="after_seq")
    call = stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=after))
    try:
        expected = [("record", seq) for seq in range(after + 1, last + 1)] + [("caught_up", last)]
        assert take(call, len(expected)) == expected
        append_notes(stub, run_id, last + 1, 1)
        assert take(call, 1) == [("record", last + 1)]
    finally:
        call.cancel()


def test_watch_far_behind_the_head_sends_every_record_after_its_seq(stub: JournalStub) -> None:
    """Over 256 KiB behind, the stored part is read forward (not back from the end): the same records."""
    run_id = new_run_id("watch")
    create(stub, run_id)
    padding = "x" * 3000
    for first in range(2, 152, 50):
        records = [b.note(seq, f"{seq} {padding}") for seq in range(first, first + 50)]
        stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records))
    call = stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=2))
    try:
        assert take(call, 150) == [("record", seq) for seq in range(3, 152)] + [("caught_up", 151)]
    finally:
        call.cancel()
    err = refusal(lambda: next(stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=152))))
    assert error_info(err).metadata["field"] == "after_seq"


def test_watch_of_a_missing_run_is_run_not_found(stub: JournalStub) -> None:
    run_id = new_run_id("watch")
    err = refusal(lambda: next(stub.Watch(pb.WatchRequest(run_id=run_id))))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert reason(err) == "RUN_NOT_FOUND"
    assert error_info(err).metadata["run_id"] == run_id


@pytest.mark.parametrize(
    ("run_id", "after_seq", "field"),
    [("bad.id", 0, "run_id"), ("watch-ok", -1, "after_seq")],
)
def test_watch_refuses_a_bad_run_id_or_negative_after_seq(
    stub: JournalStub, run_id: str, after_seq: int, field: str
) -> None:
    err = refusal(lambda: next(stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=after_seq))))
    assert reason(err) == "INVALID_ARGUMENT"
    assert error_info(err).metadata["field"] == field


def test_watch_after_a_seq_the_run_never_had_is_invalid_argument(stub: JournalStub) -> None:
    """A client cannot have seen seq 9 of a 3-record run; caught_up{9} would name a head that never was."""
    run_id = new_run_id("watch")
    create(stub, run_id, notes=2)
    err = refusal(lambda: next(stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=9))))
    assert reason(err) == "INVALID_ARGUMENT"
    assert error_info(err).metadata["field"] == "after_seq"


def test_watch_of_a_damaged_journal_is_corrupt_journal(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    """A flipped bit inside a string still parses: the checksum finds it, and Watch refuses like Read."""
    server = server_factory(tmp_path / "data")
    run_id = new_run_id("watch")
    with grpc.insecure_channel(server.address) as channel:
        create(JournalStub(channel), run_id, notes=2)
    server.stop()
    path = tmp_path / "data" / f"{run_id}.jsonl"
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"progress", raw.index(b"\n") + 1)] ^= 0x01  # in line 2 of 3: damage, not a torn tail
    path.write_bytes(bytes(raw))
    server = server_factory(tmp_path / "data")
    with grpc.insecure_channel(server.address) as channel:
        err = refusal(lambda: list(JournalStub(channel).Watch(pb.WatchRequest(run_id=run_id))))
    assert err.code() == grpc.StatusCode.DATA_LOSS
    assert reason(err) == "CORRUPT_JOURNAL"


def test_two_watchers_of_one_run_each_get_every_record_once(stub: JournalStub) -> None:
    run_id = new_run_id("watch")
    create(stub, run_id)
    first = stub.Watch(pb.WatchRequest(run_id=run_id))
    second = stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=1))
    try:
        assert take(first, 2) == [("record", 1), ("caught_up", 1)]
        assert take(second, 1) == [("caught_up", 1)]
        append_notes(stub, run_id, 2, 2)
        assert take(first, 2) == take(second, 2) == [("record", 2), ("record", 3)]
    finally:
        first.cancel()
        second.cancel()


# ------------------------------------------------------------------ replicas (JetStream)


@pytest.mark.jetstream
def test_records_written_through_another_replica_reach_a_watcher(nats_server, server_factory, tmp_path) -> None:
    args = new_stream_target().server_args(nats_server.url)
    a, b_server = server_factory(tmp_path / "a", *args), server_factory(tmp_path / "b", *args)
    with grpc.insecure_channel(a.address) as channel_a, grpc.insecure_channel(b_server.address) as channel_b:
        via_a, via_b = JournalStub(channel_a), JournalStub(channel_b)
        run_id = new_run_id("replicas")
        create(via_a, run_id)
        call = via_b.Watch(pb.WatchRequest(run_id=run_id))
        try:
            assert take(call, 2) == [("record", 1), ("caught_up", 1)]
            via_a.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=b.note(2)))
            append_notes(via_a, run_id, 3, 2)
            assert take(call, 3) == [("record", 2), ("record", 3), ("record", 4)]
            append_notes(via_b, run_id, 5, 1)  # and its own writes, told once (by runs/; its feed skips them)
            append_notes(via_a, run_id, 6, 1)
            assert take(call, 2) == [("record", 5), ("record", 6)]
        finally:
            call.cancel()


@pytest.mark.jetstream
@pytest.mark.timeout(180)
def test_after_a_nats_restart_records_through_another_replica_still_reach_a_watcher(
    nats_binary, server_factory, tmp_path
) -> None:
    """The feed's consumer lives in the NATS server's memory and dies with it: the feed makes a new one."""
    nats_server = NatsServer(tmp_path / "nats", nats_binary).start()
    try:
        args = new_stream_target().server_args(nats_server.url)
        a, b_server = server_factory(tmp_path / "a", *args), server_factory(tmp_path / "b", *args)
        with grpc.insecure_channel(a.address) as channel_a, grpc.insecure_channel(b_server.address) as channel_b:
            via_a, via_b = JournalStub(channel_a), JournalStub(channel_b)
            run_id = new_run_id("replicas")
            create(via_a, run_id)
            call = via_b.Watch(pb.WatchRequest(run_id=run_id))
            try:
                assert take(call, 2) == [("record", 1), ("caught_up", 1)]
                updates = [
                    (u.status for u in health_pb2_grpc.HealthStub(channel).Watch(HEALTH_REQUEST, timeout=120))
                    for channel in (channel_a, channel_b)
                ]
                assert [next(u) for u in updates] == [health_pb2.HealthCheckResponse.SERVING] * 2
                nats_server.restart()
                # Both replicas report the store's loss and return through health: wait for that, not a clock.
                for u in updates:
                    assert next(u) == health_pb2.HealthCheckResponse.NOT_SERVING
                    assert next(u) == health_pb2.HealthCheckResponse.SERVING
                append_notes(via_a, run_id, 2, 2)
                assert take(call, 2) == [("record", 2), ("record", 3)]
            finally:
                call.cancel()
        # Before their nats-server: stopped after it, each spent seconds giving up on it.
        assert (a.stop(), b_server.stop()) == (0, 0), (a.log(), b_server.log())
    finally:
        nats_server.stop()


# ------------------------------------------------------------------ auth


def test_watch_outside_the_tokens_prefixes_is_permission_denied(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f'[[tokens]]\nname = "team-a"\nsha256 = "{token_sha256("secret-a")}"\nrun_id_prefixes = ["team-a-"]\n'
    )
    server = server_factory(tmp_path / "data", "--auth-tokens-file", str(tokens))
    bearer = (("authorization", "Bearer secret-a"),)
    with grpc.insecure_channel(server.address) as channel:
        stub = JournalStub(channel)
        mine, theirs = new_run_id("team-a"), new_run_id("team-b")
        stub.Append(pb.AppendRequest(run_id=mine, record=b.meta(run_id=mine)), metadata=bearer)
        err = refusal(lambda: next(stub.Watch(pb.WatchRequest(run_id=theirs), metadata=bearer)))
        assert reason(err) == "PERMISSION_DENIED"
        assert reason(refusal(lambda: next(stub.Watch(pb.WatchRequest(run_id=mine))))) == "UNAUTHENTICATED"
        call = stub.Watch(pb.WatchRequest(run_id=mine), metadata=bearer)
        try:
            assert take(call, 2) == [("record", 1), ("caught_up", 1)]
        finally:
            call.cancel()


# ------------------------------------------------------------------ shutdown


@pytest.mark.timeout(60)
def test_shutdown_ends_watch_streams_unavailable_at_once_for_clients_to_resume(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    """With a grace period longer than the test's timeout: an open watch must not hold the shutdown for it."""
    server = server_factory(tmp_path / "data", "--shutdown-grace-seconds", "300")
    with grpc.insecure_channel(server.address) as channel:
        stub = JournalStub(channel)
        run_id = new_run_id("watch")
        create(stub, run_id)
        watch = stub.Watch(pb.WatchRequest(run_id=run_id))
        runs_call = stub.WatchRuns(pb.WatchRunsRequest())
        assert take(watch, 2) == [("record", 1), ("caught_up", 1)]
        assert next(runs_call).WhichOneof("event") in ("run", "caught_up")
        assert server.stop() == 0, server.log()
        for call in (watch, runs_call):
            with pytest.raises(grpc.RpcError) as ended:
                for _ in call:
                    pass
            assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "shutting down" in (ended.value.details() or "")


# ------------------------------------------------------------------ metrics


def test_open_watch_streams_are_counted_by_method(server_factory: Callable[..., ServerProcess]) -> None:
    server = server_factory(None, "--metrics-listen", "127.0.0.1:0")
    assert server.process is not None and server.process.stdout is not None
    line = server.process.stdout.readline()
    assert line.startswith(METRICS_PREFIX), line
    server.metrics_address = line.removeprefix(METRICS_PREFIX).strip()  # type: ignore[attr-defined]
    with grpc.insecure_channel(server.address) as channel:
        stub = JournalStub(channel)
        assert value(scrape(server), "runjournal_watch_streams_open", method="Watch") == 0
        run_id = new_run_id("watch")
        create(stub, run_id)
        calls = [stub.Watch(pb.WatchRequest(run_id=run_id)) for _ in range(2)]
        runs_call = stub.WatchRuns(pb.WatchRunsRequest())
        try:
            for call in calls:
                assert take(call, 2) == [("record", 1), ("caught_up", 1)]
            assert next(runs_call).run.run_id == run_id
            samples = scrape(server)
            assert value(samples, "runjournal_watch_streams_open", method="Watch") == 2
            assert value(samples, "runjournal_watch_streams_open", method="WatchRuns") == 1
        finally:
            for call in (*calls, runs_call):
                call.cancel()


# ------------------------------------------------------------------ must show: resume cycles


MAX_LEAD = 3
"""How many records the appender may be ahead of the watcher: each resume finds a short backlog, or none."""
RESUME_CYCLES = 1000


class Appender(threading.Thread):
    """Appends one note at a time to a run, up to ``MAX_LEAD`` records past what the watcher has seen, until stopped.

    It runs as fast as the watcher reads, on its own thread, so records land
    at any moment of a cycle (while a watch opens, during its backlog, after
    its caught-up or as it is cancelled) without the cycles waiting on a
    clock: at a fixed 50 appends a second the thousand cycles took 26-31 s.
    """

    def __init__(self, address: str, run_id: str, first_seq: int) -> None:
        super().__init__(daemon=True)
        self.address = address
        self.run_id = run_id
        self.next_seq = first_seq
        self.halted = False
        self.failure: BaseException | None = None
        self._seen = first_seq - 1
        self._progress = threading.Condition()

    def reached(self, seq: int) -> None:
        """The watcher has seen every record up to ``seq``."""
        with self._progress:
            self._seen = max(self._seen, seq)
            self._progress.notify()

    def halt(self) -> None:
        with self._progress:
            self.halted = True
            self._progress.notify()

    def run(self) -> None:
        try:
            with grpc.insecure_channel(self.address) as channel:
                stub = JournalStub(channel)
                while self._may_append():
                    record = b.note(self.next_seq, f"note {self.next_seq}")
                    stub.Append(pb.AppendRequest(run_id=self.run_id, claim_token=1, record=record), timeout=30)
                    self.next_seq += 1
        except BaseException as err:  # reported by the test
            self.failure = err

    def _may_append(self) -> bool:
        with self._progress:
            while not self.halted and self.next_seq - 1 - self._seen >= MAX_LEAD:
                self._progress.wait()
            return not self.halted


@pytest.mark.timeout(600)
def test_a_thousand_watch_disconnect_resume_cycles_during_appends_lose_and_repeat_nothing(
    journal_server: ServerProcess, stub: JournalStub
) -> None:
    """Each cycle opens Watch after the last seq seen, reads 1-3 items, cancels: every seq arrives exactly once."""
    run_id = new_run_id("cycles")
    create(stub, run_id)
    appender = Appender(journal_server.address, run_id, 2)
    appender.start()
    seen: list[int] = [1]
    gaps = duplicates = caught_ups = live = 0
    try:
        for cycle in range(RESUME_CYCLES):
            call = stub.Watch(pb.WatchRequest(run_id=run_id, after_seq=seen[-1]), timeout=60)
            caught_up_in_cycle = 0
            for _ in range(1 + cycle % 3):
                kind, seq = event(next(call))
                if kind == "caught_up":
                    caught_up_in_cycle += 1
                    assert seq == seen[-1], (cycle, seq, seen[-1])
                    continue
                assert caught_up_in_cycle <= 1
                if seq <= seen[-1]:
                    duplicates += 1
                elif seq > seen[-1] + 1:
                    gaps += 1
                seen.append(seq)
                appender.reached(seq)
                if caught_up_in_cycle:
                    live += 1
            call.cancel()
            assert caught_up_in_cycle <= 1
            caught_ups += caught_up_in_cycle
    finally:
        appender.halt()
        appender.join()
    assert appender.failure is None, appender.failure
    print(f"{RESUME_CYCLES} cycles: {len(seen)} records, {caught_ups} caught-ups, {live} records after one")
    assert (gaps, duplicates) == (0, 0)
    assert seen == list(range(1, len(seen) + 1))
    assert len(seen) > RESUME_CYCLES / 2  # live records arrived, not only the backlog of a few
    assert caught_ups > 0
    stored = [item.seq for item in stub.Read(pb.ReadRequest(run_id=run_id))]
    assert stored[: len(seen)] == seen


# ------------------------------------------------------------------ must show: a paused watch holds no backlog


def rss_bytes(server: ServerProcess) -> int:
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc")


PAUSED_RECORDS = 10_000
BATCH = 100


@pytest.mark.timeout(600)
def test_a_paused_watch_while_ten_thousand_records_arrive_grows_the_server_by_under_32_mib(
    own_server: ServerProcess,
) -> None:
    """The client reads nothing while 10,000 records (about 30 MiB of items) are appended:
    the server holds flow-controlled items and the news, not the backlog; the watch then delivers them all."""
    with grpc.insecure_channel(own_server.address) as channel:
        stub = JournalStub(channel)
        warm = new_run_id("warmup")  # the allocator's and gRPC's first-use growth is not the watch's
        create(stub, warm)
        append_notes(stub, warm, 2, BATCH)
        run_id = new_run_id("paused")
        create(stub, run_id)
        padding = "x" * 3000  # items of ~3 KiB: 10,000 of them is 30 MiB, so a buffered backlog would show
        call = stub.Watch(pb.WatchRequest(run_id=run_id))
        try:
            assert take(call, 2) == [("record", 1), ("caught_up", 1)]
            before = rss_bytes(own_server)
            for first in range(2, PAUSED_RECORDS + 2, BATCH):
                records = [b.note(seq, f"{seq} {padding}") for seq in range(first, first + BATCH)]
                stub.AppendBatch(pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records))
            grown = rss_bytes(own_server) - before
            print(f"server RSS grew by {grown / MIB:.1f} MiB while the watch was paused")
            assert grown < 32 * MIB, f"server RSS grew by {grown / MIB:.1f} MiB"
            seqs = [seq for _, seq in take(call, PAUSED_RECORDS)]
            assert seqs == list(range(2, PAUSED_RECORDS + 2))
        finally:
            call.cancel()


# ------------------------------------------------------------------ deletion


def test_a_watch_of_a_run_that_is_deleted_ends_with_run_deleted(stub: JournalStub) -> None:
    run_id = new_run_id("watch")
    last = create(stub, run_id, notes=2)
    call = stub.Watch(pb.WatchRequest(run_id=run_id))
    assert take(call, 4)[-1] == ("caught_up", last)
    stub.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last))
    err = refusal(lambda: next(call))
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert reason(err) == "RUN_DELETED"
    assert error_info(err).metadata["last_seq"] == str(last)
    again = refusal(lambda: next(stub.Watch(pb.WatchRequest(run_id=run_id))))
    assert reason(again) == "RUN_DELETED"


@pytest.mark.jetstream
def test_a_run_deleted_through_another_replica_ends_its_watch(nats_server, server_factory, tmp_path) -> None:
    args = new_stream_target().server_args(nats_server.url)
    a, b_server = server_factory(tmp_path / "a", *args), server_factory(tmp_path / "b", *args)
    with grpc.insecure_channel(a.address) as channel_a, grpc.insecure_channel(b_server.address) as channel_b:
        via_a, via_b = JournalStub(channel_a), JournalStub(channel_b)
        run_id = new_run_id("replicas")
        last = create(via_a, run_id, notes=1)
        call = via_b.Watch(pb.WatchRequest(run_id=run_id))
        assert take(call, 3) == [("record", 1), ("record", 2), ("caught_up", 2)]
        via_a.DeleteRun(pb.DeleteRunRequest(run_id=run_id, expected_last_seq=last))
        assert reason(refusal(lambda: next(call))) == "RUN_DELETED"


# ------------------------------------------------------------------ who says a run was deleted (the backend)


async def test_whether_a_watched_run_was_deleted_is_the_backends_word(tmp_path: Path) -> None:
    """Watch and WatchRuns read "deleted" from the backend's RUN_DELETED, never from a run being gone: a run
    whose journal was removed by hand (no tombstone) is RUN_NOT_FOUND and leaves with ``deleted`` false; one
    deleted behind the server's back (a tombstone, news of a record only) is RUN_DELETED and ``deleted`` true.
    The news here is told by hand, as another replica's feed would tell it."""
    backend = FileBackend(tmp_path / "data")
    await backend.start()
    labels = {"who-says": "backend"}
    for run_id in ("by-hand", "tombstoned"):
        journal = await backend.create_journal(run_id, records.encode(b.meta(run_id=run_id, labels=labels)))
        await journal.close()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=16)
    listing = RunListing.of(runs)
    await listing.start()
    watches = {run_id: watch_run(runs, run_id, 0) for run_id in ("by-hand", "tombstoned")}
    changes = watch_runs(runs.events, listing, RunFilter(labels=labels))
    try:
        for watch in watches.values():
            sent = [event(pb.WatchResponse.FromString(await anext(watch))) for _ in range(2)]
            assert sent == [("record", 1), ("caught_up", 1)]
        listed = [await _next_change(changes) for _ in range(3)]
        assert [item.WhichOneof("event") for item in listed] == ["run", "run", "caught_up"]

        (tmp_path / "data" / "by-hand.jsonl").unlink()
        assert (await backend.delete_run("tombstoned", 1)).deleted
        for run_id in watches:
            runs.events.stored(run_id, 2)

        with pytest.raises(RunNotFoundError):
            await anext(watches["by-hand"])
        with pytest.raises(RunDeletedError) as deleted:
            await anext(watches["tombstoned"])
        assert deleted.value.typed_metadata["last_seq"] == 1
        left = {item.left.run_id: item.left.deleted for item in [await _next_change(changes) for _ in range(2)]}
        assert left == {"by-hand": False, "tombstoned": True}
    finally:
        for watch in (*watches.values(), changes):
            await watch.aclose()
        await listing.close()
        await runs.close()
        await backend.close()


async def _next_change(changes: AsyncGenerator[bytes, None]) -> pb.WatchRunsResponse:
    return pb.WatchRunsResponse.FromString(await anext(changes))

"""Watch and WatchRuns resume after transport failures, without a gap or a repeat, and never after a refusal.

A scripted servicer plays a run whose records keep coming and whose streams
break where a test says; the real server's Watch is tested in
``test_lifecycle_against_server.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import pytest

from runjournal import AsyncJournalClient, CaughtUp, JournalClient, RetryPolicy, WatchedRecord
from runjournal.errors import RunDeletedError, UnavailableError
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, state_pb2
from tests.client.fake_journal import abort_with_reason

FAST_RETRY = RetryPolicy(max_attempts=3, initial_backoff_seconds=0.001, max_backoff_seconds=0.002)
STORED = 3
"""Records stored when a watch begins; the stream then sends ``caught_up`` and live records up to ``LAST``."""
LAST = 12


def _hold(context: grpc.ServicerContext) -> None:
    """Keep the stream open until the client cancels it, as a watch does when nothing new arrives."""
    ended = threading.Event()
    context.add_callback(ended.set)
    assert ended.wait(timeout=30), "the client never cancelled the watch"


@dataclass
class ScriptedWatch(journal_service_pb2_grpc.JournalServiceServicer):  # type: ignore[misc]
    breaks: set[int] = field(default_factory=set)
    """Seqs before which a stream fails UNAVAILABLE without a reason (each once)."""
    deleted_after: int = 0
    """When set, the stream ends RUN_DELETED after this seq."""
    ends_after: set[int] = field(default_factory=set)
    """Seqs after which the server ends the stream OK (each once)."""
    after_seqs: list[int] = field(default_factory=list)
    runs_streams: list[list[pb.WatchRunsResponse]] = field(default_factory=list)
    """WatchRuns: the items of each stream in turn; each but the last then breaks."""
    runs_requests: list[pb.WatchRunsRequest] = field(default_factory=list)

    def Watch(self, request: pb.WatchRequest, context: grpc.ServicerContext) -> Iterator[pb.WatchResponse]:
        self.after_seqs.append(request.after_seq)
        for seq in range(request.after_seq + 1, LAST + 1):
            if seq == max(request.after_seq, STORED) + 1:
                yield pb.WatchResponse(caught_up=pb.CaughtUp(head_seq=max(request.after_seq, STORED)))
            if seq in self.breaks:
                self.breaks.discard(seq)
                context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
            record = records_pb2.JournalRecord(seq=seq, optional=True, note=records_pb2.Note(text=f"n{seq}"))
            yield pb.WatchResponse(record=pb.ReadResponse(seq=seq, record=record, stored_line=f"line {seq}".encode()))
            if seq == self.deleted_after:
                abort_with_reason("RUN_DELETED", grpc.StatusCode.NOT_FOUND, {"run_id": "r1", "last_seq": str(seq)})(
                    context
                )
            if seq in self.ends_after:
                self.ends_after.discard(seq)
                return
        _hold(context)

    def WatchRuns(self, request: pb.WatchRunsRequest, context: grpc.ServicerContext) -> Iterator[pb.WatchRunsResponse]:
        self.runs_requests.append(request)
        index = len(self.runs_requests) - 1
        yield from self.runs_streams[index]
        if index + 1 < len(self.runs_streams):
            context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
        _hold(context)


@pytest.fixture
def scripted() -> Iterator[tuple[ScriptedWatch, str]]:
    servicer = ScriptedWatch()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    journal_service_pb2_grpc.add_JournalServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"127.0.0.1:{port}"
    server.stop(None)


def _until_last(items: Iterator[object]) -> list[object]:
    taken = []
    for item in items:
        taken.append(item)
        if isinstance(item, WatchedRecord) and item.seq == LAST:
            break
    return taken


def _shape(items: Sequence[object]) -> list[object]:
    return [item.seq if isinstance(item, WatchedRecord) else item for item in items]


EXPECTED = [1, 2, 3, CaughtUp(head_seq=STORED), *range(STORED + 1, LAST + 1)]


def test_a_sync_watch_resumes_from_the_last_seq_after_every_break(scripted: tuple[ScriptedWatch, str]) -> None:
    servicer, address = scripted
    # More breaks than the policy's attempts: each comes after progress, so the attempts start over.
    servicer.breaks = {2, 5, 7, 9, 11}
    with JournalClient(address, retry=FAST_RETRY) as client:
        watch = client.watch("r1")
        items = _until_last(watch)
        watch.close()
    assert _shape(items) == EXPECTED
    assert servicer.after_seqs == [0, 1, 4, 6, 8, 10]
    assert all(item.record.note.text == f"n{item.seq}" for item in items if isinstance(item, WatchedRecord))


async def test_an_async_watch_resumes_from_the_last_seq_after_every_break(scripted: tuple[ScriptedWatch, str]) -> None:
    servicer, address = scripted
    servicer.breaks = {2, 5, 7, 9, 11}
    async with AsyncJournalClient(address, retry=FAST_RETRY) as client:
        watch = client.watch("r1", after_seq=1)
        items = []
        async for item in watch:
            items.append(item)
            if isinstance(item, WatchedRecord) and item.seq == LAST:
                break
        await watch.aclose()
    assert _shape(items) == EXPECTED[1:]
    assert servicer.after_seqs == [1, 1, 4, 6, 8, 10]  # the break before seq 2 came before any item


def test_a_watch_the_server_ends_is_resumed_like_a_break(scripted: tuple[ScriptedWatch, str]) -> None:
    servicer, address = scripted
    servicer.ends_after = {6}
    with JournalClient(address, retry=FAST_RETRY) as client:
        watch = client.watch("r1")
        items = _until_last(watch)
        watch.close()
    assert _shape(items) == EXPECTED
    assert servicer.after_seqs == [0, 6]


def test_breaks_back_to_back_beyond_the_policy_raise_unavailable(scripted: tuple[ScriptedWatch, str]) -> None:
    servicer, address = scripted
    servicer.breaks = {1}
    with JournalClient(address, retry=RetryPolicy(max_attempts=1)) as client, pytest.raises(UnavailableError):
        _until_last(client.watch("r1"))


def test_a_run_deleted_while_watched_ends_the_watch_and_is_not_resumed(scripted: tuple[ScriptedWatch, str]) -> None:
    servicer, address = scripted
    servicer.deleted_after = 5
    seen: list[object] = []
    with JournalClient(address, retry=FAST_RETRY) as client, pytest.raises(RunDeletedError) as caught:
        seen.extend(client.watch("r1"))
    assert caught.value.last_seq == 5
    assert servicer.after_seqs == [0]


def _summary(run_id: str, last_seq: int) -> state_pb2.RunSummary:
    return state_pb2.RunSummary(run_id=run_id, last_seq=last_seq)


def _run(run_id: str, last_seq: int) -> pb.WatchRunsResponse:
    return pb.WatchRunsResponse(run=_summary(run_id, last_seq))


CAUGHT_UP = pb.WatchRunsResponse(caught_up=pb.CaughtUp())


def test_watch_runs_resumes_without_repeats_and_reports_runs_gone_meanwhile(
    scripted: tuple[ScriptedWatch, str],
) -> None:
    servicer, address = scripted
    servicer.runs_streams = [
        [_run("a", 1), _run("b", 1), CAUGHT_UP, _run("a", 2)],
        # After the break: a unchanged (not repeated), b gone, c new, then a live change.
        [_run("a", 2), _run("c", 1), CAUGHT_UP, _run("a", 3)],
    ]
    with JournalClient(address, retry=FAST_RETRY) as client:
        stream = client.watch_runs(labels={"team": "x"}, waiting_for_person=True)
        items = [next(stream) for _ in range(7)]
        stream.close()
    assert items == [
        _summary("a", 1),
        _summary("b", 1),
        CaughtUp(head_seq=0),
        _summary("a", 2),
        _summary("c", 1),
        pb.RunLeft(run_id="b", deleted=False),
        _summary("a", 3),
    ]
    assert len(servicer.runs_requests) == 2
    assert servicer.runs_requests[0] == servicer.runs_requests[1]
    assert dict(servicer.runs_requests[0].labels) == {"team": "x"}
    assert servicer.runs_requests[0].waiting_for_person


async def test_an_async_watch_runs_passes_a_left_run_on(scripted: tuple[ScriptedWatch, str]) -> None:
    servicer, address = scripted
    left = pb.WatchRunsResponse(left=pb.RunLeft(run_id="a", deleted=True))
    servicer.runs_streams = [[_run("a", 1), CAUGHT_UP, left]]
    async with AsyncJournalClient(address, retry=FAST_RETRY) as client:
        stream = client.watch_runs(parent_run_id="p")
        items = [await anext(stream) for _ in range(3)]
        await stream.aclose()
    assert items == [_summary("a", 1), CaughtUp(head_seq=0), pb.RunLeft(run_id="a", deleted=True)]
    assert servicer.runs_requests[0].parent_run_id == "p"

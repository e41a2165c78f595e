"""A Read stream broken after an unknown optional record resumes after it (issue 10, item 16).

The server sends such a record with its ``seq`` but no payload it could
decode; the clients must resume from ``seq``, not from ``record.seq``, or the
retry repeats every record before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import pytest

from runjournal import AsyncJournalClient, JournalClient, RetryPolicy
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2

FAST_RETRY = RetryPolicy(max_attempts=3, initial_backoff_seconds=0.001, max_backoff_seconds=0.002)
LAST_SEQ = 4
UNKNOWN_SEQ = 2


@dataclass
class ReadsWithAnUnknownRecord(journal_service_pb2_grpc.JournalServiceServicer):  # type: ignore[misc]
    """Streams seqs 1..4 where seq 2 is of a kind the server cannot decode; breaks once before seq 3."""

    from_seqs: list[int] = field(default_factory=list)
    broken: bool = False

    def Read(self, request: pb.ReadRequest, context: grpc.ServicerContext) -> Iterator[pb.ReadResponse]:
        self.from_seqs.append(request.from_seq)
        for seq in range(max(request.from_seq, 1), LAST_SEQ + 1):
            if seq == UNKNOWN_SEQ + 1 and not self.broken:
                self.broken = True
                context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
            # Like an older server: an undecodable record leaves ``record`` empty; only ``seq`` places it.
            record = records_pb2.JournalRecord() if seq == UNKNOWN_SEQ else records_pb2.JournalRecord(seq=seq)
            yield pb.ReadResponse(seq=seq, record=record, stored_line=f"line {seq}".encode())


@pytest.fixture
def reads() -> Iterator[tuple[ReadsWithAnUnknownRecord, str]]:
    servicer = ReadsWithAnUnknownRecord()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    journal_service_pb2_grpc.add_JournalServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"127.0.0.1:{port}"
    server.stop(None)


def test_the_sync_client_resumes_after_an_unknown_record_without_repeating(
    reads: tuple[ReadsWithAnUnknownRecord, str],
) -> None:
    servicer, address = reads
    with JournalClient(address, retry=FAST_RETRY, timeout=5.0) as client:
        lines = [line for _, line in client.read("run-1")]
    assert lines == [f"line {seq}".encode() for seq in range(1, LAST_SEQ + 1)]
    assert servicer.from_seqs == [0, UNKNOWN_SEQ + 1]


async def test_the_async_client_resumes_after_an_unknown_record_without_repeating(
    reads: tuple[ReadsWithAnUnknownRecord, str],
) -> None:
    servicer, address = reads
    async with AsyncJournalClient(address, retry=FAST_RETRY, timeout=5.0) as client:
        got = [(record.seq, line) async for record, line in client.read("run-1")]
    assert got == [(seq, f"line {seq}".encode()) for seq in range(1, LAST_SEQ + 1)]
    assert servicer.from_seqs == [0, UNKNOWN_SEQ + 1]

"""Client load: grpc.aio workers, one run per worker, driving a server for a bounded time.

The same code drives runjournal and the echo service: a worker builds the
same request message for the same seq either way; only the method path and
the response parsing differ (the echo's response is the request's bytes and is
not parsed). Calls that return raw bytes (``raw_method``) let Fold and Claim
report the response size and keep the client's parsing out of the figure.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

import grpc
from google.protobuf.message import Message

from bench import workload
from bench.echo import BLOB_METHOD, ECHO_METHOD, SYNCED_ECHO_METHOD
from bench.harness import Measurement
from runjournal.v1 import journal_service_pb2 as service_pb

SERVICE = "/runjournal.v1.JournalService/"
RPC_TIMEOUT_SECONDS = 120.0
"""Every call has a deadline: a wedged server fails the benchmark instead of hanging it."""
CLIENT_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    ("grpc.max_send_message_length", 256 * 1024 * 1024),
]

Operation = Callable[[], Awaitable[int]]
"""One call; returns how many records it carried."""


def channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address, options=CLIENT_OPTIONS)


def method(chan: grpc.aio.Channel, name: str, response: type[Message] | None) -> grpc.aio.UnaryUnaryMultiCallable:
    """A unary JournalService method; ``response=None`` returns the raw response bytes."""
    return chan.unary_unary(
        SERVICE + name,
        request_serializer=_serialize,
        response_deserializer=response.FromString if response is not None else None,
    )


def echo_method(chan: grpc.aio.Channel, *, synced: bool = False) -> grpc.aio.UnaryUnaryMultiCallable:
    """The echo's ``Echo`` (or, ``synced``, its ``SyncedEcho``), called with the same requests as ``Append``."""
    name = SYNCED_ECHO_METHOD if synced else ECHO_METHOD
    return chan.unary_unary(name, request_serializer=_serialize, response_deserializer=None)


def blob_method(chan: grpc.aio.Channel) -> Callable[[int], Awaitable[bytes]]:
    """Ask the echo server for a response of ``size`` bytes (the raw bytes come back)."""
    call = chan.unary_unary(BLOB_METHOD, request_serializer=None, response_deserializer=None)

    async def fetch(size: int) -> bytes:
        return await call(str(size).encode(), timeout=RPC_TIMEOUT_SECONDS)  # type: ignore[no-any-return]

    return fetch


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


async def drive(operations: Sequence[Operation], seconds: float, cap_per_worker: int) -> Measurement:
    """Run every operation in its own loop until ``seconds`` pass or it has run ``cap_per_worker`` times."""
    start = time.perf_counter()
    deadline = start + seconds

    async def loop(operation: Operation) -> tuple[int, list[float]]:
        latencies: list[float] = []
        records = 0
        while len(latencies) < cap_per_worker and time.perf_counter() < deadline:
            began = time.perf_counter()
            records += await operation()
            latencies.append(time.perf_counter() - began)
        return records, latencies

    results = await asyncio.gather(*(loop(op) for op in operations))
    elapsed = time.perf_counter() - start
    latencies = [value for _, values in results for value in values]
    return Measurement(len(latencies), sum(r for r, _ in results), elapsed, latencies)


class Appender:
    """Workers that each append the next records of their own run (one record, or a batch)."""

    def __init__(
        self,
        chan: grpc.aio.Channel,
        run_ids: Sequence[str],
        *,
        batch: int = 1,
        echo: bool = False,
        synced: bool = False,
    ) -> None:
        self.run_ids = list(run_ids)
        self.batch = batch
        self.echo = echo or synced
        self.next_seq = dict.fromkeys(self.run_ids, 2)
        if self.echo:
            self._call = echo_method(chan, synced=synced)
        elif batch == 1:
            self._call = method(chan, "Append", service_pb.AppendResponse)
        else:
            self._call = method(chan, "AppendBatch", service_pb.AppendBatchResponse)
        self._create = method(chan, "Append", service_pb.AppendResponse)

    async def create_runs(self, concurrency: int = 64) -> None:
        """Create every run with its meta (not timed); the echo has nothing to create."""
        if self.echo:
            return
        pending = list(self.run_ids)

        async def worker() -> None:
            while pending:
                run_id = pending.pop()
                request = service_pb.AppendRequest(run_id=run_id, claim_token=1, record=workload.meta(run_id))
                await self._create(request, timeout=RPC_TIMEOUT_SECONDS)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(pending)))))

    def operations(self) -> list[Operation]:
        return [self._operation(run_id) for run_id in self.run_ids]

    def _operation(self, run_id: str) -> Operation:
        async def operation() -> int:
            seq = self.next_seq[run_id]
            request: Message
            if self.batch == 1:
                request = workload.append_request(run_id, seq)
            else:
                request = workload.batch_request(run_id, seq, self.batch)
            await self._call(request, timeout=RPC_TIMEOUT_SECONDS)
            self.next_seq[run_id] = seq + self.batch
            return self.batch

        return operation

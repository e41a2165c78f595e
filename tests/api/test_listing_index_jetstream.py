"""The listing index on JetStream: replicas share the runs, each keeps its own index, persisted in a KV bucket.

What must hold (``listing/upkeep.py``, ``backends/jetstream/listing_store.py``):
a run another replica acknowledged before ListRuns began is on the page (the
barrier); after a restart, with writes through another replica while this one
was down, every page is what a server with no index lists; a damaged or
missing persisted index is rebuilt, never believed; a deleted run leaves the
listing. Real nats-server, real servers, real gRPC.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import nats
import nats.js.errors
import pytest
from nats.js.kv import KeyValue

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import state_pb2
from runjournal_server.backends.jetstream.listing_store import HEAD, bucket_name
from tests.api.test_listing_index import FILTERS, append, create, pages, populate, stub_of
from tests.conftest import StreamTarget, new_stream_target
from tests.servers import ServerProcess
from tests.support import builders as b
from tests.support.listing_index import flip_a_status

pytestmark = pytest.mark.jetstream

LOADED = "loaded from KV bucket"
"""What a replica logs when it serves from the persisted index (else it rebuilds, listing every run meanwhile)."""


class Replicas:
    """Replicas on one stream, each with a data dir of its own (unused by JetStream, but the flag is required)."""

    def __init__(self, base: Path, target: StreamTarget, url: str) -> None:
        self.base = base
        self.target = target
        self.url = url
        self.running: list[ServerProcess] = []

    def start(self, name: str, *args: str) -> ServerProcess:
        server = ServerProcess(self.base / name, extra_args=(*self.target.server_args(self.url), *args)).start()
        self.running.append(server)
        return server

    def stop(self, server: ServerProcess) -> None:
        code = server.stop()
        self.running.remove(server)
        assert code == 0, server.log()

    def reference(self) -> dict[str, list[list[state_pb2.RunSummary]]]:
        """The pages of a replica with no index at all: it reads every run, as before the index existed."""
        server = self.start("reference", "--list-without-index")
        try:
            for stub in stub_of(server):
                return pages(stub)
            raise AssertionError("unreachable")
        finally:
            self.stop(server)

    def kv(self, change: Callable[[KeyValue], Awaitable[object]]) -> None:
        """Run ``change`` on the stream's index bucket (for the damage tests)."""

        async def go() -> None:
            nc = await nats.connect(self.url)
            try:
                kv = await nc.jetstream().key_value(bucket_name(self.target.name, self.target.prefix))
                await change(kv)
            finally:
                await nc.close()

        asyncio.run(go())

    def close(self) -> None:
        for server in list(self.running):
            if server.process is not None and server.process.poll() is None:
                server.stop()


@pytest.fixture
def replicas(nats_server, tmp_path: Path) -> Iterator[Replicas]:
    made = Replicas(tmp_path, new_stream_target(), nats_server.url)
    yield made
    made.close()


def run_ids(response: pb.ListRunsResponse) -> list[str]:
    return [summary.run_id for summary in response.runs]


DELAY_SECONDS = 0.25
"""The link between replica A and NATS carries what NATS sends A this much later (a replica far from NATS)."""


class DelayedLink:
    """A loopback TCP proxy to NATS that delivers what the server sends ``DELAY_SECONDS`` late, in order.

    So the feed tells replica A of replica B's write a quarter second after
    B acknowledged it, and a page that does not wait for the feed (the
    barrier) answers without it: without the barrier the test below fails
    every round. Its own event loop in a thread, as the test's calls block.
    """

    def __init__(self, upstream_port: int) -> None:
        self._upstream_port = upstream_port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    def start(self) -> DelayedLink:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        ).result(10)
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"nats://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def close(self) -> None:
        async def shut() -> None:
            assert self._server is not None
            self._server.close()
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._upstream_port)
        await asyncio.gather(
            self._pump(client_reader, upstream_writer, 0.0),
            self._pump(upstream_reader, client_writer, DELAY_SECONDS),
            return_exceptions=True,
        )
        for writer in (client_writer, upstream_writer):
            writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
        held: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def deliver() -> None:
            while (item := await held.get()) is not None:
                due, data = item
                await asyncio.sleep(max(0.0, due - self._loop.time()))  # the link's latency, not a wait in a test
                writer.write(data)
                await writer.drain()

        delivering = asyncio.create_task(deliver())
        try:
            while data := await reader.read(65536):
                held.put_nowait((self._loop.time() + delay, data))
        finally:
            held.put_nowait(None)
            await delivering


ROUNDS = 3


def test_a_write_through_another_replica_is_on_the_very_next_page(replicas: Replicas, nats_server):
    link = DelayedLink(nats_server.port).start()
    try:
        a = replicas.start("a", "--nats-url", link.url)  # the last --nats-url given is the one used
        bee = replicas.start("b")
        for stub_a in stub_of(a):
            for stub_b in stub_of(bee):
                _replica_writes_are_on_the_next_page(stub_a, stub_b)
    finally:
        replicas.close()
        link.close()


def _replica_writes_are_on_the_next_page(stub_a, stub_b) -> None:
    populate(stub_b, count=6)
    assert run_ids(stub_a.ListRuns(FILTERS["completed"], timeout=30)) == ["idx-05", "idx-01"]
    missed: list[str] = []
    for round_ in range(ROUNDS):
        run_id = f"bar-{round_:03d}"
        create(stub_b, run_id, 1_800_000_000 + round_, round=str(round_))
        # A new run: placed from the news before the page is answered.
        if run_ids(stub_a.ListRuns(pb.ListRunsRequest(labels={"round": str(round_)}), timeout=30)) != [run_id]:
            missed.append(f"{run_id}: new")
        # A state change of a run A's index holds as open: dirty from the news before the page.
        append(stub_b, run_id, b.terminal(2))
        completed = pb.ListRunsRequest(status=state_pb2.RUN_STATUS_COMPLETED, page_size=1)
        if run_ids(stub_a.ListRuns(completed, timeout=30)) != [run_id]:
            missed.append(f"{run_id}: completed")
    assert missed == []
    # A run waiting for a person, through B: in A's very next inbox.
    append(stub_b, "idx-04", b.assistant(2, 1, calls=["c1"]))
    append(stub_b, "idx-04", b.deferral(3, "c1"))
    inbox = pb.ListRunsRequest(waiting_for_person=True, page_size=100)
    assert run_ids(stub_a.ListRuns(inbox, timeout=30)) == ["idx-04", "idx-02"]
    # A deletion through B: gone from A's next page of every filter.
    stub_b.DeleteRun(pb.DeleteRunRequest(run_id="idx-04", expected_last_seq=3), timeout=30)
    assert run_ids(stub_a.ListRuns(inbox, timeout=30)) == ["idx-02"]
    last = f"bar-{ROUNDS - 1:03d}"
    stub_b.DeleteRun(pb.DeleteRunRequest(run_id=last, expected_last_seq=2), timeout=30)
    assert last not in run_ids(stub_a.ListRuns(pb.ListRunsRequest(page_size=10), timeout=30))
    assert run_ids(stub_a.ListRuns(completed, timeout=30)) == [f"bar-{ROUNDS - 2:03d}"]


def test_after_a_restart_and_writes_through_another_replica_every_page_is_as_without_an_index(replicas: Replicas):
    a = replicas.start("a")
    bee = replicas.start("b")
    for stub in stub_of(a):
        populate(stub)
        before = pages(stub)
    replicas.stop(a)
    # While A is down, B moves the runs on: states change, runs are created and deleted.
    for stub in stub_of(bee):
        append(stub, "idx-00", b.terminal(2))
        append(stub, "idx-02", b.result(4, "c1"))
        populate(stub, count=3, first=30)
        stub.DeleteRun(pb.DeleteRunRequest(run_id="idx-05", expected_last_seq=2), timeout=30)
    a = replicas.start("a")
    for stub in stub_of(a):
        after = pages(stub)
    assert LOADED in a.log(), a.log()
    assert after != before
    assert after == replicas.reference()
    listed = [s.run_id for page in after["all"] for s in page]
    assert "idx-05" not in listed and "idx-32" in listed
    assert "idx-00" in [s.run_id for page in after["completed"] for s in page]
    assert "idx-02" not in [s.run_id for page in after["inbox"] for s in page]
    # And after a crash of A: the snapshot of its last clean stop, then the news since.
    for stub in stub_of(a):
        append(stub, "idx-03", b.terminal(2))
        populate(stub, count=2, first=40)
    a.kill()
    replicas.running.remove(a)
    a = replicas.start("a")
    for stub in stub_of(a):
        crashed = pages(stub)
    assert LOADED in a.log(), a.log()
    assert crashed == replicas.reference()
    assert "idx-03" in [s.run_id for page in crashed["completed"] for s in page]


async def _delete_bucket(kv: KeyValue) -> None:
    await kv._js.delete_stream(kv._stream)


async def _garble_head(kv: KeyValue) -> None:
    await kv.put(HEAD, b"{not json")


async def _flip_a_chunk(kv: KeyValue) -> None:
    head = json.loads((await kv.get(HEAD)).value)
    key = f"{head['slot']}.0"
    value = (await kv.get(key)).value
    await kv.put(key, flip_a_status(value, "idx-01", 2, 1))  # completed (2) made open (1): valid JSON, wrong CRC


async def _another_stream(kv: KeyValue) -> None:
    head = json.loads((await kv.get(HEAD)).value)
    head["stream_created"] = "2001-01-01T00:00:00Z"
    await kv.put(HEAD, json.dumps(head).encode())


async def _past_the_end(kv: KeyValue) -> None:
    head = json.loads((await kv.get(HEAD)).value)
    head["position"] += 1_000_000
    await kv.put(HEAD, json.dumps(head).encode())


async def _drop_a_chunk(kv: KeyValue) -> None:
    head = json.loads((await kv.get(HEAD)).value)
    await kv.purge(f"{head['slot']}.0")


DAMAGE: dict[str, Callable[[KeyValue], Awaitable[object]]] = {
    "bucket deleted": _delete_bucket,
    "head garbled": _garble_head,
    "chunk flipped": _flip_a_chunk,
    "chunk missing": _drop_a_chunk,
    "another stream": _another_stream,
    "position past the end": _past_the_end,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_missing_persisted_index_is_rebuilt_never_believed(replicas: Replicas, damage: str):
    a = replicas.start("a")
    for stub in stub_of(a):
        populate(stub)
    replicas.stop(a)
    a = replicas.start("a")
    for stub in stub_of(a):
        expected = pages(stub)
    assert LOADED in a.log()
    replicas.stop(a)
    replicas.kv(DAMAGE[damage])
    a = replicas.start("a")
    for stub in stub_of(a):
        assert pages(stub) == expected
    assert LOADED not in a.log() and "rebuilding it from the journals" in a.log(), a.log()
    replicas.stop(a)
    a = replicas.start("a")  # and the index it rebuilt and persisted
    for stub in stub_of(a):
        assert pages(stub) == expected
    assert LOADED in a.log(), a.log()


def test_the_persisted_index_holds_no_labels(replicas: Replicas):
    canary = "c4n4ry-0f-th3-kv-1nd3x"
    a = replicas.start("a")
    for stub in stub_of(a):
        create(stub, "idx-secret", 1_700_000_000, secret=canary)
        create(stub, "idx-kept", 1_700_000_001, secret="kept")
        assert run_ids(stub.ListRuns(pb.ListRunsRequest(), timeout=30)) == ["idx-kept", "idx-secret"]
    replicas.stop(a)
    values: list[bytes] = []

    async def read_all(kv: KeyValue) -> None:
        for key in await kv.keys():
            values.append((await kv.get(key)).value or b"")

    replicas.kv(read_all)
    assert values and not any(canary.encode() in value for value in values)
    assert any(b"idx-secret" in value for value in values)
    a = replicas.start("a")
    for stub in stub_of(a):
        labelled = stub.ListRuns(pb.ListRunsRequest(labels={"secret": "kept"}), timeout=30).runs
        assert [s.run_id for s in labelled] == ["idx-kept"]


def test_replicas_stopping_together_leave_one_whole_snapshot(replicas: Replicas):
    """Both write the snapshot as they stop; the head's compare-and-set lets one win and the other write again
    into the slot the winner left, so the next start loads a whole snapshot (never a mix of the two)."""
    a = replicas.start("a")
    bee = replicas.start("b")
    for stub in stub_of(a):
        populate(stub)
    for stub in stub_of(bee):
        append(stub, "idx-03", b.terminal(2))
        pages(stub)
    stoppers = [threading.Thread(target=replicas.stop, args=(server,)) for server in (a, bee)]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        stopper.join()
    assert replicas.running == []
    a = replicas.start("a")
    for stub in stub_of(a):
        listed = pages(stub)
    assert LOADED in a.log(), a.log()
    assert listed == replicas.reference()

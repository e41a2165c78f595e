"""What a creation that never committed leaves behind, and a meta erased by hand: the id is free, or corrupt.

A run is its meta. On JetStream a creation larger than one atomic batch (a
fork of a long run) stages records 2..M before its meta lands
(``backends/jetstream/staging.py``); a server killed between two stages
leaves those records and no meta. The next creation of the id clears them
and lands, whatever it creates; reads meanwhile find no run. Remains that are
not provably such a staging (records whose meta was erased by hand) are
CORRUPT_JOURNAL, naming what the store holds, for every call about the id,
creations included: never RUN_NOT_FOUND, which would tell the caller to
create the run it just failed to create. On the file backend a creation is
one write under a batch intent (an interrupted one reads as absent and is
overwritten by the next), so only the second case applies there.

Real server processes on a real nats-server; the crash is a SIGKILL the
server sends itself right after the stream acknowledged its first stage
(``staging_crash_launcher.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import nats
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from tests.conftest import StreamTarget, new_stream_target
from tests.durability.harness import CALL_TIMEOUT_SECONDS, LaunchedServer, journal_path, reason
from tests.nats_server import NatsServer
from tests.servers import ServerProcess
from tests.support import builders as b

LAUNCHER = Path(__file__).with_name("staging_crash_launcher.py")
SOURCE = "long-source"
FORK = "staged-fork"
RECORDS = 3000
"""Three atomic batches' worth: two stages (records 2..1001, 1002..2001) and the commit."""

T = CALL_TIMEOUT_SECONDS


@contextlib.contextmanager
def stub_of(server: ServerProcess) -> Iterator[journal_service_pb2_grpc.JournalServiceStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield journal_service_pb2_grpc.JournalServiceStub(channel)


def write_long_run(stub: journal_service_pb2_grpc.JournalServiceStub, run_id: str, count: int) -> None:
    """A run of ``count`` records (its meta, then notes), a thousand records per AppendBatch."""
    records = [b.meta(run_id=run_id), *(b.note(seq, f"step {seq}") for seq in range(2, count + 1))]
    for first in range(0, count, 1000):
        request = pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records[first : first + 1000])
        stub.AppendBatch(request, timeout=T)


def refusal(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        call()  # type: ignore[operator]
    return refused.value


async def _api(url: str, subject: str, body: dict[str, object]) -> dict[str, object]:
    nc = await nats.connect(url)
    try:
        reply = await nc.request(f"$JS.API.{subject}", json.dumps(body).encode(), timeout=10)
    finally:
        await nc.close()
    answer: dict[str, object] = json.loads(reply.data)
    assert "error" not in answer, answer
    return answer


def subjects(nats_server: NatsServer, target: StreamTarget, run_id: str) -> dict[str, int]:
    """The subjects of the run that hold a message, with their counts, as the stream reports them."""
    info = asyncio.run(
        _api(nats_server.url, f"STREAM.INFO.{target.name}", {"subjects_filter": f"{target.prefix}.{run_id}.>"})
    )
    state = info["state"]
    assert isinstance(state, dict)
    return dict(state.get("subjects") or {})


def erase_meta_by_hand(nats_server: NatsServer, target: StreamTarget, run_id: str) -> None:
    """Delete the run's meta message with the stream's API, as an operator with the nats CLI could."""
    subject = f"{target.prefix}.{run_id}.meta"
    found = asyncio.run(_api(nats_server.url, f"STREAM.MSG.GET.{target.name}", {"last_by_subj": subject}))
    message = found["message"]
    assert isinstance(message, dict)
    asyncio.run(_api(nats_server.url, f"STREAM.MSG.DELETE.{target.name}", {"seq": message["seq"]}))


@pytest.fixture
def stream_target(nats_server: NatsServer) -> StreamTarget:
    return new_stream_target()


@pytest.mark.jetstream
@pytest.mark.parametrize("again", ["append", "fork"])
def test_a_staged_fork_killed_before_its_commit_leaves_no_run_and_the_id_can_be_created_again(
    tmp_path: Path, nats_server: NatsServer, stream_target: StreamTarget, again: str
) -> None:
    args = stream_target.server_args(nats_server.url)
    crashing = LaunchedServer(tmp_path / "crashing", extra_args=args, launcher=LAUNCHER).start()
    with stub_of(crashing) as stub:
        write_long_run(stub, SOURCE, RECORDS)
        died = refusal(lambda: stub.ForkRun(pb.ForkRunRequest(run_id=SOURCE, new_run_id=FORK), timeout=T))
        assert died.code() == grpc.StatusCode.UNAVAILABLE  # the server killed itself after its first stage
    assert crashing.process is not None and crashing.process.wait() != 0
    staged = subjects(nats_server, stream_target, FORK)
    assert len(staged) == 1000 and f"{stream_target.prefix}.{FORK}.meta" not in staged  # records 2..1001

    server = ServerProcess(tmp_path / "after", extra_args=args).start()
    try:
        with stub_of(server) as stub:
            gone = refusal(lambda: list(stub.Read(pb.ReadRequest(run_id=FORK), timeout=T)))
            assert reason(gone) == "RUN_NOT_FOUND", gone.details()  # never committed: no run
            assert FORK not in {s.run_id for s in stub.ListRuns(pb.ListRunsRequest(), timeout=T).runs}
            if again == "append":  # another creation of the id: the remains are cleared, the meta lands
                meta = b.meta(run_id=FORK, prompt="a different run")
                stub.Append(pb.AppendRequest(run_id=FORK, claim_token=1, record=meta), timeout=T)
                expected = 1
            else:  # the same fork again
                forked = stub.ForkRun(pb.ForkRunRequest(run_id=SOURCE, new_run_id=FORK), timeout=T)
                assert forked.last_seq == RECORDS
                expected = RECORDS
            read = [r.seq for r in stub.Read(pb.ReadRequest(run_id=FORK), timeout=T)]
            assert read == list(range(1, expected + 1))
            assert sum(subjects(nats_server, stream_target, FORK).values()) == expected  # nothing else left
            stub.Append(pb.AppendRequest(run_id=FORK, claim_token=1, record=b.note(expected + 1)), timeout=T)
    finally:
        assert server.stop() == 0, server.log()


@pytest.mark.parametrize("backend", ["file", "jetstream"])
def test_a_run_whose_meta_was_erased_by_hand_is_corrupt_for_every_call_and_names_what_is_left(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    data_dir = tmp_path / "data"
    args: tuple[str, ...] = ()
    target: StreamTarget | None = None
    if backend == "jetstream":
        nats_server: NatsServer = request.getfixturevalue("nats_server")
        target = new_stream_target()
        args = target.server_args(nats_server.url)
    run_id = "meta-erased"
    first = ServerProcess(data_dir, extra_args=args).start()
    with stub_of(first) as stub:
        write_long_run(stub, run_id, 5)
    assert first.stop() == 0, first.log()
    if target is not None:
        erase_meta_by_hand(nats_server, target, run_id)
        left = [f"{target.prefix}.{run_id}.{seq}" for seq in range(2, 6)]
    else:
        path = journal_path(data_dir, run_id)
        path.write_bytes(path.read_bytes().split(b"\n", 1)[1])  # records 2..5 stay
        left = ["line 1"]

    server = ServerProcess(data_dir, extra_args=args).start()
    try:
        with stub_of(server) as stub:
            calls = {
                "Read": lambda: list(stub.Read(pb.ReadRequest(run_id=run_id), timeout=T)),
                "Fold": lambda: stub.Fold(pb.FoldRequest(run_id=run_id), timeout=T),
                "Append of a new meta": lambda: stub.Append(
                    pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id, prompt="anew")),
                    timeout=T,
                ),
                "Append of the old meta": lambda: stub.Append(
                    pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id)), timeout=T
                ),
                "ForkRun onto it": lambda: stub.ForkRun(
                    pb.ForkRunRequest(run_id=run_id + "-src", new_run_id=run_id), timeout=T
                ),
            }
            write_long_run(stub, run_id + "-src", 3)
            for name, call in calls.items():
                refused = refusal(call)
                assert reason(refused) == "CORRUPT_JOURNAL", (name, refused.details())
                for where in left:
                    assert where in refused.details(), (name, where, refused.details())
        if target is not None:  # nothing was written or cleared: the remains are an operator's to judge
            assert sorted(subjects(nats_server, target, run_id)) == sorted(left)
    finally:
        assert server.stop() == 0, server.log()

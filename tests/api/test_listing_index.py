"""The persisted listing index: after a restart, whatever happened to the index, ListRuns says what the journals say.

The reference is always the listing a server gives with no index at all
(it then reads every run, as before the index existed): a stale, damaged or
missing index must give exactly its pages. Over real servers, real gRPC, on
both backends (JetStream keeps its index in a KV bucket; what only JetStream
has, replicas and the feed, is in ``test_listing_index_jetstream.py``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, state_pb2
from runjournal_server.api.auth import token_sha256
from runjournal_server.listing.persistence import INDEX_DIR
from tests.conftest import new_stream_target
from tests.servers import ServerProcess
from tests.support import builders as b
from tests.support.listing_index import flip_a_status

Stub = journal_service_pb2_grpc.JournalServiceStub

FILTERS: dict[str, pb.ListRunsRequest] = {
    # State filters first: a listing of every run reads every summary, which would correct the index's states.
    "completed": pb.ListRunsRequest(page_size=3, status=state_pb2.RUN_STATUS_COMPLETED),
    "inbox": pb.ListRunsRequest(page_size=2, waiting_for_person=True),
    "open": pb.ListRunsRequest(page_size=5, status=state_pb2.RUN_STATUS_OPEN),
    "labelled": pb.ListRunsRequest(page_size=3, labels={"team": "blue"}),
    "forks": pb.ListRunsRequest(page_size=3, parent_run_id="idx-00"),
    "all": pb.ListRunsRequest(page_size=4),
}


class Servers:
    """Start and restart a server on one store (a data dir, or a stream)."""

    def __init__(self, data_dir: Path, extra: tuple[str, ...], backend: str) -> None:
        self.data_dir = data_dir
        self.extra = extra
        self.backend = backend
        self.current: ServerProcess | None = None

    def start(self, *args: str) -> ServerProcess:
        self.current = ServerProcess(self.data_dir, extra_args=(*self.extra, *args)).start()
        return self.current

    def stop(self) -> None:
        assert self.current is not None
        try:
            code = self.current.stop()
        except subprocess.TimeoutExpired as err:
            raise AssertionError(f"the server did not stop; its log:\n{self.current.log()}") from err
        assert code == 0, self.current.log()
        self.current = None

    def kill(self) -> None:
        assert self.current is not None
        self.current.kill()
        self.current = None

    def close(self) -> None:
        if self.current is not None and self.current.process is not None and self.current.process.poll() is None:
            self.current.stop()


@pytest.fixture(params=("file", "jetstream"))
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Servers]:
    extra: tuple[str, ...] = ()
    if request.param == "jetstream":
        extra = new_stream_target().server_args(request.getfixturevalue("nats_server").url)
    made = Servers(tmp_path / "data", extra, request.param)
    yield made
    made.close()


@pytest.fixture
def file_servers(tmp_path: Path) -> Iterator[Servers]:
    made = Servers(tmp_path / "data", (), "file")
    yield made
    made.close()


def stub_of(server: ServerProcess) -> Iterator[Stub]:
    with grpc.insecure_channel(server.address) as channel:
        yield journal_service_pb2_grpc.JournalServiceStub(channel)


def create(stub: Stub, run_id: str, seconds: int, **labels: str) -> None:
    meta = b.meta(run_id=run_id, labels=labels or None)
    meta.meta.created_at.FromSeconds(seconds)
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=meta), timeout=30)


def append(stub: Stub, run_id: str, record) -> None:
    stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=record), timeout=30)


def populate(stub: Stub, count: int = 14, first: int = 0) -> None:
    """Runs of every listing state: open, completed, waiting for a person, labelled, forked."""
    for index in range(first, first + count):
        run_id = f"idx-{index:02d}"
        create(stub, run_id, 1_700_000_000 + index, **({"team": "blue"} if index % 3 == 0 else {}))
        if index % 4 == 1:
            append(stub, run_id, b.terminal(2))
        elif index % 4 == 2:
            append(stub, run_id, b.assistant(2, 1, calls=["c1"]))
            append(stub, run_id, b.deferral(3, "c1"))
    if first == 0:
        stub.ForkRun(pb.ForkRunRequest(run_id="idx-00", at_seq=1, new_run_id="idx-fork-a"), timeout=30)


def pages(stub: Stub, metadata: tuple[tuple[str, str], ...] = ()) -> dict[str, list[list[state_pb2.RunSummary]]]:
    """Every page of every filter, whole (summaries and page boundaries)."""
    found: dict[str, list[list[state_pb2.RunSummary]]] = {}
    for name, request in FILTERS.items():
        token = ""
        found[name] = []
        while True:
            asked = pb.ListRunsRequest()
            asked.CopyFrom(request)
            asked.page_token = token
            response = stub.ListRuns(asked, timeout=60, metadata=metadata)
            found[name].append(list(response.runs))
            token = response.next_page_token
            if not token:
                break
    return found


def listed_now(servers: Servers, *args: str) -> dict[str, list[list[state_pb2.RunSummary]]]:
    server = servers.start(*args)
    try:
        for stub in stub_of(server):
            return pages(stub)
        raise AssertionError("unreachable")
    finally:
        servers.stop()


def reference(servers: Servers) -> dict[str, list[list[state_pb2.RunSummary]]]:
    """The pages of a server that has no index (it reads every run), leaving no index behind either."""
    index = servers.data_dir / INDEX_DIR
    shutil.rmtree(index, ignore_errors=True)
    try:
        return listed_now(servers)
    finally:
        shutil.rmtree(index, ignore_errors=True)


def test_after_a_restart_every_page_is_as_before(servers: Servers):
    server = servers.start()
    for stub in stub_of(server):
        populate(stub)
        before = pages(stub)
    servers.stop()
    assert before["inbox"][0] and before["completed"][0] and before["forks"] == [[before["forks"][0][0]]]
    assert listed_now(servers) == before
    if servers.backend == "file":
        assert (servers.data_dir / INDEX_DIR / "snapshot").exists()
    # And once more, after a crash: the index persisted by the last clean stop, then the writes since.
    server = servers.start()
    for stub in stub_of(server):
        populate(stub, count=4, first=20)
        append(stub, "idx-03", b.terminal(2))
        after = pages(stub)
    servers.kill()
    assert after != before
    assert listed_now(servers) == after


def test_a_run_written_just_now_is_in_every_filter_at_once(servers: Servers):
    """The index never lags behind this server's own acknowledged writes."""
    server = servers.start()
    for stub in stub_of(server):
        populate(stub, count=6)
        assert [s.run_id for s in stub.ListRuns(FILTERS["completed"], timeout=30).runs] == ["idx-05", "idx-01"]
        append(stub, "idx-04", b.terminal(2))
        create(stub, "idx-new", 1_800_000_000)
        append(stub, "idx-new", b.terminal(2))
        listed = [s.run_id for s in stub.ListRuns(FILTERS["completed"], timeout=30).runs]
        assert listed == ["idx-new", "idx-05", "idx-04"]
        append(stub, "idx-02", b.result(4, "c1"))  # answers the deferral: the inbox empties
        assert list(stub.ListRuns(FILTERS["inbox"], timeout=30).runs) == []
    servers.stop()


def test_concurrent_listings_right_after_a_creation_all_list_the_new_run(servers: Servers):
    """Two ListRuns arriving together after a creation: the second must not walk past a run the first is placing.

    (The conformance runners replay scenarios concurrently; one ListRuns took
    the new run off the pending set and, while it read the run, another
    walked the index without it.)
    """
    server = servers.start()
    for stub in stub_of(server):
        for round_ in range(40):
            run_id = f"idx-race-{round_:02d}"
            create(stub, run_id, 1_700_000_000 + round_, race=run_id)
            request = pb.ListRunsRequest(labels={"race": run_id})
            calls = [stub.ListRuns.future(request, timeout=30) for _ in range(4)]
            listed = [[s.run_id for s in call.result().runs] for call in calls]
            assert listed == [[run_id]] * 4, f"round {round_}: {listed}"
    servers.stop()


def test_a_stale_index_is_repaired_from_the_journals_at_start(file_servers: Servers):
    server = file_servers.start()
    for stub in stub_of(server):
        populate(stub)
    file_servers.stop()
    index = file_servers.data_dir / INDEX_DIR
    stale = file_servers.data_dir.parent / "stale-index"
    shutil.copytree(index, stale)
    # The runs move on: states change, runs are created and deleted, one journal is removed by hand.
    server = file_servers.start()
    for stub in stub_of(server):
        append(stub, "idx-00", b.terminal(2))
        append(stub, "idx-02", b.result(4, "c1"))
        populate(stub, count=3, first=30)
        stub.DeleteRun(pb.DeleteRunRequest(run_id="idx-05", expected_last_seq=2), timeout=30)
    file_servers.stop()
    (file_servers.data_dir / "idx-07.jsonl").unlink()
    shutil.rmtree(index)
    shutil.copytree(stale, index)  # the index of before, as a crash or a restored backup would leave it
    repaired = listed_now(file_servers)
    assert repaired == reference(file_servers)
    names = [s.run_id for page in repaired["all"] for s in page]
    assert "idx-05" not in names and "idx-07" not in names and "idx-32" in names
    assert "idx-00" in [s.run_id for page in repaired["completed"] for s in page]
    inbox = [s.run_id for page in repaired["inbox"] for s in page]
    assert "idx-02" not in inbox and "idx-06" in inbox


def _flip_a_status(index: Path) -> None:
    """Change one entry's status in the snapshot, as a bit flip on disk would, leaving valid JSON."""
    snapshot = index / "snapshot"
    snapshot.write_bytes(flip_a_status(snapshot.read_bytes(), "idx-01", 2, 1))  # completed (2) made open (1)


def _tear_the_log(index: Path) -> None:
    with (index / "log").open("ab") as log:
        log.write(b'0badc0de ["put",[["idx-99",1,')


def _empty(index: Path) -> None:
    for path in index.iterdir():
        if path.name != "lock":
            path.write_bytes(b"")


def _foreign(index: Path) -> None:
    (index / "snapshot").write_bytes(b"not an index\n")


DAMAGE: dict[str, Callable[[Path], object]] = {
    "missing": shutil.rmtree,
    "empty": _empty,
    "flipped": _flip_a_status,
    "torn": _tear_the_log,
    "foreign": _foreign,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_missing_index_is_never_believed(file_servers: Servers, damage: str):
    server = file_servers.start()
    for stub in stub_of(server):
        populate(stub)
    file_servers.stop()
    expected = listed_now(file_servers)  # with its intact index
    DAMAGE[damage](file_servers.data_dir / INDEX_DIR)
    assert listed_now(file_servers) == expected
    assert listed_now(file_servers) == expected  # and the index it rebuilt and persisted


TEAM_A = "a-token-for-the-index-tests"
TEAM_B = "b-token-for-the-index-tests"


@pytest.mark.parametrize("backend", ["file", "jetstream"])
def test_a_tenant_lists_its_own_runs_across_a_restart(tmp_path: Path, backend: str, request: pytest.FixtureRequest):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f"""
[[tokens]]
name = "team-a"
sha256 = "{token_sha256(TEAM_A)}"
run_id_prefixes = ["team-a-", "shared-a-"]

[[tokens]]
name = "team-b"
sha256 = "{token_sha256(TEAM_B)}"
run_id_prefixes = ["team-b-"]
"""
    )
    store: tuple[str, ...] = ()
    if backend == "jetstream":
        store = new_stream_target().server_args(request.getfixturevalue("nats_server").url)
    servers = Servers(tmp_path / "data", (*store, "--auth-tokens-file", str(tokens)), backend)
    a = (("authorization", f"Bearer {TEAM_A}"),)
    bee = (("authorization", f"Bearer {TEAM_B}"),)
    try:
        server = servers.start()
        for stub in stub_of(server):
            for index in range(12):
                run_id = ("team-a-", "team-b-", "shared-a-")[index % 3] + f"{index:02d}"
                meta = b.meta(run_id=run_id)
                meta.meta.created_at.FromSeconds(1_700_000_000 + index)
                token = bee if run_id.startswith("team-b-") else a
                stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=meta), timeout=30, metadata=token)
            before = (pages(stub, a), pages(stub, bee))
        servers.stop()
        listed_a = [s.run_id for page in before[0]["all"] for s in page]
        owned = [("team-a-", "", "shared-a-")[i % 3] + f"{i:02d}" for i in reversed(range(12)) if i % 3 != 1]
        assert listed_a == owned
        assert all(s.run_id.startswith("team-b-") for page in before[1]["all"] for s in page)
        server = servers.start()
        for stub in stub_of(server):
            assert (pages(stub, a), pages(stub, bee)) == before
        if backend == "jetstream":
            assert "loaded from KV bucket" in server.log(), server.log()  # the persisted index, not a rebuild
    finally:
        servers.close()


def test_two_server_processes_on_one_data_dir_both_list_what_the_journals_say(file_servers: Servers):
    """Neither hears of the other's writes, so neither may trust an index: both read every run."""
    first = file_servers.start()
    second = ServerProcess(file_servers.data_dir).start()
    try:
        for stub_a in stub_of(first):
            for stub_b in stub_of(second):
                populate(stub_a, count=6)
                # The first server's runs are closed there once listed, so the second may write them.
                create(stub_b, "idx-from-b", 1_800_000_000)
                append(stub_b, "idx-from-b", b.terminal(2))
                completed = [s.run_id for s in stub_a.ListRuns(FILTERS["completed"], timeout=30).runs]
                assert completed[0] == "idx-from-b"
                assert [s.run_id for s in stub_b.ListRuns(FILTERS["completed"], timeout=30).runs] == completed
    finally:
        assert second.stop() == 0, second.log()
    file_servers.stop()


def test_a_deleted_runs_labels_are_nowhere_in_the_index(file_servers: Servers):
    """Labels are content: the index never persists them, so a deletion leaves none behind (and a restart reads
    them back from the metas for a label filter)."""
    canary = "c4n4ry-0f-th3-l1st1ng-1nd3x"
    server = file_servers.start()
    for stub in stub_of(server):
        create(stub, "idx-secret", 1_700_000_000, secret=canary)
        create(stub, "idx-kept", 1_700_000_001, secret="kept")
        assert [s.run_id for s in stub.ListRuns(pb.ListRunsRequest(), timeout=30).runs] == ["idx-kept", "idx-secret"]
        stub.DeleteRun(pb.DeleteRunRequest(run_id="idx-secret", expected_last_seq=1), timeout=30)
    file_servers.stop()
    index = file_servers.data_dir / INDEX_DIR
    assert index.is_dir() and not any(canary.encode() in path.read_bytes() for path in index.iterdir())
    server = file_servers.start()
    for stub in stub_of(server):
        labelled = stub.ListRuns(pb.ListRunsRequest(labels={"secret": "kept"}), timeout=30).runs
        assert [s.run_id for s in labelled] == ["idx-kept"]
    file_servers.stop()

"""The Claude Agent SDK session store on a real server, file and JetStream: the SDK's own suite, then ours.

The SDK is never run against a model: its ``SessionStore`` contract is what is
tested, through its own conformance suite (unmodified) and the cases the suite
leaves out (retries, concurrent writers, deletion, odd keys, the CLI).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from claude_agent_sdk import SessionKey, SessionStore
from claude_agent_sdk.testing import run_session_store_conformance

from runjournal.adapters._claude_sessions import LABEL_SESSION, place_of
from runjournal.adapters._run_ids import MAX_RUN_ID_CHARS
from runjournal.adapters.claude_agent_sdk import RunJournalSessionStore
from runjournal.aio import AsyncJournalClient
from runjournal.errors import RunDeletedError, SeqConflictError
from runjournal_server.core.ids import is_valid_run_id
from tests.servers import ServerProcess

OPTIONAL_METHODS = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


def fresh_namespace() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def entry(uuid_: str | None, n: int, **more: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "user", "n": n, **more}
    if uuid_ is not None:
        body["uuid"] = uuid_
    return body


@pytest.fixture
async def client(journal_server: ServerProcess) -> AsyncIterator[AsyncJournalClient]:
    async with AsyncJournalClient(journal_server.address) as client:
        yield client


class CountingClient(AsyncJournalClient):
    """A client that counts the sequence refusals its appends met (to show a test took the conflict path)."""

    conflicts = 0

    async def append_batch(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().append_batch(*args, **kwargs)
        except SeqConflictError:
            self.conflicts += 1
            raise


# --- the SDK's own suite --------------------------------------------------------------


async def test_the_sdk_conformance_suite_passes_with_no_contract_skipped(client, journal_server):
    for method in OPTIONAL_METHODS:  # what the suite checks to decide a skip: an override of the Protocol's default
        assert getattr(RunJournalSessionStore, method) is not getattr(SessionStore, method), method
    made: list[str] = []

    def make_store() -> RunJournalSessionStore:
        made.append(fresh_namespace())  # each contract gets its own namespace: isolated like a fresh database
        return RunJournalSessionStore(client, namespace=made[-1])

    await run_session_store_conformance(make_store)
    print(f"claude_agent_sdk conformance on {journal_server.backend}: passed, {len(made)} stores, nothing skipped")
    assert len(made) == 15  # the probe and one store per contract: 14 contracts


# --- retries and concurrent writers ---------------------------------------------------


async def test_a_retried_batch_adds_nothing(client):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    key: SessionKey = {"project_key": "proj", "session_id": "retry"}
    batch = [entry("u1", 1), entry("u2", 2)]
    await store.append(key, batch)
    last_seq = await last_seq_of(client, store.run_id(key))
    await store.append(key, batch)  # the SDK's retry of a batch that landed
    other = RunJournalSessionStore(client, namespace=store.namespace)  # another process, which knows nothing yet
    await other.append(key, batch)
    await other.append(key, [*batch, entry("u3", 3)])  # a retry that grew: only the new entry is stored
    assert await store.load(key) == [*batch, entry("u3", 3)]
    assert await last_seq_of(client, store.run_id(key)) == last_seq + 2  # u3 and the summary after it


async def test_entries_without_uuid_are_appended_every_time_and_a_batch_repeating_a_uuid_stores_it_once(client):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    key: SessionKey = {"project_key": "proj", "session_id": "plain"}
    await store.append(key, [{"type": "tag", "tag": "x"}, entry("u1", 1), entry("u1", 99)])
    await store.append(key, [{"type": "tag", "tag": "x"}])
    assert await store.load(key) == [{"type": "tag", "tag": "x"}, entry("u1", 1), {"type": "tag", "tag": "x"}]


async def test_a_writer_that_is_behind_is_refused_reads_what_was_added_and_doubles_nothing(journal_server):
    async with CountingClient(journal_server.address) as first, AsyncJournalClient(journal_server.address) as second:
        namespace = fresh_namespace()
        behind = RunJournalSessionStore(first, namespace=namespace)
        ahead = RunJournalSessionStore(second, namespace=namespace)
        key: SessionKey = {"project_key": "proj", "session_id": "race"}
        await behind.append(key, [entry("a", 1)])
        await ahead.append(key, [entry("b", 2), entry("c", 3)])  # `behind` still believes the run ends after "a"
        await behind.append(key, [entry("c", 3), entry("d", 4)])
        assert first.conflicts == 1  # its write at the old seq was refused by the journal, not by a lock
        assert await ahead.load(key) == [entry("a", 1), entry("b", 2), entry("c", 3), entry("d", 4)]


async def test_concurrent_appenders_through_two_stores_lose_nothing_and_double_nothing(journal_server):
    writers, batches = 8, 4
    key: SessionKey = {"project_key": "proj", "session_id": "concurrent"}
    async with CountingClient(journal_server.address) as one, CountingClient(journal_server.address) as two:
        namespace = fresh_namespace()
        stores = [RunJournalSessionStore(one, namespace=namespace), RunJournalSessionStore(two, namespace=namespace)]

        async def writer(w: int) -> None:
            for b in range(batches):
                batch = [entry(f"w{w}-b{b}-{i}", i, writer=w) for i in range(3)] + [{"type": "mark", "writer": w}]
                await stores[(w + b) % 2].append(key, batch)
                # The SDK's retry of the same uuids through the other store: they are stored already.
                await stores[(w + b + 1) % 2].append(key, batch[:3])

        await asyncio.gather(*(writer(w) for w in range(writers)))
        loaded = await stores[0].load(key)
        assert loaded is not None
        uuids = [e["uuid"] for e in loaded if "uuid" in e]
        every = [f"w{w}-b{b}-{i}" for w in range(writers) for b in range(batches) for i in range(3)]
        assert sorted(uuids) == sorted(every)
        assert len([e for e in loaded if e["type"] == "mark"]) == writers * batches
        for w in range(writers):  # each writer's entries keep its call order
            mine = [e["uuid"] for e in loaded if e.get("writer") == w and "uuid" in e]
            assert mine == [f"w{w}-b{b}-{i}" for b in range(batches) for i in range(3)]
        print(f"{journal_server.backend}: {one.conflicts + two.conflicts} appends refused by the seq check and redone")


async def test_an_append_larger_than_one_batch_is_stored_whole_and_in_order(client):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    key: SessionKey = {"project_key": "proj", "session_id": "big"}
    batch = [entry(f"u{i}", i) for i in range(1100)]
    await store.append(key, batch)
    assert await store.load(key) == batch


# --- what people and listings see -----------------------------------------------------


async def test_a_session_is_shown_by_runs_show_and_listed_by_list_runs(client, journal_server):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    key: SessionKey = {"project_key": "-home-me-proj", "session_id": str(uuid.uuid4())}
    await store.append(key, [entry("u1", 1, message={"role": "user", "content": "hi"}), {"type": "assistant"}])
    await store.append({**key, "subpath": "subagents/agent-1"}, [entry("s1", 1)])
    run_id = store.run_id(key)

    shown = runjournal("runs", "show", run_id, "--address", journal_server.address)
    assert shown.returncode == 0, shown.stderr
    assert f"session {key['session_id']}" in shown.stdout
    lines = shown.stdout.splitlines()
    assert [line.strip() for line in lines if "(claude-agent-sdk" in line] == [
        '(claude-agent-sdk user) {"type":"user","n":1,"message":{"role":"user","content":"hi"},"uuid":"u1"}',
        '(claude-agent-sdk assistant) {"type":"assistant"}',
    ]

    label = f"claude-agent-sdk/session={key['session_id']}"
    listed = runjournal("runs", "list", "--label", label, "--address", journal_server.address)
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout and store.run_id({**key, "subpath": "subagents/agent-1"}) in listed.stdout
    runs = [run async for run in client.iter_runs(labels={"claude-agent-sdk/namespace": store.namespace})]
    assert {run.labels[LABEL_SESSION] for run in runs} == {key["session_id"]}
    assert await store.list_sessions(key["project_key"]) == [
        {"session_id": key["session_id"], "mtime": runs_mtime(runs, run_id)}
    ]


async def test_deleting_a_session_deletes_its_subagent_transcripts_and_nothing_else(client):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    main: SessionKey = {"project_key": "proj", "session_id": "gone"}
    subs = [{**main, "subpath": f"subagents/agent-{i}"} for i in range(3)]
    kept: SessionKey = {"project_key": "proj", "session_id": "gone-not"}
    for key in [main, *subs, kept]:
        await store.append(key, [entry(None, 1)])
    await store.delete(main)
    for key in [main, *subs]:
        assert await store.load(key) is None
    assert await store.load(kept) == [entry(None, 1)]
    assert await store.list_subkeys(main) == []
    assert [s["session_id"] for s in await store.list_sessions("proj")] == ["gone-not"]
    with pytest.raises(RunDeletedError):  # the id of a deleted run is never used again
        await store.append(main, [entry(None, 2)])
    await store.delete(main)  # deleting again changes nothing and raises nothing


async def test_summaries_come_from_the_note_that_ends_each_write(client):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    key: SessionKey = {"project_key": "proj", "session_id": "titled"}
    await store.append(key, [entry("u1", 1, timestamp="2024-01-01T00:00:00.000Z", customTitle="first")])
    await store.append(key, [entry("u2", 2, customTitle="second")])
    (summary,) = await store.list_session_summaries("proj")
    assert summary["data"]["custom_title"] == "second"
    assert summary["data"]["created_at"] == 1704067200000
    assert summary["mtime"] == (await store.list_sessions("proj"))[0]["mtime"]


# --- keys -----------------------------------------------------------------------------


ODD_KEYS: list[SessionKey] = [
    {"project_key": "/home/me/my project", "session_id": "a.b*c>d"},
    {"project_key": "_p", "session_id": "_s", "subpath": "_k"},
    {"project_key": "ünïcødé 🚀", "session_id": "s\nnewline", "subpath": "subagents/agent-1"},
    {"project_key": "", "session_id": "empty-project"},
    {"project_key": "x" * 256, "session_id": "long"},
    {"project_key": "p", "session_id": "🚀" * 100, "subpath": "/" * 256},
]


def test_every_key_maps_to_a_valid_run_id_and_no_two_keys_to_the_same_one():
    keys: list[SessionKey] = [
        *ODD_KEYS,
        {"project_key": "a/", "session_id": "b"},
        {"project_key": "a_2f", "session_id": "b"},
        {"project_key": "a", "session_id": "_sb"},
        {"project_key": "a_s", "session_id": "b"},
        {"project_key": "a", "session_id": "b", "subpath": "c"},
        {"project_key": "a", "session_id": "b_kc"},
    ]
    ids = [place_of("ns", key).run_id for key in keys]
    assert all(is_valid_run_id(run_id) for run_id in ids), ids
    assert len(set(ids)) == len(ids)
    assert place_of("ns", {"project_key": "-home-me", "session_id": "abc-123"}).run_id == "ns_p-home-me_sabc-123"
    assert place_of("ns", {"project_key": "a b", "session_id": "c", "subpath": "d/e"}).run_id == "ns_pa_20b_sc_kd_2fe"
    hashed = place_of("ns", {"project_key": "x" * 200, "session_id": "y"}).run_id
    assert hashed.startswith("ns_h") and len(hashed) == 4 + 64 <= MAX_RUN_ID_CHARS


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ({"project_key": "x" * 257, "session_id": "s"}, "at most 256"),
        ({"project_key": "p", "session_id": "s", "subpath": ""}, "must not be empty"),
        ({"project_key": "p", "session_id": "\ud800"}, "not valid Unicode"),
        ({"project_key": "p", "session_id": 7}, "must be a string"),
    ],
)
async def test_a_key_no_run_can_hold_is_refused_and_nothing_is_written(client, key, problem):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    with pytest.raises(ValueError, match=problem):
        await store.append(key, [entry("u", 1)])
    assert [run async for run in client.iter_runs(labels={"claude-agent-sdk/namespace": store.namespace})] == []


async def test_odd_and_long_keys_round_trip_and_are_listed_as_they_were_given(client):
    store = RunJournalSessionStore(client, namespace=fresh_namespace())
    for n, key in enumerate(ODD_KEYS):
        await store.append(key, [entry(f"u{n}", n)])
    for n, key in enumerate(ODD_KEYS):
        assert await store.load(key) == [entry(f"u{n}", n)]
        if "subpath" in key:
            assert await store.list_subkeys(key) == [key["subpath"]]
        else:
            assert [s["session_id"] for s in await store.list_sessions(key["project_key"])] == [key["session_id"]]


def test_the_base_client_does_not_import_the_sdk():
    code = "import sys, runjournal, runjournal.aio, runjournal.adapters; print('claude_agent_sdk' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


# --- helpers --------------------------------------------------------------------------


def runjournal(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "runjournal", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


async def last_seq_of(client: AsyncJournalClient, run_id: str) -> int:
    return (await client.fold(run_id)).last_seq


def runs_mtime(runs: list[Any], run_id: str) -> int:
    (run,) = [run for run in runs if run.run_id == run_id]
    return run.updated_at.seconds * 1000 + run.updated_at.nanos // 1_000_000

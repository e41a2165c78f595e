"""The OpenAI Agents SDK ``Session`` on runjournal, against a real server on both backends (file and JetStream).

The SDK ships no session test suite (``agents.testing`` scripts models and
sandboxes only), so the protocol's behaviour is tested here as its docstrings
and the SDK's own ``SQLiteSession`` define it, and the last test lets the
SDK's ``Runner`` drive the session beside a ``SQLiteSession`` and compares.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.memory import SessionSettings
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from runjournal import meta_record, text_block
from runjournal.adapters._openai_agents_journal import LABEL_NAMESPACE, LABEL_SESSION, OP_KEY, session_run_id
from runjournal.adapters.openai_agents import MAX_BATCH_ITEMS, RunJournalSession, SessionJournalError
from runjournal.aio import AsyncJournalClient
from runjournal.errors import (
    RecordTooLargeError,
    RunClaimedError,
    RunExistsError,
    RunNotFoundError,
    SeqConflictError,
)
from runjournal.render import render_state
from runjournal.v1 import records_pb2
from tests.api.conftest import journal_server
from tests.fake_model.openai_agents import MODEL, serve_weather_agent
from tests.fake_model.server import FakeModel
from tests.servers import ServerProcess

__all__ = ["journal_server"]  # the API tests' fixture: every test below runs on the file and the JetStream backend

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")

# Items in the shapes the Responses API and the SDK produce, each kind once: what must come back exactly.
RECORDED_ITEMS: list[dict[str, Any]] = [
    {"content": 'Weather in Paris? ☀️ «quoted» "escaped" \\ \u2028 done', "role": "user"},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "and this picture"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
        ],
    },
    {"role": "developer", "content": "Answer in one line."},
    {
        "id": "rs_68c1f0a2b3",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "The user wants the weather; call the tool."}],
        "encrypted_content": "gAAAAABoxQ3k9L2y_Zl0nq-3p4c+Q7Kx/eXh1Wm0u5Yt==",
    },
    {
        "arguments": '{"city": "Paris", "units":"c"}',
        "call_id": "call_AbC123",
        "name": "get_weather",
        "type": "function_call",
        "id": "fc_68c1f0a2b4",
        "status": "completed",
    },
    {"call_id": "call_AbC123", "output": '{"temp": 21.5, "sky": "clear"}', "type": "function_call_output"},
    {
        "call_id": "call_DeF456",
        "output": [{"type": "input_text", "text": "see the chart"}, {"type": "input_image", "file_id": "file-1"}],
        "type": "function_call_output",
    },
    {
        "id": "ws_68c1f0a2b5",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "paris weather", "sources": [{"type": "url", "url": "https://x.test"}]},
    },
    {
        "id": "msg_68c1f0a2b6",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "phase": "final_answer",
        "content": [
            {
                "type": "output_text",
                "text": "21.5 °C and clear.",
                "annotations": [
                    {"type": "url_citation", "start_index": 0, "end_index": 7, "url": "https://x.test", "title": "X"}
                ],
                "logprobs": [],
            }
        ],
    },
    {"type": "compaction", "id": "cmp_68c1f0a2b7", "encrypted_content": "gAAAAABo-compacted-history=="},
    {"type": "item_reference", "id": "msg_68c1f0a2b6"},
    # Every JSON value kind, where a careless codec would change one: 2.0 stays a float, True stays no 1.
    {
        "type": "function_call_output",
        "call_id": "call_values",
        "output": "",
        "values": {"int": 1, "float": 2.0, "small": 1e-7, "big": 2**60, "null": None, "yes": True, "empty": {}},
        "nested": [[[], [{}]], ""],
    },
]


@pytest.fixture
async def client(journal_server: ServerProcess) -> AsyncIterator[AsyncJournalClient]:
    async with AsyncJournalClient(journal_server.address) as client:
        yield client


def new_session_id() -> str:
    return f"chat_{uuid.uuid4().hex[:10]}"


def exactly(items: list[Any]) -> str:
    """JSON text keeping key order and value types, so equal text means the same items, exactly."""
    return json.dumps(items, ensure_ascii=False)


async def stored(client: AsyncJournalClient, run_id: str) -> list[records_pb2.JournalRecord]:
    return [record async for record, _ in client.read(run_id)]


def stored_items(records: list[records_pb2.JournalRecord]) -> list[Any]:
    """Every item the journal holds, removed or not, from the records themselves."""
    return [
        json.loads(record.user.content[0].opaque.json)
        for record in records
        if record.WhichOneof("payload") == "user" and record.user.content[0].opaque.provider == "openai-agents"
    ]


def history_ops(records: list[records_pb2.JournalRecord]) -> list[dict[str, Any]]:
    ops = []
    for record in records:
        if record.WhichOneof("payload") == "note" and record.note.data_json:
            ops.append(json.loads(record.note.data_json)[OP_KEY])
    return ops


# --- the protocol ---------------------------------------------------------------------


async def test_a_session_that_never_wrote_is_empty_and_creates_no_run(client: AsyncJournalClient) -> None:
    session = RunJournalSession(new_session_id(), client)
    assert await session.get_items() == []
    assert await session.get_items(limit=3) == []
    assert await session.pop_item() is None
    await session.clear_session()
    with pytest.raises(RunNotFoundError):
        await stored(client, session.run_id)


async def test_items_come_back_exactly_as_added_also_to_a_fresh_session(client: AsyncJournalClient) -> None:
    session_id = new_session_id()
    writer = RunJournalSession(session_id, client)
    await writer.add_items(RECORDED_ITEMS[:4])
    await writer.add_items(RECORDED_ITEMS[4:])
    assert exactly(await writer.get_items()) == exactly(RECORDED_ITEMS)
    assert await writer.get_items() == RECORDED_ITEMS
    reader = RunJournalSession(session_id, client)  # knows nothing but what it reads
    assert exactly(await reader.get_items()) == exactly(RECORDED_ITEMS)
    # Each get is a fresh copy: changing what one caller got changes nothing stored.
    got = await reader.get_items()
    got[0]["content"] = "changed"
    assert exactly(await reader.get_items()) == exactly(RECORDED_ITEMS)


async def test_get_items_with_a_limit_gives_the_latest_items_in_order(client: AsyncJournalClient) -> None:
    session_id = new_session_id()
    session = RunJournalSession(session_id, client)
    items = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    await session.add_items(items)
    assert await session.get_items(limit=2) == items[3:]
    assert await session.get_items(limit=5) == items
    assert await session.get_items(limit=50) == items
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == []
    limited = RunJournalSession(session_id, client, session_settings=SessionSettings(limit=3))
    assert await limited.get_items() == items[2:]
    assert await limited.get_items(limit=1) == items[4:], "an explicit limit wins over the settings'"


async def test_pop_item_removes_the_latest_from_the_session_and_the_journal_keeps_it(
    client: AsyncJournalClient,
) -> None:
    session = RunJournalSession(new_session_id(), client)
    await session.add_items(RECORDED_ITEMS[3:6])  # reasoning, function_call, function_call_output
    assert exactly([await session.pop_item()]) == exactly([RECORDED_ITEMS[5]])
    assert exactly([await session.pop_item()]) == exactly([RECORDED_ITEMS[4]])
    assert exactly(await session.get_items()) == exactly(RECORDED_ITEMS[3:4])
    await session.add_items([RECORDED_ITEMS[8]])
    assert exactly(await session.get_items()) == exactly([RECORDED_ITEMS[3], RECORDED_ITEMS[8]])

    records = await stored(client, session.run_id)
    assert exactly(stored_items(records)) == exactly([*RECORDED_ITEMS[3:6], RECORDED_ITEMS[8]])
    pops = [op for op in history_ops(records) if op["op"] == "pop"]
    assert [op["seq"] for op in pops] == [4, 3], "each pop names the record of the item it removed"
    assert exactly(await RunJournalSession(session.session_id, client).get_items()) == exactly(
        [RECORDED_ITEMS[3], RECORDED_ITEMS[8]]
    )


async def test_clear_session_empties_the_session_keeps_the_journal_and_the_id_stays_usable(
    client: AsyncJournalClient,
) -> None:
    session = RunJournalSession(new_session_id(), client)
    await session.add_items(RECORDED_ITEMS[:3])
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    await session.clear_session()  # nothing left to clear: writes nothing
    await session.add_items([RECORDED_ITEMS[8]])
    assert await session.get_items() == [RECORDED_ITEMS[8]]
    assert await RunJournalSession(session.session_id, client).get_items() == [RECORDED_ITEMS[8]]

    records = await stored(client, session.run_id)
    assert exactly(stored_items(records)) == exactly([*RECORDED_ITEMS[:3], RECORDED_ITEMS[8]])
    assert [op["op"] for op in history_ops(records)] == ["add", "clear", "add"]


async def test_runs_show_lists_every_item_and_the_labels_name_the_session(client: AsyncJournalClient) -> None:
    session_id = f"user 42/{uuid.uuid4().hex[:6]}"
    session = RunJournalSession(session_id, client, namespace="support-bot")
    await session.add_items(RECORDED_ITEMS[3:6])
    await session.pop_item()

    shown = render_state(await client.fold(session.run_id))
    assert f"OpenAI Agents SDK session {session_id}" in shown
    for kind in ("reasoning", "function_call", "function_call_output"):
        assert f"(openai-agents {kind})" in shown
    labels = {LABEL_NAMESPACE: "support-bot", LABEL_SESSION: session_id}
    listed = [summary.run_id async for summary in client.iter_runs(labels=labels)]
    assert listed == [session.run_id]


# --- run ids and refusals ---------------------------------------------------------------


def test_session_ids_map_to_distinct_valid_run_ids_and_long_ones_are_hashed() -> None:
    ids = ["a", "a_", "a_5f", "_", "", "-", "user 42", "user_42", "ü", "日本", "a" * 256, "a" * 255 + "b", "x/../y"]
    run_ids = [session_run_id("agents", session_id) for session_id in ids]
    assert all(RUN_ID.fullmatch(run_id) for run_id in run_ids), run_ids
    assert len(set(run_ids)) == len(ids)
    assert session_run_id("agents", "user-42") == "agents_suser-42", "an id of [A-Za-z0-9-] stays readable"
    assert session_run_id("agents", "user_42") == "agents_suser_5f42"
    assert session_run_id("agents", "a" * 256).startswith("agents_h")


def test_a_session_id_or_namespace_the_run_cannot_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="at most 256"):
        RunJournalSession("a" * 257, None)  # type: ignore[arg-type]
    for namespace in ("", "a_b", "-a", "a.b", "n" * 41):
        with pytest.raises(ValueError, match="namespace"):
            RunJournalSession("s", None, namespace=namespace)  # type: ignore[arg-type]


async def test_an_item_json_would_change_is_refused_and_nothing_is_written(client: AsyncJournalClient) -> None:
    session = RunJournalSession(new_session_id(), client)
    await session.add_items([RECORDED_ITEMS[0]])
    for bad in ({"call_id": ("a", "b")}, {1: "int key"}, {"x": float("nan")}, {"x": object()}, "text"):
        with pytest.raises(ValueError, match=r"items\[1\]"):
            await session.add_items([RECORDED_ITEMS[2], bad])  # type: ignore[list-item]
    assert await session.get_items() == [RECORDED_ITEMS[0]]
    assert len(await stored(client, session.run_id)) == 3  # meta, the item, its note


async def test_a_run_that_is_not_this_sessions_is_refused_and_left_alone(client: AsyncJournalClient) -> None:
    session = RunJournalSession(new_session_id(), client)
    fingerprint = records_pb2.Fingerprint(provider="openai", model="gpt-5")
    await client.append(session.run_id, 1, meta_record(session.run_id, fingerprint, [text_block("someone's run")]))
    with pytest.raises(SessionJournalError, match="not this session's"):
        await session.add_items([RECORDED_ITEMS[2]])
    with pytest.raises(SessionJournalError, match="not this session's"):
        await session.get_items()
    assert len(await stored(client, session.run_id)) == 1


async def test_an_item_larger_than_a_record_is_refused_by_the_server_and_nothing_is_written(
    client: AsyncJournalClient,
) -> None:
    session = RunJournalSession(new_session_id(), client)
    await session.add_items([RECORDED_ITEMS[0]])
    with pytest.raises(RecordTooLargeError):
        await session.add_items([RECORDED_ITEMS[2], {"role": "user", "content": "x" * (1 << 20)}])
    assert await session.get_items() == [RECORDED_ITEMS[0]]


async def test_a_claim_on_a_sessions_run_fences_every_session_out(client: AsyncJournalClient) -> None:
    session = RunJournalSession(new_session_id(), client)
    await session.add_items([RECORDED_ITEMS[0]])
    fingerprint = records_pb2.Fingerprint(provider="openai-agents", model="session")
    await client.claim(session.run_id, "worker-1", fingerprint)
    with pytest.raises(RunClaimedError):
        await RunJournalSession(session.session_id, client).add_items([RECORDED_ITEMS[2]])
    assert await session.get_items() == [RECORDED_ITEMS[0]], "reading goes on"


async def test_more_items_than_one_batch_holds_are_written_in_several(client: AsyncJournalClient) -> None:
    session = RunJournalSession(new_session_id(), client)
    items = [{"role": "user", "content": f"m{i}"} for i in range(2 * MAX_BATCH_ITEMS + 3)]
    await session.add_items(items)
    assert await RunJournalSession(session.session_id, client).get_items() == items
    adds = [op["items"] for op in history_ops(await stored(client, session.run_id))]
    assert adds == [MAX_BATCH_ITEMS, MAX_BATCH_ITEMS, 3]


# --- concurrency ------------------------------------------------------------------------


class RacingClient:
    """A client whose first ``append_batch`` lets a rival write first, and which counts the refusals it got."""

    def __init__(self, client: AsyncJournalClient, rival: Callable[[], Awaitable[object]]) -> None:
        self._client = client
        self._rival: Callable[[], Awaitable[object]] | None = rival
        self.refused: list[type[Exception]] = []

    def read(self, run_id: str, from_seq: int = 0) -> Any:
        return self._client.read(run_id, from_seq)

    async def append_batch(self, run_id: str, claim_token: int, records: list[records_pb2.JournalRecord]) -> Any:
        if self._rival is not None:
            rival, self._rival = self._rival, None
            await rival()
        try:
            return await self._client.append_batch(run_id, claim_token, records)
        except (SeqConflictError, RunExistsError) as err:
            self.refused.append(type(err))
            raise


async def test_equal_items_added_by_two_sessions_at_one_seq_are_both_kept(client: AsyncJournalClient) -> None:
    session_id = new_session_id()
    same = [{"role": "user", "content": "hello"}]
    first = RunJournalSession(session_id, client)
    await first.add_items(same)
    rival = RunJournalSession(session_id, client)
    racing = RacingClient(client, lambda: rival.add_items(same))
    late = RunJournalSession(session_id, racing)  # type: ignore[arg-type]
    await late.add_items(same)  # read the run, then the rival wrote the same item at the same seq
    assert racing.refused == [SeqConflictError], "the race happened, and the journal's seq check caught it"
    assert await RunJournalSession(session_id, client).get_items() == same * 3


async def test_two_sessions_creating_the_run_at_once_both_land(client: AsyncJournalClient) -> None:
    session_id = new_session_id()
    rival = RunJournalSession(session_id, client)
    racing = RacingClient(client, lambda: rival.add_items([RECORDED_ITEMS[0]]))
    await RunJournalSession(session_id, racing).add_items([RECORDED_ITEMS[2]])  # type: ignore[arg-type]
    assert racing.refused == [RunExistsError]
    assert await rival.get_items() == [RECORDED_ITEMS[0], RECORDED_ITEMS[2]]


async def test_two_pops_at_once_pop_two_items(client: AsyncJournalClient) -> None:
    session_id = new_session_id()
    items = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    await RunJournalSession(session_id, client).add_items(items)
    rival = RunJournalSession(session_id, client)
    rival_popped: list[Any] = []

    async def rival_pops() -> None:
        rival_popped.append(await rival.pop_item())

    racing = RacingClient(client, rival_pops)
    popper = RunJournalSession(session_id, racing)  # type: ignore[arg-type]
    await popper.get_items()  # it has read all three items
    popped = await popper.pop_item()
    assert racing.refused == [SeqConflictError]
    assert (rival_popped, popped) == ([items[2]], items[1]), "the second pop pops what is latest after the first"
    assert await rival.get_items() == items[:1]


async def test_many_sessions_writing_at_once_lose_nothing_and_double_nothing(journal_server: ServerProcess) -> None:
    session_id = new_session_id()
    writers, rounds = 6, 8

    async def write(writer: int) -> None:
        async with AsyncJournalClient(journal_server.address) as own:
            session = RunJournalSession(session_id, own)
            for n in range(rounds):
                # The same first item from everyone, so equal records meet at equal seqs.
                await session.add_items(
                    [{"role": "user", "content": "same"}, {"role": "user", "content": f"{writer}.{n}"}]
                )

    await asyncio.gather(*(write(writer) for writer in range(writers)))
    async with AsyncJournalClient(journal_server.address) as reader:
        items = await RunJournalSession(session_id, reader).get_items()
    contents = [item["content"] for item in items]
    assert contents.count("same") == writers * rounds
    for writer in range(writers):
        own = [content for content in contents if content.startswith(f"{writer}.")]
        assert own == [f"{writer}.{n}" for n in range(rounds)], "each writer's items, once each, in its order"
    for index in range(0, len(contents), 2):  # each add is one batch: never split by another writer
        assert contents[index] == "same" and contents[index + 1] != "same"


# --- the SDK driving it -----------------------------------------------------------------


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


async def converse(session: Any, fake: FakeModel, fresh: Callable[[], Any] | None = None) -> None:
    """Two turns of the weather agent through ``Runner.run``; ``fresh`` gives the second turn a new session object."""
    model = OpenAIResponsesModel(MODEL, AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="test", max_retries=0))
    agent = Agent(name="Weather", instructions="Answer briefly.", tools=[get_weather], model=model)
    config = RunConfig(tracing_disabled=True)  # tracing would export to the internet
    first = await Runner.run(agent, "Weather in Paris?", session=session, run_config=config)
    assert first.final_output == "Sunny, turn 1."
    second = await Runner.run(agent, "And Lisbon?", session=fresh() if fresh else session, run_config=config)
    assert second.final_output == "Sunny, turn 2."


async def test_the_runner_drives_the_session_as_it_drives_its_own_sqlite_session(client: AsyncJournalClient) -> None:
    session_id = new_session_id()
    with FakeModel() as ours, FakeModel() as theirs:
        serve_weather_agent(ours)
        serve_weather_agent(theirs)
        # The second turn runs on a new session object: the history comes from the journal, not from memory.
        await converse(RunJournalSession(session_id, client), ours, lambda: RunJournalSession(session_id, client))
        sqlite = SQLiteSession(session_id)
        await converse(sqlite, theirs)
        sent, expected = ours.requests_to("/v1/responses"), theirs.requests_to("/v1/responses")
        assert [request.body for request in sent] == [request.body for request in expected]
    items = await RunJournalSession(session_id, client).get_items()
    assert exactly(items) == exactly(await sqlite.get_items())
    turn = ["message", "reasoning", "function_call", "function_call_output", "message"]
    assert [item.get("type", "message") for item in items] == turn * 2
    # The second turn's request carried the first turn back exactly, encrypted reasoning included.
    assert exactly(sent[2].body["input"][:5]) == exactly(items[:5])
    sqlite.close()

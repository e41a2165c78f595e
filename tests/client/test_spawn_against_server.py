"""Sub-agent runs from the Python clients (sync and asyncio): spawn, wait for the child, delete the tree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import runjournal
from runjournal import JournalClient
from runjournal.v1 import state_pb2
from tests.client.flavours import Flavour
from tests.client.test_against_server import FINGERPRINT, new_run_id
from tests.servers import ServerProcess


@pytest.fixture
def client(journal_server: ServerProcess, flavour: Flavour) -> Iterator[JournalClient]:
    with flavour.JournalClient(journal_server.address) as journal_client:
        yield journal_client


def test_a_child_run_answers_the_parents_call_and_the_tree_is_deleted_whole(
    client: JournalClient, flavour: Flavour
) -> None:
    parent_id, child_id = new_run_id(), new_run_id()
    parent = flavour.Run.create(client, parent_id, FINGERPRINT, "delegate the lookup")
    parent.assistant(1, [runjournal.tool_use_block("c1", "research", {"q": "a"})], "tool_use")

    spawned = client.spawn_run(parent_id, "c1", child_id, FINGERPRINT, "look up a", reason="sub-agent")
    assert (spawned.duplicate, spawned.spawned_by.run_id, spawned.spawned_by.root_run_id) == (
        False,
        parent_id,
        parent_id,
    )
    assert client.spawn_run(parent_id, "c1", child_id, FINGERPRINT, "look up a").duplicate
    waiting = client.fold(parent_id).pending.calls[0]
    assert (waiting.waiting_for, waiting.child_run_id) == (state_pb2.WAITING_FOR_CHILD, child_id)
    assert [s.run_id for s in client.iter_runs(spawned_by_run_id=parent_id)] == [child_id]

    child = flavour.Run.claim(client, child_id, "sub-worker", FINGERPRINT)
    child.assistant(1, [runjournal.text_block("a is 1")], "end_turn")
    child.terminal("completed", "ok")
    result = client.wait_for_child(parent_id, "c1")
    assert (result.answered_by_run_id, [b.text.text for b in result.content]) == (child_id, ["a is 1"])

    last = client.fold(parent_id).last_seq
    with pytest.raises(runjournal.InvalidArgumentError) as caught:
        client.delete_run(parent_id, last)
    assert caught.value.field == "with_children"
    assert client.delete_run(parent_id, last, with_children=True).deleted
    with pytest.raises(runjournal.RunDeletedError):
        client.fold(child_id)

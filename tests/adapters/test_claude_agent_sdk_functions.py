"""The SDK's own store-backed session functions, run on the runjournal store (file and JetStream).

These are what an application calls besides the agent loop (list, read, rename, tag, fork, delete a
session through ``session_store``); none of them starts the SDK's CLI or reaches a model.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import claude_agent_sdk as sdk

from runjournal.adapters.claude_agent_sdk import RunJournalSessionStore
from runjournal.aio import AsyncJournalClient


def transcript(directory: Path, session_id: str) -> list[dict[str, Any]]:
    """A user turn and the answer, shaped as the CLI writes them."""
    question, answer = str(uuid.uuid4()), str(uuid.uuid4())
    common = {"sessionId": session_id, "cwd": str(directory), "isSidechain": False}
    return [
        {
            "type": "user",
            "uuid": question,
            "parentUuid": None,
            "timestamp": "2024-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "What is 2+2?"},
            **common,
        },
        {
            "type": "assistant",
            "uuid": answer,
            "parentUuid": question,
            "timestamp": "2024-01-01T00:00:01.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "4"}]},
            **common,
        },
    ]


async def test_the_sdks_session_functions_list_read_rename_tag_fork_and_delete_through_the_store(
    journal_server, tmp_path
):
    session_id = str(uuid.uuid4())
    directory = str(tmp_path)
    async with AsyncJournalClient(journal_server.address) as client:
        store = RunJournalSessionStore(client, namespace=f"f{uuid.uuid4().hex[:12]}")
        key: sdk.SessionKey = {"project_key": sdk.project_key_for_directory(directory), "session_id": session_id}
        await store.append(key, transcript(tmp_path, session_id))

        (listed,) = await sdk.list_sessions_from_store(store, directory=directory)
        assert (listed.session_id, listed.summary, listed.created_at) == (session_id, "What is 2+2?", 1704067200000)
        messages = await sdk.get_session_messages_from_store(store, session_id, directory=directory)
        assert [(m.type, m.message) for m in messages] == [
            ("user", {"role": "user", "content": "What is 2+2?"}),
            ("assistant", {"role": "assistant", "content": [{"type": "text", "text": "4"}]}),
        ]

        await sdk.rename_session_via_store(store, session_id, "renamed", directory=directory)
        await sdk.tag_session_via_store(store, session_id, "tagged", directory=directory)
        info = await sdk.get_session_info_from_store(store, session_id, directory=directory)
        assert info is not None and (info.custom_title, info.tag) == ("renamed", "tagged")
        (listed,) = await sdk.list_sessions_from_store(store, directory=directory)
        assert (listed.summary, listed.tag) == ("renamed", "tagged")  # from the summary note the appends wrote

        fork = await sdk.fork_session_via_store(store, session_id, directory=directory)
        forked = await sdk.get_session_messages_from_store(store, fork.session_id, directory=directory)
        assert [m.message for m in forked] == [m.message for m in messages]

        await sdk.delete_session_via_store(store, session_id, directory=directory)
        assert [s.session_id for s in await sdk.list_sessions_from_store(store, directory=directory)] == [
            fork.session_id
        ]
        assert await store.load(key) is None

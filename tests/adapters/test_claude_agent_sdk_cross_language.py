"""The session store across languages, on file and JetStream: what one adapter appends, the other loads deep-equal.

The TypeScript side is ``client/ts/build/test/integration/claude-agent-sdk-step.js`` (built by
``npx tsc -p tsconfig.test.json`` in client/ts), which runs a list of store operations given on stdin.
Without node or that program the test fails under CI and is skipped elsewhere.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import SessionKey

from runjournal.adapters.claude_agent_sdk import RunJournalSessionStore
from runjournal.aio import AsyncJournalClient
from tests.support.environment import unavailable

REPO = Path(__file__).resolve().parents[2]
TS_PROGRAM = REPO / "client" / "ts" / "build" / "test" / "integration" / "claude-agent-sdk-step.js"
STEP_TIMEOUT_SECONDS = 120.0

ENTRIES: list[dict[str, Any]] = [
    {
        "type": "user",
        "uuid": "u-1",
        "timestamp": "2024-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": 'Ünïcødé, "quotes", a\nnewline, \u2028, \t and 🚀'},
        "isSidechain": False,
        "parentUuid": None,
    },
    {
        "type": "assistant",
        "uuid": "u-2",
        "message": {"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "tool_use", "input": {}}]},
        "usage": {"input_tokens": 12, "ratio": 1.5, "negative": -3, "big": 9007199254740991, "tiny": 1e-7},
        "nested": [[[]], {"a": {"b": [True, False, None]}}],
    },
    {"type": "custom-title", "customTitle": "a title", "sessionId": "s"},  # no uuid: appended every time
    {"type": "", "uuid": "u-3"},
]


def as_ts_key(key: SessionKey) -> dict[str, str]:
    ts = {"projectKey": key["project_key"], "sessionId": key["session_id"]}
    if "subpath" in key:
        ts["subpath"] = key["subpath"]
    return ts


def typescript(address: str, namespace: str, operations: list[dict[str, Any]]) -> list[Any]:
    """Runs the operations through the TypeScript store in a node process; their results, in order."""
    node = shutil.which("node")
    if node is None or not TS_PROGRAM.is_file():
        unavailable(f"need `node` and {TS_PROGRAM} (cd client/ts && npx tsc -p tsconfig.test.json)")
    done = subprocess.run(
        [node, str(TS_PROGRAM), "--address", address, "--namespace", namespace],
        input=json.dumps(operations),
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"the TypeScript store exited {done.returncode}:\n{done.stderr}"
    return json.loads(done.stdout)


@pytest.fixture
def namespace() -> str:
    return f"x{uuid.uuid4().hex[:12]}"


async def test_entries_appended_by_either_adapter_load_deep_equal_through_the_other(journal_server, namespace):
    from_ts: SessionKey = {"project_key": "/home/me/proj", "session_id": "from-ts"}
    from_py: SessionKey = {"project_key": "/home/me/proj", "session_id": "from-py", "subpath": "subagents/agent-1"}
    typescript(journal_server.address, namespace, [{"op": "append", "key": as_ts_key(from_ts), "entries": ENTRIES}])
    async with AsyncJournalClient(journal_server.address) as client:
        store = RunJournalSessionStore(client, namespace=namespace)
        assert await store.load(from_ts) == ENTRIES
        await store.append(from_py, ENTRIES)
    (loaded,) = typescript(journal_server.address, namespace, [{"op": "load", "key": as_ts_key(from_py)}])
    assert loaded == ENTRIES


async def test_both_adapters_append_to_one_session_and_neither_doubles_the_others_entries(journal_server, namespace):
    key: SessionKey = {"project_key": "proj", "session_id": "shared"}
    first = [{"type": "user", "uuid": f"a{i}", "customTitle": "python title"} for i in range(3)]
    second = [{"type": "user", "uuid": f"b{i}", "customTitle": "ts title"} for i in range(3)]
    third = [{"type": "user", "uuid": "c0"}, {"type": "tag", "tag": "t"}]
    async with AsyncJournalClient(journal_server.address) as client:
        store = RunJournalSessionStore(client, namespace=namespace)
        await store.append(key, first)
        ts_loaded, ts_summaries = typescript(
            journal_server.address,
            namespace,
            [
                {"op": "append", "key": as_ts_key(key), "entries": first + second},  # a retry of python's, and more
                {"op": "load", "key": as_ts_key(key)},
                {"op": "listSessionSummaries", "projectKey": "proj"},
            ],
        )[1:]
        assert ts_loaded == first + second
        (ts_summary,) = ts_summaries
        assert ts_summary["sessionId"] == "shared" and ts_summary["data"]["customTitle"] == "ts title"
        # TypeScript wrote last, so its summary note ends the run: Python folds its own shape from the entries.
        (py_summary,) = await store.list_session_summaries("proj")
        assert py_summary["data"]["custom_title"] == "ts title"
        assert py_summary["mtime"] == ts_summary["mtime"]
        await store.append(key, second + third)  # python's cache is behind: the seq check sends it to read first
        assert await store.load(key) == first + second + third
        (py_summary,) = await store.list_session_summaries("proj")
        assert py_summary["data"]["tag"] == "t"
    (ts_loaded,) = typescript(journal_server.address, namespace, [{"op": "load", "key": as_ts_key(key)}])
    assert ts_loaded == first + second + third


async def test_both_adapters_map_every_key_to_the_same_run_and_list_the_same(journal_server, namespace):
    keys: list[SessionKey] = [
        {"project_key": "/home/me/my project", "session_id": "a.b*c>d"},
        {"project_key": "ünïcødé 🚀", "session_id": "s\nnewline", "subpath": "subagents/agent-1"},
        {"project_key": "_p", "session_id": "_s", "subpath": "_k"},
        {"project_key": "x" * 256, "session_id": "long"},
        {"project_key": "p", "session_id": "🚀" * 100, "subpath": "/" * 256},
    ]
    async with AsyncJournalClient(journal_server.address) as client:
        store = RunJournalSessionStore(client, namespace=namespace)
        for n, key in enumerate(keys):
            await store.append(key, [{"type": "x", "uuid": f"u{n}"}])
        operations: list[dict[str, Any]] = [{"op": "runId", "key": as_ts_key(key)} for key in keys]
        operations += [{"op": "load", "key": as_ts_key(key)} for key in keys]
        operations += [{"op": "listSubkeys", "key": as_ts_key(key)} for key in keys]
        operations += [{"op": "listSessions", "projectKey": key["project_key"]} for key in keys]
        results = typescript(journal_server.address, namespace, operations)
        count = len(keys)
        assert results[:count] == [store.run_id(key) for key in keys]
        assert results[count : 2 * count] == [[{"type": "x", "uuid": f"u{n}"}] for n in range(count)]
        assert results[2 * count : 3 * count] == [await store.list_subkeys(key) for key in keys]
        py_sessions = [await store.list_sessions(key["project_key"]) for key in keys]
        ts_sessions = results[3 * count :]
        assert [[s["sessionId"] for s in listed] for listed in ts_sessions] == [
            [s["session_id"] for s in listed] for listed in py_sessions
        ]

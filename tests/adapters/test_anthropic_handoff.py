"""The hand-off through the Anthropic SDKs: a worker killed mid-turn, the run continued in the other language.

The tool loop of ``tests/fake_model/anthropic_loop.py`` (thinking with
signatures, redacted thinking, a server web search with encrypted content,
citations, a ``pause_turn``, a streamed call, two parallel tool calls, an image
in a result, a ``compaction``) runs against the fake Messages API and a real
journal server, once per backend. Uninterrupted, each language's worker keeps
its conversation in memory as any SDK loop does. Interrupted, a worker
SIGKILLs itself right after the first of the two results of the parallel
calls; a worker in the other language claims the run, runs the call left and
rebuilds the conversation from the fold (``request_messages``). The request it
then sends must equal, as JSON, the one the uninterrupted runs send at that
point (and every request after it), while the fake model holds each request to
the API's rules.
"""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from runjournal import JournalClient
from runjournal.v1 import state_pb2
from tests.adapters.conftest_anthropic import (
    WorkerRun,
    anthropic_fake,
    journal_server,
    new_run_id,
    run_worker,
    worker_commands,
)
from tests.fake_model import anthropic_loop as loop
from tests.fake_model.server import FakeModel
from tests.servers import ServerProcess

__all__ = ["anthropic_fake", "journal_server", "worker_commands"]

LANGUAGES = ("python", "typescript")
CALLS = 4
"""The loop's model calls: the search (pause_turn), its continuation (streamed), the compaction, the answer."""
RESUMED_CALL = 2
"""The index of the first call a resumed worker sends: the one after the parallel tool calls."""


def bodies(worker: WorkerRun) -> list[Any]:
    return [request.body for request in worker.requests]


@pytest.fixture(scope="module")
def uninterrupted(
    journal_server: ServerProcess, anthropic_fake: FakeModel, worker_commands: dict[str, list[str]]
) -> dict[str, WorkerRun]:
    runs = {}
    for language in LANGUAGES:
        run_id = new_run_id(f"anthropic-{language}")
        worker = run_worker(worker_commands, language, journal_server, anthropic_fake, run_id, "--create")
        assert worker.returncode == 0, worker.output
        runs[language] = worker
    return runs


def test_both_languages_send_the_same_requests_through_the_loop(uninterrupted: dict[str, WorkerRun]) -> None:
    python, typescript = (bodies(uninterrupted[language]) for language in LANGUAGES)
    assert len(python) == CALLS
    assert python == typescript
    assert [body.get("stream", False) for body in python] == [False, True, False, False]
    roles = [[message["role"] for message in body["messages"]] for body in python]
    assert roles == [["user"], ["user", "assistant"], ["user", "assistant", "assistant", "user"], ["assistant"]]


@pytest.mark.parametrize(("first", "second"), [("python", "typescript"), ("typescript", "python")])
def test_a_run_killed_after_one_of_two_results_continues_in_the_other_language_with_the_same_request(
    journal_server: ServerProcess,
    anthropic_fake: FakeModel,
    worker_commands: dict[str, list[str]],
    uninterrupted: dict[str, WorkerRun],
    first: str,
    second: str,
) -> None:
    assert_handoff(journal_server, anthropic_fake, worker_commands, uninterrupted, first, second)


def assert_handoff(
    journal_server: ServerProcess,
    anthropic_fake: FakeModel,
    worker_commands: dict[str, list[str]],
    uninterrupted: dict[str, WorkerRun],
    first: str,
    second: str,
) -> None:
    """Kill a ``first`` worker after one of two results, resume in ``second``: the requests are the uninterrupted."""
    run_id = new_run_id(f"anthropic-{first}-{second}")
    killed = run_worker(
        worker_commands, first, journal_server, anthropic_fake, run_id, "--create", "--die-after-results", "1"
    )
    assert killed.returncode == -signal.SIGKILL, killed.output
    with JournalClient(journal_server.address) as journal:
        state = journal.fold(run_id)
        assert [call.answered for call in state.pending.calls] == [True, False]
        assert state.status == state_pb2.RUN_STATUS_OPEN

        resumed = run_worker(worker_commands, second, journal_server, anthropic_fake, run_id, "--resume", "worker-2")
        assert resumed.returncode == 0, resumed.output
        kinds = [record.WhichOneof("payload") for record, _ in journal.read(run_id)]
        finished = journal.fold(run_id)

    reference = {language: bodies(uninterrupted[language]) for language in (first, second)}
    assert bodies(killed) == reference[first][:RESUMED_CALL]
    assert len(resumed.requests) == CALLS - RESUMED_CALL
    # The must-show: the first request after the hand-off is the uninterrupted one, in either language.
    continued = resumed.requests[0]
    assert continued.body == reference[first][RESUMED_CALL] == reference[second][RESUMED_CALL]
    assert bodies(resumed) == reference[second][RESUMED_CALL:]
    for text in provider_strings(reference[first][RESUMED_CALL]):
        assert json.dumps(text, ensure_ascii=False).encode() in continued.raw, text[:60]

    assert kinds == [
        "meta", "assistant", "assistant", "tool_result", "claim", "tool_result", "assistant", "assistant", "terminal",
    ]  # fmt: skip
    assert finished.status == state_pb2.RUN_STATUS_COMPLETED
    assert (finished.counters.llm_calls, finished.counters.tool_calls) == (CALLS, 2)
    counters = finished.counters
    assert (counters.cache_read_tokens, counters.cache_write_tokens) == (4000, 800)


def provider_strings(body: dict[str, Any]) -> list[str]:
    """The strings the API checks byte for byte: signatures, redacted data, encrypted content, call ids."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in {"signature", "data", "encrypted_content", "encrypted_index", "id", "tool_use_id"}:
                    found.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk([message for message in body["messages"] if message["role"] == "assistant"])
    assert len(found) >= 8, found
    return found


def test_the_loop_holds_what_the_issue_asks_to_see(uninterrupted: dict[str, WorkerRun]) -> None:
    """The continued request carries each kind the hand-off must keep (else the test above would prove less)."""
    body = bodies(uninterrupted["python"])[RESUMED_CALL]
    kinds = [block["type"] for message in body["messages"] for block in message["content"]]
    for kind in ("thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result", "tool_use"):
        assert kind in kinds, kind
    assert any("citations" in block for message in body["messages"][1:] for block in message["content"])
    results = body["messages"][-1]["content"]
    assert [result["type"] for result in results] == ["tool_result", "tool_result"]
    assert results[0]["content"] == loop.RATE_TEXT
    assert [block["type"] for block in results[1]["content"]] == ["image", "text"]
    assert bodies(uninterrupted["python"])[-1]["messages"][0]["content"][0]["type"] == "compaction"

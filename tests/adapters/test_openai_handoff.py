"""The hand-off: a worker SIGKILLed mid-turn, a worker in the other language continues, same requests.

A worker (Python or TypeScript, each through its own ``openai`` SDK) runs the agent loop against the
fake Responses API and a real journal server (file and JetStream). The model asks for two function
calls; the worker appends the first result and SIGKILLs itself. A worker in the other language claims
the run, runs the second call, and goes on through its SDK to the end (four model calls: the tool turn,
the answer, a follow-up answered after a compaction item, a closing turn).

The requests it sends must equal, as JSON, the requests of an uninterrupted run in either language at
the same points: the reasoning items with their ``encrypted_content``, the function calls with their
``fc_`` ids and ``call_id``s, the messages with their ``phase``, item order, and from the compaction
on only what follows it. The fake model refuses (400) what the real API refuses, so a worker that sent
a changed item would fail instead of passing.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from runjournal import JournalClient
from runjournal.v1 import records_pb2
from tests.adapters.conftest_openai import (
    LANGUAGES,
    OpenAIFake,
    Workers,
    journal_server,
    openai_fake,
    openai_workers,
)
from tests.fake_model.openai import fixture
from tests.servers import ServerProcess

__all__ = ["journal_server", "openai_fake", "openai_workers"]

MODEL_CALLS = 4


def new_run(prefix: str) -> str:
    return f"oai-{prefix}-{uuid.uuid4().hex[:10]}"


def assert_exit(done: Any, code: int, what: str) -> None:
    assert done.returncode == code, f"{what} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def uninterrupted(
    journal_server: ServerProcess, openai_fake: OpenAIFake, openai_workers: Workers
) -> dict[tuple[str, bool], list[Any]]:
    """The requests of an uninterrupted run, per (language, streamed), on this backend."""
    return uninterrupted_requests(journal_server, openai_fake, openai_workers, LANGUAGES)


def uninterrupted_requests(
    journal_server: ServerProcess, openai_fake: OpenAIFake, workers: Workers, languages: Sequence[str]
) -> dict[tuple[str, bool], list[Any]]:
    out = {}
    for language in languages:
        for stream in (False, True):
            run_id = new_run(f"ref-{language}")
            done = workers.run(language, journal_server, openai_fake, run_id, stream=stream)
            assert_exit(done, 0, f"the uninterrupted {language} worker")
            out[(language, stream)] = openai_fake.bodies(run_id)
            assert len(out[(language, stream)]) == MODEL_CALLS
    return out


def test_uninterrupted_runs_send_equal_requests_in_both_languages_streamed_or_not(
    uninterrupted: dict[tuple[str, bool], list[Any]],
) -> None:
    python = uninterrupted[("python", False)]
    for (language, stream), bodies in uninterrupted.items():
        # A streamed request differs only in asking for a stream.
        assert [body.get("stream") for body in bodies] == [True if stream else None] * MODEL_CALLS, language
        assert [without_stream(body) for body in bodies] == python, (language, stream)


def without_stream(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != "stream"}


@pytest.mark.parametrize("first,second", [("python", "ts"), ("ts", "python")], ids=["py-to-ts", "ts-to-py"])
def test_a_worker_killed_after_one_of_two_results_is_continued_in_the_other_language_with_equal_requests(
    journal_server: ServerProcess,
    openai_fake: OpenAIFake,
    openai_workers: Workers,
    uninterrupted: dict[tuple[str, bool], list[Any]],
    first: str,
    second: str,
) -> None:
    assert_handoff(journal_server, openai_fake, openai_workers, uninterrupted, first, second)


def assert_handoff(
    journal_server: ServerProcess,
    openai_fake: OpenAIFake,
    workers: Workers,
    uninterrupted: dict[tuple[str, bool], list[Any]],
    first: str,
    second: str,
) -> None:
    """Kill a ``first`` worker after one of two results, claim in ``second``: every request is the uninterrupted."""
    run_id = new_run(f"{first}-{second}")
    killed = workers.run(first, journal_server, openai_fake, run_id, die_after_results=1)
    assert_exit(killed, -signal.SIGKILL, f"the {first} worker")
    assert len(openai_fake.bodies(run_id)) == 1
    with JournalClient(journal_server.address) as client:
        [answered, waiting] = client.fold(run_id).pending.calls
    assert (answered.answered, waiting.answered) == (True, False)
    assert (answered.tool_use.name, waiting.tool_use.name) == ("get_weather", "get_hourly_forecast")

    resumed = workers.run(second, journal_server, openai_fake, run_id, claim=f"{second}-worker")
    assert_exit(resumed, 0, f"the {second} worker")

    bodies = openai_fake.bodies(run_id)
    assert len(bodies) == MODEL_CALLS
    for language in sorted({language for language, _ in uninterrupted}):
        reference = uninterrupted[(language, False)]
        # The first request the second worker sent, then every later one.
        assert bodies[1] == reference[1], f"the continued request differs from an uninterrupted {language} run's"
        assert bodies == reference
    assert_items_are_the_models(bodies[1]["input"])
    with JournalClient(journal_server.address) as client:
        state = client.fold(run_id)
    assert state.claimed_by == f"{second}-worker"
    assert (state.counters.llm_calls, state.counters.tool_calls) == (MODEL_CALLS, 2)
    assert state.terminal.reason == records_pb2.TERMINAL_REASON_COMPLETED


def assert_items_are_the_models(items: list[Any]) -> None:
    """The continued request holds the model's own items as it issued them, in its order."""
    issued = ["reasoning", "message_commentary", "function_call", "function_call_forecast"]
    assert items[1:5] == [fixture(name) for name in issued]
    assert items[1]["encrypted_content"] == fixture("reasoning")["encrypted_content"]
    assert [item["type"] for item in items[5:]] == ["function_call_output", "function_call_output"]
    assert [item["call_id"] for item in items[5:]] == [items[3]["call_id"], items[4]["call_id"]]


def test_after_the_compaction_item_the_request_starts_with_it(uninterrupted: dict[tuple[str, bool], list[Any]]) -> None:
    last = uninterrupted[("ts", False)][-1]["input"]
    assert [item["type"] for item in last] == ["compaction", "web_search_call", "message", "message"]
    assert last[0] == fixture("compaction") and last[2] == fixture("message_after_compaction")
    assert last[3] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks!"}]}

"""The OpenAI hand-off with the Go worker: Python -> Go and Go -> Python, on both backends.

The same agent, kill point and assertions as ``test_openai_handoff.py`` (``assert_handoff``), with the
Go worker (``client/go/adapters/cmd/openai-worker``, on ``openai-go``) as one side, built once per
session by ``test_anthropic_handoff_go.build_go_workers``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest_openai import OpenAIFake, Workers, journal_server, openai_fake
from tests.adapters.test_anthropic_handoff_go import go_workers
from tests.adapters.test_openai_handoff import (
    MODEL_CALLS,
    assert_handoff,
    assert_items_are_the_models,
    uninterrupted_requests,
    without_stream,
)
from tests.servers import ServerProcess

__all__ = ["go_workers", "journal_server", "openai_fake"]

LANGUAGES = ("python", "go")


@pytest.fixture(scope="module")
def workers(go_workers: Path) -> Workers:
    return Workers(node="", others={"go": [str(go_workers / "openai-worker")]})


@pytest.fixture(scope="module")
def uninterrupted(
    journal_server: ServerProcess, openai_fake: OpenAIFake, workers: Workers
) -> dict[tuple[str, bool], list[Any]]:
    return uninterrupted_requests(journal_server, openai_fake, workers, LANGUAGES)


def test_go_sends_the_same_requests_as_python_streamed_or_not(
    uninterrupted: dict[tuple[str, bool], list[Any]],
) -> None:
    python = uninterrupted[("python", False)]
    for stream in (False, True):
        bodies = uninterrupted[("go", stream)]
        assert [body.get("stream") for body in bodies] == [True if stream else None] * MODEL_CALLS
        assert [without_stream(body) for body in bodies] == python, stream
    assert_items_are_the_models(uninterrupted[("go", False)][1]["input"])


@pytest.mark.parametrize("first,second", [("python", "go"), ("go", "python")], ids=["py-to-go", "go-to-py"])
def test_a_worker_killed_after_one_of_two_results_is_continued_in_the_other_language_with_equal_requests(
    journal_server: ServerProcess,
    openai_fake: OpenAIFake,
    workers: Workers,
    uninterrupted: dict[tuple[str, bool], list[Any]],
    first: str,
    second: str,
) -> None:
    assert_handoff(journal_server, openai_fake, workers, uninterrupted, first, second)

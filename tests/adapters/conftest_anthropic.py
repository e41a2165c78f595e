"""Fixtures of the Anthropic adapter tests (imported by their modules; the name keeps clear of other adapters').

``journal_server`` is ``tests/api/conftest.py``'s, parametrised over the file
and the JetStream backend: a module that imports it runs each of its tests
that use it once per backend. ``anthropic_fake`` is the fake Messages API
serving the hand-off tool loop; ``run_worker`` runs one worker process of
either language against both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import journal_server
from tests.fake_model import anthropic as fake_anthropic
from tests.fake_model import anthropic_loop
from tests.fake_model.server import FakeModel, Recorded
from tests.servers import ServerProcess
from tests.support.environment import unavailable

__all__ = ["anthropic_fake", "anthropic_recorder", "journal_server", "new_run_id", "run_worker", "worker_commands"]

REPO = Path(__file__).resolve().parents[2]
TS_DIR = REPO / "client" / "ts"
TS_WORKER = TS_DIR / "build" / "test" / "workers" / "anthropic-worker.js"
TS_SOURCES = [TS_DIR / "test" / "workers" / "anthropic-worker.ts", TS_DIR / "src" / "adapters" / "anthropic.ts"]
BUILD = "cd client/ts && npx tsc -p tsconfig.test.json"
WORKER_TIMEOUT_SECONDS = 120.0
RUN_HEADER = "x-runjournal-run"


@pytest.fixture(scope="module")
def anthropic_fake() -> Iterator[FakeModel]:
    with FakeModel() as fake:
        fake_anthropic.serve(fake, anthropic_loop.SCRIPT)
        yield fake


@dataclass
class Recorder:
    """A fake Messages API that answers a conversation's first call with what a test registered for its prompt.

    Every later call (a conversation that already holds an answer) gets a plain ``end_turn`` text. The
    API's checks are off: the tests send the providers' recorded blocks, signed by the real API.
    """

    fake: FakeModel
    answers: dict[str, fake_anthropic.Answer]

    def expect(self, prompt: object, answer: fake_anthropic.Answer) -> None:
        self.answers[prompt_key(prompt)] = answer

    def answer(self, body: dict[str, Any]) -> fake_anthropic.Answer | None:
        if any(message["role"] == "assistant" for message in body["messages"]):
            return fake_anthropic.Answer([{"type": "text", "text": "Noted."}], "end_turn")
        return self.answers.get(prompt_key(body["messages"][0]["content"]))


def prompt_key(prompt: object) -> str:
    return json.dumps(prompt, sort_keys=True)


@pytest.fixture(scope="module")
def anthropic_recorder() -> Iterator[Recorder]:
    with FakeModel() as fake:
        recorder = Recorder(fake, {})
        fake_anthropic.serve(fake, fake_anthropic.Script(recorder.answer, []), checked=False)
        yield recorder


@pytest.fixture(scope="session")
def worker_commands() -> dict[str, list[str]]:
    """The command line of each language's worker; the TypeScript one must be built and current."""
    node = shutil.which("node")
    if node is None or not TS_WORKER.is_file():
        unavailable(f"the TypeScript worker is missing: need node and {TS_WORKER} ({BUILD})")
    built = TS_WORKER.stat().st_mtime
    stale = [str(path.relative_to(REPO)) for path in TS_SOURCES if path.stat().st_mtime > built]
    if stale:
        unavailable(f"the TypeScript worker is older than {stale}: rebuild it ({BUILD})")
    return {
        "python": [sys.executable, "-m", "tests.adapters.workers.anthropic_worker"],
        "typescript": [node, str(TS_WORKER)],
    }


@dataclass(frozen=True)
class WorkerRun:
    """One worker process: how it ended and the requests it sent to the model."""

    returncode: int
    output: str
    requests: list[Recorded]


def run_worker(
    commands: dict[str, list[str]],
    language: str,
    server: ServerProcess,
    fake: FakeModel,
    run_id: str,
    *mode: str,
) -> WorkerRun:
    already = len(fake.requests_to(fake_anthropic.PATH))
    flags = ["--journal", server.address, "--model-url", fake.base_url, "--run", run_id, *mode]
    done = subprocess.run(
        commands[language] + flags,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT_SECONDS,
        check=False,
    )
    since = fake.requests_to(fake_anthropic.PATH)[already:]
    sent = [request for request in since if request.headers.get(RUN_HEADER) == run_id]
    return WorkerRun(done.returncode, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}", sent)


def new_run_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"

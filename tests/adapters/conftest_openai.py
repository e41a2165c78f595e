"""Fixtures of the OpenAI adapter's tests; a test module imports the ones it uses from here.

``journal_server`` is ``tests/api/conftest.py``'s, parametrised over the file and the JetStream
backend, so every test that takes it runs on both. ``openai_fake`` is the fake Responses API
(``tests/fake_model/openai.py``) on a loopback port. ``openai_workers`` runs the agent worker of
either language (``tests/adapters/workers/openai_worker.py``, ``client/ts/test/workers/openai-worker.ts``
compiled once per session with the package's own ``tsc``) as a process of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import journal_server
from tests.fake_model.openai import OpenAIResponses
from tests.fake_model.server import FakeModel
from tests.servers import ServerProcess
from tests.support.environment import unavailable

__all__ = ["OpenAIFake", "Workers", "journal_server", "openai_fake", "openai_workers"]

REPO = Path(__file__).resolve().parents[2]
TS_DIR = REPO / "client" / "ts"
TS_WORKER = TS_DIR / "build" / "test" / "workers" / "openai-worker.js"
AGENT = REPO / "tests" / "adapters" / "workers" / "openai_agent.json"
RUN_HEADER = "x-runjournal-run"
WORKER_TIMEOUT_SECONDS = 120.0
LANGUAGES = ("python", "ts")


@dataclass
class OpenAIFake:
    fake: FakeModel
    responses: OpenAIResponses

    @property
    def url(self) -> str:
        return self.fake.base_url

    def bodies(self, run_id: str) -> list[Any]:
        """The JSON bodies of the model requests a run's workers sent, in order."""
        return [r.body for r in self.fake.requests_to("/v1/responses") if r.headers.get(RUN_HEADER) == run_id]

    def raw(self, run_id: str) -> list[bytes]:
        return [r.raw for r in self.fake.requests_to("/v1/responses") if r.headers.get(RUN_HEADER) == run_id]


def agent() -> dict[str, Any]:
    return json.loads(AGENT.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def openai_fake() -> Iterator[OpenAIFake]:
    with FakeModel() as fake:
        yield OpenAIFake(fake, OpenAIResponses().install(fake))


@dataclass(frozen=True)
class Workers:
    """Starts the agent worker of a language against a journal server and the fake model.

    ``others`` holds the command line of any other language's worker (the Go one), run with the same flags.
    """

    node: str
    others: dict[str, list[str]] = field(default_factory=dict)

    def run(
        self,
        language: str,
        journal: ServerProcess,
        model: OpenAIFake,
        run_id: str,
        *,
        claim: str | None = None,
        stream: bool = False,
        die_after_results: int = 0,
    ) -> subprocess.CompletedProcess[str]:
        flags = ["--journal", journal.address, "--model-url", model.url, "--agent", str(AGENT), "--run", run_id]
        flags += ["--claim", claim] if claim else ["--create"]
        flags += ["--stream"] if stream else []
        flags += ["--die-after-results", str(die_after_results)] if die_after_results else []
        if language == "python":
            command = [sys.executable, "-m", "tests.adapters.workers.openai_worker", *flags]
        elif language == "ts":
            command = [self.node, str(TS_WORKER), *flags]
        elif language in self.others:
            command = [*self.others[language], *flags]
        else:
            raise AssertionError(f"unknown language {language!r}")
        return subprocess.run(
            command, cwd=REPO, capture_output=True, text=True, timeout=WORKER_TIMEOUT_SECONDS, check=False
        )


@pytest.fixture(scope="session")
def openai_workers() -> Workers:
    node, npx = shutil.which("node"), shutil.which("npx")
    if node is None or npx is None or not (TS_DIR / "node_modules" / "openai").is_dir():
        unavailable("the TypeScript worker needs node, npx and client/ts/node_modules (npm ci in client/ts)")
    assert node is not None and npx is not None
    built = subprocess.run(
        [npx, "tsc", "-p", "tsconfig.test.json"], cwd=TS_DIR, capture_output=True, text=True, check=False,
        env={**os.environ, "NODE_OPTIONS": ""},
    )  # fmt: skip
    assert built.returncode == 0, f"tsc -p tsconfig.test.json failed:\n{built.stdout}\n{built.stderr}"
    return Workers(node)

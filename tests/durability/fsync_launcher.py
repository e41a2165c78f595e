"""``runjournal serve`` whose file backend fails fsync on command: a fault injector for tests.

Run as a script with the CLI's arguments. While the file named by
``$RUNJOURNAL_TEST_FSYNC_FAULT`` exists, every fsync the file backend makes
fails with the errno named by the file's first word (``EIO``, ``ENOSPC``, ...).
A second word counts the failures still to come; the file removes itself after
the last one. Everything else the backend does with ``os`` is the real thing,
and nothing outside the file backend is touched.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

MARKER_ENV = "RUNJOURNAL_TEST_FSYNC_FAULT"


class FaultyOs:
    """The ``os`` module as the file backend sees it, with a fsync that fails while the marker exists."""

    def __init__(self, marker: Path) -> None:
        self._marker = marker

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def fsync(self, fd: int) -> None:
        try:
            words = self._marker.read_text().split()
        except FileNotFoundError:
            os.fsync(fd)
            return
        code = getattr(errno, words[0])
        if len(words) > 1:
            left = int(words[1]) - 1
            if left > 0:
                self._marker.write_text(f"{words[0]} {left}")
            else:
                self._marker.unlink()
        raise OSError(code, f"injected: {os.strerror(code)}")


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: ``tests`` is importable
    from runjournal_server import cli
    from tests.file_backend_os import replace_os

    replace_os(FaultyOs(Path(os.environ[MARKER_ENV])))
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())

"""``runjournal serve`` that SIGKILLs itself at one step of a file-backend deletion: a crash injector for tests.

Run as a script with the CLI's arguments. ``$RUNJOURNAL_TEST_DELETE_CRASH``
names the step the process dies at, with no cleanup, as in a power cut
between two steps of ``tombstones.py``'s order:

* ``before-tombstone``: the journal checked, the tombstone not yet written;
* ``after-tombstone``: the tombstone durable, no file of the run touched;
* ``after-truncate``: the journal and lock file truncated and fsynced, not unlinked.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

CRASH_ENV = "RUNJOURNAL_TEST_DELETE_CRASH"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: ``tests`` is importable
    from runjournal_server import cli
    from runjournal_server.backends.file import tombstones

    step = os.environ[CRASH_ENV]
    if step == "before-tombstone":
        tombstones.Tombstones.write = lambda self, tombstone: _die()  # type: ignore[method-assign]
    elif step == "after-tombstone":
        tombstones.erase = lambda paths, data_dir: _die()  # type: ignore[assignment]
        import runjournal_server.backends.file.backend as file_backend

        file_backend.erase = tombstones.erase  # type: ignore[attr-defined]
    elif step == "after-truncate":
        real_unlink = os.unlink

        class _Os:
            def __getattr__(self, name: str) -> Any:
                return getattr(os, name)

            def unlink(self, path: Any) -> None:
                _die()
                real_unlink(path)

        tombstones.os = _Os()  # type: ignore[assignment]
    else:
        raise SystemExit(f"unknown step {step!r}")
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())

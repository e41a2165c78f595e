"""A task document whose write fails (disk full, failing fsync) leaves no temporary file behind.

The real disk-full case uses ``RLIMIT_FSIZE`` in a child process, as
``test_disk_full.py`` does for journals: the write past the limit is cut short,
then fails with EFBIG.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runjournal_server.backends.file import FileBackend
from runjournal_server.backends.file import files as file_files
from runjournal_server.core.errors import StorageFullError, StorageUnavailableError

CHILD = """
import asyncio, json, os, resource, signal, sys
from pathlib import Path
from runjournal_server.backends.file import FileBackend
from runjournal_server.core.errors import StorageFullError

async def main() -> None:
    backend = FileBackend(Path(sys.argv[1]))
    await backend.start()
    store = backend.task_store()
    assert await store.create_request("small", b"{}") is None
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
    try:
        await store.create_request("big", b"x" * 5000)
        outcome = "stored"
    except StorageFullError:
        outcome = "full"
    print(json.dumps([outcome, sorted(os.listdir(Path(sys.argv[1]) / "tasks"))]), flush=True)

asyncio.run(main())
"""


def test_a_task_write_past_a_real_file_size_limit_leaves_no_temp_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "data")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    outcome, names = json.loads(result.stdout)
    assert outcome == "full"
    assert names == ["small.request.json"], names


class FailingOs:
    """``os`` as the file backend's ``files`` module sees it (every durable write goes there), ``fsync`` failing."""

    def __init__(self, code: int) -> None:
        self._code = code

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def fsync(self, fd: int) -> None:
        raise OSError(self._code, os.strerror(self._code))


@pytest.mark.parametrize(("code", "error"), [(errno.ENOSPC, StorageFullError), (errno.EIO, StorageUnavailableError)])
async def test_a_task_whose_fsync_fails_leaves_no_temp_file_and_can_be_stored_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, error: type[Exception]
) -> None:
    backend = FileBackend(tmp_path / "data")
    await backend.start()
    store = backend.task_store()
    monkeypatch.setattr(file_files, "os", FailingOs(code))
    with pytest.raises(error):
        await store.create_request("t1", b"{}")
    monkeypatch.undo()
    assert os.listdir(tmp_path / "data" / "tasks") == []
    assert await store.create_request("t1", b"{}") is None
    assert await store.get("t1") == (b"{}", None)
    assert os.listdir(tmp_path / "data" / "tasks") == ["t1.request.json"]

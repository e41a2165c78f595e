"""Fixtures for the backend tests: real backends on real storage."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from runjournal_server.backends.file import FileBackend


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def file_backend(data_dir: Path) -> AsyncIterator[FileBackend]:
    """A started file backend on a fresh directory; closed (locks released) after the test."""
    backend = FileBackend(data_dir)
    await backend.start()
    yield backend
    await backend.close()

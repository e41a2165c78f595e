"""The file backend starts only where file names keep case (``backends/file/casing.py``).

The probe runs on real directories here (case-sensitive on the test
machines); a volume that folds case is played by a lookup that ignores case,
the way such a volume answers it. ``tests/durability/test_case_folding_volume.py``
runs the real thing on a vfat image.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from runjournal_server.backends.base import BackendStartError
from runjournal_server.backends.file import FileBackend, casing
from runjournal_server.core.records import encode
from tests.support import builders as b


def folding_lookup(folded: set[Path]) -> object:
    """``os.path.lexists`` as a volume that folds case answers it in the directories of ``folded``."""
    lexists = os.path.lexists

    def lookup(path: str | os.PathLike[str]) -> bool:
        path = Path(path)
        if path.parent in folded:
            return any(name.lower() == path.name.lower() for name in os.listdir(path.parent))
        return lexists(path)

    return lookup


def test_the_probe_finds_a_case_sensitive_directory_and_leaves_nothing_behind(tmp_path: Path) -> None:
    assert casing.folds_case(tmp_path) is False
    assert list(tmp_path.iterdir()) == []


def test_the_probe_finds_a_directory_that_folds_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(casing.os.path, "lexists", folding_lookup({tmp_path}))
    assert casing.folds_case(tmp_path) is True
    assert list(tmp_path.iterdir()) == []


async def test_a_data_directory_that_folds_case_is_refused_at_start_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    monkeypatch.setattr(casing.os.path, "lexists", folding_lookup({data_dir}))
    backend = FileBackend(data_dir)
    with pytest.raises(BackendStartError, match=r"case-insensitive file system.*'Case-Run' and 'case-run'"):
        await backend.start()
    assert list(data_dir.iterdir()) == []  # no commit log, no lock, no probe


@pytest.mark.parametrize("subdirectory", ["deleted", "tasks"])
async def test_a_tombstone_or_task_directory_that_folds_case_is_refused_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subdirectory: str
) -> None:
    """On Windows case sensitivity is set per directory: the ones that name files after ids are probed each."""
    data_dir = tmp_path / "data"
    (data_dir / subdirectory).mkdir(parents=True)
    monkeypatch.setattr(casing.os.path, "lexists", folding_lookup({data_dir / subdirectory}))
    with pytest.raises(BackendStartError, match=re.escape(f"{data_dir / subdirectory} is on a case-insensitive")):
        await FileBackend(data_dir).start()


async def test_a_case_sensitive_data_directory_starts_and_keeps_two_runs_that_differ_in_case_apart(
    tmp_path: Path,
) -> None:
    backend = FileBackend(tmp_path / "data")
    await backend.start()
    try:
        for run_id in ("Case-Run", "case-run"):
            await backend.create_journal(run_id, encode(b.meta(run_id=run_id, prompt=run_id)))
        assert sorted(await backend.list_run_ids()) == ["Case-Run", "case-run"]
        for run_id in ("Case-Run", "case-run"):
            (meta,) = await backend.load(run_id)
            assert meta.record is not None and meta.record.meta.run_id == run_id
    finally:
        await backend.close()

"""Recovery from a dead process's commit log, on real files: what a start writes back, and what it never touches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runjournal_server.backends.file import FileBackend
from runjournal_server.backends.file.commit_log import LOG_DIR, CommitLog, Entry, meta_digest
from runjournal_server.core.errors import StorageUnavailableError
from runjournal_server.core.records import StoredRecord, encode
from tests.support import builders as b

RUN = "logged"


def line(stored: StoredRecord) -> bytes:
    return stored.line + b"\n"


async def created(data_dir: Path, run_id: str = RUN, prompt: str = "hello") -> bytes:
    """A run holding only its meta, made by a backend that then shut down cleanly; the meta line."""
    backend = FileBackend(data_dir)
    await backend.start()
    meta = encode(b.meta(run_id=run_id, prompt=prompt))
    await (await backend.create_journal(run_id, meta)).close()
    await backend.close()
    return meta.line


def orphan_log(data_dir: Path, *entries: Entry) -> Path:
    """A log as a killed process leaves it: entries synced, its flock gone with the process."""
    log = CommitLog.create(data_dir)
    log.append(list(entries))
    log.close()  # closing the only descriptor drops the flock, as the kernel does for a dead process
    return log.path


async def started(data_dir: Path) -> None:
    backend = FileBackend(data_dir)
    await backend.start()
    await backend.close()


def journal(data_dir: Path, run_id: str = RUN) -> Path:
    return data_dir / f"{run_id}.jsonl"


async def test_a_start_writes_back_what_only_the_dead_process_log_kept_and_removes_the_log(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    meta = await created(data_dir)
    notes = line(encode(b.note(2, "only in the log"))) + line(encode(b.note(3)))
    path = orphan_log(data_dir, Entry(RUN, meta_digest(meta), len(meta) + 1, notes))
    await started(data_dir)
    assert journal(data_dir).read_bytes() == meta + b"\n" + notes
    assert not path.exists()


async def test_zeros_where_the_log_has_lines_are_overwritten(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    meta = await created(data_dir)
    note = line(encode(b.note(2)))
    with journal(data_dir).open("ab") as file:
        file.write(bytes(len(note)))  # a page the power cut lost: zeros
    orphan_log(data_dir, Entry(RUN, meta_digest(meta), len(meta) + 1, note))
    await started(data_dir)
    assert journal(data_dir).read_bytes() == meta + b"\n" + note


async def test_valid_lines_of_a_later_writer_are_never_overwritten(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    meta = await created(data_dir)
    theirs = line(encode(b.note(2, "a later writer's record, longer than the logged one")))
    with journal(data_dir).open("ab") as file:
        file.write(theirs)
    orphan_log(data_dir, Entry(RUN, meta_digest(meta), len(meta) + 1, line(encode(b.note(2, "logged")))))
    await started(data_dir)
    assert journal(data_dir).read_bytes() == meta + b"\n" + theirs


async def test_a_deleted_or_recreated_run_is_not_written_into(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    old_meta = await created(data_dir)
    await created(data_dir, "gone")
    journal(data_dir).unlink()
    new_meta = await created(data_dir, prompt="another run of that id")  # another meta line
    assert new_meta != old_meta
    note = line(encode(b.note(2)))
    journal(data_dir, "gone").unlink()
    orphan_log(
        data_dir,
        Entry(RUN, meta_digest(old_meta), len(old_meta) + 1, note),
        Entry("gone", meta_digest(old_meta), len(old_meta) + 1, note),
    )
    await started(data_dir)
    assert journal(data_dir).read_bytes() == new_meta + b"\n"
    assert not journal(data_dir, "gone").exists()
    assert [p.name for p in (data_dir / LOG_DIR).iterdir()] == ["recovery.lock"]


async def test_a_log_that_cannot_be_replayed_refuses_the_start_and_is_kept(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    meta = await created(data_dir)
    os.replace(journal(data_dir), tmp_path / "elsewhere.jsonl")
    journal(data_dir).symlink_to(tmp_path / "elsewhere.jsonl")  # never followed
    path = orphan_log(data_dir, Entry(RUN, meta_digest(meta), len(meta) + 1, line(encode(b.note(2)))))
    with pytest.raises(StorageUnavailableError, match="replaying the commit log"):
        await started(data_dir)
    assert path.exists()

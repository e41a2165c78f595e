"""The file backend: atomic batches, creation batches, streaming reads, links and swapped files.

A crash is simulated in process by a write that stops part-way with an
exception no code path catches (not an ``OSError``, so nothing rolls back):
the file is then exactly as a SIGKILL at that moment leaves it, page cache
included. The real SIGKILLs are in ``tests/durability/test_batch_atomic.py``.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import tracemalloc
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from runjournal_server.backends.file import FileBackend
from runjournal_server.core.errors import (
    CorruptJournalError,
    RunNotFoundError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.core.records import StoredRecord
from tests.backends.test_file_backend import (
    RUN,
    assistant,
    created,
    fails,
    faults,
    file_bytes,
    flip,
    is_inert,
    journal_path,
    meta,
    note,
)

STREAM_PEAK_BYTES = 6_000_000
"""What one stream may hold: it reads 256 KiB at a time, whatever the run's size (12 MB in the test)."""
BIG_CHARS = 20_000
"""Batch records span several pages, so a crash can cut a batch inside any of them."""


class Crash(Exception):
    """The process dies here: no handler in the backend catches it, so nothing is rolled back."""


def crash_after(written: int) -> Any:
    """A ``pwrite`` that writes the first ``written`` bytes of a large write, then dies; small writes pass."""

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if len(data) < BIG_CHARS:
            return os.pwrite(fd, data, offset)
        os.pwrite(fd, data[:written], offset)
        raise Crash

    return pwrite


def big(seq: int) -> StoredRecord:
    return note(seq, f"batch record {seq} " + "b" * BIG_CHARS)


def lines(stored: list[StoredRecord]) -> list[bytes]:
    return [item.line for item in stored]


async def streamed(backend: FileBackend, from_seq: int = 1) -> list[bytes]:
    return [item.line async for item in backend.stream(RUN, from_seq)]


async def lock_free_views(backend: FileBackend) -> dict[str, object]:
    """What every lock-free reader says about the run."""
    ends = await backend.ends(RUN, is_inert)
    return {
        "load": lines(await backend.load(RUN)),
        "stream": await streamed(backend),
        "ends": (ends.meta.line, ends.last_significant.line, ends.last_seq),
        "tail": lines(await backend.tail(RUN, lambda stored: stored.kind == "assistant")),
        "meta": (await backend.meta(RUN)).line,
    }


def expected_views(acknowledged: list[StoredRecord]) -> dict[str, object]:
    significant = [item for item in acknowledged if not is_inert(item)][-1]
    start = max(i for i, item in enumerate(acknowledged) if item.kind == "assistant" or item.seq == 1)
    return {
        "load": lines(acknowledged),
        "stream": lines(acknowledged),
        "ends": (acknowledged[0].line, significant.line, len(acknowledged)),
        "tail": lines(acknowledged[start:]),
        "meta": acknowledged[0].line,
    }


# ---------------------------------------------------------------- atomic batches


BATCH = [big(3), big(4), big(5)]
BATCH_BYTES = len(file_bytes(*BATCH))


@pytest.mark.parametrize(
    "written",
    [1, BIG_CHARS // 2, len(BATCH[0].line) + 1, len(file_bytes(*BATCH[:2])) + 7, BATCH_BYTES - 1],
    ids=["first-byte", "inside-first", "one-whole-line", "inside-third", "all-but-the-last-newline"],
)
async def test_a_batch_cut_by_a_crash_is_left_out_by_every_reader_and_cut_away_by_open(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch, written: int
) -> None:
    acknowledged = [meta(), assistant(2)]
    journal = await created(file_backend, *acknowledged)
    faults(monkeypatch, pwrite=crash_after(written))
    with pytest.raises(Crash):
        await journal.append(BATCH)
    monkeypatch.undo()
    path = journal_path(data_dir)
    assert path.stat().st_size == len(file_bytes(*acknowledged)) + written, "the crash left part of the batch"

    # The dead writer still holds the lock here, exactly like a writer mid-batch.
    assert await lock_free_views(file_backend) == expected_views(acknowledged)
    await journal.close()
    assert await lock_free_views(file_backend) == expected_views(acknowledged)

    reopened, stored = await file_backend.open_journal(RUN)
    assert lines(stored) == lines(acknowledged)
    assert path.read_bytes() == file_bytes(*acknowledged), "open cuts the incomplete batch away"
    await reopened.append(BATCH)
    await reopened.append([note(6)])
    await reopened.close()
    assert lines(await file_backend.load(RUN)) == lines([*acknowledged, *BATCH, note(6)])


async def test_a_batch_whose_lines_all_landed_before_the_crash_is_whole(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = await created(file_backend, meta(), assistant(2))

    def crash_in_journal_fsync(fd: int) -> None:
        if os.fstat(fd).st_size > BIG_CHARS:
            raise Crash
        os.fsync(fd)

    faults(monkeypatch, fsync=crash_in_journal_fsync)
    with pytest.raises(Crash):
        await journal.append(BATCH)
    monkeypatch.undo()
    await journal.close()
    whole = [meta(), assistant(2), *BATCH]
    assert await lock_free_views(file_backend) == expected_views(whole)
    reopened, stored = await file_backend.open_journal(RUN)
    assert lines(stored) == lines(whole)
    await reopened.close()


async def test_a_stale_intent_of_a_complete_batch_means_nothing(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A power loss can bring back an intent whose clearing was not synced; its batch is whole, so it is ignored."""
    journal = await created(file_backend, meta(), assistant(2))
    lock = data_dir / f"{RUN}.lock"
    synced_intents: list[bytes] = []

    def spy_fsync(fd: int) -> None:
        os.fsync(fd)
        if os.fstat(fd).st_ino == os.stat(lock).st_ino:
            synced_intents.append(lock.read_bytes())

    faults(monkeypatch, fsync=spy_fsync)
    await journal.append(BATCH)
    await journal.append([note(6), claim_like(7)])
    monkeypatch.undo()
    await journal.close()
    assert len(synced_intents) == 2, "each batch of several lines syncs an intent first"

    whole = [meta(), assistant(2), *BATCH, note(6), claim_like(7)]
    for stale in synced_intents:
        lock.write_bytes(stale)
        assert await lock_free_views(file_backend) == expected_views(whole)
        reopened, stored = await file_backend.open_journal(RUN)
        assert lines(stored) == lines(whole)
        await reopened.close()


def claim_like(seq: int) -> StoredRecord:
    return note(seq, "second line of a small batch")


@pytest.mark.parametrize("failing", ["pwrite", "fsync"])
async def test_single_appends_after_a_failed_batch_survive_its_intent(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """A failed batch is rolled back and its intent cleared durably: later single appends at its seqs stay."""
    journal = await created(file_backend, meta(), assistant(2))
    real = getattr(os, failing)
    left = [1]

    def fail_on_journal(*args: Any) -> Any:
        if left[0] and os.fstat(args[0]).st_ino == os.stat(journal_path(data_dir)).st_ino:
            left[0] = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args)

    faults(monkeypatch, **{failing: fail_on_journal})
    with pytest.raises(StorageFullError):
        await journal.append(BATCH)
    monkeypatch.undo()
    assert not journal.poisoned
    await journal.append([big(3)])
    await journal.append([big(4)])
    await journal.close()  # a crash here loses nothing acknowledged
    acknowledged = [meta(), assistant(2), big(3), big(4)]
    assert await lock_free_views(file_backend) == expected_views(acknowledged)
    reopened, stored = await file_backend.open_journal(RUN)
    assert lines(stored) == lines(acknowledged)
    await reopened.close()


async def test_a_failed_rollback_of_a_batch_poisons_and_reopening_shows_no_part_of_it(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = await created(file_backend, meta(), assistant(2))
    faults(monkeypatch, pwrite=crash_after_error(len(BATCH[0].line) + 3), ftruncate=fails(errno.EIO, os.ftruncate))
    with pytest.raises(StorageUnavailableError, match="rolling back"):
        await journal.append(BATCH)
    monkeypatch.undo()
    assert journal.poisoned
    await journal.close()
    acknowledged = [meta(), assistant(2)]
    assert await lock_free_views(file_backend) == expected_views(acknowledged)
    reopened, stored = await file_backend.open_journal(RUN)
    assert lines(stored) == lines(acknowledged)
    await reopened.close()


def crash_after_error(written: int) -> Any:
    """A ``pwrite`` that writes part of a large write and then fails with ENOSPC (a full disk)."""

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if len(data) < BIG_CHARS:
            return os.pwrite(fd, data, offset)
        os.pwrite(fd, data[:written], offset)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return pwrite


# ---------------------------------------------------------------- creation batches


async def test_create_journal_stores_the_whole_creation_batch(file_backend: FileBackend, data_dir: Path) -> None:
    rest = [assistant(2), big(3), note(4)]
    journal = await file_backend.create_journal(RUN, meta(), rest)
    assert journal.last_seq == 4
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(), *rest)
    await journal.append([note(5)])
    await journal.close()
    assert lines(await file_backend.load(RUN)) == lines([meta(), *rest, note(5)])


async def test_create_journal_refuses_a_misnumbered_rest_and_writes_nothing(
    file_backend: FileBackend, data_dir: Path
) -> None:
    with pytest.raises(ValueError, match="expected seq 2"):
        await file_backend.create_journal(RUN, meta(), [note(3)])
    with pytest.raises(RunNotFoundError):
        await file_backend.load(RUN)


@pytest.mark.parametrize("written", [len(meta().line) + 1, len(meta().line) + BIG_CHARS // 2])
async def test_a_creation_batch_cut_by_a_crash_leaves_no_run(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch, written: int
) -> None:
    faults(monkeypatch, pwrite=crash_after(written))
    with pytest.raises(Crash):
        await file_backend.create_journal(RUN, meta(), [big(2), big(3)])
    monkeypatch.undo()
    assert journal_path(data_dir).stat().st_size == written, "the crash left the meta and part of the rest"
    for read in (
        file_backend.load(RUN),
        file_backend.meta(RUN),
        file_backend.ends(RUN, is_inert),
        streamed(file_backend),
    ):
        with pytest.raises(RunNotFoundError):
            await read
    await file_backend.close()  # the dead creator's lock goes with it

    journal = await file_backend.create_journal(RUN, meta(model="again"), [note(2)])
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(model="again"), note(2))
    await journal.close()
    assert lines(await file_backend.load(RUN)) == lines([meta(model="again"), note(2)])


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
async def test_a_failed_creation_batch_leaves_no_run(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    faults(monkeypatch, pwrite=crash_after_error_code(len(meta().line) + 5, code))
    with pytest.raises((StorageFullError, StorageUnavailableError)):
        await file_backend.create_journal(RUN, meta(), [big(2), big(3)])
    monkeypatch.undo()
    with pytest.raises(RunNotFoundError):
        await file_backend.load(RUN)
    # A plain creation afterwards is not mistaken for the leftover of the failed batch.
    journal = await file_backend.create_journal(RUN, meta())
    await journal.append([note(2)])
    await journal.close()
    assert lines(await file_backend.load(RUN)) == lines([meta(), note(2)])


def crash_after_error_code(written: int, code: int) -> Any:
    def pwrite(fd: int, data: Any, offset: int) -> int:
        if len(data) < BIG_CHARS:
            return os.pwrite(fd, data, offset)
        os.pwrite(fd, data[:written], offset)
        raise OSError(code, os.strerror(code))

    return pwrite


async def test_a_plain_creation_over_the_leftover_of_a_crashed_creation_batch_stands_alone(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults(monkeypatch, pwrite=crash_after(len(meta().line) + 9))
    with pytest.raises(Crash):
        await file_backend.create_journal(RUN, meta(), [big(2), big(3)])
    monkeypatch.undo()
    await file_backend.close()
    journal = await file_backend.create_journal(RUN, meta())
    await journal.append([big(2)])
    await journal.close()
    assert lines(await file_backend.load(RUN)) == lines([meta(), big(2)])
    assert (await file_backend.meta(RUN)).line == meta().line


# ---------------------------------------------------------------- stream


async def test_stream_yields_what_load_reads_from_any_seq(file_backend: FileBackend, data_dir: Path) -> None:
    stored = [meta(), assistant(2), *[note(seq, "n" * (seq * 997 % 5000)) for seq in range(3, 400)]]
    await (await created(file_backend, *stored)).close()
    loaded = lines(await file_backend.load(RUN))
    for from_seq in (0, 1, 2, 3, 200, 399, 400):
        assert await streamed(file_backend, from_seq) == loaded[max(from_seq, 1) - 1 :], from_seq
    assert await streamed(file_backend, 401) == []


async def test_stream_drops_a_torn_tail_and_reports_interior_damage_after_the_records_before_it(
    file_backend: FileBackend, data_dir: Path
) -> None:
    stored = [meta(), assistant(2), note(3, "third"), note(4)]
    await (await created(file_backend, *stored)).close()
    path = journal_path(data_dir)
    path.write_bytes(file_bytes(*stored) + note(5).line[:20])
    assert await streamed(file_backend) == lines(stored)
    path.write_bytes(file_bytes(*stored[:3]) + flip(note(4).line, b"crc") + b"\n")
    assert await streamed(file_backend) == lines(stored[:3]), "a bad final line is torn"

    path.write_bytes(flip(file_bytes(*stored), b"third"))
    seen: list[bytes] = []
    with pytest.raises(CorruptJournalError) as caught:
        async for item in file_backend.stream(RUN, 1):
            seen.append(item.line)
    assert caught.value.line == 3
    assert seen == lines(stored[:2])


async def test_stream_of_a_missing_or_empty_run_is_not_found(file_backend: FileBackend, data_dir: Path) -> None:
    with pytest.raises(RunNotFoundError):
        await streamed(file_backend)
    data_dir.mkdir(exist_ok=True)
    journal_path(data_dir).write_bytes(meta().line[:30])
    with pytest.raises(RunNotFoundError):
        await streamed(file_backend, 5)


async def test_stream_holds_a_bounded_chunk_whatever_the_run_size(file_backend: FileBackend, data_dir: Path) -> None:
    stored = [meta(), *[note(seq, f"{seq} " + "s" * 100_000) for seq in range(2, 122)]]
    await (await created(file_backend, *stored)).close()
    expected = lines(stored)
    size = journal_path(data_dir).stat().st_size
    assert size > 12_000_000

    tracemalloc.start()
    try:
        count = 0
        async for item in file_backend.stream(RUN, 1):
            assert item.line == expected[count]
            count += 1
            del item
        _, stream_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        loaded = await file_backend.load(RUN)
        _, load_peak = tracemalloc.get_traced_memory()
        del loaded
    finally:
        tracemalloc.stop()
    assert count == len(stored)
    assert load_peak > size, "the measure sees a whole read"
    # One chunk of lines, the records decoded from it and one line being assembled: a few MB at most.
    assert stream_peak < STREAM_PEAK_BYTES < size // 2, f"stream held {stream_peak} bytes of a {size}-byte run"


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_a_stream_stopped_early_closes_its_file(file_backend: FileBackend) -> None:
    stored = [meta(), *[note(seq, "c" * 50_000) for seq in range(2, 40)]]
    await (await created(file_backend, *stored)).close()
    before = open_fds()
    stream = file_backend.stream(RUN, 1)
    assert isinstance(stream, AsyncIterator)
    assert (await anext(stream)).seq == 1
    assert len(open_fds() - before) == 1, "the stream holds one descriptor"
    await stream.aclose()  # type: ignore[attr-defined]
    assert open_fds() == before


# ---------------------------------------------------------------- links and swapped files


def outside_journal(tmp_path: Path) -> tuple[Path, bytes]:
    outside = tmp_path / "outside.jsonl"
    data = file_bytes(meta(), note(2))
    outside.write_bytes(data)
    return outside, data


async def test_a_journal_path_that_is_a_symlink_is_refused_and_its_target_untouched(
    file_backend: FileBackend, data_dir: Path, tmp_path: Path
) -> None:
    outside, data = outside_journal(tmp_path)
    journal_path(data_dir).symlink_to(outside)
    for call in (
        file_backend.open_journal(RUN),
        file_backend.create_journal(RUN, meta()),
        file_backend.load(RUN),
        file_backend.meta(RUN),
        file_backend.ends(RUN, is_inert),
        streamed(file_backend),
    ):
        with pytest.raises(CorruptJournalError, match="symbolic link"):
            await call
    assert outside.read_bytes() == data


async def test_a_dangling_symlink_at_the_journal_path_creates_nothing_outside(
    file_backend: FileBackend, data_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "planted.jsonl"
    journal_path(data_dir).symlink_to(target)
    with pytest.raises(CorruptJournalError, match="symbolic link"):
        await file_backend.create_journal(RUN, meta())
    assert not target.exists()


@pytest.mark.parametrize("target_exists", [True, False])
async def test_a_lock_path_that_is_a_symlink_is_refused_and_its_target_untouched(
    file_backend: FileBackend, data_dir: Path, tmp_path: Path, target_exists: bool
) -> None:
    await (await created(file_backend, meta(), note(2))).close()
    target = tmp_path / "planted.lock"
    if target_exists:
        target.write_bytes(b"precious")
    lock = data_dir / f"{RUN}.lock"
    lock.unlink()
    lock.symlink_to(target)
    for call in (file_backend.open_journal(RUN), file_backend.create_journal(RUN, meta())):
        with pytest.raises(CorruptJournalError, match="symbolic link"):
            await call
    assert target.read_bytes() == b"precious" if target_exists else not target.exists()


async def test_a_journal_unlinked_while_held_refuses_the_append_and_poisons_the_handle(
    file_backend: FileBackend, data_dir: Path
) -> None:
    journal = await created(file_backend, meta(), note(2))
    journal_path(data_dir).unlink()
    with pytest.raises(StorageUnavailableError, match="replaced or removed"):
        await journal.append([note(3)])
    assert journal.poisoned
    assert journal.last_seq == 2, "the refused record was never acknowledged"
    with pytest.raises(StorageUnavailableError):
        await journal.append([note(3)])
    await journal.close()
    with pytest.raises(RunNotFoundError):
        await file_backend.open_journal(RUN)


@pytest.mark.parametrize("batch", [1, 3])
async def test_a_journal_replaced_while_held_refuses_the_append_and_reopens_from_the_new_file(
    file_backend: FileBackend, data_dir: Path, batch: int
) -> None:
    journal = await created(file_backend, meta(), note(2))
    replacement = data_dir / "replacement.tmp"
    replacement.write_bytes(file_bytes(meta(), note(2)))
    os.replace(replacement, journal_path(data_dir))
    with pytest.raises(StorageUnavailableError, match="replaced or removed"):
        await journal.append([note(seq) for seq in range(3, 3 + batch)])
    assert journal.poisoned
    await journal.close()
    reopened, stored = await file_backend.open_journal(RUN)
    assert lines(stored) == lines([meta(), note(2)]), "what the path holds, nothing the old handle wrote"
    await reopened.append([note(3)])
    await reopened.close()
    assert lines(await file_backend.load(RUN)) == lines([meta(), note(2), note(3)])


async def test_a_stream_cancelled_while_it_reads_closes_its_file_once_the_read_is_done(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread still reads on the descriptor after the cancel: closing it then could read another file's bytes."""
    executor = ThreadPoolExecutor(max_workers=1)
    backend = FileBackend(data_dir, executor=executor)
    await backend.start()
    stored = [meta(), *[note(seq, "c" * 50_000) for seq in range(2, 40)]]
    await (await created(backend, *stored)).close()
    armed, entered, release = threading.Event(), threading.Event(), threading.Event()

    def held_pread(fd: int, size: int, offset: int) -> bytes:
        if armed.is_set():
            entered.set()
            release.wait()
        return os.pread(fd, size, offset)

    before = open_fds()
    stream = backend.stream(RUN, 1)
    assert (await anext(stream)).seq == 1
    faults(monkeypatch, pread=held_pread)
    armed.set()

    async def drain() -> None:
        async for _ in stream:
            pass

    loop = asyncio.get_running_loop()
    task = asyncio.create_task(drain())
    await loop.run_in_executor(None, entered.wait)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(open_fds() - before) == 1, "the read in progress keeps its descriptor"
    armed.clear()
    release.set()
    await loop.run_in_executor(executor, lambda: None)  # one worker, in order: the read is done
    assert open_fds() == before
    await backend.close()
    executor.shutdown()


async def test_a_stream_read_error_is_storage_unavailable(
    file_backend: FileBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = [meta(), *[note(seq, "e" * 50_000) for seq in range(2, 20)]]
    await (await created(file_backend, *stored)).close()
    stream = file_backend.stream(RUN, 1)
    assert (await anext(stream)).seq == 1
    faults(monkeypatch, pread=fails(errno.EIO, os.pread))
    with pytest.raises(StorageUnavailableError, match="reading the journal"):
        async for _ in stream:
            pass

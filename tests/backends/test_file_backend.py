"""The file backend on a real directory: durability, torn tails, corruption, locks, failures.

Faults are injected by replacing ``os`` as the backend module sees it (never
the process-wide ``os``), or for real with RLIMIT_FSIZE in a child process.
Cross-process behaviour uses real child processes on the venv's interpreter.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from runjournal_server.backends.file import CHUNK_BYTES, FileBackend, FileJournal
from runjournal_server.core.errors import (
    CorruptJournalError,
    InvalidArgumentError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
    StorageFullError,
    StorageUnavailableError,
)
from runjournal_server.core.records import StoredRecord
from tests.file_backend_os import patch_os
from tests.support import builders as b
from tests.support.encoded import assistant, claim, meta, note

RUN = b.RUN_ID
"""The run ``meta()`` is the meta of."""

# ---------------------------------------------------------------- helpers


def file_bytes(*stored: StoredRecord) -> bytes:
    return b"".join(item.line + b"\n" for item in stored)


def is_inert(stored: StoredRecord) -> bool:
    return stored.kind in ("claim", "note")


def three_records() -> list[StoredRecord]:
    # The last one has multi-byte characters, so every cut inside it is tried,
    # including cuts inside a character.
    return [meta(), assistant(2), note(3, "torn \u00e9\u4e2d\U0001f600 tail")]


def journal_path(data_dir: Path, run_id: str = RUN) -> Path:
    return data_dir / f"{run_id}.jsonl"


def flip(data: bytes, needle: bytes) -> bytes:
    """``data`` with the first byte of ``needle`` changed: a bit flip the checksum must catch."""
    at = data.index(needle)
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


class FaultyOs:
    """``os`` as the backend module sees it, with chosen functions replaced."""

    def __init__(self, **replacements: Callable[..., Any]) -> None:
        self._replacements = replacements

    def __getattr__(self, name: str) -> Any:
        return self._replacements.get(name) or getattr(os, name)


def fails(code: int, real: Callable[..., Any], times: int = 1_000_000) -> Callable[..., Any]:
    """A function that raises ``OSError(code)`` on its first ``times`` calls, then calls ``real``."""
    left = [times]

    def call(*args: Any) -> Any:
        if left[0] > 0:
            left[0] -= 1
            raise OSError(code, os.strerror(code))
        return real(*args)

    return call


def faults(monkeypatch: pytest.MonkeyPatch, **replacements: Callable[..., Any]) -> None:
    patch_os(monkeypatch, FaultyOs(**replacements))


async def created(backend: FileBackend, *stored: StoredRecord) -> FileJournal:
    journal = await backend.create_journal(RUN, stored[0])
    if len(stored) > 1:
        await journal.append(stored[1:])
    return journal


def write_file(data_dir: Path, data: bytes, run_id: str = RUN) -> None:
    journal_path(data_dir, run_id).write_bytes(data)


# ---------------------------------------------------------------- round trip


async def test_the_journal_file_is_each_stored_line_and_a_newline(file_backend: FileBackend, data_dir: Path) -> None:
    stored = [meta(), assistant(2), note(3), claim(4)]
    journal = await created(file_backend, stored[0])
    await journal.append(stored[1:3])
    await journal.append(stored[3:])
    assert journal_path(data_dir).read_bytes() == file_bytes(*stored)
    await journal.close()
    reopened, _ = await file_backend.open_journal(RUN)
    assert (await reopened.stored_line(3)).line == stored[2].line, "read from the offsets the open found"


async def test_stored_line_is_read_from_disk(file_backend: FileBackend, data_dir: Path) -> None:
    journal = await created(file_backend, meta(), note(2, "abc"), note(3))
    path = journal_path(data_dir)
    path.write_bytes(flip(path.read_bytes(), b"abc"))
    assert (await journal.stored_line(3)).line == note(3).line
    with pytest.raises(CorruptJournalError) as caught:
        await journal.stored_line(2)
    assert caught.value.line == 2
    with pytest.raises(ValueError, match="outside"):
        await journal.stored_line(4)


# ---------------------------------------------------------------- torn tails


async def test_a_cut_at_every_offset_of_the_last_line_is_a_torn_tail(file_backend: FileBackend, data_dir: Path) -> None:
    stored = three_records()
    whole = file_bytes(*stored)
    good_end = len(file_bytes(*stored[:2]))
    path = journal_path(data_dir)
    for cut in range(good_end, len(whole)):
        path.write_bytes(whole[:cut])
        assert [item.line for item in await file_backend.load(RUN)] == [item.line for item in stored[:2]], cut
        assert path.stat().st_size == cut, "load must not repair"
        ends = await file_backend.ends(RUN, is_inert)
        assert (ends.last_seq, ends.last_significant.seq) == (2, 2), cut

        journal, records = await file_backend.open_journal(RUN)
        assert len(records) == 2
        assert path.stat().st_size == good_end, cut
        await journal.append([stored[2]])
        await journal.close()
        assert path.read_bytes() == whole, cut


@pytest.mark.parametrize("needle", [b"torn", b"crc", b'"seq"'])
async def test_a_complete_final_line_with_a_bad_checksum_is_a_torn_tail(
    file_backend: FileBackend, data_dir: Path, needle: bytes
) -> None:
    stored = three_records()
    good_end = len(file_bytes(*stored[:2]))
    whole = file_bytes(*stored)
    path = journal_path(data_dir)
    path.write_bytes(whole[:good_end] + flip(whole[good_end:], needle))

    assert len(await file_backend.load(RUN)) == 2
    assert (await file_backend.ends(RUN, is_inert)).last_seq == 2
    journal, records = await file_backend.open_journal(RUN)
    assert len(records) == 2
    assert path.stat().st_size == good_end
    await journal.close()


# ---------------------------------------------------------------- corruption


async def _load(backend: FileBackend) -> object:
    return await backend.load(RUN)


async def _open(backend: FileBackend) -> object:
    journal, records = await backend.open_journal(RUN)
    await journal.close()
    return records


async def _ends(backend: FileBackend) -> object:
    return await backend.ends(RUN, is_inert)


READERS = pytest.mark.parametrize("read", [_load, _open, _ends], ids=["load", "open", "ends"])


@READERS
@pytest.mark.parametrize(("damaged_line", "needle"), [(1, b"hello"), (2, b"turn 1"), (3, b"third")])
async def test_a_flipped_byte_in_an_interior_line_is_corruption_at_that_line(
    file_backend: FileBackend,
    data_dir: Path,
    read: Callable[[FileBackend], Any],
    damaged_line: int,
    needle: bytes,
) -> None:
    path = journal_path(data_dir)
    original = flip(file_bytes(meta(), assistant(2), note(3, "third"), claim(4), note(5)), needle)
    path.write_bytes(original)

    with pytest.raises(CorruptJournalError) as caught:
        await read(file_backend)
    assert caught.value.line == damaged_line
    assert path.read_bytes() == original, "a refused journal is left as it was"
    with pytest.raises(CorruptJournalError):
        await read(file_backend)  # and the refusal released the lock


@READERS
@pytest.mark.parametrize(
    ("seqs", "bad_line"),
    [([1, 2, 4, 5], 3), ([1, 2, 2, 3], 3), ([1, 3, 4], 2), ([2, 3], 1)],
)
async def test_a_seq_out_of_place_is_corruption_at_its_line(
    file_backend: FileBackend,
    data_dir: Path,
    read: Callable[[FileBackend], Any],
    seqs: list[int],
    bad_line: int,
) -> None:
    first = meta() if seqs[0] == 1 else note(seqs[0])
    write_file(data_dir, file_bytes(first, *(note(seq) for seq in seqs[1:])))
    with pytest.raises(CorruptJournalError) as caught:
        await read(file_backend)
    assert caught.value.line == bad_line


@READERS
async def test_a_bad_line_followed_by_a_fragment_is_corruption_not_a_torn_tail(
    file_backend: FileBackend, data_dir: Path, read: Callable[[FileBackend], Any]
) -> None:
    write_file(data_dir, flip(file_bytes(meta(), note(2, "bad")), b"bad") + note(3).line[:10])
    with pytest.raises(CorruptJournalError) as caught:
        await read(file_backend)
    assert caught.value.line == 2


# ---------------------------------------------------------------- absent journals


LEFTOVERS = pytest.mark.parametrize(
    "leftover",
    [b"", b'{"crc":"', meta().line, flip(meta().line, b"hello") + b"\n", meta(model="m" * 500).line[:-1]],
    ids=["empty", "fragment", "meta-without-newline", "bad-only-line", "fragment-longer-than-new-meta"],
)


@LEFTOVERS
async def test_a_file_without_a_complete_record_counts_as_absent(
    file_backend: FileBackend, data_dir: Path, leftover: bytes
) -> None:
    write_file(data_dir, leftover)
    with pytest.raises(RunNotFoundError):
        await file_backend.load(RUN)
    with pytest.raises(RunNotFoundError):
        await file_backend.open_journal(RUN)
    with pytest.raises(RunNotFoundError):
        await file_backend.ends(RUN, is_inert)
    assert journal_path(data_dir).read_bytes() == leftover, "reading an absent run changes nothing"


@LEFTOVERS
async def test_creation_succeeds_over_a_leftover_without_a_complete_record(
    file_backend: FileBackend, data_dir: Path, leftover: bytes
) -> None:
    write_file(data_dir, leftover)
    fresh = meta(model="fresh")
    journal = await file_backend.create_journal(RUN, fresh)
    assert journal.last_seq == 1
    assert journal_path(data_dir).read_bytes() == file_bytes(fresh)
    await journal.append([note(2)])
    assert journal_path(data_dir).read_bytes() == file_bytes(fresh, note(2))


# ---------------------------------------------------------------- creation


async def test_a_refused_creation_leaves_the_file_alone_and_releases_the_lock(
    file_backend: FileBackend, data_dir: Path
) -> None:
    journal = await created(file_backend, meta(), note(2))
    await journal.close()
    with pytest.raises(RunExistsError):
        await file_backend.create_journal(RUN, meta(model="other"))
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(), note(2))
    reopened, _ = await file_backend.open_journal(RUN)  # the refusal released the lock
    await reopened.close()


async def test_creation_refuses_over_a_corrupt_journal(file_backend: FileBackend, data_dir: Path) -> None:
    damaged = flip(file_bytes(meta(), note(2, "abc"), note(3)), b"abc")
    write_file(data_dir, damaged)
    with pytest.raises(CorruptJournalError):
        await file_backend.create_journal(RUN, meta())
    assert journal_path(data_dir).read_bytes() == damaged


CREATOR = f"""
import asyncio, sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})  # the repository root: ``tests`` is importable
from runjournal_server.backends.file import FileBackend
from runjournal_server.core.errors import RunExistsError, RunLockedError
from tests.support import encoded

async def main() -> None:
    data_dir, run_id, model = sys.argv[1:4]
    meta = encoded.meta(run_id, model=model)  # the bytes the parent's meta(model=...) has
    backend = FileBackend(Path(data_dir))
    await backend.start()
    sys.stdin.readline()  # all creators start together
    try:
        await backend.create_journal(run_id, meta)
        print("created", flush=True)
    except RunExistsError:
        print("exists", flush=True)
    except RunLockedError:
        print("locked", flush=True)
    await backend.close()

asyncio.run(main())
"""


async def test_concurrent_creations_in_several_processes_have_one_winner(
    file_backend: FileBackend, data_dir: Path
) -> None:
    models = [f"m{index}" for index in range(4)]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CREATOR, str(data_dir), RUN, model],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for model in models
    ]
    for child in children:
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.flush()
    outcomes = []
    for child in children:
        out, err = child.communicate()
        assert child.returncode == 0, err.decode()
        outcomes.append(out.decode().strip())

    assert outcomes.count("created") == 1, outcomes
    assert set(outcomes) <= {"created", "exists", "locked"}, outcomes
    winner = models[outcomes.index("created")]
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(model=winner))


async def test_creation_fsyncs_the_file_then_its_directory(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[bool] = []

    def spy_fsync(fd: int) -> None:
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        os.fsync(fd)

    faults(monkeypatch, fsync=spy_fsync)
    journal = await file_backend.create_journal(RUN, meta())
    assert synced == [False, True]
    await journal.append([note(2)])
    assert synced == [False, True, False], "later appends fsync the file only"


@pytest.mark.parametrize(("code", "error"), [(errno.ENOSPC, StorageFullError), (errno.EIO, StorageUnavailableError)])
async def test_a_failed_creation_leaves_no_meta_and_no_lock(
    file_backend: FileBackend,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    error: type[Exception],
) -> None:
    faults(monkeypatch, fsync=fails(code, os.fsync, times=1))
    with pytest.raises(error):
        await file_backend.create_journal(RUN, meta())
    assert not journal_path(data_dir).exists(), "a meta nobody acknowledged must not be readable"
    with pytest.raises(RunNotFoundError):
        await file_backend.load(RUN)
    journal = await file_backend.create_journal(RUN, meta())
    assert journal_path(data_dir).read_bytes() == file_bytes(meta())
    await journal.close()


# ---------------------------------------------------------------- locking


async def test_a_second_open_in_the_same_process_is_refused(file_backend: FileBackend) -> None:
    journal = await created(file_backend, meta())
    with pytest.raises(RunLockedError):
        await file_backend.open_journal(RUN)
    with pytest.raises(RunLockedError):
        await file_backend.create_journal(RUN, meta())
    await journal.close()
    reopened, _ = await file_backend.open_journal(RUN)
    await reopened.close()


HOLDER = """
import asyncio, sys
from pathlib import Path
from runjournal_server.backends.file import FileBackend

async def main() -> None:
    backend = FileBackend(Path(sys.argv[1]))
    await backend.start()
    journal, records = await backend.open_journal(sys.argv[2])
    print("held", len(records), flush=True)
    sys.stdin.readline()  # hold the run until killed

asyncio.run(main())
"""


async def test_a_run_held_by_another_process_is_refused_at_once_and_freed_when_it_dies(
    file_backend: FileBackend, data_dir: Path
) -> None:
    journal = await created(file_backend, meta(), note(2))
    await journal.close()
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(data_dir), RUN, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        assert await child.stdout.readline() == b"held 2\n"
        with pytest.raises(RunLockedError):
            await file_backend.open_journal(RUN)
        with pytest.raises(RunLockedError):
            await file_backend.create_journal(RUN, meta())
        assert len(await file_backend.load(RUN)) == 2, "reading takes no lock"
        assert (await file_backend.ends(RUN, is_inert)).last_seq == 2
    finally:
        child.kill()
        await child.wait()

    reopened, records = await file_backend.open_journal(RUN)
    assert len(records) == 2
    await reopened.close()


async def test_closing_the_backend_releases_every_lock(data_dir: Path) -> None:
    first = FileBackend(data_dir)
    await first.start()
    journals = [await first.create_journal(run_id, meta(run_id)) for run_id in ("a", "b")]
    await first.close()
    for journal in journals:
        with pytest.raises(StorageUnavailableError, match="closed"):
            await journal.append([note(2)])
        await journal.close()  # idempotent

    second = FileBackend(data_dir)
    await second.start()
    for run_id in ("a", "b"):
        await second.open_journal(run_id)
    await second.close()


# ---------------------------------------------------------------- write failures


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (errno.ENOSPC, StorageFullError),
        (errno.EDQUOT, StorageFullError),
        (errno.EFBIG, StorageFullError),
        (errno.EIO, StorageUnavailableError),
    ],
)
@pytest.mark.parametrize("failing", ["pwrite", "fsync"])
async def test_a_failed_append_is_rolled_back_and_the_next_append_works(
    file_backend: FileBackend,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    code: int,
    error: type[Exception],
    failing: str,
) -> None:
    journal = await created(file_backend, meta(), note(2))
    faults(monkeypatch, **{failing: fails(code, getattr(os, failing), times=1)})

    with pytest.raises(error):
        await journal.append([note(3), note(4)])
    assert journal.last_seq == 2
    assert not journal.poisoned
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(), note(2))

    await journal.append([note(3), note(4)])
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(), note(2), note(3), note(4))


async def test_a_short_write_then_an_error_is_rolled_back(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = await created(file_backend, meta())
    calls: list[int] = []

    def half_then_full(fd: int, data: memoryview, offset: int) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return os.pwrite(fd, data[: len(data) // 2], offset)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    faults(monkeypatch, pwrite=half_then_full)
    with pytest.raises(StorageFullError):
        await journal.append([note(2), note(3)])
    assert len(calls) == 2
    assert journal_path(data_dir).read_bytes() == file_bytes(meta())

    monkeypatch.undo()
    await journal.append([note(2), note(3)])
    assert [item.seq for item in await file_backend.load(RUN)] == [1, 2, 3]


async def test_short_writes_are_completed_not_lost(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = await created(file_backend, meta())
    faults(monkeypatch, pwrite=lambda fd, data, offset: os.pwrite(fd, data[:7], offset))
    await journal.append([note(2, "a longer note than seven bytes"), note(3)])
    assert journal.last_seq == 3
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(), note(2, "a longer note than seven bytes"), note(3))


async def test_a_write_that_makes_no_progress_is_a_failure(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = await created(file_backend, meta())
    faults(monkeypatch, pwrite=lambda fd, data, offset: 0)
    with pytest.raises(StorageUnavailableError):
        await journal.append([note(2)])
    assert journal.last_seq == 1


async def test_a_failed_rollback_poisons_the_journal_until_it_is_reopened(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    acknowledged = [meta(), note(2)]
    journal = await created(file_backend, *acknowledged)
    faults(
        monkeypatch,
        fsync=fails(errno.ENOSPC, os.fsync, times=1),
        ftruncate=fails(errno.EIO, os.ftruncate),
    )
    with pytest.raises(StorageUnavailableError, match="rolling back"):
        await journal.append([note(3)])
    assert journal.poisoned
    assert journal.last_seq == 2

    monkeypatch.undo()
    with pytest.raises(StorageUnavailableError, match="opened again"):
        await journal.append([note(3)])
    with pytest.raises(StorageUnavailableError, match="opened again"):
        await journal.stored_line(1)
    await journal.close()

    # Nothing acknowledged is lost. The unacknowledged record stayed on disk
    # (it could not be cut away); a retry of it is a byte-identical duplicate.
    reopened, records = await file_backend.open_journal(RUN)
    assert [item.line for item in records] == [item.line for item in [*acknowledged, note(3)]]
    await reopened.append([note(4)])
    await reopened.close()


FSIZE_CHILD = """
import asyncio, json, os, resource, sys
from pathlib import Path
from runjournal_server.backends.file import FileBackend
from runjournal_server.core.errors import StorageFullError
from runjournal_server.core.records import decode

async def main() -> None:
    data_dir, run_id = sys.argv[1:3]
    batch = [decode(bytes.fromhex(line)) for line in json.loads(sys.stdin.read())]
    backend = FileBackend(Path(data_dir))
    await backend.start()
    journal, _ = await backend.open_journal(run_id)
    path = Path(data_dir) / f"{run_id}.jsonl"
    before = path.stat().st_size
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (before + 100, hard))
    try:
        await journal.append(batch)
        outcome = "appended"
    except StorageFullError:
        outcome = "full"
    after_failure = path.stat().st_size
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    await journal.append(batch)
    print(json.dumps([outcome, before, after_failure, journal.last_seq]), flush=True)
    await backend.close()

asyncio.run(main())
"""


async def test_a_real_file_size_limit_gives_storage_full_and_a_clean_file(
    file_backend: FileBackend, data_dir: Path
) -> None:
    journal = await created(file_backend, meta(), note(2))
    await journal.close()
    batch = [note(3, "y" * 300), note(4, "z" * 300)]
    result = subprocess.run(
        [sys.executable, "-c", FSIZE_CHILD, str(data_dir), RUN],
        input=json.dumps([item.line.hex() for item in batch]).encode(),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    outcome, before, after_failure, last_seq = json.loads(result.stdout)
    assert outcome == "full"
    assert after_failure == before, "the partial write past the limit was cut away"
    assert last_seq == 4
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(), note(2), *batch)


# ---------------------------------------------------------------- cancellation


class GatedExecutor(ThreadPoolExecutor):
    """One worker; the job submitted after ``gate_next`` waits until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.entered = threading.Event()
        self.release = threading.Event()
        self._gate_next = False

    def gate_next(self) -> None:
        self._gate_next = True

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if self._gate_next:
            self._gate_next = False
            inner = fn

            def gated(*a: Any, **k: Any) -> Any:
                self.entered.set()
                self.release.wait()
                return inner(*a, **k)

            fn = gated
        return super().submit(fn, *args, **kwargs)

    async def cancel_while_running(self, task: asyncio.Task[Any]) -> None:
        """Cancel ``task`` while its job runs, let the job finish, and wait for what it scheduled."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.entered.wait)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        self.release.set()
        # The worker runs jobs in order, so once this no-op is done the gated
        # job is too, and its completion callbacks have been scheduled first.
        await loop.run_in_executor(self, lambda: None)


async def test_a_cancelled_open_does_not_leave_the_run_locked(data_dir: Path) -> None:
    executor = GatedExecutor()
    backend = FileBackend(data_dir, executor=executor)
    await backend.start()
    await (await backend.create_journal(RUN, meta())).close()

    executor.gate_next()
    await executor.cancel_while_running(asyncio.create_task(backend.open_journal(RUN)))

    _, records = await backend.open_journal(RUN)
    assert len(records) == 1
    await backend.close()
    executor.shutdown()


async def test_a_cancelled_append_that_completes_is_counted(data_dir: Path) -> None:
    executor = GatedExecutor()
    backend = FileBackend(data_dir, executor=executor)
    await backend.start()
    journal = await backend.create_journal(RUN, meta())

    executor.gate_next()
    await executor.cancel_while_running(asyncio.create_task(journal.append([note(2)])))

    assert journal.last_seq == 2, "the record is on disk, so the next append must not reuse its seq"
    await journal.append([note(3)])
    assert journal_path(data_dir).read_bytes() == file_bytes(meta(), note(2), note(3))
    await backend.close()
    executor.shutdown()


# ---------------------------------------------------------------- ends


def long_run(tail_inert: int, total: int = 5_000) -> list[StoredRecord]:
    """A meta, assistant turns, then ``tail_inert`` claims and notes."""
    significant = total - tail_inert
    stored = [meta()]
    stored += [assistant(seq, "a" * 150) for seq in range(2, significant + 1)]
    stored += [claim(seq) if seq % 2 else note(seq) for seq in range(significant + 1, total + 1)]
    return stored


@pytest.fixture(scope="module")
def long_runs() -> dict[int, list[StoredRecord]]:
    return {tail: long_run(tail) for tail in (1_000, 5)}


@pytest.mark.parametrize("tail_inert", [1_000, 5])
async def test_ends_finds_the_last_significant_record_of_a_long_run_reading_only_its_ends(
    file_backend: FileBackend,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    long_runs: dict[int, list[StoredRecord]],
    tail_inert: int,
) -> None:
    stored = long_runs[tail_inert]
    await (await created(file_backend, *stored)).close()
    size = journal_path(data_dir).stat().st_size
    read: list[int] = []

    def counting_pread(fd: int, length: int, offset: int) -> bytes:
        data = os.pread(fd, length, offset)
        read.append(len(data))
        return data

    faults(monkeypatch, pread=counting_pread)
    ends = await file_backend.ends(RUN, is_inert)

    assert ends.meta.line == stored[0].line
    assert ends.last_seq == 5_000
    assert ends.last_significant.line == stored[-tail_inert - 1].line
    tail_bytes = len(file_bytes(*stored[-tail_inert - 1 :]))
    assert sum(read) <= CHUNK_BYTES + tail_bytes + 2 * CHUNK_BYTES, (sum(read), size)
    assert sum(read) < size // 2


async def test_ends_of_a_meta_followed_by_a_torn_fragment_is_the_meta(
    file_backend: FileBackend, data_dir: Path
) -> None:
    write_file(data_dir, file_bytes(meta()) + b'{"crc"')
    ends = await file_backend.ends(RUN, is_inert)
    assert (ends.last_significant.seq, ends.last_seq) == (1, 1)


async def test_ends_handles_lines_longer_than_its_read_chunk(file_backend: FileBackend) -> None:
    big = "b" * (3 * CHUNK_BYTES)
    stored = [meta(), assistant(2, big), note(3, big)]
    await (await created(file_backend, *stored)).close()
    ends = await file_backend.ends(RUN, is_inert)
    assert (ends.last_significant.line, ends.last_seq) == (stored[1].line, 3)


async def test_ends_starts_over_when_a_writer_cuts_the_file_under_it(
    file_backend: FileBackend, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = file_bytes(meta(), assistant(2), note(3))
    path = journal_path(data_dir)
    path.write_bytes(good + b'{"crc":"torn')
    cut = [False]

    def cut_then_pread(fd: int, length: int, offset: int) -> bytes:
        if not cut[0]:
            cut[0] = True
            os.truncate(path, len(good))  # what open_journal's repair does in another process
        return os.pread(fd, length, offset)

    faults(monkeypatch, pread=cut_then_pread)
    ends = await file_backend.ends(RUN, is_inert)
    assert cut[0]
    assert (ends.last_significant.seq, ends.last_seq) == (2, 3)


# ---------------------------------------------------------------- directory and ids


async def test_list_run_ids_names_journal_files_only(file_backend: FileBackend, data_dir: Path) -> None:
    for run_id in ("a", "b-2"):
        await (await file_backend.create_journal(run_id, meta(run_id))).close()
    write_file(data_dir, b"", run_id="leftover")
    for name in ("notes.txt", ".jsonl", "x.y.jsonl", "c.lock"):
        (data_dir / name).write_bytes(b"")
    (data_dir / "d.jsonl").mkdir()
    assert sorted(await file_backend.list_run_ids()) == ["a", "b-2", "leftover"]


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "", ".hidden", "a.b", "x" * 129, "-x"])
async def test_an_invalid_run_id_never_becomes_a_path(file_backend: FileBackend, tmp_path: Path, run_id: str) -> None:
    for call in (
        file_backend.load(run_id),
        file_backend.open_journal(run_id),
        file_backend.ends(run_id, is_inert),
        file_backend.create_journal(run_id, meta()),
    ):
        with pytest.raises(InvalidArgumentError):
            await call
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["data"]


async def test_start_creates_the_data_directory(tmp_path: Path) -> None:
    backend = FileBackend(tmp_path / "deep" / "data")
    await backend.start()
    assert (tmp_path / "deep" / "data").is_dir()
    assert list((tmp_path / "deep" / "data").iterdir()) == [], "the write probe is removed"


async def test_start_refuses_a_data_directory_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_bytes(b"")
    with pytest.raises(StorageUnavailableError, match="not a writable directory"):
        await FileBackend(tmp_path / "data").start()


async def test_open_reuses_known_records_whose_bytes_are_unchanged(file_backend: FileBackend) -> None:
    journal = await created(file_backend, meta(), note(2))
    await journal.close()
    known = await file_backend.load(RUN)
    reopened, stored = await file_backend.open_journal(RUN, known)
    assert all(a is b for a, b in zip(stored, known, strict=True))
    await reopened.append([note(3)])
    await reopened.close()
    reopened, stored = await file_backend.open_journal(RUN, known)
    assert [s.line for s in stored] == [meta().line, note(2).line, note(3).line]
    assert stored[0] is known[0] and stored[1] is known[1]  # only the new line was decoded
    await reopened.close()


async def test_open_decodes_a_line_that_differs_from_a_known_one(file_backend: FileBackend, data_dir: Path) -> None:
    journal = await created(file_backend, meta(), note(2))
    await journal.close()
    stale = [meta(), note(2, "what an earlier read saw")]
    _, stored = await file_backend.open_journal(RUN, stale)
    assert stored[0] is stale[0] and stored[1] is not stale[1]
    assert stored[1].line == note(2).line

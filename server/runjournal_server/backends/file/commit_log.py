"""The shared commit log: one fsync makes a whole group of appends, across many runs, durable.

With one journal file per run, making N appends to N runs durable takes N
fsyncs, whatever the batching: each file's pages and size are synced on their
own. So every server process also writes each group of appends, once, to its
own log file under ``<data_dir>/.commit-log/``, and syncs that one file: an
append is acknowledged when its log entry is durable. The per-run journal
still receives the very same bytes at the same offset (written, not synced),
so readers, other servers and every tool keep reading plain journals; the log
only restores what a power cut took from them. See docs/file-backend.md.

Format: a header block (magic, generation, checksum) then entries, each
``magic, generation, payload length, crc32`` and a payload naming the run, a
digest of its meta line (so a deleted and re-created run is never written
into), the journal offset and the lines. Reading stops at the first entry
that is torn, damaged or of another generation. A log is rewound (new
generation in the header, entries overwritten in place, so its syncs never
change the file's size) only after every journal it covers was fsynced.

Recovery (``recover``) runs when a backend starts, under ``recovery.lock``:
every log whose flock is free belongs to a dead process. Its entries are
replayed into journals that lack them or hold damage there (never over valid
lines, which a later writer may have put there), each journal it names is
fsynced, and the log is removed. A log being created is created under the
same lock, so a recovering process never takes a new, still unlocked log for
an orphan.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runjournal_server.backends.file import files
from runjournal_server.core import records
from runjournal_server.core.records import RecordDecodeError

log = logging.getLogger(__name__)

LOG_DIR = ".commit-log"
"""Starts with a dot: never a run id, and skipped by the journal listing."""
LOG_SUFFIX = ".log"
RECOVERY_LOCK = "recovery.lock"
HEADER_BYTES = 4096
REWIND_BYTES = 32 * 1024 * 1024
"""Past this offset the next group first checkpoints (fsyncs the journals written since) and rewinds."""
_HEADER = struct.Struct("<8sQI")
_HEADER_MAGIC = b"rjclog01"
_ENTRY = struct.Struct("<IQII")
"""magic, generation, payload length, crc32 of generation + payload."""
_ENTRY_MAGIC = 0x524A4531
_PAYLOAD = struct.Struct("<H8sQ")
"""run id length, meta digest, journal offset; then the run id and the lines."""


def meta_digest(meta_line: bytes) -> bytes:
    """What ties an entry to one incarnation of a run: its meta line (created time included)."""
    return hashlib.blake2b(meta_line, digest_size=8).digest()


@dataclass(frozen=True)
class Entry:
    """Lines written to one journal at ``offset``."""

    run_id: str
    meta: bytes
    offset: int
    data: bytes


def encode_entry(generation: int, entry: Entry) -> bytes:
    name = entry.run_id.encode()
    payload = _PAYLOAD.pack(len(name), entry.meta, entry.offset) + name + entry.data
    crc = zlib.crc32(payload, zlib.crc32(generation.to_bytes(8, "little")))
    return _ENTRY.pack(_ENTRY_MAGIC, generation, len(payload), crc) + payload


def _header(generation: int) -> bytes:
    body = _HEADER.pack(_HEADER_MAGIC, generation, 0)
    return _HEADER.pack(_HEADER_MAGIC, generation, zlib.crc32(body)).ljust(HEADER_BYTES, b"\0")


def read_entries(data: bytes) -> Iterator[Entry]:
    """The valid entries of a log's bytes, in order: up to the first torn, damaged or stale one."""
    if len(data) < HEADER_BYTES:
        return
    magic, generation, crc = _HEADER.unpack_from(data, 0)
    if magic != _HEADER_MAGIC or crc != zlib.crc32(_HEADER.pack(magic, generation, 0)):
        return  # torn while created or rewound: in both cases nothing in it was needed
    seed = zlib.crc32(generation.to_bytes(8, "little"))
    at = HEADER_BYTES
    while at + _ENTRY.size <= len(data):
        magic, entry_generation, length, crc = _ENTRY.unpack_from(data, at)
        payload = data[at + _ENTRY.size : at + _ENTRY.size + length]
        if magic != _ENTRY_MAGIC or entry_generation != generation or len(payload) != length:
            return
        if zlib.crc32(payload, seed) != crc or length < _PAYLOAD.size:
            return
        name_length, meta, offset = _PAYLOAD.unpack_from(payload, 0)
        name = payload[_PAYLOAD.size : _PAYLOAD.size + name_length]
        yield Entry(name.decode(), meta, offset, payload[_PAYLOAD.size + name_length :])
        at += _ENTRY.size + length


class CommitLog:
    """This process's log file, held under its flock; written only by the group committer's drain."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.generation = int.from_bytes(os.urandom(8), "little") >> 1
        self.end = HEADER_BYTES
        self.path = directory / f"{time.time_ns():020d}-{os.getpid()}{LOG_SUFFIX}"
        self.fd = -1

    @classmethod
    def create(cls, data_dir: Path) -> CommitLog:
        """Make and lock a fresh log, durably named, under the recovery lock (see the module docstring)."""
        directory = data_dir / LOG_DIR
        made = not directory.exists()
        directory.mkdir(exist_ok=True)
        if made:
            files.fsync_dir(data_dir)
        commit_log = cls(directory)
        with _recovery_lock(directory):
            fd = os.open(commit_log.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, files.FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                files.write_all(fd, _header(commit_log.generation), 0)
                files.sync(fd)
                files.fsync_dir(directory)
            except OSError:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(commit_log.path)
                raise
        commit_log.fd = fd
        return commit_log

    @property
    def full(self) -> bool:
        return self.end >= REWIND_BYTES

    def append(self, entries: list[Entry]) -> None:
        """Write the group's entries after the last ones and fsync: the one sync of the group."""
        data = b"".join(encode_entry(self.generation, entry) for entry in entries)
        files.write_all(self.fd, data, self.end)
        files.sync(self.fd)
        self.end += len(data)

    def rewind(self) -> None:
        """Start over at the top under a new generation; only once every journal written since is fsynced."""
        self.generation = (self.generation + 1) & ((1 << 63) - 1)
        files.write_all(self.fd, _header(self.generation), 0)
        files.sync(self.fd)
        self.end = HEADER_BYTES

    def wipe(self) -> None:
        """Overwrite every entry with zeros (fsynced), then rewind: for a deleted run, whose lines it may hold.

        Only once every journal written since the last rewind is fsynced, as
        for ``rewind``. The file keeps its size, so its syncs stay data-only.
        """
        size = os.fstat(self.fd).st_size
        if size > HEADER_BYTES:
            files.write_all(self.fd, bytes(size - HEADER_BYTES), HEADER_BYTES)
        self.rewind()

    def remove(self) -> None:
        """Delete the log once nothing in it is needed (every journal it covers is fsynced), then let go."""
        os.unlink(self.path)
        files.fsync_dir(self.directory)
        self.close()  # only now: a log that could not be removed stays locked, never taken for an orphan

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


# ------------------------------------------------------------------ recovery


def recover(data_dir: Path) -> int:
    """Replay and remove every orphaned log (its process is dead); returns how many entries were written.

    A process that died with acknowledged appends only in its log (a power
    cut took the journals' unsynced pages) gets them back here, before this
    server reads or writes any journal.
    """
    directory = data_dir / LOG_DIR
    if not directory.is_dir():
        return 0
    repaired = 0
    with _recovery_lock(directory):
        for path in sorted(directory.glob(f"*{LOG_SUFFIX}")):  # oldest first: names start with the creation time
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live server's log
                repaired += _replay(data_dir, files.read_all(fd))
                os.unlink(path)
                files.fsync_dir(directory)
            finally:
                os.close(fd)
    return repaired


def _replay(data_dir: Path, data: bytes) -> int:
    """Write each entry where its journal lacks it; fsync every journal named; the count written."""
    written = 0
    journals: dict[str, int | None] = {}
    try:
        for entry in read_entries(data):
            if entry.run_id not in journals:
                journals[entry.run_id] = _open_journal(data_dir, entry)
            fd = journals[entry.run_id]
            if fd is not None and _repair(fd, entry):
                written += 1
        for run_id, fd in journals.items():
            if fd is not None:
                files.sync(fd)
                log.info("commit log: run %r checked against the log of a process that died", run_id)
    finally:
        for fd in journals.values():
            if fd is not None:
                os.close(fd)
    if written:
        log.warning("commit log: %d acknowledged appends were missing from their journals and were restored", written)
    return written


def _open_journal(data_dir: Path, entry: Entry) -> int | None:
    """The journal the entry was written to, if it is still that run (same meta line); else None."""
    path = data_dir / (entry.run_id + files.JOURNAL_SUFFIX)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # deleted since: the log must not bring it back
    head = os.pread(fd, 64 * 1024, 0)
    newline = head.find(b"\n")
    while newline < 0 and (more := os.pread(fd, 64 * 1024, len(head))):  # a meta line longer than the first read
        head += more
        newline = head.find(b"\n")
    if newline < 0 or meta_digest(head[:newline]) != entry.meta:
        os.close(fd)
        return None
    return fd


def _repair(fd: int, entry: Entry) -> bool:
    """Write the entry's lines unless the journal already holds them, or valid lines of those seqs.

    Valid lines that differ were written later by a writer that opened the
    run after this log's process died (its records are acknowledged by its
    own log or fsync): they are never overwritten. What a power cut leaves is
    a short file, zeros or garbage, none of which decodes.
    """
    held = os.pread(fd, len(entry.data), entry.offset)
    if held == entry.data or _holds_valid_lines(fd, entry):
        return False
    size = os.fstat(fd).st_size
    if size < entry.offset:
        log.error("commit log: a journal ends at %d, before a logged append at %d", size, entry.offset)
    files.write_all(fd, entry.data, entry.offset)
    return True


def _holds_valid_lines(fd: int, entry: Entry) -> bool:
    """True when the journal holds, from the entry's offset, whole valid lines with the logged seqs."""
    logged = entry.data.split(b"\n")[:-1]
    held = b""
    while held.count(b"\n") < len(logged):
        chunk = os.pread(fd, max(len(entry.data), 64 * 1024), entry.offset + len(held))
        if not chunk:
            return False
        held += chunk
    try:
        return all(
            records.decode(mine).seq == records.decode(theirs).seq
            for mine, theirs in zip(held.split(b"\n"), logged, strict=False)
        )
    except RecordDecodeError:
        return False


@contextlib.contextmanager
def _recovery_lock(directory: Path) -> Iterator[None]:
    fd = os.open(directory / RECOVERY_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, files.FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: another process's recovery or log creation is short
        yield
    finally:
        os.close(fd)

"""The batch intent: how a batch of several lines is all-or-nothing in a file, across a crash too.

A batch of several lines is one write, and a crash can
cut it anywhere, leaving whole lines of it that read back as records. So the
lock file also carries the **batch intent**: before writing a batch of more
than one line the writer stores ``(first seq, count, start offset, end
offset)`` with a checksum at the front of ``<run>.lock`` and fsyncs it; then it
writes and fsyncs the lines; then it blanks the intent without an fsync (an
intent whose batch is whole in the journal means nothing, so losing the
blanking to a power cut is harmless). Every reader honours an intent that
names this journal (its batch starts at a line boundary right after seq
``first - 1``) but whose batch is not whole there: the journal ends at the
batch's start. A writer that opens the run cuts such a batch away, fsyncs, and
blanks the intent durably. A single-line append needs no intent: a torn final
line is already a torn tail. The journal itself stays plain canonical lines.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

from runjournal_server.backends.file.files import write_all
from runjournal_server.backends.file.lines import Read, lines_backward, lines_forward
from runjournal_server.core import records
from runjournal_server.core.records import RecordDecodeError

INTENT_BYTES = 128
"""The intent's fixed size at the front of the lock file: an overwrite always covers the one before."""
_INTENT_MAGIC = b"rjbatch1"
_NO_INTENT = b"\0" * INTENT_BYTES


@dataclass(frozen=True)
class Intent:
    """A batch of several lines being written: seqs ``first_seq ...`` at journal bytes ``start .. end``."""

    first_seq: int
    count: int
    start: int
    end: int

    def encode(self) -> bytes:
        body = b"%s %d %d %d %d" % (_INTENT_MAGIC, self.first_seq, self.count, self.start, self.end)
        return (body + b" %08x" % zlib.crc32(body)).ljust(INTENT_BYTES, b" ")


def _parse_intent(data: bytes) -> Intent | None:
    """The intent in ``data``, or None: blank, torn or not ours (a torn intent's batch was never written)."""
    fields = data.split()
    if len(fields) != 6 or fields[0] != _INTENT_MAGIC:
        return None
    body = b" ".join(fields[:5])
    try:
        crc = int(fields[5], 16)
        first_seq, count, start, end = (int(field) for field in fields[1:5])
    except ValueError:
        return None
    if crc != zlib.crc32(body) or first_seq < 1 or count < 2 or not 0 <= start < end:
        return None
    return Intent(first_seq, count, start, end)


def held_intent(lock_fd: int) -> Intent | None:
    return _parse_intent(os.pread(lock_fd, INTENT_BYTES, 0))


def declare(lock_fd: int, intent: Intent) -> None:
    """Store the intent durably before any line of its batch is written."""
    write_all(lock_fd, intent.encode(), 0)
    os.fsync(lock_fd)


def blank(lock_fd: int, *, durable: bool) -> None:
    """Blank the intent; ``durable`` where lines that could be taken for its batch come next."""
    write_all(lock_fd, _NO_INTENT, 0)
    if durable:
        os.fsync(lock_fd)


def acknowledged_end(read: Read, size: int, intent: Intent | None) -> tuple[int, bool]:
    """Where the journal's records end, and whether that end is an incomplete batch's start.

    At an incomplete batch's start the line before is fsynced and whole, so
    the torn-tail leniency does not apply to it (the caller is strict there).
    """
    if intent is None or intent.start > size or not _names_this_journal(read, intent):
        return size, False
    if _batch_is_whole(read, size, intent):
        return size, False
    return intent.start, True


def _names_this_journal(read: Read, intent: Intent) -> bool:
    """True when the intent's batch starts at a line boundary right after seq ``first_seq - 1``.

    Every line before a batch is fsynced before its intent, so a real intent
    always passes; a leftover that does not (a replaced file) is ignored.
    """
    if intent.first_seq == 1:
        return intent.start == 0
    previous = next(lines_backward(read, intent.start), None)
    if previous is None or previous[0] + len(previous[1]) + 1 != intent.start:
        return False
    try:
        return records.decode(previous[1]).seq == intent.first_seq - 1
    except RecordDecodeError:
        return False


def _batch_is_whole(read: Read, size: int, intent: Intent) -> bool:
    """True when the journal holds all ``count`` lines of the batch, valid, ending exactly at its end."""
    if intent.end > size:
        return False
    expected = intent.first_seq
    reached = intent.start
    for offset, line in lines_forward(read, intent.start, intent.end):
        try:
            if records.decode(line).seq != expected:
                return False
        except RecordDecodeError:
            return False
        expected += 1
        reached = offset + len(line) + 1
    return expected == intent.first_seq + intent.count and reached == intent.end

"""Lines of a journal read from either end, a bounded chunk at a time, and the glued-line test.

A reader is ``read(size, offset)``: over a descriptor (``fd_reader``, which
raises ``ShrunkError`` when the file got shorter under a lock-free reader)
or over bytes in hand (``bytes_reader``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator

from runjournal_server.core import records
from runjournal_server.core.records import RecordDecodeError

CHUNK_BYTES = 64 * 1024
"""How much ``ends`` reads per step when it scans a journal backward."""
STREAM_CHUNK_BYTES = 256 * 1024
"""How much ``stream`` reads per step: what one stream holds, plus at most one line."""

Read = Callable[[int, int], bytes]
"""``read(size, offset)``: exactly ``size`` bytes of the journal at ``offset``, or ``ShrunkError``."""


class ShrunkError(Exception):
    """The file got shorter while a lock-free reader read it: a writer rolled back or repaired its tail."""


def _pread_exact(fd: int, size: int, offset: int) -> bytes:
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise ShrunkError
    return data


def fd_reader(fd: int) -> Read:
    return functools.partial(_pread_exact, fd)


def bytes_reader(data: bytes) -> Read:
    def read(size: int, offset: int) -> bytes:
        return data[offset : offset + size]

    return read


_LINE_END = re.compile(rb'"seq":[0-9]+}}')
"""How every stored line ends: ``seq`` is the body's last key (keys are sorted), then the envelope closes."""


def glued(line: bytes) -> bool:
    """True when ``line`` starts with a whole stored line and goes on: two lines whose newline was damaged.

    A crash mid-append leaves a prefix of one line, and no stored line is a
    proper prefix of another (its JSON ends where it ends), so this is never a
    torn write. Dropping it as one would silently lose the acknowledged record
    at its front (one flipped bit in a newline), and opening would truncate it.
    """
    for match in _LINE_END.finditer(line, 0, len(line) - 1):
        try:
            records.decode(line[: match.end()])
        except RecordDecodeError:
            continue
        return True
    return False


def first_line(read: Read, size: int) -> bytes | None:
    """The first complete line (without its newline), or None when the file has no newline."""
    head = bytearray()
    offset = 0
    while offset < size:
        chunk = read(min(CHUNK_BYTES, size - offset), offset)
        newline = chunk.find(b"\n")
        if newline >= 0:
            return bytes(head + chunk[:newline])
        head += chunk
        offset += len(chunk)
    return None


def lines_backward(read: Read, size: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(start offset, line)`` for each complete line, the last first.

    Reads ``CHUNK_BYTES`` at a time from the end and keeps only the part of a
    line not yet complete in memory. Bytes after the last newline (a torn
    fragment) are never yielded.
    """
    offset = size  # the file offset of buf[0]
    buf = b""
    found_end = False
    while offset > 0:
        step = min(CHUNK_BYTES, offset)
        offset -= step
        buf = read(step, offset) + buf
        if not found_end:
            last_newline = buf.rfind(b"\n")
            if last_newline < 0:
                continue
            buf = buf[: last_newline + 1]
            found_end = True
        end = len(buf) - 1  # the newline that closes the line being looked for
        while (newline := buf.rfind(b"\n", 0, end)) >= 0:
            yield offset + newline + 1, buf[newline + 1 : end]
            end = newline
        buf = buf[: end + 1]
    if found_end:
        yield 0, buf[:-1]


def lines_forward(read: Read, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(start offset, line)`` for each complete line in ``start .. end``, first first.

    Holds one ``STREAM_CHUNK_BYTES`` chunk plus the line not yet complete
    (while suspended after a line longer than a chunk, only what follows it);
    bytes after the last newline (a torn fragment) are never yielded.
    """
    offset = start  # the file offset of buf[0]
    buf = b""
    read_to = start
    while read_to < end:
        step = min(STREAM_CHUNK_BYTES, end - read_to)
        chunk = read(step, read_to)
        buf += chunk
        read_to += len(chunk)
        if len(chunk) < step:
            end = read_to  # the file got shorter (a reader that allows it): it ends here now
        del chunk  # in ``buf`` now: a suspended generator must not hold it twice
        taken = 0
        while (newline := buf.find(b"\n", taken)) >= 0:
            line_offset = offset + taken
            if newline - taken < STREAM_CHUNK_BYTES:
                yield line_offset, buf[taken:newline]
                taken = newline + 1
                continue
            # A line longer than a chunk is cut out of the buffer before it is handed out: while the
            # consumer holds it (a stalled reader) the buffer keeps only what follows it, at most a
            # chunk, not the line a second time. Popped, not bound: the frame keeps no reference.
            held = [buf[taken:newline]]
            buf = buf[newline + 1 :]
            offset, taken = newline + 1 - taken + line_offset, 0
            yield line_offset, held.pop()
        buf = buf[taken:]
        offset += taken

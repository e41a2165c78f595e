"""``lines_forward``: every complete line with its offset, across chunk edges, holding little while suspended."""

from __future__ import annotations

from runjournal_server.backends.file.lines import STREAM_CHUNK_BYTES, Read, lines_forward

LONG = STREAM_CHUNK_BYTES * 3 + 7


def _reader(data: bytes) -> Read:
    return lambda size, offset: data[offset : offset + size]


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    return list(lines_forward(_reader(data), 0, len(data)))


def _expected(lines: list[bytes]) -> list[tuple[int, bytes]]:
    found: list[tuple[int, bytes]] = []
    offset = 0
    for line in lines:
        found.append((offset, line))
        offset += len(line) + 1
    return found


def test_short_and_long_lines_come_with_their_offsets() -> None:
    lines = [b"a" * 10, b"b" * LONG, b"c" * 5, b"d" * (STREAM_CHUNK_BYTES - 1), b"e" * STREAM_CHUNK_BYTES, b"f" * LONG]
    data = b"\n".join(lines) + b"\n"
    assert _lines(data) == _expected(lines)


def test_a_torn_fragment_after_a_long_line_is_never_yielded() -> None:
    lines = [b"x" * LONG, b"y" * 3]
    data = b"\n".join(lines) + b"\n" + b"z" * (STREAM_CHUNK_BYTES + 11)
    assert _lines(data) == _expected(lines)


def test_suspended_after_a_long_line_the_generator_holds_at_most_a_chunk() -> None:
    """A stalled reader holds the line it was handed; the generator must not hold it (or its chunk) again."""
    lines = [b"p" * LONG, b"q" * LONG, b"r" * 4]
    data = b"\n".join(lines) + b"\n"
    stream = lines_forward(_reader(data), 0, len(data))
    offset, line = next(stream)
    assert (offset, line) == (0, lines[0])
    assert stream.gi_frame is not None
    held = 0
    for value in stream.gi_frame.f_locals.values():
        if isinstance(value, bytes):
            held += len(value)
        elif isinstance(value, list):
            held += sum(len(item) for item in value if isinstance(item, bytes))
    assert held <= STREAM_CHUNK_BYTES
    assert [item[1] for item in stream] == lines[1:]

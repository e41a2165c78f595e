"""The commit log's format: a cut or damaged log reads back as a prefix of its entries, never as anything else."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runjournal_server.backends.file.commit_log import HEADER_BYTES, Entry, _header, encode_entry, read_entries

HEADER_FIELDS_BYTES = 20
"""magic, generation and CRC at the top of the header block; the rest of the block is padding."""

entries = st.lists(
    st.builds(
        Entry,
        run_id=st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True),
        meta=st.binary(min_size=8, max_size=8),
        offset=st.integers(0, 1 << 40),
        data=st.binary(max_size=300).map(lambda data: data.replace(b"\n", b" ") + b"\n"),
    ),
    max_size=8,
)


def log_bytes(generation: int, logged: list[Entry]) -> bytes:
    return _header(generation) + b"".join(encode_entry(generation, entry) for entry in logged)


@given(entries, st.integers(0, (1 << 63) - 1))
def test_a_whole_log_reads_back_every_entry(logged: list[Entry], generation: int) -> None:
    assert list(read_entries(log_bytes(generation, logged))) == logged


@given(entries, st.data())
def test_a_log_cut_anywhere_reads_back_a_prefix_of_its_entries(logged: list[Entry], data: st.DataObject) -> None:
    whole = log_bytes(7, logged)
    cut = data.draw(st.integers(0, len(whole)))
    found = list(read_entries(whole[:cut]))
    assert found == logged[: len(found)]
    if cut < HEADER_BYTES:
        assert found == []


@given(entries, st.data())
def test_a_flipped_byte_ends_the_log_before_the_entry_it_damages(logged: list[Entry], data: st.DataObject) -> None:
    whole = bytearray(log_bytes(7, logged))
    at = data.draw(st.integers(0, len(whole) - 1))
    whole[at] ^= data.draw(st.integers(1, 255))
    found = list(read_entries(bytes(whole)))
    assert found == logged[: len(found)]
    if HEADER_FIELDS_BYTES <= at < HEADER_BYTES:
        assert found == logged, "the header block's padding means nothing"
        return
    ends = [HEADER_BYTES]
    for entry in logged:
        ends.append(ends[-1] + len(encode_entry(7, entry)))
    damaged = next(index for index, end in enumerate(ends) if at < end)  # 0: the header
    assert len(found) <= max(damaged - 1, 0)


@given(entries, entries)
def test_entries_of_an_older_generation_after_a_rewind_are_not_read(older: list[Entry], newer: list[Entry]) -> None:
    stale = log_bytes(7, older + newer + older)
    rewound = log_bytes(8, newer)
    # A rewind overwrites the top of the file in place; the old generation's tail stays behind it.
    assert list(read_entries(rewound + stale[len(rewound) :])) == newer

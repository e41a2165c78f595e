"""The listing index's persistence, as every backend keeps it: the entry model, the store contracts, the codec.

The index itself (``listing/index.py``) and its upkeep (``listing/upkeep.py``)
live above the backends; what a backend must know to persist it lives here,
so a backend never imports a feature. An index store keeps derived data: the
journals are the truth, and the repair that runs at every start compares each
entry against the store, so a store only promises never to hand back damaged
bytes (every line carries the CRC-32 of its body, and a load stops at the
first line that fails it) and to replace a snapshot whole.

Stores: ``backends/file/index_store.py`` (files beside the journals, on a
thread of its own) and ``backends/jetstream/listing_store.py`` (a KV bucket,
and the feed's news since the snapshot, ``SharedIndexStore``).
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from runjournal.v1 import state_pb2
from runjournal_server.core.page_token import SortKey

FORMAT = 4
"""3 added the spawn links (a child's parent and root), 4 wrote entries by column (``COLUMNS``); an index of
another format is rebuilt, never read."""
CHUNK_ENTRIES = 1000

NO_META_KEY_SECONDS = 0
"""A run whose meta cannot be read sorts last, as the listing always ordered it."""


class RunState(NamedTuple):
    """What the listing state filters read of a summary, as of ``last_seq``.

    Immutable, and a tuple rather than a frozen dataclass: a start builds
    one per run (100,000), and a frozen dataclass costs two to three times as
    much to build.
    """

    status: int
    waiting: int
    """How many calls wait for a person."""
    updated_ns: int | None
    last_seq: int
    version: object = None
    """The store's cheap version of the journal taken *before* the summary was read (file: size, mtime and
    inode), or None. Older than the state is safe (a repair reads the run again), newer never is, so the
    state and its version are one value, replaced together."""

    @classmethod
    def of(cls, summary: state_pb2.RunSummary, version: object = None) -> RunState:
        updated = summary.updated_at.ToNanoseconds() if summary.HasField("updated_at") else None
        return cls(summary.status, len(summary.waiting_calls), updated, summary.last_seq, version)

    def as_summary(self, run_id: str) -> state_pb2.RunSummary:
        """A summary holding these fields, for ``RunFilter.admits_state`` (the one matching rule)."""
        summary = state_pb2.RunSummary(run_id=run_id, status=self.status, last_seq=self.last_seq)  # type: ignore[arg-type]
        if self.updated_ns is not None:
            summary.updated_at.FromNanoseconds(self.updated_ns)
        for _ in range(self.waiting):
            summary.waiting_calls.add()
        return summary


@dataclass(slots=True)
class Entry:
    """One run in the index."""

    run_id: str
    key: SortKey
    labels: Mapping[str, str] | None
    """None when the meta could not be read (the run is listed from its summary, sorted last);
    ``LABELS_UNKNOWN`` after a restart until the meta is read again."""
    task_id: str = ""
    parent_run_id: str = ""
    spawned_by_run_id: str = ""
    root_run_id: str = ""
    state: RunState | None = None
    """None until a summary was read."""
    dirty: bool = True
    gen: int = 0
    """Bumped by every ``mark_dirty``: a read that began before news of a write must not clear ``dirty``."""
    _summary: state_pb2.RunSummary | None = field(default=None, repr=False, compare=False)

    def state_summary(self) -> state_pb2.RunSummary | None:
        """``state`` as a summary, built once (the walk of a state filter checks many entries)."""
        if self.state is None:
            return None
        if self._summary is None:
            self._summary = self.state.as_summary(self.run_id)
        return self._summary

    def set_state(self, state: RunState | None) -> None:
        self.state = state
        self._summary = None


LABELS_UNKNOWN: Mapping[str, str] = MappingProxyType({})
"""The labels of a run loaded from the persisted index: not known until its meta is read (compared by identity)."""

_LABELS: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
_MAX_INTERNED_LABELS = 10_000


def shared_labels(labels: Mapping[str, str]) -> Mapping[str, str]:
    """One read-only mapping per distinct label set: 100,000 runs usually carry a handful of them."""
    key = tuple(sorted(labels.items()))
    found = _LABELS.get(key)
    if found is None:
        found = MappingProxyType(dict(key))
        if len(_LABELS) < _MAX_INTERNED_LABELS:
            _LABELS[key] = found
    return found


def no_meta_key(run_id: str) -> SortKey:
    return (NO_META_KEY_SECONDS, 0, run_id)


Op = tuple[str, Any]
"""("put", Entry) or ("drop", run_id)."""


@dataclass
class Loaded:
    entries: list[Entry]
    damaged: str | None
    """Why the persisted index cannot be trusted whole (then every entry is re-read), or None."""
    log_ops: int
    position: int | None = None
    """A shared store's news position the index was current to (``SharedIndexStore``); None for files."""


class IndexStore(Protocol):
    """Where the listing index persists between restarts: what the upkeep calls, and all it relies on.

    Derived data: ``load`` reports damage (``Loaded.damaged``) instead of
    returning doubtful entries, and the upkeep then rebuilds from the
    journals. A failure to write raises ``OSError`` or a ``JournalError``;
    what it lost the next start's repair finds again.
    """

    @property
    def where(self) -> str:
        """Where the index is, for the logs."""
        ...

    async def load(self) -> Loaded: ...

    async def append(self, ops: Sequence[Op]) -> None:
        """Persist changes since the last call (a store may keep no log: then nothing)."""
        ...

    async def compact(self, entries: Sequence[Entry], position: int | None) -> None:
        """Replace what is persisted with ``entries``, current to the news ``position`` (shared stores)."""
        ...

    async def close(self) -> None: ...


Told = Callable[[str], None]


class SharedIndexStore(IndexStore, Protocol):
    """An index store on a store other replicas write too: it also knows where their news stands.

    Another replica's write reaches this one only as news from a feed, a
    moment later; an index that pages trust must have heard every write
    acknowledged before the page began (``caught_up``), and at start every
    write since the persisted index was current (``news_since``).
    """

    def position(self) -> int | None:
        """Where the news stands now (every change up to it has been told), or None when nothing follows it."""
        ...

    def behind(self) -> int:
        """How much news the next start would replay: stored since the persisted index's position."""
        ...

    async def news_since(self, position: int | None, stored: Told, deleted: Told) -> bool:
        """Tell the runs written (``stored``) and deleted since ``position``, and follow the news from there.

        ``position`` None: nothing to tell; the news is followed from now on.
        False when the news since ``position`` cannot be told (the store was
        replaced, or it lost that far back): the index must be rebuilt.
        """
        ...

    async def caught_up(self) -> bool:
        """Wait until every change acknowledged before this call has been told; False when that cannot be known."""
        ...


COLUMNS = (
    "run_id",
    "seconds",
    "nanos",
    "meta_readable",
    "task_id",
    "parent_run_id",
    "spawned_by_run_id",
    "root_run_id",
    "status",
    "waiting",
    "updated_ns",
    "last_seq",
    "version",
)
"""A ``put`` holds its entries column by column, in this order; the state's five are null where it has none.

Columns, not a row per entry: ``json.loads`` then builds one list per column
instead of three per entry, which halves a start's decode of 100,000 runs.
"""


def encode_columns(entries: Sequence[Entry], *, dirty_unknown: bool = False) -> list[list[Any]]:
    """The persisted columns of ``entries`` (``COLUMNS``): ids, order and listing state, never content.

    Labels are content: a deleted run's labels must leave the disk with it,
    and a log line cannot be taken back, so they are read again from the
    metas after a restart (``LABELS_UNKNOWN``); only whether the meta was
    readable is kept. ``dirty_unknown``: a dirty entry is written without
    its state (read again after the load), for a store whose repair does
    not compare versions.
    """
    columns: list[list[Any]] = [[] for _ in COLUMNS]
    (run_ids, seconds, nanos, readable, tasks, parents, spawners, roots, statuses, waiting, updated, seqs, versions) = (
        columns
    )
    for entry in entries:
        run_ids.append(entry.run_id)
        seconds.append(entry.key[0])
        nanos.append(entry.key[1])
        readable.append(entry.labels is not None)
        tasks.append(entry.task_id)
        parents.append(entry.parent_run_id)
        spawners.append(entry.spawned_by_run_id)
        roots.append(entry.root_run_id)
        state = None if dirty_unknown and entry.dirty else entry.state
        if state is None:
            statuses.append(None)
            waiting.append(None)
            updated.append(None)
            seqs.append(None)
            versions.append(None)
        else:
            statuses.append(state.status)
            waiting.append(state.waiting)
            updated.append(state.updated_ns)
            seqs.append(state.last_seq)
            versions.append(state.version)
    return columns


def decode_columns(columns: list[list[Any]]) -> list[Entry]:
    """The entries of a ``put``'s columns; ValueError or TypeError when they are not ``COLUMNS``."""
    if not isinstance(columns, list) or len(columns) != len(COLUMNS):
        raise ValueError("malformed entries")
    count = len(columns[0])
    if any(not isinstance(column, list) or len(column) != count for column in columns):
        raise ValueError("columns of unequal length")
    run_ids, seconds, nanos = columns[:3]
    if not (set(map(type, run_ids)) <= {str} and set(map(type, seconds)) <= {int} and set(map(type, nanos)) <= {int}):
        raise ValueError("malformed entry")
    (_, _, _, readable, tasks, parents, spawners, roots, statuses, waiting, updated, seqs, versions) = columns
    # Built column by column through zip and map, not a loop per run: a start decodes 100,000 runs, and a
    # NamedTuple's own __new__ and a loop's body cost more than the JSON they come from.
    keys = list(zip(seconds, nanos, run_ids, strict=True))
    versions = [tuple(version) if type(version) is list else None for version in versions]
    states: list[RunState | None] = list(map(_state_of, zip(statuses, waiting, updated, seqs, versions, strict=True)))
    for index in [index for index, status in enumerate(statuses) if status is None]:
        states[index] = None
    unknown = LABELS_UNKNOWN
    labels = [unknown if meta_readable else None for meta_readable in readable]
    # Loaded entries are trusted (not dirty) until the start's repair finds their journal changed.
    dirty = [status is None for status in statuses]
    return list(map(Entry, run_ids, keys, labels, tasks, parents, spawners, roots, states, dirty))


_state_of: Callable[[tuple[Any, ...]], RunState] = functools.partial(tuple.__new__, RunState)  # type: ignore[arg-type]
"""A ``RunState`` of a 5-tuple, built in C (``RunState(*fields)`` runs the NamedTuple's ``__new__`` in Python)."""


def encode_chunk(entries: Sequence[Entry], *, dirty_unknown: bool = False) -> bytes:
    """One self-contained piece of a snapshot: the format line, then one line of ``entries``."""
    return checked_line(["format", FORMAT]) + checked_line(
        ["put", encode_columns(entries, dirty_unknown=dirty_unknown)]
    )


def replay_lines(data: bytes, entries: dict[str, Entry], name: str, *, empty_is_damage: bool = False) -> str | None:
    """Apply the lines of a snapshot or log piece to ``entries``; what is damaged, or None."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        return f"the {name} file ends with a torn line"
    for number, line in enumerate(lines, 1):
        try:
            body = parse_checked_line(line)
            if number == 1:  # both files begin with their format: rows of another one are never read
                if body != ["format", FORMAT]:
                    return f"the {name} file is of another format ({body!r})"
                continue
            kind, rows = body
            if kind == "put":
                decoded = decode_columns(rows)  # first: it checks that rows[0] is the run ids
                entries.update(zip(rows[0], decoded, strict=True))
            elif kind == "drop":
                for run_id in rows:
                    entries.pop(run_id, None)
            else:
                raise ValueError(f"unknown operation {kind!r}")
        except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as err:
            return f"line {number} of the {name} file is damaged ({err})"
    if empty_is_damage and not lines:
        return f"the {name} file is empty"
    return None


def checked_line(body: object) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return b"%08x " % zlib.crc32(data) + data + b"\n"


def parse_checked_line(line: bytes) -> Any:
    crc, _, data = line.partition(b" ")
    if len(crc) != 8 or int(crc, 16) != zlib.crc32(data):
        raise ValueError("checksum mismatch")
    return json.loads(data)

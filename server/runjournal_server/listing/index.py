"""The listing index: every run's place in the newest-first order and its last known listing state.

It answers one question fast, whatever the number of runs: which runs, in
order, could be on this page? It never answers what a listed run says: the
listing reads every summary it returns from the journals (``listing/pages.py``), so
an index that lags can cost an extra read, never a wrong entry.

Per run it keeps the sort key and the meta's facts (labels, task, parent:
immutable once the run exists; labels are content, so they are never
persisted, and a restart reads them back from the metas: ``LABELS_UNKNOWN``) and the listing state as of a ``last_seq``:
what ``RunFilter.admits_state`` reads (status, waiting calls, updated time).
A run whose state may have moved since (told by ``RunEvents``, or found
changed by a repair) is *dirty*: it is a candidate for every state filter
until its summary is read again. A run the index has not placed yet (created
since the last upkeep tick) is *pending*: the listing places it before it
answers. So a state filter never misses a run this server wrote.

Tenants: runs are also kept sorted by id, so the runs of one run-id prefix
(``core/ids.has_prefix``, the match a token's access makes) are found by
bisection and ordered once per prefix (kept up to date afterwards); a
token's listing walks its own runs only.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

from runjournal_server.backends.index_store import LABELS_UNKNOWN, Entry, RunState
from runjournal_server.core.ids import has_prefix
from runjournal_server.core.page_token import SortKey

K = TypeVar("K", SortKey, str)


class ListingIndex:
    """The entries, in newest-first order overall and per run-id prefix (see the module docstring)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._order: list[SortKey] = []  # ascending; walked from the end
        self._ids: list[str] = []  # ascending run ids, to find a prefix's runs
        self._by_prefix: dict[str, list[SortKey]] = {}
        self._changes = 0  # bumped on every insert or removal: a walk re-finds its place after one
        self._dirty: set[str] = set()  # the run ids of dirty entries, so a tick need not scan every entry
        # Runs by last known status, and those with calls waiting for a person: a sparse state filter
        # (the inbox, a rare status) looks at its few candidates instead of walking every run.
        self._by_status: dict[int, set[str]] = {}
        self._waiting: set[str] = set()
        self.pending: set[str] = set()
        """Runs told of (created, or changed while not yet placed) that the index has no entry for."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, run_id: str) -> bool:
        return run_id in self._entries

    def get(self, run_id: str) -> Entry | None:
        return self._entries.get(run_id)

    def entries(self) -> Iterable[Entry]:
        return self._entries.values()

    def run_ids(self) -> list[str]:
        return list(self._entries)

    def differences(self, run_ids: Iterable[str]) -> tuple[list[str], list[str]]:
        """The runs the index has and ``run_ids`` lacks, and those ``run_ids`` has and the index lacks.

        A start's repair asks it of every run (set differences, not a loop per run).
        """
        listed = set(run_ids)
        known = self._entries.keys()
        return list(known - listed), list(listed - known)

    def load(self, entries: Iterable[Entry]) -> None:
        """Replace everything with ``entries`` (a loaded or rebuilt index), sorting once."""
        self._entries = {entry.run_id: entry for entry in entries}
        self._order = sorted(entry.key for entry in self._entries.values())
        self._ids = sorted(self._entries)
        self._by_prefix.clear()
        self._dirty = {entry.run_id for entry in self._entries.values() if entry.dirty}
        self._by_status = {}
        self._waiting = set()
        for entry in self._entries.values():
            self._file(entry)
        self._changes += 1

    def put(self, entry: Entry) -> None:
        """Insert or replace the run's entry (its key may change only while its meta was unreadable)."""
        old = self._entries.get(entry.run_id)
        if entry.dirty:
            self._dirty.add(entry.run_id)
        if old is not None and old.key == entry.key:
            self._unfile(old)
            self._entries[entry.run_id] = entry
            self._file(entry)
            return
        if old is not None:
            self.remove(entry.run_id)
            if entry.dirty:
                self._dirty.add(entry.run_id)
        self._entries[entry.run_id] = entry
        self._file(entry)
        bisect.insort(self._order, entry.key)
        bisect.insort(self._ids, entry.run_id)
        for prefix, keys in self._by_prefix.items():
            if has_prefix(entry.run_id, (prefix,)):
                bisect.insort(keys, entry.key)
        self.pending.discard(entry.run_id)
        self._changes += 1

    def remove(self, run_id: str) -> Entry | None:
        entry = self._entries.pop(run_id, None)
        if entry is None:
            return None
        self._dirty.discard(run_id)
        self._unfile(entry)
        _discard(self._order, entry.key)
        _discard(self._ids, run_id)
        for prefix, keys in self._by_prefix.items():
            if has_prefix(run_id, (prefix,)):
                _discard(keys, entry.key)
        self._changes += 1
        return entry

    def mark_dirty(self, run_id: str) -> None:
        """The run's state may have moved (an acknowledged write, a deletion): a candidate for every filter."""
        entry = self._entries.get(run_id)
        if entry is None:
            self.pending.add(run_id)
        else:
            entry.dirty = True
            entry.gen += 1
            self._dirty.add(run_id)

    def set_state(self, entry: Entry, state: RunState | None) -> None:
        """Record the entry's listing state (kept in the status and waiting sets too)."""
        if self._entries.get(entry.run_id) is entry:
            self._unfile(entry)
            entry.set_state(state)
            self._file(entry)
        else:
            entry.set_state(state)

    def with_state(self, statuses: Iterable[int] | None, waiting: bool) -> set[str] | None:
        """The runs whose last known state has one of ``statuses`` (and waiting calls, if ``waiting``).

        None where that is no narrower than every run (no status and no
        waiting asked). Dirty runs are not in it: the caller adds them.
        """
        if waiting:
            return set(self._waiting)
        if statuses is None:
            return None
        found: set[str] = set()
        for status in statuses:
            found |= self._by_status.get(status, set())
        return found

    def _file(self, entry: Entry) -> None:
        if entry.state is not None:
            self._by_status.setdefault(entry.state.status, set()).add(entry.run_id)
            if entry.state.waiting:
                self._waiting.add(entry.run_id)

    def _unfile(self, entry: Entry) -> None:
        if entry.state is not None:
            self._by_status.get(entry.state.status, set()).discard(entry.run_id)
            self._waiting.discard(entry.run_id)

    def newest_of(self, run_ids: Iterable[str], before: SortKey | None) -> list[Entry]:
        """The entries of ``run_ids``, newest first, after ``before`` (for a few candidates)."""
        found = [entry for run_id in run_ids if (entry := self._entries.get(run_id)) is not None]
        found.sort(key=lambda entry: entry.key, reverse=True)
        return [entry for entry in found if before is None or entry.key < before]

    def mark_clean(self, entry: Entry) -> None:
        """The entry's state is as its journal says, as of a read that began after the last news."""
        entry.dirty = False
        self._dirty.discard(entry.run_id)

    def dirty_run_ids(self) -> list[str]:
        return list(self._dirty)

    def unlabelled(
        self, prefixes: Sequence[str], limit: int | None = None, before: SortKey | None = None
    ) -> tuple[list[Entry], SortKey | None]:
        """Entries under ``prefixes`` whose labels are not known yet (``LABELS_UNKNOWN``), newest first.

        At most ``limit`` of them, and as many entries examined, after
        ``before``; with the key to go on from (None once the walk is done).
        """
        found: list[Entry] = []
        for examined, entry in enumerate(self.newest_first(prefixes, before), 1):
            if entry.labels is LABELS_UNKNOWN:
                found.append(entry)
            if limit is not None and (len(found) == limit or examined == limit):
                return found, entry.key
        return found, None

    def newest_first(self, prefixes: Sequence[str], before: SortKey | None) -> Iterator[Entry]:
        """The entries of runs whose id starts with one of ``prefixes``, newest first, after ``before``.

        Safe while the index changes between steps (the caller awaits reads
        between them): after an insert or removal the walk finds its place
        again by the last key it gave.
        """
        lists = [self._prefix_keys(prefix) for prefix in _minimal(prefixes)]
        last = before
        while True:
            changes = self._changes
            streams = [_descending(keys, last) for keys in lists]
            merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, reverse=True)
            for key in merged:
                last = key  # no key is in two lists: minimal() keeps no prefix that covers another
                entry = self._entries.get(key[2])
                if entry is not None and entry.key == key:
                    yield entry
                if self._changes != changes:
                    break
            else:
                return

    def _prefix_keys(self, prefix: str) -> list[SortKey]:
        if not prefix:
            return self._order
        keys = self._by_prefix.get(prefix)
        if keys is None:
            start = bisect.bisect_left(self._ids, prefix)
            end = start
            while end < len(self._ids) and has_prefix(self._ids[end], (prefix,)):
                end += 1
            keys = sorted(self._entries[run_id].key for run_id in self._ids[start:end])
            self._by_prefix[prefix] = keys
        return keys


def _descending(keys: list[SortKey], before: SortKey | None) -> Iterator[SortKey]:
    end = len(keys) if before is None else bisect.bisect_left(keys, before)
    for index in range(end - 1, -1, -1):
        if index >= len(keys):
            return  # the list shrank under us; the caller re-finds its place
        yield keys[index]


def _discard(ordered: list[K], item: K) -> None:
    index = bisect.bisect_left(ordered, item)
    if index < len(ordered) and ordered[index] == item:
        del ordered[index]


def _minimal(prefixes: Sequence[str]) -> list[str]:
    """The prefixes no other one of them covers: "a" covers "ab", "" covers everything."""
    unique = sorted(set(prefixes)) or [""]
    kept: list[str] = []
    for prefix in unique:
        if not has_prefix(prefix, kept):
            kept.append(prefix)
    return kept

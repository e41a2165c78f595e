"""ListingIndex: its newest-first walk is the brute-force order, per prefix, and walks only the prefix's runs."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from runjournal.v1 import state_pb2
from runjournal_server.backends.index_store import Entry, RunState
from runjournal_server.core.page_token import SortKey
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.index import ListingIndex

IDS = st.sampled_from([f"{p}{n}" for p in ("a-", "ab-", "b-", "c") for n in range(6)])
OPS = st.lists(
    st.tuples(st.sampled_from(["put", "remove", "dirty", "clean", "state"]), IDS, st.integers(0, 5), st.integers(0, 2)),
    max_size=60,
)
PREFIXES = st.lists(st.sampled_from(["", "a", "a-", "ab-", "b-", "c", "zz"]), min_size=1, max_size=3)


def entry(run_id: str, seconds: int, nanos: int) -> Entry:
    return Entry(run_id=run_id, key=(seconds, nanos, run_id), labels={})


def apply(index: ListingIndex, op: str, run_id: str, seconds: int, nanos: int) -> None:
    if op == "put":
        index.put(entry(run_id, seconds, nanos))
    elif op == "remove":
        index.remove(run_id)
    elif op == "dirty":
        index.mark_dirty(run_id)
    elif op == "state" and (found := index.get(run_id)) is not None:
        index.set_state(found, RunState(status=1 + seconds % 3, waiting=nanos, updated_ns=None, last_seq=1))
    elif (found := index.get(run_id)) is not None:
        index.mark_clean(found)


def brute(index: ListingIndex, prefixes: list[str], before: SortKey | None) -> list[str]:
    keys = sorted((e.key for e in index.entries() if e.run_id.startswith(tuple(prefixes))), reverse=True)
    return [key[2] for key in keys if before is None or key < before]


@settings(max_examples=300, deadline=None)
@given(OPS, PREFIXES, st.one_of(st.none(), st.tuples(st.integers(0, 5), st.integers(0, 2), IDS)))
def test_the_walk_is_the_brute_force_order(ops, prefixes, before):
    index = ListingIndex()
    index.newest_first(["a-"], None)  # a prefix list made before the changes must follow them
    list(index.newest_first(["a-", "b-"], None))
    for op, run_id, seconds, nanos in ops:
        apply(index, op, run_id, seconds, nanos)
    assert [e.run_id for e in index.newest_first(prefixes, before)] == brute(index, prefixes, before)
    assert sorted(index.dirty_run_ids()) == sorted(e.run_id for e in index.entries() if e.dirty)
    assert not index.pending & set(index.run_ids())
    for status in (1, 2, 3):
        expected = {e.run_id for e in index.entries() if e.state is not None and e.state.status == status}
        assert index.with_state([status], False) == expected
    assert index.with_state(None, True) == {e.run_id for e in index.entries() if e.state and e.state.waiting}
    assert index.with_state(None, False) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(IDS, st.integers(0, 5)), min_size=1, max_size=30), OPS, PREFIXES)
def test_a_walk_the_index_changes_under_gives_each_run_at_most_once_in_order(initial, ops, prefixes):
    """Between two steps of a walk (where the listing awaits its reads), runs come and go."""
    index = ListingIndex()
    for run_id, seconds in initial:
        index.put(entry(run_id, seconds, 0))
    walk = index.newest_first(prefixes, None)
    seen: list[SortKey] = []
    for (op, run_id, seconds, nanos), step in zip(ops, walk, strict=False):
        seen.append(step.key)
        apply(index, op, run_id, seconds, nanos)
    seen += [step.key for step in walk]
    assert seen == sorted(set(seen), reverse=True)
    assert all(key[2].startswith(tuple(prefixes)) for key in seen)


class CountingDict(dict[str, Entry]):
    looked_up: set[str]

    def get(self, key, default=None):  # type: ignore[override]
        self.looked_up.add(key)
        return super().get(key, default)


def test_a_tenant_walk_touches_only_the_tenants_runs():
    index = ListingIndex()
    for number in range(500):
        index.put(entry(f"b-{number}", number, 0))
    for number in range(5):
        index.put(entry(f"a-{number}", number * 100, 0))
    counting = CountingDict(index._entries)
    counting.looked_up = set()
    index._entries = counting
    assert [e.run_id for e in index.newest_first(["a-"], None)] == [f"a-{n}" for n in reversed(range(5))]
    assert counting.looked_up == {f"a-{n}" for n in range(5)}


STATUSES = sorted(state_pb2.RunStatus.values())


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(STATUSES),
    st.integers(0, 2),
    st.one_of(st.none(), st.integers(0, 10)),
    st.sampled_from(STATUSES),
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 10)),
)
def test_possible_states_is_a_necessary_condition_of_admits_state(status, waiting, updated, asked, inbox, before):
    """The index looks only at runs ``possible_states`` allows: it must never exclude one ``admits_state`` admits."""
    summary = RunState(status, waiting, None if updated is None else updated * 10**9, 1).as_summary("r")
    where = RunFilter(status=asked, waiting_for_person=inbox, stopped_before=before)
    statuses, needs_waiting = where.possible_states()
    if where.admits_state(summary):
        assert statuses is None or summary.status in statuses
        assert not needs_waiting or summary.waiting_calls
    if not where.has_state_condition:
        # A page whose filter has none does not wait for the states' check after a start: it must not need them.
        assert where.admits_state(summary)


def test_the_store_reads_back_its_own_rows_and_never_another_formats(tmp_path):
    from runjournal_server.backends.file.index_store import FileIndexStore
    from runjournal_server.backends.index_store import LABELS_UNKNOWN
    from runjournal_server.backends.index_store import checked_line as _line

    store = FileIndexStore(tmp_path / "index")
    assert store.open()
    assert store.load().damaged == "no index was persisted"  # a log holding its format line alone
    kept = entry("r-1", 5, 0)
    kept.set_state(RunState(2, 0, 7, 3, (10, 20, 30)))
    store.append([("put", kept), ("put", entry("r-2", 6, 0)), ("drop", "r-2")])
    loaded = store.load()
    assert loaded.damaged is None and [e.run_id for e in loaded.entries] == ["r-1"]
    assert loaded.entries[0].state == kept.state and loaded.entries[0].labels is LABELS_UNKNOWN
    store.compact(loaded.entries)
    assert [e.key for e in store.load().entries] == [kept.key]
    store.close()
    # A log of another format, well formed, rows of the same arity included: refused whole, never read.
    (tmp_path / "index" / "snapshot").unlink()
    (tmp_path / "index" / "log").write_bytes(_line(["format", 1]) + _line(["put", [["r-9", 1, 0, {}, "", "", None]]]))
    reopened = FileIndexStore(tmp_path / "index")
    assert reopened.open()
    assert reopened.load().damaged == "the log file is of another format (['format', 1])"
    reopened.close()


def test_the_columns_give_back_every_field_of_every_entry():
    from runjournal_server.backends.index_store import LABELS_UNKNOWN, decode_columns, encode_columns

    whole = Entry("r-1", (5, 7, "r-1"), {"a": "b"}, "task", "p-1", "s-1", "root-1")
    whole.set_state(RunState(2, 1, 9, 3, (10, 20, 30)))
    whole.dirty = False
    unread = Entry("r-2", (0, 0, "r-2"), None)  # meta unreadable, no state yet
    versionless = Entry("r-3", (6, 0, "r-3"), {})
    versionless.set_state(RunState(1, 0, None, 2))
    versionless.dirty = True  # dirty, with a state: the file store keeps it, a shared store's chunk does not

    def through_json(columns: list) -> list:
        return json.loads(json.dumps(columns))  # as a line on disk holds them

    back = decode_columns(through_json(encode_columns([whole, unread, versionless])))
    assert [(e.run_id, e.key, e.task_id, e.parent_run_id, e.spawned_by_run_id, e.root_run_id) for e in back] == [
        ("r-1", (5, 7, "r-1"), "task", "p-1", "s-1", "root-1"),
        ("r-2", (0, 0, "r-2"), "", "", "", ""),
        ("r-3", (6, 0, "r-3"), "", "", "", ""),
    ]
    assert [e.state for e in back] == [whole.state, None, versionless.state]
    assert [e.labels is LABELS_UNKNOWN for e in back] == [True, False, True]  # labels are content: never written
    assert [e.dirty for e in back] == [False, True, False]  # trusted until the repair compares versions
    assert decode_columns(through_json(encode_columns([versionless], dirty_unknown=True)))[0].state is None


def test_an_index_of_the_row_format_is_refused_whole_and_damaged_columns_too(tmp_path):
    from runjournal_server.backends.file.index_store import FileIndexStore
    from runjournal_server.backends.index_store import checked_line as _line

    index = tmp_path / "index"
    store = FileIndexStore(index)
    assert store.open()
    store.close()
    # What format 3 wrote: a row per entry. Well formed, checksums right: never read, so the start rebuilds.
    row = ["r-1", 5, 0, True, "", "", "", "", [2, 0, 9, 3, [10, 20, 30]]]
    (index / "snapshot").write_bytes(_line(["format", 3]) + _line(["put", [row]]))
    reopened = FileIndexStore(index)
    assert reopened.open()
    assert reopened.load().damaged == "the snapshot file is of another format (['format', 3])"
    # This format's line with a column short: damage, never a guess at which entry lost what.
    (index / "snapshot").write_bytes(_line(["format", 4]) + _line(["put", [["r-1"], [5], [0]]]))
    assert reopened.load().damaged == "line 2 of the snapshot file is damaged (malformed entries)"
    # Well-formed JSON of other shapes: an object for the columns, a seconds column of strings.
    for put, why in (
        ({"run_id": ["r-1"]}, "malformed entries"),
        ([["r-1"], ["5"], [0], *[[None]] * 10], "malformed entry"),
    ):
        (index / "snapshot").write_bytes(_line(["format", 4]) + _line(["put", put]))
        assert reopened.load().damaged == f"line 2 of the snapshot file is damaged ({why})"
    reopened.close()

"""What Watch and WatchRuns yield, and how a resumed WatchRuns stream yields only what changed.

Both clients' ``watch`` and ``watch_runs`` (``aio.py`` and the sync code
generated from it) yield these, so the two flavours yield equal items.
"""

from __future__ import annotations

from dataclasses import dataclass

from runjournal._common import read_item
from runjournal.v1 import journal_service_pb2, records_pb2, state_pb2


@dataclass(frozen=True)
class WatchedRecord:
    """One record of a watch: its seq (where a resumed watch goes on from), the record and its stored line."""

    seq: int
    record: records_pb2.JournalRecord
    stored_line: bytes


@dataclass(frozen=True)
class CaughtUp:
    """The end of a watch's stored part: everything stored when it began has been yielded; live items follow.

    ``head_seq`` is the run's last seq at that moment (``watch``), 0 for ``watch_runs``.
    """

    head_seq: int


WatchItem = WatchedRecord | CaughtUp
"""What ``watch`` yields."""
RunsItem = state_pb2.RunSummary | CaughtUp | journal_service_pb2.RunLeft
"""What ``watch_runs`` yields: a matching run as it is now, the caught-up marker, or a run that left."""


class RunsResume:
    """What a ``watch_runs`` stream has told its caller, so a resumed stream tells only what changed.

    After a transport failure the server sends every matching run again, then
    ``caught_up``: a summary equal to the one last yielded is not repeated, and
    at that ``caught_up`` every run yielded before but not sent again has left
    while the stream was down (``deleted`` False: a resumed stream cannot tell
    a deleted run from one that stopped matching).
    """

    def __init__(self) -> None:
        self._shown: dict[str, state_pb2.RunSummary] = {}
        self._resent: set[str] | None = None
        self._caught_up = False

    def resuming(self) -> None:
        """A new stream begins after a failure: its stored part is compared with what was shown."""
        self._resent = set()

    def items(self, response: journal_service_pb2.WatchRunsResponse) -> list[RunsItem]:
        """What to yield for one item of the stream (nothing for a repeat)."""
        kind = response.WhichOneof("event")
        if kind == "run":
            run = response.run
            if self._resent is not None:
                self._resent.add(run.run_id)
            if self._shown.get(run.run_id) == run:
                return []
            self._shown[run.run_id] = run
            return [run]
        if kind == "left":
            self._shown.pop(response.left.run_id, None)
            return [response.left]
        if kind == "caught_up":
            gone: list[RunsItem] = []
            if self._resent is not None:
                for run_id in sorted(set(self._shown) - self._resent):
                    del self._shown[run_id]
                    gone.append(journal_service_pb2.RunLeft(run_id=run_id, deleted=False))
                self._resent = None
            if self._caught_up:
                return gone
            self._caught_up = True
            return [*gone, CaughtUp(head_seq=response.caught_up.head_seq)]
        return []  # an item of a kind this client does not know (a newer server)


def watch_item(response: journal_service_pb2.WatchResponse) -> WatchItem | None:
    """A Watch item as the client yields it; None for a kind this client does not know (a newer server)."""
    kind = response.WhichOneof("event")
    if kind == "record":
        seq, record, line = read_item(response.record)
        return WatchedRecord(seq=seq, record=record, stored_line=line)
    if kind == "caught_up":
        return CaughtUp(head_seq=response.caught_up.head_seq)
    return None

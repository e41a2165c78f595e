"""What the server tells about its work as it goes, to whoever listens (``observability/metrics.py``).

``Observer`` is told the result of every Append and AppendBatch (by
``runs/runs.py``), every store write (by ``Journal.append`` and
``Backend.create_journal``) and every Read, Watch and WatchRuns stream (by
``api/journal_servicer.py``). This base class tells no one, so a ``Runs`` built without
one (tests, tools) does no bookkeeping at all. Nothing here names a run: an observer sees record
kinds, results, counts and durations, never run ids.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Sequence

from runjournal.v1 import records_pb2
from runjournal_server.core.errors import RunClaimedError, RunExistsError, SeqConflictError, SeqGapError


class AppendResult(enum.StrEnum):
    """What became of the records of one Append or AppendBatch."""

    OK = "ok"
    """Written."""
    DUPLICATE = "duplicate"
    """Already stored byte for byte (a retry): acknowledged, not written again."""
    CONFLICT = "conflict"
    """A different record is stored at its seq (SEQ_CONFLICT, or RUN_EXISTS for a different meta)."""
    GAP = "gap"
    """Past the next seq (SEQ_GAP)."""
    FENCED = "fenced"
    """The writer's claim token is not the run's latest (RUN_CLAIMED)."""
    REFUSED = "refused"
    """Any other refusal or failure (an invalid record, a full store, ...)."""


def result_of(err: BaseException) -> AppendResult:
    """The result an append refused with ``err`` counts as."""
    if isinstance(err, SeqGapError):
        return AppendResult.GAP
    if isinstance(err, SeqConflictError | RunExistsError):
        return AppendResult.CONFLICT
    if isinstance(err, RunClaimedError):
        return AppendResult.FENCED
    return AppendResult.REFUSED


class Observer:
    """Told about appends, store writes and Read streams; this base does nothing with it."""

    def appended(self, batch: Sequence[records_pb2.JournalRecord], duplicates: int) -> None:
        """An append was acknowledged: its first ``duplicates`` records were already stored, the rest written."""

    def refused(self, batch: Sequence[records_pb2.JournalRecord], result: AppendResult) -> None:
        """An append was refused (or failed) as ``result``; none of its records were written."""

    def stored(self, records: int, seconds: float) -> None:
        """The store made ``records`` records durable in one write, taking ``seconds``."""

    def reading(self) -> contextlib.AbstractContextManager[None]:
        """Entered around one Read stream, from its start to its end however it ends."""
        return contextlib.nullcontext()

    def watching(self, method: str) -> contextlib.AbstractContextManager[None]:
        """Entered around one Watch or WatchRuns stream (``method`` names which), however it ends."""
        return contextlib.nullcontext()


NO_OBSERVER = Observer()
"""The observer that tells no one (it holds no state, so one instance serves every caller)."""

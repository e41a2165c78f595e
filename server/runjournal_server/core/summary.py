"""The one status rule, shared by fold and by every backend's listing.

A ``terminal`` record describes a run only while it is the last non-inert
record. Inert for this rule are the records that say nothing about where the
conversation stands: ``claim`` (a worker took over), ``note`` (progress for
people), ``reconfigure`` (a resume crossed a fingerprint difference) and any
record of an unknown protocol id marked ``optional`` (a reader may skip it).
Every other record, including ``meta``, is significant: a run resumed after a
terminal (a follow-up, a new turn, an answer, a deferral, an approval) is open
again.

So a listing needs only the meta and the last significant record, never a
fold of the whole journal, and it reports the same status fold does because
both call ``is_inert_kind`` and ``status_of`` from here (the original design
let its two backends disagree).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol

from runjournal.v1.records_pb2 import JournalRecord, Meta, Terminal, TerminalReason
from runjournal.v1.state_pb2 import RunStatus, RunSummary
from runjournal_server.core.kinds import READABLE_FORMAT_VERSIONS, Kind, readable_versions

INERT_FOR_STATUS: frozenset[str] = frozenset({Kind.CLAIM, Kind.NOTE, Kind.RECONFIGURE, Kind.COMPACTION})
"""Known protocol ids that never change a run's status. Unknown optional ids are inert too."""

TERMINAL_STATUS: Mapping[TerminalReason, RunStatus] = MappingProxyType(
    {
        TerminalReason.TERMINAL_REASON_COMPLETED: RunStatus.RUN_STATUS_COMPLETED,
        TerminalReason.TERMINAL_REASON_SUSPENDED: RunStatus.RUN_STATUS_SUSPENDED,
        TerminalReason.TERMINAL_REASON_ERROR: RunStatus.RUN_STATUS_ERROR,
        TerminalReason.TERMINAL_REASON_BUDGET: RunStatus.RUN_STATUS_BUDGET,
        TerminalReason.TERMINAL_REASON_MAX_ITERATIONS: RunStatus.RUN_STATUS_MAX_ITERATIONS,
        TerminalReason.TERMINAL_REASON_CANCELLED: RunStatus.RUN_STATUS_CANCELLED,
    }
)
"""The run status each terminal reason gives while its record describes the run."""


class StoredLike(Protocol):
    """What the status rule and fold read from a stored record (``records.StoredRecord``)."""

    @property
    def seq(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def optional(self) -> bool: ...

    @property
    def record(self) -> JournalRecord | None: ...


def is_inert_kind(kind: str, *, known: bool = True, optional: bool = False) -> bool:
    """True when a record of protocol id ``kind`` leaves the run's status as it was.

    ``known`` is False for a protocol id this server does not know; such a
    record is inert when ``optional`` (skipping it is allowed) and significant
    otherwise (fold refuses it, so the listing reports the run corrupt).
    """
    if not known:
        return optional
    return kind in INERT_FOR_STATUS


def is_inert(stored: StoredLike) -> bool:
    """The listing rule for one stored record; ``record`` is None for an unknown protocol id."""
    return is_inert_kind(stored.kind, known=stored.record is not None, optional=stored.optional)


def status_of(terminal: Terminal | None) -> RunStatus:
    """The status a run has when ``terminal`` describes it (None: no terminal does, so open).

    Raises ``ValueError`` for a terminal reason with no status (unspecified, or
    from a newer schema); fold refuses such a record.
    """
    if terminal is None:
        return RunStatus.RUN_STATUS_OPEN
    status = TERMINAL_STATUS.get(terminal.reason)
    if status is None:
        raise ValueError(f"terminal reason {terminal.reason} has no run status")
    return status


def summarize(run_id: str, meta: Meta, last_significant_record: JournalRecord | None, last_seq: int) -> RunSummary:
    """The listing entry of a run from its meta and its last non-inert record.

    ``last_significant_record`` is the last record for which ``is_inert`` is
    false (the meta record itself, or None, when every later record is
    inert). A terminal there gives its status and message; anything else
    gives ``RUN_STATUS_OPEN``. A journal format version this server does not
    read, or a terminal reason with no status, gives a corrupt summary: fold
    would refuse the run too.
    """
    if meta.format_version not in READABLE_FORMAT_VERSIONS:
        return corrupt_summary(
            run_id,
            f"journal format version {meta.format_version}; this server reads {readable_versions()}",
        )
    terminal = None
    if last_significant_record is not None and last_significant_record.WhichOneof("payload") == Kind.TERMINAL:
        terminal = last_significant_record.terminal
    try:
        status = status_of(terminal)
    except ValueError as err:
        assert last_significant_record is not None
        return corrupt_summary(run_id, f"seq {last_significant_record.seq}: {err}")
    summary = RunSummary(
        run_id=run_id,
        status=status,
        task_id=meta.task_id,
        model=meta.fingerprint.model,
        last_seq=last_seq,
        terminal_message=terminal.message if terminal is not None else "",
    )
    if meta.HasField("created_at"):
        summary.created_at.CopyFrom(meta.created_at)
    summary.labels.update(meta.labels)
    summary.parent_run_id = meta.forked_from.run_id
    summary.spawned_by_run_id = meta.spawned_by.run_id
    summary.root_run_id = meta.spawned_by.root_run_id
    return summary


def summarize_stored(run_id: str, meta: StoredLike, last_significant: StoredLike, last_seq: int) -> RunSummary:
    """``summarize`` for stored records, as a backend reads them (``RunEnds``).

    A last significant record of an unknown protocol id is not optional (an
    optional one would be inert), so fold refuses the run: it is listed as
    corrupt. So is a first record that is not a meta.
    """
    if meta.record is None or meta.record.WhichOneof("payload") != Kind.META:
        return corrupt_summary(run_id, f"seq {meta.seq}: the first record is {meta.kind!r}, not 'meta'")
    if last_significant.record is None:
        return corrupt_summary(
            run_id,
            f"seq {last_significant.seq}: unknown protocol id {last_significant.kind!r} is not optional",
        )
    return summarize(run_id, meta.record.meta, last_significant.record, last_seq)


def corrupt_summary(run_id: str, problem: str) -> RunSummary:
    """The listing entry of a run whose journal cannot be read: listed, never hidden."""
    return RunSummary(run_id=run_id, status=RunStatus.RUN_STATUS_CORRUPT, corruption=problem)


def unavailable_summary(run_id: str, problem: str) -> RunSummary:
    """The listing entry of a run the store could not read this time: listed, never hidden, never fatal."""
    return RunSummary(run_id=run_id, status=RunStatus.RUN_STATUS_UNAVAILABLE, corruption=problem)

"""Where a run's records live in the stream, how a write is fenced on them, and what a subject means.

Every subject the backend builds or parses, and every fence header it sends,
comes from here.

For run ``R`` under the subject prefix ``P`` the meta (seq 1) is the message
on ``P.R.meta`` and the record with seq ``N >= 2`` the message on ``P.R.N``.
A deleted run's tombstone is ``P.R.deleted``: inside the run's subjects, so
the fences over ``P.R.>`` (creation, deletion) see it. While the remains of
a creation that never committed are cleared, ``P.R.clearing`` marks it
(``clearing.py``), inside them for the same reason.
Run ids hold no '.', so the subjects of one run never include another's.
Task documents live on ``P._tasks.<task>.<kind>`` (``tasks.py``); no run id
starts with ``_``, and they have a token more, so they never fall under a
run's subjects, the listing's filter or the feed's.

**Fences.** Every write of the backend expects what it lands on
(``write_headers``): ``Nats-Expected-Last-Subject-Sequence`` = the stream
seq of the last message on ``...-Subject`` (0: no message there), which may
be one subject (an append fenced on the record before it, a task document on
its own subject) or a wildcard (a creation, a staged creation and a
tombstone fenced over ``P.R.>``). The stream refuses the write when anything
else was stored there since, so of two writers exactly one lands.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from runjournal_server.backends.jetstream.api import (
    HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE,
    HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT,
    HEADER_EXPECTED_STREAM,
    HEADER_MSG_ID,
    HEADER_STAGED,
)
from runjournal_server.core.ids import is_valid_run_id
from runjournal_server.core.records import StoredRecord

META_TOKEN = "meta"
TOMBSTONE_TOKEN = "deleted"
CLEARING_TOKEN = "clearing"
TASKS_TOKEN = "_tasks"
DEFAULT_SUBJECT_PREFIX = "runjournal"
_SEQ_TOKEN = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class Fence:
    """What a write expects: the last message on ``subject`` (or on a wildcard) is at ``stream_seq`` (0: none)."""

    subject: str
    stream_seq: int


def write_headers(
    stream: str, *, fence: Fence | None = None, msg_id: str | None = None, staged: bool = False
) -> dict[str, str]:
    """The headers of a write to ``stream``: fenced on ``fence``, carrying ``msg_id`` where given, marked ``staged``.

    A message of an atomic batch carries no id (nats-server 2.12 refuses
    them) and, after the first, no fence (the server allows it only where no
    earlier message of the batch writes its subject): it relies on its
    write-once subject.
    """
    headers = {HEADER_EXPECTED_STREAM: stream}
    if staged:
        headers[HEADER_STAGED] = "1"
    if msg_id is not None:
        headers[HEADER_MSG_ID] = msg_id
    if fence is not None:
        headers[HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE] = str(fence.stream_seq)
        headers[HEADER_EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT] = fence.subject
    return headers


@dataclass(frozen=True)
class Layout:
    """Where a run's records live: ``<prefix>.<run>.meta`` and ``<prefix>.<run>.<seq>``."""

    prefix: str

    def subject(self, run_id: str, seq: int) -> str:
        return f"{self.prefix}.{run_id}.{META_TOKEN if seq == 1 else seq}"

    def run_subjects(self, run_id: str) -> str:
        """Every subject of one run (run ids hold no '.', so the fence cannot widen to another run)."""
        return f"{self.prefix}.{run_id}.>"

    def run_fence(self, run_id: str, stream_seq: int = 0) -> Fence:
        """A fence over every subject of the run: its last message is at ``stream_seq`` (0: it has none)."""
        return Fence(self.run_subjects(run_id), stream_seq)

    def records(self) -> str:
        """Every record and tombstone subject of every run (``<prefix>.<run>.<token>``): the feed's filter."""
        return f"{self.prefix}.*.*"

    def metas(self) -> str:
        """The meta subject of every run: the listing's filter."""
        return f"{self.prefix}.*.{META_TOKEN}"

    def tombstone(self, run_id: str) -> str:
        return f"{self.prefix}.{run_id}.{TOMBSTONE_TOKEN}"

    def clearing(self, run_id: str) -> str:
        """The subject marking a clearing of the run's remains under way (``clearing.py``)."""
        return f"{self.prefix}.{run_id}.{CLEARING_TOKEN}"

    def tombstones(self) -> str:
        """The tombstone subject of every deleted run."""
        return f"{self.prefix}.*.{TOMBSTONE_TOKEN}"

    def run_of_tombstone(self, subject: str) -> str | None:
        run_id = subject.removeprefix(f"{self.prefix}.").removesuffix(f".{TOMBSTONE_TOKEN}")
        return run_id if is_valid_run_id(run_id) and self.tombstone(run_id) == subject else None

    def seq_of(self, run_id: str, subject: str) -> int | None:
        """The seq a subject of ``run_id`` holds, or None for a subject no record may have."""
        token = subject.removeprefix(f"{self.prefix}.{run_id}.")
        if token == subject:
            return None
        if token == META_TOKEN:
            return 1
        if _SEQ_TOKEN.fullmatch(token) and int(token) >= 2:
            return int(token)
        return None

    def run_of_meta(self, subject: str) -> str | None:
        run_id = subject.removeprefix(f"{self.prefix}.").removesuffix(f".{META_TOKEN}")
        return run_id if is_valid_run_id(run_id) and self.subject(run_id, 1) == subject else None

    def record_of(self, subject: str) -> tuple[str, int] | None:
        """The run and seq a record subject holds; None for any other subject (a tombstone's, a stray one)."""
        run_id = subject.removeprefix(f"{self.prefix}.").partition(".")[0]
        if not is_valid_run_id(run_id):
            return None
        seq = self.seq_of(run_id, subject)
        return None if seq is None else (run_id, seq)

    def task(self, task_id: str, kind: str) -> str:
        """The subject of one of a task's documents (``kind``: request, outcome, deleted)."""
        if not is_valid_run_id(task_id):  # never build a subject from an unchecked id
            raise ValueError(f"invalid task id {task_id!r}")
        return f"{self.prefix}.{TASKS_TOKEN}.{task_id}.{kind}"

    def tasks(self, kind: str) -> str:
        """The subjects of every task's document of ``kind``."""
        return f"{self.prefix}.{TASKS_TOKEN}.*.{kind}"

    def task_of(self, subject: str, kind: str) -> str | None:
        """The task whose ``kind`` document ``subject`` is; None for any other subject."""
        task_id = subject.removeprefix(f"{self.prefix}.{TASKS_TOKEN}.").removesuffix(f".{kind}")
        return task_id if is_valid_run_id(task_id) and self.task(task_id, kind) == subject else None


def message_id(run_id: str, stored: StoredRecord) -> str:
    """Deterministic per (run, seq, body): a retry of the same record has the same id."""
    return f"{run_id}/{stored.seq}/{hashlib.sha256(stored.line).hexdigest()[:32]}"


def not_a_record(subject: str) -> str:
    return f"the stream holds a message on {subject!r}, not a record subject (published outside runjournal)"


def subject_problem(layout: Layout, run_id: str, subjects: Sequence[str], top: int) -> tuple[str, int | None] | None:
    """What is wrong with a run's subjects whose last record is ``top``, with its seq.

    A healthy run holds exactly the subjects of seqs 1..top. A malformed
    subject is reported first, then a record subject above ``top`` (stored
    before the last record, so not by runjournal), then the first seq
    missing below the highest one listed. ``subjects`` is listed before
    ``top`` is read, so records appended in between are above every listed
    one and are no gap: a seq is missing only where the list holds a later
    record.
    """
    seqs = {subject: layout.seq_of(run_id, subject) for subject in subjects}
    for subject, seq in sorted(seqs.items()):
        if seq is None:
            return not_a_record(subject), None
    for subject, seq in sorted(seqs.items(), key=lambda item: item[1] or 0):
        if seq is not None and seq > top:
            return (
                f"the stream holds a message on {subject!r} stored before the run's last record (seq {top}): "
                "published outside runjournal",
                seq,
            )
    present = set(seqs.values())
    listed_top = max((seq for seq in present if seq is not None), default=0)
    missing = next((seq for seq in range(1, listed_top) if seq not in present), None)
    if missing is not None:
        later = next(subject for subject, seq in seqs.items() if seq == listed_top)
        return f"seq {missing} is missing, but the stream holds a later message on {later!r}", missing
    return None

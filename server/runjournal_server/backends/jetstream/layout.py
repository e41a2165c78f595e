"""Where a run's records live in the stream, and what a subject that breaks the layout means.

For run ``R`` under the subject prefix ``P`` the meta (seq 1) is the message
on ``P.R.meta`` and the record with seq ``N >= 2`` the message on ``P.R.N``.
A deleted run's tombstone is ``P.R.deleted``: inside the run's subjects, so
the fences over ``P.R.>`` (creation, deletion) see it.
Run ids hold no '.', so the subjects of one run never include another's.
Task documents live under ``P._tasks.`` (``tasks.py``); no run id starts with
``_``, so they never fall under a run's subjects or the listing's filter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from runjournal_server.core.ids import is_valid_run_id
from runjournal_server.core.records import StoredRecord

META_TOKEN = "meta"
TOMBSTONE_TOKEN = "deleted"
DEFAULT_SUBJECT_PREFIX = "runjournal"
_SEQ_TOKEN = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class Layout:
    """Where a run's records live: ``<prefix>.<run>.meta`` and ``<prefix>.<run>.<seq>``."""

    prefix: str

    def subject(self, run_id: str, seq: int) -> str:
        return f"{self.prefix}.{run_id}.{META_TOKEN if seq == 1 else seq}"

    def run_subjects(self, run_id: str) -> str:
        """Every subject of one run (run ids hold no '.', so the fence cannot widen to another run)."""
        return f"{self.prefix}.{run_id}.>"

    def metas(self) -> str:
        """The meta subject of every run: the listing's filter."""
        return f"{self.prefix}.*.{META_TOKEN}"

    def tombstone(self, run_id: str) -> str:
        return f"{self.prefix}.{run_id}.{TOMBSTONE_TOKEN}"

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


def message_id(run_id: str, stored: StoredRecord) -> str:
    """Deterministic per (run, seq, body): a retry of the same record has the same id."""
    return f"{run_id}/{stored.seq}/{hashlib.sha256(stored.line).hexdigest()[:32]}"


def not_a_record(subject: str) -> str:
    return f"the stream holds a message on {subject!r}, not a record subject (published outside runjournal)"


def subject_problem(
    layout: Layout, run_id: str, subjects: Sequence[str], top: int, top_subject: str
) -> tuple[str, int | None] | None:
    """What is wrong with a run's subjects whose last record is ``top`` (on ``top_subject``), with its seq.

    A healthy run holds exactly the subjects of seqs 1..top. A malformed
    subject is reported first, then a record subject above ``top`` (stored
    before the last record, so not by runjournal), then the first seq
    missing below it.
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
    missing = next((seq for seq in range(1, top) if seq not in present), None)
    if missing is not None:
        return f"seq {missing} is missing, but the stream holds a later message on {top_subject!r}", missing
    return None

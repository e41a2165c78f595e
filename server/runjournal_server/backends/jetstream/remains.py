"""What a run's subjects hold when they hold no meta: the remains of a creation that never committed, or damage.

A run is its meta (``staging.py``). Subjects of a run that hold neither its
meta nor its tombstone are one of two things, and the rule is stated here once:

* **The remains of a creation that never committed**, provably: records
  2..k on their subjects, no gap and nothing else, each stored by a staged
  creation (it carries ``HEADER_STAGED``, which only a stage sends: a
  commit, an append or a migrated copy never do); or a clearing of such
  remains under way (its marker, ``clearing.py``). A stage is fenced on
  the run holding only staged records, so nothing but a staged record is
  stored below one: a last message that carries the mark speaks for those
  before it to a reader, while a clearing, which deletes, checks every
  one. Readers find no run there (RUN_NOT_FOUND); the next creation of
  the id clears them, or resumes them when they are its own records
  (``staging.py``).
* **Anything else**: a meta erased by hand, messages published outside
  runjournal, a staging by a version that did not mark its stages. Not a
  run, and not provably a creation's, so runjournal neither reads nor
  clears it: every call about the id, a creation included, is
  CORRUPT_JOURNAL naming the subjects, for an operator to restore the
  meta or purge them. Never RUN_NOT_FOUND, which would tell a creator to
  do what just failed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from runjournal_server.backends.jetstream.layout import Layout

NAMED_SUBJECTS = 8
"""How many subjects the CORRUPT_JOURNAL message names (the first ones and the last)."""


def is_creation_remains(layout: Layout, run_id: str, subjects: Collection[str], staged: Iterable[bool]) -> bool:
    """True when ``subjects`` (a run's, without its meta or tombstone) are what an uncommitted creation leaves.

    ``staged`` says, for the messages looked at, whether each carries the
    staging mark: the last one for a reader, every one for a clearing.
    """
    if layout.clearing(run_id) in subjects:
        return True
    seqs = [layout.seq_of(run_id, subject) for subject in subjects]
    if not seqs or None in seqs:
        return False
    present = sorted(seq for seq in seqs if seq is not None)
    return present == list(range(2, present[-1] + 1)) and all(staged)


def no_meta_problem(layout: Layout, run_id: str, subjects: Collection[str]) -> str:
    """The CORRUPT_JOURNAL problem of a run's subjects holding messages but no meta, naming them."""

    def order(subject: str) -> tuple[bool, int, str]:
        seq = layout.seq_of(run_id, subject)
        return seq is None, seq or 0, subject

    ordered = sorted(subjects, key=order)
    if len(ordered) > NAMED_SUBJECTS:
        skipped = len(ordered) - NAMED_SUBJECTS
        names = [repr(s) for s in ordered[: NAMED_SUBJECTS - 1]] + [f"... {skipped} more ...", repr(ordered[-1])]
    else:
        names = [repr(subject) for subject in ordered]
    return (
        f"the stream holds {len(ordered)} message(s) on the run's subjects but not its meta "
        f"({layout.subject(run_id, 1)!r}): {', '.join(names)}. They are not the remains of a creation that "
        "never committed (runjournal marks those), so they are neither read nor cleared: was the meta erased "
        f"by hand, or were they published outside runjournal? Restore the meta, or purge "
        f"{layout.run_subjects(run_id)!r} to free the id"
    )

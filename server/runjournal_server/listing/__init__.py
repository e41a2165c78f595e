"""The listing of runs: which runs match, their pages newest first, and the index that finds them fast.

* ``filter`` — ``RunFilter``, the one statement of what a listing matches
  (ListRuns, WatchRuns, retention), the token's run-id prefixes included.
* ``pages`` — ``RunListing``: one run's summary (the listing rule, read from
  its journal), and the pages: by sort key (``page_after``, which WatchRuns
  walks) and by page token (``page``, ListRuns), each filled by one helper
  whether the index or a read of every run chooses the candidates.
* ``index`` — ``ListingIndex``: every run's place in the newest-first order
  and its last known state, in memory; it chooses candidates, never what a
  listed run says.
* ``upkeep`` — ``ListingUpkeep``: keeps the index true: news of writes and
  deletions, the repair at start, the background ticks, the barrier on a
  shared store.
* ``reads`` — ``IndexReads``: the upkeep's reads of the journals (placing
  runs, reading dirty states again, filling labels) and the changes they make.
* ``persistence`` — ``IndexPersistence``: the persisted copy (files on a
  thread of their own, or a shared store's snapshot), its load, log and
  compaction, and the guard against a second process on one data directory.

Within the package, ``pages`` imports ``upkeep``, which imports ``reads``
and ``persistence``; ``upkeep``, ``reads`` and ``pages`` import ``index``;
``index`` and ``filter`` import nothing of it. Below them: ``runs``, the backends and the core.
"""

"""The file backend: one ``<run>.jsonl`` journal and one ``<run>.lock`` per run, in one directory.

A module per idea:

* ``backend.py``: ``FileBackend``, the contract's async surface: every
  blocking call in the executor, cancellation that leaks no lock, the
  lock-free reads that start over when a journal shrinks;
* ``directory.py``: where a run's files are, and its writer lock (``flock``);
* ``opening.py``: creating and opening a run under its lock (torn-tail repair);
* ``journal.py``: ``FileJournal``, an open journal: appends, rollback, poisoning;
* ``group_commit.py``, ``commit_log.py``: appends of many runs made durable
  by one fsync of a shared log, and its replay after a crash;
* ``intent.py``: the batch intent, the rule that makes a batch of several
  lines all-or-nothing across a crash;
* ``reading.py``: the scan, the backward walk (ends, tail), the meta and the
  stream cursor; torn tails and damage;
* ``lines.py``: reading lines from either end a chunk at a time;
* ``files.py``: opening (never following links), writing and reading files,
  and ``OSError`` translation;
* ``tombstones.py``: deleting a run: its tombstone first, then its files;
* ``tasks.py``: ``FileTaskStore``, the task documents beside the journals;
* ``index_store.py``: the listing index's files beside the journals.

See docs/file-backend.md for the whole story; the contract is in ``backends/base.py``.
"""

from __future__ import annotations

from runjournal_server.backends.file.backend import FileBackend
from runjournal_server.backends.file.files import JOURNAL_SUFFIX, LOCK_SUFFIX
from runjournal_server.backends.file.intent import INTENT_BYTES
from runjournal_server.backends.file.journal import FileJournal
from runjournal_server.backends.file.lines import CHUNK_BYTES, STREAM_CHUNK_BYTES

__all__ = [
    "CHUNK_BYTES",
    "INTENT_BYTES",
    "JOURNAL_SUFFIX",
    "LOCK_SUFFIX",
    "STREAM_CHUNK_BYTES",
    "FileBackend",
    "FileJournal",
]

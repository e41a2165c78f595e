"""Journal records as stored (``StoredRecord``), for the tests of the backends.

A backend stores, compares and hands back a record's exact bytes
(``StoredRecord.line``), so its tests give it encoded records and compare
lines. Each builder here is a record of ``builders.py``, with the same
defaults, put through the server's one encoder (``core.records.encode``): no
test builds a stored record by hand, and equal arguments give equal bytes.

- ``meta``, ``assistant``, ``note``, ``claim``: one record each;
- ``turns``, ``notes``: one record per seq of a range.

Any other kind is ``encode(builders.<kind>(...))`` in the test itself.
"""

from __future__ import annotations

from runjournal_server.core.records import StoredRecord, encode
from tests.support import builders as b


def meta(run_id: str = b.RUN_ID, prompt: str = "hello", *, model: str = "claude-x") -> StoredRecord:
    """The meta of ``run_id``; ``prompt`` or ``model`` tell two metas of one run apart."""
    return encode(b.meta(run_id=run_id, prompt=prompt, fp=b.fingerprint(model=model)))


def assistant(seq: int, say: str = "") -> StoredRecord:
    """An assistant turn without calls at ``seq``, its iteration ``seq - 1`` (as when every turn follows the last)."""
    return encode(b.assistant(seq, seq - 1, say=say))


def turns(first: int, last: int) -> list[StoredRecord]:
    """Assistant turns for seqs ``first``..``last``."""
    return [assistant(seq) for seq in range(first, last + 1)]


def note(seq: int, say: str = "progress") -> StoredRecord:
    return encode(b.note(seq, say))


def notes(first: int, last: int, size: int = 10) -> list[StoredRecord]:
    """Notes for seqs ``first``..``last``, each text ``size`` characters long."""
    return [note(seq, "n" * size) for seq in range(first, last + 1)]


def claim(seq: int, worker: str = "worker-2") -> StoredRecord:
    return encode(b.claim(seq, worker))

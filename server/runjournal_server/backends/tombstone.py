"""The tombstone of a deleted run: what is kept of it, and its one stored document.

Every backend keeps a deleted run's tombstone so that its id is never used
again (RUN_DELETED): the file backend as ``deleted/<run>.json``, JetStream as
the message on the run's ``deleted`` subject. Both store the same bytes,
built and read here once: a JSON object of ``run_id``, ``last_seq`` and
``deleted_at``, keys sorted. A tombstone that cannot be read is
STORAGE_UNAVAILABLE and never "not deleted": a damaged tombstone must not
let the id be written again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from runjournal_server.core.errors import StorageUnavailableError


@dataclass(frozen=True)
class Tombstone:
    """What is kept of a deleted run, so that its id is never used again (RUN_DELETED)."""

    run_id: str
    last_seq: int
    """The run's last seq when it was deleted."""
    deleted_at: float
    """When, in seconds since the epoch."""


def encode_tombstone(tombstone: Tombstone) -> bytes:
    """The stored document: the same bytes on every backend."""
    fields = {"run_id": tombstone.run_id, "last_seq": tombstone.last_seq, "deleted_at": tombstone.deleted_at}
    return json.dumps(fields, sort_keys=True).encode()


def decode_tombstone(run_id: str, data: bytes, where: str) -> Tombstone:
    """The tombstone ``data`` holds; damage is STORAGE_UNAVAILABLE naming ``where`` (the run stays deleted)."""
    try:
        fields = json.loads(data)
        return Tombstone(str(fields["run_id"]), int(fields["last_seq"]), float(fields["deleted_at"]))
    except (ValueError, KeyError, TypeError) as err:
        raise StorageUnavailableError(
            run_id, f"the tombstone {where} is damaged ({err}); the run stays deleted"
        ) from err

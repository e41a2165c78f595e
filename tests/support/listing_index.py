"""Damage to a persisted listing index, as a bit flip on disk or in a bucket would do it."""

from __future__ import annotations

import json

from runjournal_server.backends.index_store import COLUMNS


def flip_a_status(data: bytes, run_id: str, was: int, becomes: int) -> bytes:
    """``data`` (checked lines) with ``run_id``'s status changed: still valid JSON, under the old CRC."""
    lines = data.split(b"\n")
    at = next(number for number, line in enumerate(lines) if f'"{run_id}"'.encode() in line)
    crc, _, body = lines[at].partition(b" ")
    kind, columns = json.loads(body)
    row = columns[COLUMNS.index("run_id")].index(run_id)
    statuses = columns[COLUMNS.index("status")]
    assert statuses[row] == was, f"{run_id} has status {statuses[row]}, not {was}"
    statuses[row] = becomes
    lines[at] = crc + b" " + json.dumps([kind, columns], separators=(",", ":")).encode()
    return b"\n".join(lines)

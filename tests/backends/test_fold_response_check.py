"""A warm Fold (and a Claim) checks its answer's size from the stored bytes folded, not from their memory cost.

The state is never more than twice the stored bytes folded into it
(``runs/response_limit.py``), so a run well inside the send limit is answered
from one snapshot; only a run near the limit pays for a second one, built to
measure it. Counted by the snapshots taken, never by timing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records
from runjournal_server.core.folded import FoldedRun
from runjournal_server.runs.handles import WARM_BYTES_PER_STORED_BYTE
from runjournal_server.runs.response_limit import RESPONSE_SLACK_BYTES
from runjournal_server.runs.runs import Runs
from tests.support import builders as b

NOTE_CHARS = 10_000


@pytest.mark.parametrize("operation", ["fold", "claim"])
async def test_an_answer_from_the_warm_state_well_inside_the_limit_takes_one_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    run = [b.meta(run_id="r"), *[b.note(seq, "x" * NOTE_CHARS) for seq in range(2, 12)]]
    stored = sum(len(records.encode(record).line) for record in run)
    limit = int(2.5 * stored) + RESPONSE_SLACK_BYTES  # fits twice the stored bytes, not twice their memory cost
    assert 2 * WARM_BYTES_PER_STORED_BYTE * stored + RESPONSE_SLACK_BYTES > limit
    backend = FileBackend(tmp_path)
    await backend.start()
    runs = Runs(
        backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=100, max_response_bytes=limit
    )
    snapshots = 0
    snapshot = FoldedRun.state

    def counted(self: FoldedRun, **options: object) -> object:
        nonlocal snapshots
        snapshots += 1
        return snapshot(self, **options)  # type: ignore[arg-type]

    try:
        await runs.append("r", 0, run)
        await runs.fold("r")  # warm
        monkeypatch.setattr(FoldedRun, "state", counted)
        if operation == "fold":
            assert (await runs.fold("r")).last_seq == len(run)
        else:
            outcome = await runs.claim(
                "r", worker_id="w", host="h", pid=1, reason="", fingerprint=b.fingerprint(), force=False
            )
            assert outcome.claim_token == len(run) + 1
        assert snapshots == 1
    finally:
        await runs.close()
        await backend.close()

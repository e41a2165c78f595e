"""runs.py on a real file backend: a cold Claim or Answer reads and folds the journal once."""

from __future__ import annotations

from pathlib import Path

import pytest

from runjournal_server.backends.file import FileBackend
from runjournal_server.core import records
from runjournal_server.runs import handles as handles_module
from runjournal_server.runs.runs import Runs
from tests.support import builders as b


async def write_run(data_dir: Path, run_id: str) -> None:
    backend = FileBackend(data_dir)
    await backend.start()
    batch = [b.meta(run_id=run_id), b.assistant(2, 1, ["c1", "c2"]), b.result(3, "c1"), b.deferral(4, "c2")]
    stored = [records.encode(r) for r in batch]
    journal = await backend.create_journal(run_id, stored[0])
    await journal.append(stored[1:])
    await backend.close()


@pytest.mark.parametrize("operation", ["claim", "answer"])
async def test_a_cold_write_folds_the_journal_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str):
    await write_run(tmp_path, "cold-run")
    folds = []
    real_fold = handles_module.fold_stored

    def counting(stored):
        folds.append(len(stored))
        return real_fold(stored)

    monkeypatch.setattr(handles_module, "fold_stored", counting)
    backend = FileBackend(tmp_path)
    await backend.start()
    runs = Runs(backend, max_record_bytes=records.DEFAULT_MAX_RECORD_BYTES, max_open_journals=8)
    if operation == "claim":
        outcome = await runs.claim(
            "cold-run", worker_id="w", host="h", pid=1, reason="", fingerprint=b.fingerprint(), force=False
        )
        assert outcome.claim_token == 5
    else:
        assert await runs.answer("cold-run", "c2", [b.text("42")], False) == 5
    assert folds == [4]  # the lock-free read's fold became the warm state
    state = await runs.fold("cold-run")
    assert state.last_seq == 5
    await runs.close()
    await backend.close()

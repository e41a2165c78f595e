# GENERATED from client/python/runjournal/_run_aio.py by scripts/generate.py: do not edit by hand.
# Edit _run_aio.py and run `python scripts/generate.py`; CI fails when this file differs.
"""The synchronous run handle, ``Run`` (exported by ``runjournal.run``)."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Mapping, Sequence

from runjournal._run_base import CREATOR_CLAIM_TOKEN, RunPosition, RunRecords, creation_meta
from runjournal.client import JournalClient
from runjournal.v1 import records_pb2, state_pb2


class Run(RunRecords[int]):
    """A synchronous run handle. Build it with ``Run.create`` or ``Run.claim``.

    Appends run one at a time, in the order they are made, each at the next seq.
    """

    def __init__(self, client: JournalClient, position: RunPosition) -> None:
        self.client = client
        self._position = position
        self._lock = threading.Lock()

    @classmethod
    def create(
        cls,
        client: JournalClient,
        run_id: str,
        fingerprint: records_pb2.Fingerprint,
        prompt_text: str | None = None,
        *,
        prompt_blocks: Sequence[records_pb2.ContentBlock] | None = None,
        labels: Mapping[str, str] | None = None,
        interactive: bool = False,
        task_id: str = "",
        created_at: datetime.datetime | None = None,
    ) -> Run:
        """Creates the run by appending its meta at seq 1; the creator's claim token is 1.

        ``created_at`` defaults to now; pass the same value to make a repeated
        ``create`` a verified duplicate instead of ``RunExistsError``.
        """
        meta = creation_meta(run_id, fingerprint, prompt_text, prompt_blocks, labels, interactive, task_id, created_at)
        response = client.append(run_id, CREATOR_CLAIM_TOKEN, meta)
        return cls(client, RunPosition.created(run_id, response))

    @classmethod
    def claim(
        cls,
        client: JournalClient,
        run_id: str,
        worker_id: str,
        fingerprint: records_pb2.Fingerprint,
        force: bool = False,
        *,
        reason: str = "",
    ) -> Run:
        """Claims the run; ``state``, ``gate`` and ``resume_reminder`` come from the claim."""
        response = client.claim(run_id, worker_id, fingerprint, force=force, reason=reason)
        return cls(client, RunPosition.claimed(run_id, response))

    def fold(self) -> state_pb2.RunState:
        """Folds the run now and keeps the result as ``state``."""
        state = self.client.fold(self.run_id)
        self._position.state = state
        return state

    def _append(self, draft: records_pb2.JournalRecord) -> int:
        return self._append_now(draft)

    def _append_batch(self, drafts: Sequence[records_pb2.JournalRecord]) -> int:
        return self._append_batch_now(drafts)

    def _append_now(self, draft: records_pb2.JournalRecord) -> int:
        with self._lock:
            record = self._position.place(draft)
            response = self.client.append(self.run_id, self.claim_token, record)
            return self._position.appended(response.seq)

    def _append_batch_now(self, drafts: Sequence[records_pb2.JournalRecord]) -> int:
        with self._lock:
            records = self._position.place_batch(drafts)
            response = self.client.append_batch(self.run_id, self.claim_token, records)
            return self._position.appended(response.first_seq + len(records) - 1)

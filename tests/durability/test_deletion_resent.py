"""A DeleteRun resent after its answer was lost, whose check misses the tombstone, answers the deletion.

Found by the cluster fault suite: during a failover the first attempt's tombstone landed but its answer
was lost; the resend, through the other replica, read "no tombstone" from a NATS node behind the stream,
then read the run's last message from an up-to-date one: the tombstone, which is no record, so the retry
was answered CORRUPT_JOURNAL. The backend's deletion step is called here as it was then: on a run whose
tombstone is stored, as if the check before it had not seen it (a real nats-server; no cluster needed).
"""

from __future__ import annotations

import time

import pytest

from runjournal_server.backends.jetstream.backend import JetStreamBackend
from tests.conftest import new_stream_target
from tests.support import encoded

pytestmark = [pytest.mark.jetstream, pytest.mark.timeout(60)]


async def test_a_deletion_whose_check_missed_the_tombstone_answers_it_as_a_retry(nats_server: object) -> None:
    target = new_stream_target()
    backend = JetStreamBackend(
        [nats_server.url],  # type: ignore[attr-defined]
        stream=target.name,
        subject_prefix=target.prefix,
        create_stream=True,
    )
    await backend.start()
    try:
        journal = await backend.create_journal("deleted-once", encoded.meta("deleted-once"), encoded.notes(2, 3))
        await journal.close()
        first = await backend.delete_run("deleted-once", 3)
        assert first.deleted
        tombstone, deleted = await backend._delete("deleted-once", 3, time.time())  # the check saw no tombstone
        assert (tombstone.last_seq, deleted) == (3, False)
    finally:
        await backend.close()

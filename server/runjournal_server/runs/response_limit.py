"""The largest answer the server sends: a state that would not fit is refused before anything is written."""

from __future__ import annotations

from runjournal_server.core.errors import ResponseTooLargeError
from runjournal_server.core.fold import Folder

RESPONSE_SLACK_BYTES = 16 * 1024
"""Room kept in a response for what surrounds the state (framing, the gate report's strings, the reminder)."""


class ResponseLimit:
    """``max_bytes`` is the server's send limit; None (in-process use) keeps no limit."""

    def __init__(self, max_bytes: int | None) -> None:
        self._max_bytes = max_bytes

    def check_state(
        self,
        run_id: str,
        folder: Folder,
        folded_bytes: int,
        conversation_from: int,
        extra_bytes: int = 0,
        *,
        uncompacted: bool = False,
    ) -> None:
        """Refuse with RESPONSE_TOO_LARGE when the state (from ``conversation_from``) would not fit.

        Cheap for most runs: a state never holds more than twice the stored
        bytes folded into it (its messages are the records' payloads, in the
        wire format, which is never longer than their JSON; the pending batch
        repeats the last turn's calls; a compaction's summary is one of those
        payloads), so only a run near the limit pays for
        building the state once to measure it.
        """
        limit = self._max_bytes
        if limit is None or 2 * folded_bytes + extra_bytes + RESPONSE_SLACK_BYTES <= limit:
            return
        state = folder.state(conversation_from=conversation_from, uncompacted=uncompacted)
        self.check_size(run_id, state.ByteSize() + extra_bytes)

    def check_size(self, run_id: str, size: int) -> None:
        """Refuse an answer of ``size`` bytes (plus the slack) that exceeds the limit."""
        if self._max_bytes is not None and size + RESPONSE_SLACK_BYTES > self._max_bytes:
            raise ResponseTooLargeError(run_id, size + RESPONSE_SLACK_BYTES, self._max_bytes)

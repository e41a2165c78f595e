"""Riding through a leader change: a write the stream cannot take now is published again, within a window.

While an R3 stream has no leader (an election takes about 6 s after its
leader dies or hangs), while the interest of a stream just created or just
re-led has not reached the node this replica talks to ("no responders"),
or while this replica reconnects, a publish gets no answer, or one that
says the stream cannot take it now, and the read-back finds nothing of ours
or cannot be made. Answering STORAGE_UNAVAILABLE at once would turn every
leader change into an error at the worker; so such a write is published
again, the very same messages, every ``PAUSE_SECONDS`` for up to
``WINDOW_TIMEOUTS`` request timeouts, or until the call is cancelled at its
deadline. Each writer's fence makes the resend safe: an earlier attempt that
landed after all refuses it, and the read-back then finds our bytes (an
append's verified duplicate, a creation's "the run exists", which ``runs/``
answers as a duplicate when it is the same meta).

The rule is stated here once; what counts as "not now" for a given write is
its module's (``journal.py`` for appends, ``creating.py`` and ``staging.py``
for creations), each raising ``NotNow``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from runjournal_server.backends.jetstream.api import ERR_INSUFFICIENT_RESOURCES, ERR_STORE_FAILED, ApiError
from runjournal_server.core.errors import StorageUnavailableError

WINDOW_TIMEOUTS = 4
"""How long a write is published again, in request timeouts: 20 s at the default 5 s, longer than an election
after a node dies or hangs (about 6 s, plus 1-2 s to leave a hung node)."""
PAUSE_SECONDS = 0.25

log = logging.getLogger("runjournal_server.backends.jetstream")

T = TypeVar("T")


class NotNow(Exception):
    """The stream could not take the write now, and nothing of it is known stored: publish it again.

    ``error`` is what the caller gets when the window runs out.
    """

    def __init__(self, error: StorageUnavailableError) -> None:
        super().__init__(str(error))
        self.error = error


def is_not_now(refusal: ApiError) -> bool:
    """A refusal that says "not now" (503: no leader, JetStream temporarily unavailable), not "never"."""
    return refusal.code == 503 and refusal.err_code not in (ERR_INSUFFICIENT_RESOURCES, ERR_STORE_FAILED)


async def ride_through(write: Callable[[], Awaitable[T]], request_timeout: float) -> T:
    """``write()``, again while it raises ``NotNow``, for up to ``WINDOW_TIMEOUTS`` request timeouts."""
    loop = asyncio.get_running_loop()
    window = WINDOW_TIMEOUTS * request_timeout
    deadline = loop.time() + window
    told = False
    while True:
        try:
            return await write()
        except NotNow as not_now:
            if loop.time() >= deadline:
                raise not_now.error from not_now.__cause__
            if not told:
                told = True
                log.info("%s; publishing again for up to %g s", not_now.error.message, window)
        await asyncio.sleep(PAUSE_SECONDS)

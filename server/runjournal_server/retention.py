"""Retention: delete the runs that stopped longer ago than a duration, a bounded number per pass.

Which runs is ListRuns' rule, not a second one: the ``stopped_before`` filter
(``listing.RunFilter``) admits a run whose status is a stop (completed,
suspended, error, ...; never open, corrupt or unavailable) and whose last
record was stored before the cutoff. Each is deleted with the last seq the
listing showed as ``expected_last_seq``, so a run that moved since it was
listed (a follow-up reopened it) is skipped by DeleteRun's own check, never
deleted unseen. A pass deletes at most ``max_deletions`` runs (one listing
page), so a backlog of a million old runs is worked off over many passes
without a pass ever holding the server up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from runjournal_server.core.errors import (
    InvalidArgumentError,
    JournalError,
    LastSeqMismatchError,
    RunDeletedError,
    RunNotFoundError,
)
from runjournal_server.core.page_token import MAX_PAGE_SIZE
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.runs import Runs

log = logging.getLogger(__name__)


class Retention:
    """Deletes runs stopped for longer than ``older_than_seconds``, ``max_deletions`` at most per ``tick``."""

    def __init__(
        self,
        runs: Runs,
        listing: RunListing,
        *,
        older_than_seconds: float,
        max_deletions: int,
        now: Callable[[], float] = time.time,
    ) -> None:
        if older_than_seconds <= 0 or max_deletions <= 0:
            raise ValueError("retention needs a positive duration and a positive number of deletions per pass")
        self._runs = runs
        self._listing = listing
        self._older_than = older_than_seconds
        self._max_deletions = max_deletions
        self._now = now

    async def tick(self) -> list[str]:
        """One pass: the runs it deleted."""
        where = RunFilter(stopped_before=self._now() - self._older_than)
        page, _ = await self._listing.page(
            page_size=min(self._max_deletions, MAX_PAGE_SIZE), page_token="", where=where
        )
        deleted: list[str] = []
        for summary in page[: self._max_deletions]:
            try:
                outcome = await self._runs.delete(summary.run_id, summary.last_seq)
            except (LastSeqMismatchError, RunDeletedError, RunNotFoundError):
                continue  # it moved, or someone else deleted it, since it was listed
            except InvalidArgumentError:
                # A parent whose child runs are not deleted yet: its stopped children are retention's too, and
                # go first (they are leaves), so the parent goes in a later pass; never a tree at once.
                continue
            except JournalError as err:
                log.warning("retention: run %s was not deleted: %s", summary.run_id, err.message)
                continue
            if outcome.deleted:
                deleted.append(summary.run_id)
        if deleted:
            log.info("retention: deleted %d run(s) stopped before the cutoff", len(deleted))
        return deleted

    async def run(self, interval_seconds: float) -> None:
        """Pass after pass, ``interval_seconds`` apart, until cancelled; a failed pass is logged, not fatal."""
        while True:
            try:
                await self.tick()
            except JournalError as err:
                log.warning("retention: the pass failed (%s); trying again in %gs", err.message, interval_seconds)
            except Exception:
                # A bug must not end retention for the server's lifetime without a word.
                log.exception("retention: the pass failed unexpectedly; trying again in %gs", interval_seconds)
            await asyncio.sleep(interval_seconds)

"""The start's search for child outcomes a crash left undelivered: stopped children whose parent call still waits.

The durable intent of a completion is the child's terminal itself
(``runs/spawning.py``): nothing else is written before the parent's result,
so a server killed between the two leaves exactly this: a child with an
outcome and a parent call still delegated to it. At every start this pass
finds those and delivers them; ``Runs.deliver`` decides on the parent's
current state under its lock, so a pass that races a live delivery (another
replica's, or a retried terminal) writes nothing twice.

What it costs: the listing's summaries of the child runs (the index finds
them by their meta, ``RunFilter.spawned_only``), then one fold per distinct
parent of a stopped child, and a delivery only for the calls still waiting.
Known cost: every child ever spawned and not deleted is summarised at each
start; an index field saying "waits for a child" on the parent would make
that proportional to the open delegations.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from runjournal.v1 import state_pb2
from runjournal_server.core.errors import JournalError, RunDeletedError, RunNotFoundError
from runjournal_server.core.page_token import MAX_PAGE_SIZE
from runjournal_server.core.spawning import FINAL_REASONS
from runjournal_server.core.summary import TERMINAL_STATUS
from runjournal_server.listing.filter import RunFilter
from runjournal_server.listing.pages import RunListing
from runjournal_server.runs.runs import Runs

log = logging.getLogger(__name__)

STOPPED_FOR_GOOD: frozenset[int] = frozenset(TERMINAL_STATUS[reason] for reason in FINAL_REASONS)  # type: ignore[index]
"""The statuses of a child with an outcome (``core/spawning.FINAL_REASONS``)."""


async def finish_completions(runs: Runs, listing: RunListing) -> int:
    """Deliver every stopped child's outcome its parent's call still waits for; how many were delivered."""
    waiting: dict[str, list[str]] = defaultdict(list)
    where = RunFilter(spawned_only=True)
    token = ""
    while True:
        page, token = await listing.page(page_size=MAX_PAGE_SIZE, page_token=token, where=where)
        for summary in page:
            if summary.status in STOPPED_FOR_GOOD:
                waiting[summary.spawned_by_run_id].append(summary.run_id)
        if not token:
            break
    delivered = 0
    for parent, children in waiting.items():
        for child in await _still_waited_for(runs, parent, children):
            delivered += await runs.deliver(child)
    if delivered:
        log.info("delivered %d child outcome(s) a stop had left undelivered", delivered)
    return delivered


async def _still_waited_for(runs: Runs, parent: str, children: list[str]) -> list[str]:
    """Of ``children``, those the parent's pending calls still wait for (one fold of the parent)."""
    try:
        state = await runs.fold(parent)
    except (RunNotFoundError, RunDeletedError):
        return []
    except JournalError as err:
        log.warning("run %s: its children's outcomes are not delivered yet: %s", parent, err.message)
        return []
    named = {call.child_run_id for call in state.pending.calls if call.waiting_for == state_pb2.WAITING_FOR_CHILD}
    return [child for child in children if child in named]

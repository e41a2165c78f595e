"""A run's fork lineage for the run page: the runs it was forked from, and the runs forked from it.

Up: each meta's ``forked_from`` names the source, the seq copied and the
prefix hash; the chain is followed by folding each source (for its own
``forked_from`` and its status), at most ``ANCESTORS`` steps. A source that
was deleted since (or that the token may not see) ends the chain there, named
with the refusal: the hash in the fork's meta still proves what was copied.
Down: ``ListRuns`` with ``parent_run_id``, the first ``FORKS`` of them; the
browser's "forked from" filter lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from runjournal.aio import AsyncJournalClient
from runjournal.errors import RunJournalError
from runjournal.v1 import records_pb2, state_pb2
from runjournal.web.pages import refusal_text

ANCESTORS = 16
"""How far up the chain the page follows (each step is one fold)."""
FORKS = 50
"""How many forks of the run the page lists (then: all of them in the browser)."""
CONVERSATION_NONE = 2**31 - 1
"""A ``conversation_from`` past any conversation: the fold brings the meta and the status, no messages."""


@dataclass(frozen=True)
class Ancestor:
    """A run this one descends from: where the fork below it branched off, and the run's status now."""

    run_id: str
    at_seq: int
    prefix_sha256: str
    status: str
    problem: str = ""
    """The refusal met reading it (deleted, outside the token's runs, damaged); the chain ends here."""


@dataclass(frozen=True)
class Lineage:
    ancestors: list[Ancestor]
    """The source first, then its source, and so on."""
    more_ancestors: bool
    forks: list[state_pb2.RunSummary]
    more_forks: bool


async def lineage(client: AsyncJournalClient, run_id: str, meta: records_pb2.Meta) -> Lineage:
    """The fork lineage of ``run_id`` whose meta is ``meta``."""
    ancestors: list[Ancestor] = []
    origin = meta.forked_from if meta.HasField("forked_from") else None
    while origin is not None and len(ancestors) < ANCESTORS:
        try:
            state = await client.fold(origin.run_id, conversation_from=CONVERSATION_NONE)
        except RunJournalError as err:
            ancestors.append(Ancestor(origin.run_id, origin.seq, origin.prefix_sha256, "", refusal_text(err)))
            origin = None
            break
        status = state_pb2.RunStatus.Name(state.status).removeprefix("RUN_STATUS_").lower()
        ancestors.append(Ancestor(origin.run_id, origin.seq, origin.prefix_sha256, status))
        origin = state.meta.forked_from if state.meta.HasField("forked_from") else None
    page = await client.list_runs(FORKS, parent_run_id=run_id)
    return Lineage(ancestors, origin is not None, list(page.runs), bool(page.next_page_token))

"""A run's fork lineage for the run page: the runs it was forked from, and the runs forked from it.

Up: each meta's ``forked_from`` names the source, the seq copied and the
prefix hash; the chain is followed by folding each source (for its own
``forked_from`` and its status), at most ``ANCESTORS`` steps. A source that
was deleted since (or that the token may not see) ends the chain there, named
with the refusal: the hash in the fork's meta still proves what was copied.
Down: ``ListRuns`` with ``parent_run_id``, the first ``FORKS`` of them; the
browser's "forked from" filter lists them all.

The sub-agent tree: the parent call a child run answers (its meta's
``spawned_by``, written only by the server) and the tree's root, and below the
run the runs it spawned and theirs: ``ListRuns`` with ``root_run_id`` (one
listing for the whole tree, at most ``TREE_RUNS`` runs; the browser's "root
run" filter lists them all), arranged by ``spawned_by_run_id``.
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
TREE_RUNS = 200
"""How many runs of a sub-agent tree the page arranges (then: the whole tree in the browser)."""
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
class Child:
    """A run spawned under this one, at its depth below it (1: spawned by this run)."""

    summary: state_pb2.RunSummary
    depth: int


@dataclass(frozen=True)
class Tree:
    """Where the run sits among sub-agent runs."""

    parent: records_pb2.SpawnOrigin | None
    """The parent call this run answers, when a run spawned it."""
    children: list[Child]
    """The runs spawned below it, depth first, each parent before its children."""
    more: bool
    """The tree holds more runs than the page listed."""


async def subagent_tree(client: AsyncJournalClient, run_id: str, meta: records_pb2.Meta) -> Tree:
    """The parent call of ``run_id`` (whose meta is ``meta``) and the runs spawned below it."""
    parent = meta.spawned_by if meta.HasField("spawned_by") else None
    root = parent.root_run_id if parent is not None else run_id
    page = await client.list_runs(TREE_RUNS, root_run_id=root)
    below: dict[str, list[state_pb2.RunSummary]] = {}
    for summary in page.runs:
        below.setdefault(summary.spawned_by_run_id, []).append(summary)
    children: list[Child] = []

    def walk(run: str, depth: int) -> None:
        for summary in sorted(below.get(run, []), key=lambda s: s.run_id):
            if summary.run_id != run and depth <= TREE_RUNS:
                children.append(Child(summary, depth))
                walk(summary.run_id, depth + 1)

    walk(run_id, 1)
    return Tree(parent, children, bool(page.next_page_token))


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

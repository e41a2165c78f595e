"""The one statement of what a listing matches: ``RunFilter``, read by ListRuns, WatchRuns and retention."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from runjournal.v1 import state_pb2
from runjournal_server.core.errors import InvalidArgumentError
from runjournal_server.core.ids import has_prefix

_NOT_STOPPED = frozenset(
    {
        state_pb2.RUN_STATUS_UNSPECIFIED,
        state_pb2.RUN_STATUS_OPEN,
        state_pb2.RUN_STATUS_CORRUPT,
        state_pb2.RUN_STATUS_UNAVAILABLE,
    }
)
"""Statuses that are not a stop: retention never deletes an open run, nor one it cannot read."""


@dataclass(frozen=True)
class RunFilter:
    """What ListRuns and WatchRuns may ask for; every condition must hold.

    The one statement of what matching means: ``admits_run_id`` for what the
    id alone decides (the token's prefixes, checked before anything is read),
    ``admits_meta`` for what a run's meta decides (checked before any summary
    is read), ``admits`` for a whole summary (the listing's later checks, and
    WatchRuns on every change).
    """

    status: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    waiting_for_person: bool = False
    task_id: str = ""
    parent_run_id: str = ""
    spawned_by_run_id: str = ""
    root_run_id: str = ""
    """The run itself and every run spawned under it (``meta.spawned_by.root_run_id``)."""
    spawned_only: bool = False
    """Only child runs (any ``meta.spawned_by``): the start's search for undelivered outcomes; not on the wire."""
    stopped_before: float | None = None
    """Seconds since the epoch: only stopped runs whose last record was stored before then."""
    run_id_prefixes: Sequence[str] = ("",)

    def check(self) -> None:
        """Refuse (INVALID_ARGUMENT) a status this server does not know, before any run is read."""
        if self.status not in state_pb2.RunStatus.values():
            raise InvalidArgumentError("status", f"unknown status {self.status}")

    def admits_run_id(self, run_id: str) -> bool:
        """What the id alone decides: one of the token's prefixes (``core/ids.has_prefix``)."""
        return has_prefix(run_id, self.run_id_prefixes)

    @property
    def has_meta_condition(self) -> bool:
        """Whether the meta decides anything (a run whose meta cannot be read is then left out)."""
        return bool(self.labels or self.task_id or self.parent_run_id or self.spawned_by_run_id or self.root_run_id)

    @property
    def has_state_condition(self) -> bool:
        """Whether the run's state decides anything (``admits_state`` can refuse a summary)."""
        return bool(self.status or self.waiting_for_person or self.stopped_before is not None)

    def admits_meta(
        self,
        labels: Mapping[str, str],
        task_id: str,
        parent_run_id: str,
        spawned_by_run_id: str = "",
        root_run_id: str = "",
        run_id: str = "",
    ) -> bool:
        """What the meta alone decides: labels, task, the fork's source, the spawning parent and the tree's root."""
        if self.task_id and task_id != self.task_id:
            return False
        if self.parent_run_id and parent_run_id != self.parent_run_id:
            return False
        if self.spawned_by_run_id and spawned_by_run_id != self.spawned_by_run_id:
            return False
        if self.spawned_only and not spawned_by_run_id:
            return False
        if self.root_run_id and self.root_run_id not in (root_run_id, run_id):
            return False
        return all(labels.get(k) == v for k, v in self.labels.items())

    def admits_state(self, summary: state_pb2.RunSummary) -> bool:
        """What the run's current state decides: status, waiting for a person, stopped before."""
        if self.status and summary.status != self.status:
            return False
        if self.waiting_for_person and not summary.waiting_calls:
            return False
        if self.stopped_before is not None:
            if summary.status in _NOT_STOPPED or not summary.HasField("updated_at"):
                return False
            if summary.updated_at.ToNanoseconds() >= int(self.stopped_before * 1e9):
                return False
        return True

    def possible_states(self) -> tuple[frozenset[int] | None, bool]:
        """What ``admits_state`` needs first: a status among these (None: any), and waiting calls (True).

        Only ever a necessary condition, stated beside the rule so that the
        two agree (a property test checks it): the listing index uses it to
        look at a sparse filter's few candidates, then applies the rule.
        """
        statuses: frozenset[int] | None = frozenset({self.status}) if self.status else None
        if self.stopped_before is not None:
            stopped = frozenset(state_pb2.RunStatus.values()) - _NOT_STOPPED
            statuses = stopped if statuses is None else statuses & stopped
        return statuses, self.waiting_for_person

    def admits(self, summary: state_pb2.RunSummary) -> bool:
        """Every condition, on a whole summary (the token's prefixes included)."""
        return (
            self.admits_run_id(summary.run_id)
            and self.admits_meta(
                summary.labels,
                summary.task_id,
                summary.parent_run_id,
                summary.spawned_by_run_id,
                summary.root_run_id,
                summary.run_id,
            )
            and self.admits_state(summary)
        )

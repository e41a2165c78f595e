"""The record kinds and the protocol ids they stand for; the vocabulary the whole core matches on.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

import enum

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.errors import InvalidRecordError

FORMAT_VERSION = 2
"""The journal format version clients write in a new run's meta."""
READABLE_FORMAT_VERSIONS: frozenset[int] = frozenset({1, 2})
"""The versions this server folds. Each version's records are a subset of the next's, so a reader of the
newer one folds the older unchanged (a stored fixture of format 1 holds it); a reader of an older one refuses
a newer journal whole (``VersionMismatchError``), because what the newer version adds changes decisions."""
PROTOCOL_PREFIX = "runjournal.v1."
MAX_SEQ = (1 << 63) - 1


class Kind(enum.StrEnum):
    """The eleven record kinds; each value is the oneof field name in ``Record.payload``."""

    META = "meta"
    ASSISTANT = "assistant"
    USER = "user"
    TOOL_RESULT = "tool_result"
    DEFERRAL = "deferral"
    APPROVAL = "approval"
    CLAIM = "claim"
    TERMINAL = "terminal"
    RECONFIGURE = "reconfigure"
    NOTE = "note"
    COMPACTION = "compaction"

    @property
    def protocol_id(self) -> str:
        """The full protocol id, e.g. ``runjournal.v1.meta``."""
        return PROTOCOL_PREFIX + self.value


_KINDS_BY_NAME = {kind.value: kind for kind in Kind}


def kind_named(name: str) -> Kind | None:
    """The kind whose short name is ``name`` (``meta``, ``note``, ...), or None for one this server does not know."""
    return _KINDS_BY_NAME.get(name)


def kind_of(record: pb.JournalRecord) -> Kind:
    """The record's kind, from its payload oneof."""
    which = record.WhichOneof("payload")
    if which is None:
        raise InvalidRecordError(
            "record.payload", f"no payload is set; set exactly one of {', '.join(Kind)}", seq=record.seq
        )
    return _KINDS_BY_NAME[which]


MIN_FORMAT_VERSION: dict[Kind, int] = {Kind.COMPACTION: 2}
"""Kinds a run of an older format must refuse: its readers never knew them, so it may not hold them."""

STOP_REASONS_SINCE: dict[int, int] = {
    pb.StopReason.STOP_REASON_COMPACTION: 2,
    pb.StopReason.STOP_REASON_MODEL_CONTEXT_WINDOW_EXCEEDED: 2,
}
"""Stop reasons a run of an older format must refuse, and the version that added each: its readers
(strict, see docs/journal-format.md) would refuse a line holding an enum value they never knew."""
PROVIDER_JSON_SINCE = 2
"""The version that added ``ToolUseBlock.provider_json``; an older run refuses it for the same reason."""


SPAWN_LINKS_SINCE = 2
"""The version that added the spawn links (a meta's ``spawned_by``, a deferral's ``child_run_id``, a result's
``answered_by_run_id``). Not skippable: a reader that skipped them would deliver no child's outcome and let a
parent be deleted without its children, so a format-1 run refuses them (its readers would refuse the field)."""


def spawn_link_problem(record: pb.JournalRecord, format_version: int) -> str | None:
    """Why a run of ``format_version`` may not hold ``record``'s spawn link, or None when it may (or has none)."""
    if format_version >= SPAWN_LINKS_SINCE:
        return None
    kind = record.WhichOneof("payload")
    if kind == Kind.META and record.meta.HasField("spawned_by"):
        return _needs("meta.spawned_by", SPAWN_LINKS_SINCE, format_version)
    if kind == Kind.DEFERRAL and record.deferral.child_run_id:
        return _needs("deferral.child_run_id", SPAWN_LINKS_SINCE, format_version)
    if kind == Kind.TOOL_RESULT and record.tool_result.answered_by_run_id:
        return _needs("tool_result.answered_by_run_id", SPAWN_LINKS_SINCE, format_version)
    return None


def readable_versions() -> str:
    """The versions this server folds, in words, for refusals: ``versions 1 and 2``."""
    *older, newest = sorted(READABLE_FORMAT_VERSIONS)
    return f"versions {', '.join(map(str, older))} and {newest}" if older else f"only version {newest}"


def newer_format_problem(turn: pb.AssistantTurn, format_version: int) -> str | None:
    """Why a run of ``format_version`` may not hold ``turn`` (a stop reason or a field its readers never
    knew), or None when it may."""
    since = STOP_REASONS_SINCE.get(turn.stop_reason)
    if since is not None and format_version < since:
        return _needs(f"stop reason {pb.StopReason.Name(turn.stop_reason)}", since, format_version)
    if format_version < PROVIDER_JSON_SINCE:
        for index, block in enumerate(turn.content):
            if block.HasField("tool_use") and block.tool_use.provider_json:
                return _needs(f"content[{index}].tool_use.provider_json", PROVIDER_JSON_SINCE, format_version)
    return None


def _needs(what: str, since: int, format_version: int) -> str:
    return (
        f"{what} needs journal format {since} or later; this run was created with format {format_version}, "
        "whose readers would refuse it"
    )

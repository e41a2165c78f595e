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


def readable_versions() -> str:
    """The versions this server folds, in words, for refusals: ``versions 1 and 2``."""
    *older, newest = sorted(READABLE_FORMAT_VERSIONS)
    return f"versions {', '.join(map(str, older))} and {newest}" if older else f"only version {newest}"

"""The record kinds and the protocol ids they stand for; the vocabulary the whole core matches on.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

import enum

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.errors import InvalidRecordError

FORMAT_VERSION = 1
PROTOCOL_PREFIX = "runjournal.v1."
MAX_SEQ = (1 << 63) - 1


class Kind(enum.StrEnum):
    """The ten record kinds; each value is the oneof field name in ``Record.payload``."""

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

"""Who writes what: the parts of a record only the server writes, each with the RPC that writes it and why.

Clients append records (Append, AppendBatch), but seven parts of a record are
written only by the RPC that keeps the rule they stand for (``SERVER_WRITTEN``):

* a ``claim`` record, by Claim: its seq becomes the run's claim token (see
  fold), so an appended one would hand the run to its writer past Claim's
  resume gate and fence out the worker that holds it;
* a meta's ``forked_from``, by ForkRun: it turns off the claims a fork copied
  (see fold), so a client that could write it could make a run whose claims
  never count;
* a meta's ``spawned_by``, a deferral's ``child_run_id`` and a tool_result's
  ``answered_by_run_id``, by SpawnRun and the completion of its child
  (``runs/spawning.py``): they make a run answer another run's call, so a
  client that could write them could answer any run's call with its own, or
  make a call wait for a run that will never answer it;
* an ``approval`` record, by Approve, and a tool_result's ``answered_by``, by
  Answer: they record who decided or answered as the server authenticated
  them (the token's name), so written through Append they would carry
  whatever name the writer chose.

The last two name the caller, so they are the server's only with token auth
on: with auth off nobody is authenticated, and an approval a client appends
names whoever it says, as Approve's request would.

Where each is refused: ``refuse_server_written`` refuses the first five as
INVALID_RECORD on every appended record (``runs/requests.py``); with token auth
on, ``api/auth.py`` refuses the last two as PERMISSION_DENIED, whatever the
token's scopes. Neither is part of ``schema.validate``, which also checks every
stored record: a fork's meta and an operator's approval must read back.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

from dataclasses import dataclass

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.errors import InvalidRecordError


@dataclass(frozen=True)
class ServerWritten:
    """One part of a record that only the ``writer`` RPC writes, ``because`` of the rule it keeps.

    ``field`` is the path a refusal names: a record kind (``claim``) for a
    whole record, ``kind.field`` for one payload field set to anything but its
    default. ``names_caller`` marks a part that records the authenticated
    caller: the server's only with token auth on.
    """

    field: str
    what: str
    writer: str
    because: str
    names_caller: bool

    @property
    def kind(self) -> str:
        """The record kind this part belongs to."""
        return self.field.partition(".")[0]

    @property
    def payload_field(self) -> str:
        """The payload field this part is, or "" when it is the whole record."""
        return self.field.partition(".")[2]

    @property
    def refusal(self) -> str:
        """Why a client may not send it, for the error message."""
        return f"{self.what} is written only by {self.writer}, since {self.because}"


SERVER_WRITTEN = (
    ServerWritten(
        field="claim",
        what="a claim record",
        writer="Claim",
        because="its seq becomes the run's claim token",
        names_caller=False,
    ),
    ServerWritten(
        field="meta.forked_from",
        what="a meta's forked_from",
        writer="ForkRun",
        because="it keeps a fork's copied claims from counting",
        names_caller=False,
    ),
    ServerWritten(
        field="meta.spawned_by",
        what="a meta's spawned_by",
        writer="SpawnRun",
        because="it makes the run's outcome the answer to another run's call",
        names_caller=False,
    ),
    ServerWritten(
        field="deferral.child_run_id",
        what="a deferral with child_run_id",
        writer="SpawnRun",
        because="the call then waits for a run the server created for it",
        names_caller=False,
    ),
    ServerWritten(
        field="tool_result.answered_by_run_id",
        what="a tool_result with answered_by_run_id",
        writer="the server when the child run stops",
        because="it is the child's outcome, written once",
        names_caller=False,
    ),
    ServerWritten(
        field="approval",
        what="an approval",
        writer="Approve",
        because="it records the authenticated token's name",
        names_caller=True,
    ),
    ServerWritten(
        field="tool_result.answered_by",
        what="a tool_result with answered_by",
        writer="Answer",
        because="it records the authenticated token's name",
        names_caller=True,
    ),
)
"""Every part of a record only the server writes (why each: the module docstring)."""


_BY_KIND: dict[str, dict[str, ServerWritten]] = {}
"""The parts by record kind, then by payload field ("" for a whole record): every appended record is
checked, and the common kinds (assistant turns) have none."""
for _part in SERVER_WRITTEN:
    _BY_KIND.setdefault(_part.kind, {})[_part.payload_field] = _part


def server_written(record: pb.JournalRecord) -> ServerWritten | None:
    """The part of ``record`` only the server writes, or None when a client may write all of it.

    A payload field is the server's when set to anything but its default (proto3: what ``ListFields`` lists).
    """
    kind = record.WhichOneof("payload")
    parts = _BY_KIND.get(kind) if kind is not None else None
    if not parts:
        return None
    if "" in parts:
        return parts[""]
    return next((parts[field.name] for field, _ in getattr(record, kind).ListFields() if field.name in parts), None)


def refuse_server_written(record: pb.JournalRecord) -> None:
    """Refuse, as INVALID_RECORD and whether auth is on or off, a record a client sends with a server-written part.

    The parts that name the caller pass here: a client may write them with
    auth off, and ``api/auth.py`` refuses them with auth on.
    """
    part = server_written(record)
    if part is not None and not part.names_caller:
        raise InvalidRecordError(part.field, f"{part.refusal}; leave it out", seq=record.seq)

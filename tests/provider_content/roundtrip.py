"""One run appended through a real server and everything read back: Read's items, Fold's state, the store's bytes.

``round_trip`` appends the records one Append at a time (as a worker writes a
tool loop), then reads the run with ``Read`` (each record as the server
decodes it and its ``stored_line``), folds it with ``Fold`` and reads the
bytes the backend itself holds: the file's lines, or the JetStream messages'
bodies fetched straight from NATS, so ``stored_line`` is checked against the
store rather than trusted.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import nats

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal.v1.records_pb2 import ContentBlock, JournalRecord
from runjournal.v1.state_pb2 import RunState
from runjournal_server.backends.jetstream.layout import Layout
from tests.provider_content.loops import Place
from tests.servers import ServerProcess


@dataclass(frozen=True)
class RoundTrip:
    """A run as appended and as it came back from one server."""

    backend: str
    run_id: str
    appended: list[JournalRecord]
    items: list[pb.ReadResponse]
    state: RunState
    store: list[bytes]
    """Each record's bytes as the backend holds them, in seq order (no newline)."""

    def read_block(self, place: Place) -> ContentBlock:
        """The block as ``Read`` decoded it from the stored line."""
        record = self.items[place.seq - 1].record
        payload = getattr(record, record.WhichOneof("payload") or "")
        block: ContentBlock = getattr(payload, place.field)[place.index]
        return block

    def line_block(self, place: Place) -> Any:
        """The block as the stored line holds it: the proto3 JSON object inside the canonical body."""
        body = json.loads(body_of(self.items[place.seq - 1].stored_line))
        return body["payload"][place.field][place.index]

    def folded_block(self, place: Place) -> ContentBlock:
        """The block where ``Fold`` put it in the conversation (inside the tool result for ``inner``)."""
        block = self.state.conversation[place.message].content[place.block]
        if place.inner is not None:
            assert block.WhichOneof("block") == "tool_result", block
            return block.tool_result.content[place.inner]
        return block


def body_of(line: bytes) -> bytes:
    """The record body of a stored line, read as docs/journal-format.md says: fixed envelope, then the CRC."""
    assert line[:8] == b'{"crc":"' and line[16:24] == b'","rec":' and line[-1:] == b"}", line[:32]
    body = line[24:-1]
    assert int(line[8:16], 16) == zlib.crc32(body)
    return body


def round_trip(server: ServerProcess, prefix: str, build: Callable[[str], list[JournalRecord]]) -> RoundTrip:
    run_id = f"{prefix}-{uuid.uuid4().hex[:12]}"
    appended = build(run_id)
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        for record in appended:
            answer = stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=record))
            assert (answer.seq, answer.duplicate) == (record.seq, False)
        items = list(stub.Read(pb.ReadRequest(run_id=run_id)))
        state = stub.Fold(pb.FoldRequest(run_id=run_id)).state
    return RoundTrip(server.backend, run_id, appended, items, state, stored_bytes(server, run_id, len(appended)))


def stored_bytes(server: ServerProcess, run_id: str, count: int) -> list[bytes]:
    """What the backend holds for seqs 1..count, read past the server."""
    if server.backend == "file":
        data = (server.data_dir / f"{run_id}.jsonl").read_bytes()
        assert data.endswith(b"\n")
        return data[:-1].split(b"\n")
    return asyncio.run(_jetstream_bodies(_server_option(server, "--nats-url"), server, run_id, count))


async def _jetstream_bodies(url: str, server: ServerProcess, run_id: str, count: int) -> list[bytes]:
    stream, layout = _server_option(server, "--stream"), Layout(_server_option(server, "--nats-subject-prefix"))
    nc = await nats.connect(url)
    try:
        bodies = []
        for seq in range(1, count + 1):
            request = json.dumps({"last_by_subj": layout.subject(run_id, seq)}).encode()
            reply = json.loads((await nc.request(f"$JS.API.STREAM.MSG.GET.{stream}", request, timeout=10)).data)
            bodies.append(base64.b64decode(reply["message"]["data"]))
        return bodies
    finally:
        await nc.close()


def _server_option(server: ServerProcess, flag: str) -> str:
    args = list(server.extra_args)
    return args[args.index(flag) + 1]

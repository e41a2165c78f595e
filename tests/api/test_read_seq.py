"""Every item Read streams carries its seq, an unknown optional record's too (issue 10, item 16).

A stored record of a protocol id this server does not know has no payload the
server can decode, so its ``record`` cannot say where it is; ``seq`` does, and
a client resuming a broken stream resumes after it instead of repeating the run.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path

import grpc

from runjournal import JournalClient
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.core import records
from tests.servers import ServerProcess
from tests.support import builders as b


def unknown_optional_line(seq: int, kind: str = "future_thing") -> bytes:
    """A valid stored line of a protocol id no server knows yet, marked optional."""
    body = {"id": f"runjournal.v1.{kind}", "optional": True, "payload": {"anything": 1}, "seq": seq}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    line = records.to_line(canonical)
    assert line.startswith(f'{{"crc":"{zlib.crc32(canonical):08x}"'.encode())
    return line


def write_journal_with_unknown_record(data_dir: Path, run_id: str) -> list[bytes]:
    """meta, an unknown optional record, a note: written as a file-backend journal before the server starts."""
    lines = [
        records.encode(b.meta(run_id=run_id)).line,
        unknown_optional_line(2),
        records.encode(b.note(3, "after the unknown one")).line,
    ]
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / f"{run_id}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    return lines


def test_read_gives_every_item_its_seq_including_an_unknown_optional_record(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    run_id = "run-with-a-future-record"
    lines = write_journal_with_unknown_record(tmp_path / "data", run_id)
    server = server_factory(tmp_path / "data")
    with grpc.insecure_channel(server.address) as channel:
        stub = journal_service_pb2_grpc.JournalServiceStub(channel)
        items = list(stub.Read(pb.ReadRequest(run_id=run_id)))
        assert [item.seq for item in items] == [1, 2, 3]
        assert [item.stored_line for item in items] == lines
        unknown = items[1]
        assert unknown.record.WhichOneof("payload") is None  # the server cannot decode it
        assert unknown.record.seq == 2 and unknown.record.optional
        assert [item.seq for item in stub.Read(pb.ReadRequest(run_id=run_id, from_seq=3))] == [3]


def test_the_client_reads_an_unknown_optional_record_at_its_seq(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    run_id = "client-reads-a-future-record"
    lines = write_journal_with_unknown_record(tmp_path / "data", run_id)
    server = server_factory(tmp_path / "data")
    with JournalClient(server.address) as client:
        got = list(client.read(run_id))
    assert [record.seq for record, _ in got] == [1, 2, 3]
    assert [line for _, line in got] == lines

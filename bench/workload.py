"""The records every benchmark writes, and journals written straight to a data dir.

A run is a meta at seq 1, then turns of an agent loop: an assistant record with
some text and one tool call at every even seq, and that call's result at the
next odd seq. ``record(run_id, seq)`` is a pure function of its arguments, so
any worker can continue any run at any seq and every run of the same length
has the same shape. A stored line is about 0.9 KiB (``LINE_BYTES`` measures
it), a middle-of-the-road agent record: model turns are often shorter, tool
results often longer.

Large data sets (ListRuns over 10,000 runs, the fold and claim runs) are not
built with millions of RPCs: ``write_journal`` writes the stored lines that
``records.encode`` produces — exactly what the file backend stores — into
``<data_dir>/<run>.jsonl``. Only the meta line names the run, so the lines
after it are encoded once and shared between runs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from runjournal.v1 import journal_service_pb2 as service_pb
from runjournal.v1 import records_pb2 as pb
from runjournal_server.core import records

CREATED_AT_SECONDS = 1_700_000_000
TEXT_CHARS = 600
"""Characters of prose in each assistant turn and each tool result."""
_PROSE = (
    "The agent read the ticket, compared the three flight options, and decided to check the fare rules "
    "before answering; the cheapest option needs a change at Frankfurt with a 55 minute connection. "
)
FILLER = (_PROSE * (TEXT_CHARS // len(_PROSE) + 1))[:TEXT_CHARS]
TOOL_INPUT_JSON = '{"query":"LIS flights 2025-06-12 economy","max_results":5}'
FINGERPRINT = pb.Fingerprint(
    provider="anthropic",
    model="claude-sonnet-4-5",
    system_prompt_sha256="a" * 64,
    thinking_mode="off",
    tools_sha256="b" * 64,
    max_tokens=4096,
    max_iterations=100_000,
)


def _text(value: str) -> pb.ContentBlock:
    return pb.ContentBlock(text=pb.TextBlock(text=value))


def meta(run_id: str, *, created_at_seconds: int = CREATED_AT_SECONDS) -> pb.JournalRecord:
    payload = pb.Meta(
        format_version=records.FORMAT_VERSION,
        run_id=run_id,
        fingerprint=FINGERPRINT,
        prompt=[_text("Find the cheapest flight from Berlin to Lisbon on June 12 and book it.")],
        labels={"team": "bench"},
    )
    payload.created_at.FromSeconds(created_at_seconds)
    return pb.JournalRecord(seq=1, meta=payload)


def call_id(seq: int) -> str:
    """The id of the tool call made by the assistant record at even ``seq``."""
    return f"toolu_{seq:08d}"


def record(run_id: str, seq: int, *, created_at_seconds: int = CREATED_AT_SECONDS) -> pb.JournalRecord:
    """The record at ``seq`` of a benchmark run (see the module docstring)."""
    if seq == 1:
        return meta(run_id, created_at_seconds=created_at_seconds)
    if seq % 2 == 0:
        return pb.JournalRecord(
            seq=seq,
            assistant=pb.AssistantTurn(
                iteration=seq // 2,
                content=[
                    _text(FILLER),
                    pb.ContentBlock(
                        tool_use=pb.ToolUseBlock(id=call_id(seq), name="search_flights", input_json=TOOL_INPUT_JSON)
                    ),
                ],
                stop_reason=pb.StopReason.STOP_REASON_TOOL_USE,
                usage=pb.Usage(input_tokens=1200, output_tokens=180, cache_read_tokens=1000),
            ),
        )
    return pb.JournalRecord(seq=seq, tool_result=pb.ToolResult(tool_use_id=call_id(seq - 1), content=[_text(FILLER)]))


def records_from(run_id: str, first_seq: int, count: int) -> list[pb.JournalRecord]:
    return [record(run_id, seq) for seq in range(first_seq, first_seq + count)]


def append_request(run_id: str, seq: int) -> service_pb.AppendRequest:
    """What a worker that created the run (claim token 1) sends to append ``seq``."""
    return service_pb.AppendRequest(run_id=run_id, claim_token=1, record=record(run_id, seq))


def batch_request(run_id: str, first_seq: int, count: int) -> service_pb.AppendBatchRequest:
    return service_pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=records_from(run_id, first_seq, count))


@functools.lru_cache(maxsize=4096)
def line(seq: int) -> bytes:
    """The stored line (no newline) of the record at ``seq >= 2``; the same for every run."""
    if seq < 2:
        raise ValueError("the meta line names its run; use meta_line")
    return records.encode(record("x", seq)).line


def meta_line(run_id: str, *, created_at_seconds: int = CREATED_AT_SECONDS) -> bytes:
    return records.encode(meta(run_id, created_at_seconds=created_at_seconds)).line


def line_pool(count: int = 64) -> list[bytes]:
    """Stored lines of the workload, for baselines that only need the same bytes (sizes alternate)."""
    return [line(seq) for seq in range(2, 2 + count)]


@functools.lru_cache(maxsize=8)
def _body(length: int) -> bytes:
    """Lines 2..length of a run, newline-terminated: shared by every run of that length."""
    return b"".join(line(seq) + b"\n" for seq in range(2, length + 1))


def write_journal(data_dir: Path, run_id: str, length: int, *, created_at_seconds: int = CREATED_AT_SECONDS) -> int:
    """Write a complete journal of ``length`` records as the file backend stores it; returns its bytes.

    No fsync: a benchmark data set, not a durability claim. The lock file is
    created by the server when it first opens the run.
    """
    data = meta_line(run_id, created_at_seconds=created_at_seconds) + b"\n" + _body(length)
    (data_dir / f"{run_id}.jsonl").write_bytes(data)
    return len(data)


WARMUP_RUN_ID = "warmup"


def write_warmup_run(data_dir: Path) -> None:
    """A short run a benchmark touches first, so the server's first-call costs land on no measured run."""
    write_journal(data_dir, WARMUP_RUN_ID, 10)


def read_and_parse(path: Path) -> int:
    """The baseline for Fold: read a journal and ``records.decode`` every line; returns the record count."""
    data = path.read_bytes()
    count = 0
    for raw in data.split(b"\n"):
        if raw:
            records.decode(raw)
            count += 1
    return count


def line_sizes(sample: Sequence[int] = (2, 3)) -> dict[int, int]:
    """Stored line length by seq, for the report."""
    return {seq: len(line(seq)) for seq in sample}

"""Single bit flips in stored journals, opened by a real server.

A flipped bit in any line that has a line after it is damage: Fold, Read and
Append answer CORRUPT_JOURNAL (DATA_LOSS) with that line's number, the
listing shows the run corrupt once the server has read it, and nothing
rewrites the file. A flip in the last line makes it a torn tail: dropped,
with every record before it intact, and the next append replaces it. Never a
silently different fold.

Positions are drawn from a seeded random.Random (RUNJOURNAL_TEST_SEED replays
a run); the newline of every line is flipped on purpose as well, since a
damaged newline glues two lines into one.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc, records_pb2, state_pb2
from runjournal_server.core import records
from tests.durability.harness import (
    CALL_TIMEOUT_SECONDS,
    LaunchedServer,
    error_info,
    journal_path,
    make_seed,
    memory_data_dir,
    read_lines,
    reason,
    split_journal,
)
from tests.support import builders as b

INTERIOR_FLIPS = 320
META_FLIPS = 40
LAST_LINE_FLIPS = 40
CONCURRENCY = 4
TEXT = "Jazz * 日本 🙂 — JSON*"
"""Holds 'J' and '*', which a single flipped bit turns into a newline."""
CLAIM = "claim"


def _note_with_data(seq: int) -> records_pb2.JournalRecord:
    record = b.note(seq, TEXT)
    record.note.data_json = '{"k":[1,{"J":"*"}]}'
    return record


TEMPLATES: dict[str, list[records_pb2.JournalRecord | list[records_pb2.JournalRecord] | str]] = {
    "turns": [
        b.assistant(2, 1, ["c1", "c2"], say=TEXT),
        b.result(3, "c1", TEXT),
        b.result(4, "c2", TEXT, is_error=True),
        b.user(5, TEXT),
        b.assistant(6, 2, ["c3"]),
        b.deferral(7, "c3", TEXT),
        b.approval(8, "c3", approver="ök"),
        b.result(9, "c3", TEXT, remote=True),
        _note_with_data(10),
    ],
    "claimed": [
        [b.assistant(2, 1, ["c1"], say=TEXT), b.result(3, "c1", TEXT), b.user(4, TEXT)],
        CLAIM,
        b.note(6, TEXT),
    ],
    "ended": [
        b.assistant(2, 1, say=TEXT),
        b.terminal(3, records_pb2.TERMINAL_REASON_COMPLETED, TEXT),
        b.user(4, TEXT),
        b.assistant(5, 2, say=TEXT),
    ],
    "short": [b.note(2, TEXT)],
}


def template_id(name: str) -> str:
    return f"bf-{name}-tmpl"


def flip_id(name: str, number: int) -> str:
    return f"bf-{name}-{number:04d}"


def meta_for(run_id: str) -> records_pb2.JournalRecord:
    return b.meta(run_id=run_id, prompt=TEXT, labels={"suite": "bit-flips"})


@dataclass
class Flip:
    run_id: str
    template: str
    line: int
    """1-based number of the line the flipped byte belongs to (its newline included)."""
    lines: list[bytes]
    """The journal's lines before the flip."""
    data: bytes
    """The file after the flip."""

    @property
    def torn(self) -> bool:
        """A flip in the last line that leaves no newline inside it: the line is a torn tail."""
        if self.line < len(self.lines):
            return False
        start = sum(len(line) + 1 for line in self.lines[:-1])
        return b"\n" not in self.data[start:-1]


def make_flip(name: str, number: int, template: bytes, line: int, rng: random.Random) -> Flip:
    run_id = flip_id(name, number)
    lines, _ = split_journal(template)
    own_meta = records.encode(meta_for(run_id)).line
    assert len(own_meta) == len(lines[0])
    lines[0] = own_meta
    data = bytearray(b"".join(x + b"\n" for x in lines))
    start = sum(len(x) + 1 for x in lines[: line - 1])
    position = start + rng.randrange(len(lines[line - 1]) + 1)  # the line's newline included
    data[position] ^= 1 << rng.randrange(8)
    return Flip(run_id, name, line, lines, bytes(data))


def newline_flip(name: str, number: int, template: bytes, line: int, rng: random.Random) -> Flip:
    flip = make_flip(name, number, template, line, random.Random(0))
    data = bytearray(b"".join(x + b"\n" for x in flip.lines))
    data[sum(len(x) + 1 for x in flip.lines[:line]) - 1] ^= 1 << rng.randrange(8)
    flip.data = bytes(data)
    return flip


async def build_template(stub, name: str) -> None:
    run_id = template_id(name)
    await stub.Append(pb.AppendRequest(run_id=run_id, record=meta_for(run_id)), timeout=CALL_TIMEOUT_SECONDS)
    token = 1
    for step in TEMPLATES[name]:
        if step == CLAIM:
            request = pb.ClaimRequest(run_id=run_id, worker_id="w-ö", host="h", pid=1, fingerprint=b.fingerprint())
            token = (await stub.Claim(request, timeout=CALL_TIMEOUT_SECONDS)).claim_token
        elif isinstance(step, list):
            request = pb.AppendBatchRequest(run_id=run_id, claim_token=token, records=step)
            await stub.AppendBatch(request, timeout=CALL_TIMEOUT_SECONDS)
        else:
            request = pb.AppendRequest(run_id=run_id, claim_token=token, record=step)
            await stub.Append(request, timeout=CALL_TIMEOUT_SECONDS)


async def expect_corrupt(stub, flip: Flip, data_dir: Path, token: int) -> None:
    where = f"{flip.run_id}: flip in line {flip.line} of {len(flip.lines)}"
    calls = {
        "Fold": lambda: stub.Fold(pb.FoldRequest(run_id=flip.run_id), timeout=CALL_TIMEOUT_SECONDS),
        "Read": lambda: read_lines(stub, flip.run_id),
        "Append": lambda: stub.Append(
            pb.AppendRequest(run_id=flip.run_id, claim_token=token, record=b.note(len(flip.lines) + 1)),
            timeout=CALL_TIMEOUT_SECONDS,
        ),
    }
    for name, call in calls.items():
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call()
        assert caught.value.code() == grpc.StatusCode.DATA_LOSS, f"{where}: {name} gave {caught.value.code()}"
        assert reason(caught.value) == "CORRUPT_JOURNAL", f"{where}: {name}"
        info = error_info(caught.value)
        assert info is not None and info.metadata["line"] == str(flip.line), f"{where}: {name} {info}"
    assert journal_path(data_dir, flip.run_id).read_bytes() == flip.data, f"{where}: the damaged file was rewritten"


async def expect_torn(stub, flip: Flip, data_dir: Path, before: state_pb2.RunState) -> None:
    """The last line is dropped; every record before it folds as before; the next append replaces it."""
    where = f"{flip.run_id}: flip in the last line"
    state = (await stub.Fold(pb.FoldRequest(run_id=flip.run_id), timeout=CALL_TIMEOUT_SECONDS)).state
    assert state == before, where
    record = b.note(len(flip.lines), "replaces the torn line")
    request = pb.AppendRequest(run_id=flip.run_id, claim_token=state.claim_token, record=record)
    assert (await stub.Append(request, timeout=CALL_TIMEOUT_SECONDS)).seq == len(flip.lines), where
    kept = [*flip.lines[:-1], records.encode(record).line]
    assert await read_lines(stub, flip.run_id) == kept, where
    assert journal_path(data_dir, flip.run_id).read_bytes() == b"".join(x + b"\n" for x in kept), where


def renamed(state: state_pb2.RunState, run_id: str) -> state_pb2.RunState:
    copy = state_pb2.RunState()
    copy.CopyFrom(state)
    copy.run_id = copy.meta.run_id = run_id
    return copy


async def test_bit_flips_are_corruption_with_their_line_or_a_torn_last_line_never_a_different_fold(tmp_path):
    seed = make_seed()
    print(f"bit flips: seed {seed} (set RUNJOURNAL_TEST_SEED={seed} to replay)")
    with memory_data_dir(tmp_path) as data_dir:
        flips = await check_flips(data_dir, random.Random(seed))
    corrupt = sum(1 for f in flips if not f.torn)
    print(
        f"bit flips (seed {seed}): {len(flips)} flips, {corrupt} detected as CORRUPT_JOURNAL with their line, "
        f"{len(flips) - corrupt} torn last lines dropped"
    )
    assert corrupt >= INTERIOR_FLIPS + META_FLIPS


async def check_flips(data_dir: Path, rng: random.Random) -> list[Flip]:
    server = LaunchedServer(data_dir).start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            for name in TEMPLATES:
                await build_template(stub, name)
            templates = {name: journal_path(data_dir, template_id(name)).read_bytes() for name in TEMPLATES}
            before_last: dict[str, state_pb2.RunState] = {}  # each template folded without its last line
            tokens: dict[str, int] = {}
            for name, template in templates.items():
                length = len(split_journal(template)[0])
                request = pb.FoldRequest(run_id=template_id(name), as_of_seq=length - 1)
                before_last[name] = (await stub.Fold(request, timeout=CALL_TIMEOUT_SECONDS)).state
                request = pb.FoldRequest(run_id=template_id(name))
                tokens[name] = (await stub.Fold(request, timeout=CALL_TIMEOUT_SECONDS)).state.claim_token
        assert server.stop() == 0, server.log()

        names = list(TEMPLATES)
        flips: list[Flip] = []

        def add(maker, name: str, line: int) -> None:
            flips.append(maker(name, len(flips), templates[name], line, rng))

        for _ in range(INTERIOR_FLIPS):
            name = rng.choice(names)
            add(make_flip, name, rng.randint(2, len(split_journal(templates[name])[0]) - 1) if name != "short" else 1)
        for _ in range(META_FLIPS):
            add(make_flip, rng.choice(names), 1)
        for _ in range(LAST_LINE_FLIPS):
            name = rng.choice(names)
            add(make_flip, name, len(split_journal(templates[name])[0]))
        for name in names:
            for line in range(1, len(split_journal(templates[name])[0]) + 1):
                add(newline_flip, name, line)
        for flip in flips:
            journal_path(data_dir, flip.run_id).write_bytes(flip.data)

        server = LaunchedServer(data_dir).start()
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            limit = asyncio.Semaphore(CONCURRENCY)

            async def check(flip: Flip) -> None:
                async with limit:
                    if flip.torn:
                        await expect_torn(stub, flip, data_dir, renamed(before_last[flip.template], flip.run_id))
                    else:
                        await expect_corrupt(stub, flip, data_dir, tokens[flip.template])

            await asyncio.gather(*(check(flip) for flip in flips))
            # Once the server has read a damaged journal, the listing never shows it healthy.
            listed = {}
            token = ""
            for _ in range(10):
                page = await stub.ListRuns(pb.ListRunsRequest(page_size=1000, page_token=token))
                listed.update((s.run_id, s) for s in page.runs)
                if not (token := page.next_page_token):
                    break
            for flip in flips:
                summary = listed[flip.run_id]
                if flip.torn:
                    assert summary.status != state_pb2.RUN_STATUS_CORRUPT, flip.run_id
                    assert summary.last_seq == len(flip.lines), flip.run_id
                else:
                    assert summary.status == state_pb2.RUN_STATUS_CORRUPT, flip.run_id
                    assert f"line {flip.line}" in summary.corruption, (flip.run_id, summary.corruption)
        assert server.stop() == 0, server.log()
    finally:
        if server.alive():
            server.kill()
    return flips

"""Every state a crash can leave a journal in, opened by a real server.

A crash mid-append leaves the last record cut at some byte (the write was not
finished) and a power loss can drop records that were written but not yet
synced (the lost tail). For several journal shapes, built through the server,
every such state is made on disk, then a fresh server must list it, fold it
and extend it: each state gives the records before the cut, never an error,
and the next append lands right after them and reads back.
"""

from __future__ import annotations

import asyncio
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
    journal_path,
    memory_data_dir,
    read_lines,
    reason,
    split_journal,
)
from tests.support import builders as b

UTF8 = "hé wö — 日本 🙂"
CONCURRENCY = 4
CLAIM = "claim"
"""A step that claims the run through the Claim RPC instead of appending."""

Step = records_pb2.JournalRecord | list[records_pb2.JournalRecord] | str


def _note_with_data(seq: int) -> records_pb2.JournalRecord:
    record = b.note(seq, UTF8)
    record.note.data_json = '{"nested":[[{"ü":"🙂","n":[1,2,{"deep":[true,null]}]}]]}'
    return record


SHAPES: dict[str, list[Step]] = {
    # The last record is an assistant turn with multi-byte text, after a batch.
    "assistant": [[b.assistant(2, 1, ["c1"]), b.result(3, "c1")], b.assistant(4, 2, say=f"{UTF8} final answer")],
    "result": [b.assistant(2, 1, ["c1", "c2"]), b.result(3, "c1", UTF8), b.result(4, "c2", UTF8, is_error=True)],
    # One batch written (and synced) as one write: every cut inside any of its records.
    "batch": [[b.assistant(2, 1, ["c1"], say=UTF8), b.result(3, "c1", UTF8), b.user(4, UTF8)]],
    "claim": [b.assistant(2, 1, ["c1"]), CLAIM],
    "approval": [b.assistant(2, 1, ["c1"]), b.deferral(3, "c1", UTF8), b.approval(4, "c1", approver="ök 🙂")],
    "terminal": [b.assistant(2, 1), b.terminal(3, records_pb2.TERMINAL_REASON_SUSPENDED, UTF8)],
    "note": [_note_with_data(2)],
    # Only a meta: every cut of it is a creation that never became durable.
    "meta": [],
}


@dataclass
class CrashState:
    run_id: str
    shape: str
    kept: list[bytes]
    """The complete lines the state keeps: what the server must show."""
    data: bytes
    """The file as the crash left it."""


def template_id(shape: str) -> str:
    return f"cs-{shape}-tmplt"


def state_id(shape: str, number: int) -> str:
    return f"cs-{shape}-{number:05d}"


def meta_for(run_id: str) -> records_pb2.JournalRecord:
    return b.meta(run_id=run_id, prompt=UTF8)


async def build_template(stub, run_id: str, steps: list[Step]) -> None:
    await stub.Append(pb.AppendRequest(run_id=run_id, record=meta_for(run_id)), timeout=CALL_TIMEOUT_SECONDS)
    for step in steps:
        if step == CLAIM:
            request = pb.ClaimRequest(
                run_id=run_id, worker_id="wörker-🙂", host="höst", pid=7, fingerprint=b.fingerprint()
            )
            await stub.Claim(request, timeout=CALL_TIMEOUT_SECONDS)
        elif isinstance(step, list):
            request = pb.AppendBatchRequest(run_id=run_id, claim_token=1, records=step)
            await stub.AppendBatch(request, timeout=CALL_TIMEOUT_SECONDS)
        else:
            await stub.Append(pb.AppendRequest(run_id=run_id, claim_token=1, record=step), timeout=CALL_TIMEOUT_SECONDS)


def crash_states(shape: str, template: bytes, steps: list[Step]) -> list[CrashState]:
    """The template's last record (the whole last batch for a batch) cut at every offset, and lost tails.

    Only the meta line names the run, so a state for another run id is the
    template with that run's meta line (encoded as the server encodes it) in
    front: the rest is byte for byte what the server wrote.
    """
    assert len(template_id(shape)) == len(state_id(shape, 0))
    lines, fragment = split_journal(template)
    assert not fragment
    region_lines = len(steps[-1]) if steps and isinstance(steps[-1], list) else 1
    region_start = sum(len(line) + 1 for line in lines[:-region_lines])
    cuts = list(range(region_start, len(template) + 1))
    # Lost unsynced tails: the last 2 .. all records gone (losing one is the cut at region_start).
    cuts += [sum(len(line) + 1 for line in lines[:kept]) for kept in range(len(lines) - 2, -1, -1)]
    states = []
    for number, cut in enumerate(sorted(set(cuts))):
        run_id = state_id(shape, number)
        own_meta = records.encode(meta_for(run_id)).line
        assert len(own_meta) == len(lines[0]), "template and state run ids have the same length"
        data = (own_meta + b"\n" + template[len(own_meta) + 1 :])[:cut]
        kept, _ = split_journal(data)
        states.append(CrashState(run_id, shape, kept, data))
    return states


async def list_all(stub) -> dict[str, state_pb2.RunSummary]:
    listed: dict[str, state_pb2.RunSummary] = {}
    token = ""
    for _ in range(100):
        page = await stub.ListRuns(pb.ListRunsRequest(page_size=1000, page_token=token), timeout=CALL_TIMEOUT_SECONDS)
        listed.update((summary.run_id, summary) for summary in page.runs)
        token = page.next_page_token
        if not token:
            return listed
    raise AssertionError("ListRuns did not finish in 100 pages")


async def check_state(stub, state: CrashState, data_dir: Path, expected_fold: state_pb2.RunState | None) -> None:
    """Fold gives the kept records (absence when none), the next append lands after them and reads back."""
    where = f"{state.run_id} (kept {len(state.kept)} records, {len(state.data)} bytes)"
    if not state.kept:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Fold(pb.FoldRequest(run_id=state.run_id), timeout=CALL_TIMEOUT_SECONDS)
        assert reason(caught.value) == "RUN_NOT_FOUND", where
        # A creation that crashed before its meta was durable can be retried.
        record, token = meta_for(state.run_id), 0
    else:
        folded = (await stub.Fold(pb.FoldRequest(run_id=state.run_id), timeout=CALL_TIMEOUT_SECONDS)).state
        assert folded == expected_fold, where
        record, token = b.note(len(state.kept) + 1, f"after the crash {UTF8}"), folded.claim_token
    response = await stub.Append(
        pb.AppendRequest(run_id=state.run_id, claim_token=token, record=record), timeout=CALL_TIMEOUT_SECONDS
    )
    assert (response.seq, response.duplicate) == (len(state.kept) + 1, False), where
    new_line = records.encode(record).line
    assert await read_lines(stub, state.run_id) == [*state.kept, new_line], where
    # The torn fragment is gone from the file, so the new line is not glued to it.
    assert journal_path(data_dir, state.run_id).read_bytes() == b"".join(line + b"\n" for line in state.kept) + (
        new_line + b"\n"
    ), where


def renamed(state: state_pb2.RunState, run_id: str) -> state_pb2.RunState:
    """The template's folded state as the same journal under another run id would fold."""
    copy = state_pb2.RunState()
    copy.CopyFrom(state)
    copy.run_id = run_id
    copy.meta.run_id = run_id
    return copy


@pytest.mark.slow
async def test_every_cut_of_the_last_record_and_every_lost_tail_opens_folds_and_extends(tmp_path):
    with memory_data_dir(tmp_path) as data_dir:
        await check_every_crash_state(data_dir)


async def check_every_crash_state(data_dir: Path) -> None:
    server = LaunchedServer(data_dir).start()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            for shape, steps in SHAPES.items():
                await build_template(stub, template_id(shape), steps)
            # What each prefix of each template folds to, from the untouched template.
            templates = {shape: journal_path(data_dir, template_id(shape)).read_bytes() for shape in SHAPES}
            prefix_folds = {}
            for shape, template in templates.items():
                for kept in range(1, len(split_journal(template)[0]) + 1):
                    request = pb.FoldRequest(run_id=template_id(shape), as_of_seq=kept)
                    prefix_folds[shape, kept] = (await stub.Fold(request, timeout=CALL_TIMEOUT_SECONDS)).state
        assert server.stop() == 0, server.log()

        states = [s for shape, steps in SHAPES.items() for s in crash_states(shape, templates[shape], steps)]
        for state in states:
            journal_path(data_dir, state.run_id).write_bytes(state.data)

        server = LaunchedServer(data_dir).start()
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            # A fresh server lists every state from the ends of its journal alone.
            listed = await list_all(stub)
            for state in states:
                if not state.kept:
                    assert state.run_id not in listed, f"{state.run_id} holds no record but is listed"
                    continue
                summary = listed[state.run_id]
                assert summary.last_seq == len(state.kept), state.run_id
                assert summary.status == prefix_folds[state.shape, len(state.kept)].status, state.run_id

            limit = asyncio.Semaphore(CONCURRENCY)

            async def check(state: CrashState) -> None:
                expected = prefix_folds.get((state.shape, len(state.kept)))
                async with limit:
                    await check_state(stub, state, data_dir, expected and renamed(expected, state.run_id))

            await asyncio.gather(*(check(state) for state in states))
            listed = await list_all(stub)
            assert all(listed[s.run_id].last_seq == len(s.kept) + 1 for s in states)
        assert server.stop() == 0, server.log()
    finally:
        if server.alive():
            server.kill()
    cuts = sum(1 for s in states if s.data and not s.data.endswith(b"\n"))
    print(f"crash states: {len(states)} states of {len(SHAPES)} journals ({cuts} torn cuts, the rest whole lines)")
    assert cuts > 1000

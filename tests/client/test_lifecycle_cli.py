"""``runjournal runs fork``, ``runs delete`` and ``gc`` against the scripted server: what they send and ask.

They run in-process (``cli.main``); the same commands against real servers,
on both backends, are in ``test_lifecycle_against_server.py``.
"""

from __future__ import annotations

import argparse
import datetime
import io

import grpc
import pytest

from runjournal.cli import main
from runjournal.lifecycle_cli import SKIP_CONVERSATION, duration, moment
from runjournal.render import render_record
from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import records_pb2, state_pb2
from tests.client.fake_journal import FakeServer, abort_with_reason


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str = "", *, tty: bool) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal(text) if tty else io.StringIO(text))


def _delete(fake: FakeServer, *args: str) -> int:
    return main(["runs", "delete", "--address", fake.address, *args])


def test_delete_reads_the_last_seq_first_shows_it_and_deletes_that(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.journal.fold_state = state_pb2.RunState(run_id="r1", last_seq=7, status=state_pb2.RUN_STATUS_COMPLETED)
    _stdin(monkeypatch, "y\n", tty=True)
    assert _delete(fake, "r1") == 0
    (fold,) = fake.journal.requests("Fold")
    assert fold.conversation_from == SKIP_CONVERSATION  # the run's numbers, not its conversation
    assert fake.journal.requests("DeleteRun") == [pb.DeleteRunRequest(run_id="r1", expected_last_seq=7)]
    out = capsys.readouterr().out
    assert "run r1: status completed, last seq 7" in out
    assert "delete run r1 at last seq 7? It cannot be undone. [y/N]" in out
    assert "deleted run r1 (last seq 7)" in out


def test_delete_without_yes_is_refused_when_stdin_is_not_a_terminal(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, "y\n", tty=False)
    assert _delete(fake, "r1", "--expected-last-seq", "4") == 1
    assert fake.journal.requests("DeleteRun") == []
    assert "refusing to delete run r1 without --yes: stdin is not a terminal" in capsys.readouterr().err


@pytest.mark.parametrize("answer", ["\n", "n\n", "maybe\n", ""])
def test_delete_does_nothing_unless_the_person_says_yes(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    _stdin(monkeypatch, answer, tty=True)
    assert _delete(fake, "r1", "--expected-last-seq", "4") == 1
    assert fake.journal.requests("DeleteRun") == []


def test_delete_with_yes_and_the_seq_deletes_without_looking(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin(monkeypatch, tty=False)
    assert _delete(fake, "r1", "--expected-last-seq", "4", "--yes") == 0
    assert fake.journal.requests("Fold") == []
    assert fake.journal.requests("DeleteRun") == [pb.DeleteRunRequest(run_id="r1", expected_last_seq=4)]


def test_delete_of_a_run_that_moved_says_so_and_fails(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    metadata = {"run_id": "r1", "last_seq": "5", "expected_last_seq": "4"}
    fake.journal.fail_next(
        "DeleteRun", abort_with_reason("LAST_SEQ_MISMATCH", grpc.StatusCode.FAILED_PRECONDITION, metadata)
    )
    _stdin(monkeypatch, tty=False)
    assert _delete(fake, "r1", "--expected-last-seq", "4", "--yes") == 1
    assert "did not delete run r1: it moved on to seq 5 since seq 4" in capsys.readouterr().err


def _stopped(run_id: str, last_seq: int) -> state_pb2.RunSummary:
    summary = state_pb2.RunSummary(run_id=run_id, last_seq=last_seq, status=state_pb2.RUN_STATUS_COMPLETED)
    summary.updated_at.FromDatetime(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    return summary


def test_gc_dry_run_lists_what_would_go_and_deletes_nothing(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse(runs=[_stopped("old-1", 5), _stopped("old-2", 9)])
    before = datetime.datetime.now(datetime.UTC)
    assert main(["gc", "--address", fake.address, "--older-than", "30d", "--dry-run"]) == 0
    after = datetime.datetime.now(datetime.UTC)
    (listing,) = fake.journal.requests("ListRuns")
    cutoff = listing.stopped_before.ToDatetime(tzinfo=datetime.UTC)
    assert before - datetime.timedelta(days=30) <= cutoff <= after - datetime.timedelta(days=30)
    assert fake.journal.requests("DeleteRun") == []
    out = capsys.readouterr().out
    assert "old-1" in out and "old-2" in out
    assert "2 runs stopped before" in out and "would be deleted (dry run: nothing deleted)" in out


def test_gc_deletes_each_run_at_its_listed_seq_and_keeps_those_that_moved(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse(runs=[_stopped("old-1", 5), _stopped("old-2", 9)])
    moved = {"run_id": "old-1", "last_seq": "6", "expected_last_seq": "5"}
    fake.journal.fail_next(
        "DeleteRun", abort_with_reason("LAST_SEQ_MISMATCH", grpc.StatusCode.FAILED_PRECONDITION, moved)
    )
    _stdin(monkeypatch, tty=False)
    assert main(["gc", "--address", fake.address, "--older-than", "1w", "--yes"]) == 0
    assert fake.journal.requests("DeleteRun") == [
        pb.DeleteRunRequest(run_id="old-1", expected_last_seq=5),
        pb.DeleteRunRequest(run_id="old-2", expected_last_seq=9),
    ]
    out = capsys.readouterr().out
    assert "kept old-1: it moved on to seq 6 since it was listed" in out
    assert "deleted 1, kept 1 that moved since listed, 0 deleted already" in out


def test_gc_without_yes_is_refused_when_stdin_is_not_a_terminal(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse(runs=[_stopped("old-1", 5)])
    _stdin(monkeypatch, tty=False)
    assert main(["gc", "--address", fake.address, "--older-than", "30d"]) == 1
    assert fake.journal.requests("DeleteRun") == []


def test_fork_prints_where_the_new_run_branched_off(fake: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "fork", "--address", fake.address, "r1", "--at", "3", "--new-run-id", "r1-b"]) == 0
    assert fake.journal.requests("ForkRun") == [pb.ForkRunRequest(run_id="r1", at_seq=3, new_run_id="r1-b")]
    assert "forked run r1 at seq 3 into r1-b (last seq 3, prefix sha256 " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 30 * 86400), ("12h", 43200), ("1w2d", 9 * 86400), ("90m", 5400), ("45s", 45)]
)
def test_durations_are_read_in_their_units(text: str, seconds: int) -> None:
    assert duration(text) == datetime.timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "30", "d", "30 d", "-1d", "0d", "1y", "1d junk"])
def test_a_malformed_duration_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_a_watched_record_is_one_escaped_line() -> None:
    record = records_pb2.JournalRecord(seq=4, note=records_pb2.Note(text="ok\n      5 note        forged\x1b[2J\u202e"))
    line = render_record(4, record)
    assert "\n" not in line and "\x1b" not in line and "\u202e" not in line
    assert line == "     4 note        ok\\x0a      5 note        forged\\x1b[2J\\u202e"


def test_a_gc_cutoff_time_must_name_its_zone() -> None:
    assert moment("2026-11-01T00:00Z") == datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
    with pytest.raises(argparse.ArgumentTypeError, match="zone"):
        moment("2026-11-01T00:00")
    with pytest.raises(argparse.ArgumentTypeError, match="ISO 8601"):
        moment("last tuesday")


def test_gc_takes_a_cutoff_time_instead_of_an_age(fake: FakeServer) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse()
    assert main(["gc", "--address", fake.address, "--stopped-before", "2026-11-01T00:00Z", "--dry-run"]) == 0
    (listing,) = fake.journal.requests("ListRuns")
    assert listing.stopped_before.ToDatetime(tzinfo=datetime.UTC) == datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)


def test_runs_list_filters_by_parent(fake: FakeServer) -> None:
    fake.journal.pages[""] = pb.ListRunsResponse()
    assert main(["runs", "list", "--address", fake.address, "--parent", "r1"]) == 0
    (listing,) = fake.journal.requests("ListRuns")
    assert listing.parent_run_id == "r1"

"""The JetStream layout: every subject built and parsed in one place, and the one builder of fence headers."""

from __future__ import annotations

import pytest

from runjournal_server.backends.jetstream.layout import Fence, Layout, subject_problem, write_headers

LAYOUT = Layout("rj.test")


def test_a_fenced_write_names_the_stream_the_subject_and_its_last_stream_seq() -> None:
    headers = write_headers("RUNS", fence=LAYOUT.run_fence("r1"), msg_id="r1/1/abc")
    assert headers == {
        "Nats-Expected-Stream": "RUNS",
        "Nats-Msg-Id": "r1/1/abc",
        "Nats-Expected-Last-Subject-Sequence": "0",
        "Nats-Expected-Last-Subject-Sequence-Subject": "rj.test.r1.>",
    }


def test_an_append_is_fenced_on_one_subject_and_a_batch_message_carries_neither_fence_nor_id() -> None:
    fenced = write_headers("RUNS", fence=Fence("rj.test.r1.7", 42))
    assert fenced["Nats-Expected-Last-Subject-Sequence"] == "42"
    assert fenced["Nats-Expected-Last-Subject-Sequence-Subject"] == "rj.test.r1.7"
    assert "Nats-Msg-Id" not in fenced
    assert write_headers("RUNS") == {"Nats-Expected-Stream": "RUNS"}


@pytest.mark.parametrize(
    ("subject", "record"),
    [
        ("rj.test.r1.meta", ("r1", 1)),
        ("rj.test.r1.2", ("r1", 2)),
        ("rj.test.r-9.1000", ("r-9", 1000)),
        ("rj.test.r1.deleted", None),
        ("rj.test.r1.1", None),
        ("rj.test.r1.07", None),
        ("rj.test.r1.x", None),
        ("rj.test._tasks.t1", None),
        ("other.r1.meta", None),
    ],
)
def test_a_subject_names_a_record_only_where_the_layout_puts_one(subject: str, record: tuple[str, int] | None) -> None:
    assert LAYOUT.record_of(subject) == record


def test_subjects_built_are_the_subjects_parsed() -> None:
    assert LAYOUT.record_of(LAYOUT.subject("r1", 1)) == ("r1", 1)
    assert LAYOUT.record_of(LAYOUT.subject("r1", 5)) == ("r1", 5)
    assert LAYOUT.run_of_tombstone(LAYOUT.tombstone("r1")) == "r1"
    assert LAYOUT.run_of_meta(LAYOUT.subject("r1", 1)) == "r1"
    assert LAYOUT.task_of(LAYOUT.task("t1", "request"), "request") == "t1"
    assert LAYOUT.task_of(LAYOUT.task("t1", "request"), "outcome") is None
    assert LAYOUT.record_of(LAYOUT.task("t1", "request")) is None  # a task has a token more than a record


def test_no_subject_is_built_from_an_unchecked_task_id() -> None:
    with pytest.raises(ValueError, match="invalid task id"):
        LAYOUT.task("../x", "request")


def test_records_appended_after_the_subjects_were_listed_are_no_gap() -> None:
    """The list is taken before the last record is read: a concurrent append is above every listed record.

    Seen under load (6 writers on one run, a Read beside them): the list held 1..47, the last record read
    just after was 49, and 48 was reported missing, a corrupt journal, about a healthy run.
    """
    listed = [LAYOUT.subject("r1", seq) for seq in range(1, 48)]
    assert subject_problem(LAYOUT, "r1", listed, 49) is None


def test_a_gap_below_a_listed_record_is_reported_with_the_later_subject() -> None:
    listed = [LAYOUT.subject("r1", seq) for seq in (*range(1, 48), 49)]
    assert subject_problem(LAYOUT, "r1", listed, 49) == (
        "seq 48 is missing, but the stream holds a later message on 'rj.test.r1.49'",
        48,
    )
    # and with more appended since the list: still the listed record that proves the gap is named
    assert subject_problem(LAYOUT, "r1", listed, 52) == (
        "seq 48 is missing, but the stream holds a later message on 'rj.test.r1.49'",
        48,
    )

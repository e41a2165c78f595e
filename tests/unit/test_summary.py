"""The listing rule: the status from meta and the last non-inert record equals fold's."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from runjournal.v1.records_pb2 import Terminal, TerminalReason
from runjournal.v1.state_pb2 import RunStatus, RunSummary
from runjournal_server.core.fold import JournalRuleError, fold, fold_stored
from runjournal_server.core.kinds import READABLE_FORMAT_VERSIONS
from runjournal_server.core.summary import (
    INERT_FOR_STATUS,
    TERMINAL_STATUS,
    corrupt_summary,
    is_inert,
    status_of,
    summarize,
    summarize_stored,
)
from tests.support import builders as b
from tests.support.journals import TERMINAL_REASONS, stored_journals

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def listing_summary(journal: list[b.Stored]) -> RunSummary:
    """What a backend's listing computes: the meta, the last non-inert record, the last seq."""
    last_significant = [s for s in journal if not is_inert(s)][-1]
    return summarize_stored(b.RUN_ID, journal[0], last_significant, journal[-1].seq)


@pytest.mark.parametrize(
    ("record", "inert"),
    [
        (b.meta(), False),
        (b.assistant(2, 1), False),
        (b.user(2), False),
        (b.result(2, "a"), False),
        (b.deferral(2, "a"), False),
        (b.approval(2, "a"), False),
        (b.terminal(2), False),
        (b.claim(2), True),
        (b.note(2), True),
        (b.reconfigure(2, b.fingerprint()), True),
    ],
    ids=lambda v: v.WhichOneof("payload") if hasattr(v, "WhichOneof") else str(v),
)
def test_known_kinds_are_inert_only_when_they_cannot_change_the_status(record: object, inert: bool) -> None:
    assert is_inert(b.stored(record)) is inert  # type: ignore[arg-type]


def test_inert_kinds_are_claim_note_reconfigure_and_compaction() -> None:
    assert frozenset({"claim", "note", "reconfigure", "compaction"}) == INERT_FOR_STATUS


def test_unknown_kinds_are_inert_only_when_optional() -> None:
    assert is_inert(b.unknown(5, optional=True))
    assert not is_inert(b.unknown(5, optional=False))


def test_status_of_maps_every_terminal_reason_and_none_is_open() -> None:
    assert status_of(None) == RunStatus.RUN_STATUS_OPEN
    reasons = TERMINAL_REASONS
    assert len(reasons) == len(TerminalReason.values()) - 1
    assert set(TERMINAL_STATUS) == set(reasons)
    statuses = {status_of(Terminal(reason=r)) for r in reasons}
    assert len(statuses) == len(reasons)
    assert RunStatus.RUN_STATUS_OPEN not in statuses and RunStatus.RUN_STATUS_CORRUPT not in statuses
    with pytest.raises(ValueError):
        status_of(Terminal(reason=TerminalReason.TERMINAL_REASON_UNSPECIFIED))


def test_summary_carries_meta_fields_last_seq_and_terminal_message() -> None:
    first = b.meta(labels={"team": "infra"}, task_id="task-7", fp=b.fingerprint(model="m-created"))
    last = b.terminal(5, TerminalReason.TERMINAL_REASON_BUDGET, "out of tokens")
    summary = summarize(b.RUN_ID, first.meta, last, 7)
    assert summary == RunSummary(
        run_id=b.RUN_ID,
        status=RunStatus.RUN_STATUS_BUDGET,
        created_at=first.meta.created_at,
        labels={"team": "infra"},
        task_id="task-7",
        model="m-created",
        last_seq=7,
        terminal_message="out of tokens",
    )


@pytest.mark.parametrize(
    "last", [None, b.meta(), b.user(4), b.assistant(4, 1)], ids=["none", "meta", "user", "assistant"]
)
def test_summary_is_open_without_a_trailing_terminal(last: object) -> None:
    summary = summarize(b.RUN_ID, b.meta().meta, last, 4)  # type: ignore[arg-type]
    assert (summary.status, summary.terminal_message) == (RunStatus.RUN_STATUS_OPEN, "")


@pytest.mark.parametrize("version", [min(READABLE_FORMAT_VERSIONS) - 1, max(READABLE_FORMAT_VERSIONS) + 1])
def test_summary_of_another_format_version_is_corrupt(version: int) -> None:
    summary = summarize(b.RUN_ID, b.meta(format_version=version).meta, None, 1)
    assert summary.status == RunStatus.RUN_STATUS_CORRUPT
    assert f"version {version}" in summary.corruption


def test_summary_of_terminal_without_reason_is_corrupt_like_fold() -> None:
    bad = b.terminal(2, TerminalReason.TERMINAL_REASON_UNSPECIFIED)
    with pytest.raises(JournalRuleError):
        fold([b.meta(), bad])
    summary = summarize(b.RUN_ID, b.meta().meta, bad, 2)
    assert summary.status == RunStatus.RUN_STATUS_CORRUPT and "seq 2" in summary.corruption


def test_unknown_non_optional_last_record_is_listed_corrupt_like_fold() -> None:
    journal = [b.stored(b.meta()), b.unknown(2, "future_thing", optional=False), b.stored(b.note(3))]
    with pytest.raises(JournalRuleError):
        fold_stored(journal)
    summary = listing_summary(journal)
    assert summary.status == RunStatus.RUN_STATUS_CORRUPT
    assert "seq 2" in summary.corruption and "future_thing" in summary.corruption


def test_corrupt_summary_lists_the_run_with_its_problem() -> None:
    assert corrupt_summary("r1", "line 3: bad checksum") == RunSummary(
        run_id="r1", status=RunStatus.RUN_STATUS_CORRUPT, corruption="line 3: bad checksum"
    )


@PROPERTY
@given(stored_journals())
def test_listing_status_equals_fold_status_at_every_length(journal: list[b.Stored]) -> None:
    for end in range(1, len(journal) + 1):
        prefix = journal[:end]
        state = fold_stored(prefix).state()
        summary = listing_summary(prefix)
        assert summary.status == state.status
        assert summary.terminal_message == state.terminal.message
        assert summary.last_seq == state.last_seq

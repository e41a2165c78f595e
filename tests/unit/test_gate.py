"""The resume gate: every field class against force and a pending batch."""

from __future__ import annotations

import itertools

import pytest

from runjournal.v1.records_pb2 import Fingerprint
from runjournal.v1.state_pb2 import FieldClass, FieldDifference
from runjournal_server.core.gate import (
    FIELD_CLASSES,
    blocking_fields,
    changed_fields,
    check_resume,
    has_hard_block,
)
from tests.support.builders import fingerprint

HARD, BLOCKING, TOOLS, BUDGET = (
    FieldClass.FIELD_CLASS_HARD,
    FieldClass.FIELD_CLASS_BLOCKING,
    FieldClass.FIELD_CLASS_TOOLS,
    FieldClass.FIELD_CLASS_BUDGET,
)
CHANGES: dict[str, object] = {
    "provider": "openai",
    "model": "claude-y",
    "system_prompt_sha256": "c" * 64,
    "thinking_mode": "enabled",
    "tools_sha256": "d" * 64,
    "max_tokens": 8192,
    "max_iterations": 0,
}
EXPECTED_BLOCKS = {
    # class: (force, has_pending) -> blocks
    HARD: {(False, False): True, (False, True): True, (True, False): True, (True, True): True},
    BLOCKING: {(False, False): True, (False, True): True, (True, False): False, (True, True): False},
    TOOLS: {(False, False): False, (False, True): True, (True, False): False, (True, True): False},
    BUDGET: {(False, False): False, (False, True): False, (True, False): False, (True, True): False},
}


def test_every_fingerprint_field_has_its_documented_class() -> None:
    assert list(FIELD_CLASSES) == [f.name for f in Fingerprint.DESCRIPTOR.fields]
    assert dict(FIELD_CLASSES) == {
        "provider": HARD,
        "model": BLOCKING,
        "system_prompt_sha256": BLOCKING,
        "thinking_mode": BLOCKING,
        "tools_sha256": TOOLS,
        "max_tokens": BUDGET,
        "max_iterations": BUDGET,
    }


@pytest.mark.parametrize(
    ("field", "force", "has_pending"),
    list(itertools.product(CHANGES, [False, True], [False, True])),
)
def test_one_difference_blocks_by_class_force_and_pending(field: str, force: bool, has_pending: bool) -> None:
    stored = fingerprint()
    requested = fingerprint(**{field: CHANGES[field]})
    report = check_resume(stored, requested, has_pending=has_pending, force=force)
    should_block = EXPECTED_BLOCKS[FIELD_CLASSES[field]][(force, has_pending)]
    assert list(report.differences) == [
        FieldDifference(
            field=field,
            field_class=FIELD_CLASSES[field],
            stored=str(getattr(stored, field)),
            requested=str(CHANGES[field]),
            blocks=should_block,
        )
    ]
    assert report.allowed is not should_block
    assert report.forced is force
    assert report.reconfigured is False
    assert changed_fields(report) == [field]
    assert blocking_fields(report) == ([field] if should_block else [])
    assert has_hard_block(report) is (field == "provider")


@pytest.mark.parametrize(("force", "has_pending"), list(itertools.product([False, True], [False, True])))
def test_identical_fingerprints_are_allowed_with_no_differences(force: bool, has_pending: bool) -> None:
    report = check_resume(fingerprint(), fingerprint(), has_pending=has_pending, force=force)
    assert report.allowed and not report.differences and not changed_fields(report)


def test_differences_are_reported_in_fingerprint_field_order() -> None:
    requested = fingerprint(max_iterations=7, provider="other", tools_sha256="e" * 64, model="m")
    report = check_resume(fingerprint(), requested, has_pending=False, force=True)
    assert changed_fields(report) == ["provider", "model", "tools_sha256", "max_iterations"]
    assert blocking_fields(report) == ["provider"]
    assert not report.allowed


def test_budget_only_differences_are_allowed_and_reported() -> None:
    report = check_resume(fingerprint(), fingerprint(max_tokens=1, max_iterations=2), has_pending=True, force=False)
    assert report.allowed
    assert [(d.field, d.stored, d.requested) for d in report.differences] == [
        ("max_tokens", "4096", "1"),
        ("max_iterations", "50", "2"),
    ]


def test_forcing_blocking_and_tools_differences_with_a_pending_batch_is_allowed() -> None:
    requested = fingerprint(model="m", system_prompt_sha256="f" * 64, thinking_mode="adaptive", tools_sha256="0" * 64)
    assert not check_resume(fingerprint(), requested, has_pending=True, force=False).allowed
    forced = check_resume(fingerprint(), requested, has_pending=True, force=True)
    assert forced.allowed and not blocking_fields(forced)
    assert changed_fields(forced) == ["model", "system_prompt_sha256", "thinking_mode", "tools_sha256"]

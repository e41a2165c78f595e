"""Replay every scenario of conformance/scenarios on every server it applies to (conformance/FORMAT.md).

One test per (scenario, backend, auth); the self-test checks that a wrong
expectation fails the replay with a clear message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conformance.replay import (
    CONFORMANCE_DIR,
    SCENARIOS_DIR,
    Mismatch,
    Target,
    applies,
    load,
    match,
    methods,
    parse_scenario_text,
    replay,
    scenarios_to_replay,
    substitute,
)

SERVERS = (("file", False), ("file", True), ("jetstream", False), ("jetstream", True))
SCENARIO_PATHS = sorted(SCENARIOS_DIR.glob("*.json"))
"""This repository's scenarios: the coverage checks below are about them."""
REPLAYED_PATHS = sorted(scenarios_to_replay().glob("*.json"))
"""What test_scenario replays: the folder ``$RUNJOURNAL_CONFORMANCE`` names, else this repository's."""


def _server_name(backend: str, auth: bool) -> str:
    return f"{backend}-{'auth' if auth else 'noauth'}"


def _cases() -> list[object]:
    cases: list[object] = []
    for path in REPLAYED_PATHS:
        scenario = load(path)
        for backend, auth in SERVERS:
            if applies(scenario, backend, auth):
                marks = [pytest.mark.jetstream] if backend == "jetstream" else []
                name = _server_name(backend, auth)
                cases.append(pytest.param(path, name, id=f"{path.stem}[{name}]", marks=marks))
    return cases


@pytest.mark.parametrize(("path", "server"), _cases())
def test_scenario(path: Path, server: str, conformance_targets: dict[str, Target]) -> None:
    replay(load(path), conformance_targets[server])


def test_every_rpc_has_a_scenario() -> None:
    used = {methods()[step["rpc"]].full_name for p in SCENARIO_PATHS for step in load(p)["steps"]}
    every = {m.full_name for m in methods().values()}
    assert every - used == set()


def test_every_scenario_runs_somewhere() -> None:
    for path in SCENARIO_PATHS:
        assert any(applies(load(path), b, a) for b, a in SERVERS), path.name


@pytest.mark.parametrize("name", ["wrong_expectation", "short_take"])
def test_the_selftest_scenarios_are_valid_and_not_replayed_with_the_others(name: str) -> None:
    path = CONFORMANCE_DIR / "selftest" / f"{name}.json"
    load(path)
    assert path.parent != SCENARIOS_DIR


def test_a_wrong_expectation_fails_the_replay_with_a_clear_message(conformance_targets: dict[str, Target]) -> None:
    scenario = load(CONFORMANCE_DIR / "selftest" / "wrong_expectation.json")
    with pytest.raises(Mismatch) as caught:
        replay(scenario, conformance_targets["file-noauth"])
    message = str(caught.value)
    assert "scenario wrong_expectation on file-noauth, step 1 (Append)" in message
    assert re.search(r"at lastSeq: expected 7, got \"2\"", message), message


def test_a_stream_that_ends_before_its_take_fails_the_replay_saying_so(
    conformance_targets: dict[str, Target],
) -> None:
    scenario = load(CONFORMANCE_DIR / "selftest" / "short_take.json")
    with pytest.raises(Mismatch) as caught:
        replay(scenario, conformance_targets["file-noauth"])
    message = str(caught.value)
    assert "scenario short_take on file-noauth, step 1 (Read)" in message
    assert "expected 3 stream messages before cancelling, the stream ended after 1" in message, message


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": {"b": 1, "b": 1}}',
        '{"n": NaN}',
        '{"n": Infinity}',
        '{"n": 2.0}',
        '{"n": 1e3}',
        '{"a": 1,}',
        '{"a": 1} // a comment',
        '{"a": 1} {"b": 2}',
    ],
)
def test_a_scenario_text_that_is_not_strict_json_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_scenario_text(text)


def test_a_saved_object_inside_a_longer_string_is_its_compact_json() -> None:
    saved = {"save.o": {"k": ["é", 1]}, "save.n": 5, "save.b": True}
    assert substitute("x ${save.o} ${save.n} ${save.b}", saved, "") == 'x {"k":["é",1]} 5 true'


PYTEST_COVERED: dict[str, list[tuple[str, str]]] = {
    # reason: the existing tests that produce it from a damaged or unavailable store (FORMAT.md)
    "CORRUPT_JOURNAL": [
        ("tests/api/test_files.py", "test_flipped_byte_in_an_interior_line_is_corrupt_with_its_line_and_listed"),
        (
            "tests/api/test_jetstream_replicas.py",
            "test_a_stray_message_in_a_run_is_corrupt_journal_in_read_fold_and_the_listing",
        ),
    ],
    "STORAGE_FULL": [
        (
            "tests/durability/test_disk_full.py",
            "test_full_tmpfs_refuses_appends_creations_and_claims_and_recovers_when_it_grows",
        ),
        (
            "tests/api/test_jetstream_replicas.py",
            "test_a_creation_batch_that_cannot_be_stored_whole_leaves_no_run",
        ),
    ],
    "STORAGE_UNAVAILABLE": [
        (
            "tests/durability/test_fsync_failure.py",
            "test_failed_fsync_refuses_the_append_keeps_everything_acknowledged_and_recovers",
        ),
        (
            "tests/api/test_jetstream_server.py",
            "test_nats_restart_loses_no_acknowledged_record_and_outage_appends_fail_unavailable",
        ),
    ],
    "RUN_LOCKED": [
        ("tests/api/test_files.py", "test_second_server_process_is_refused_a_held_run_until_the_first_is_killed"),
    ],
    "TOO_MANY_CALLS": [
        ("tests/api/test_edge_limits.py", "test_calls_beyond_max_concurrent_rpcs_are_refused_resource_exhausted"),
    ],
}


def test_every_reason_has_a_scenario_or_a_named_pytest() -> None:
    table = json.loads((CONFORMANCE_DIR.parent / "testdata" / "error_metadata.json").read_text())["reasons"]
    expected = {
        step["expect"]["error"]["reason"]
        for p in SCENARIO_PATHS
        for step in load(p)["steps"]
        if "error" in step["expect"]
    }
    assert set(table) - expected == set(PYTEST_COVERED)
    assert expected <= set(table)
    format_md = (CONFORMANCE_DIR / "FORMAT.md").read_text()
    for reason, tests in PYTEST_COVERED.items():
        for path, name in tests:
            assert re.search(rf"def {name}\(", (CONFORMANCE_DIR.parent / path).read_text()), (path, name)
            assert f"`{path}::{name}`" in format_md.split(f"| `{reason}` |")[1].split("\n")[0], (reason, name)


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ({"seq": 2}, {"seq": "2"}),
        ({"duplicate": False, "n": 0, "s": "", "l": [], "m": {}, "z": "0"}, {}),
        ({"pending": None}, {}),
        ({"at": "${any}"}, {"at": ""}),
        ({"a": [{"b": 1}]}, {"a": [{"b": 1, "c": 2}], "d": 3}),
    ],
)
def test_the_subset_rule_accepts(expected: object, actual: object) -> None:
    match(expected, actual, "")


@pytest.mark.parametrize(
    ("expected", "actual", "message"),
    [
        ({"seq": 2}, {"seq": "3"}, 'at seq: expected 2, got "3"'),
        ({"seq": 2}, {}, "at seq: expected 2, got (absent)"),
        ({"ok": True}, {"ok": 1}, "at ok: expected true, got 1"),
        ({"pending": None}, {"pending": {}}, "at pending: expected null, got {} (expected absent)"),
        ({"at": "${any}"}, {}, 'at at: expected "${any}", got (absent) (expected present)'),
        ({"a": [1]}, {"a": [1, 2]}, "at a: expected [1], got [1, 2] (expected 1 items)"),
        ({"a": [{"b": 1}]}, {"a": [{"b": 2}]}, "at a[0].b: expected 1, got 2"),
    ],
)
def test_the_subset_rule_refuses_with_the_path(expected: object, actual: object, message: str) -> None:
    with pytest.raises(Mismatch) as caught:
        match(expected, actual, "")
    assert str(caught.value) == message


def test_format_md_lists_every_scenario() -> None:
    format_md = (CONFORMANCE_DIR / "FORMAT.md").read_text()
    section = format_md.split("## The scenarios")[1].split("\n## ")[0]
    assert f"{len(SCENARIO_PATHS)} files" in section
    for path in SCENARIO_PATHS:
        assert f"| `{path.stem}` |" in section, path.stem

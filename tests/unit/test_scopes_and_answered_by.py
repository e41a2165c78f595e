"""Token scopes in the tokens file, the ``answered_by`` field of tool results (issue 10, item 18), and the parts
of a record only the server writes, each refused on one path (``core/authorship.py``)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from runjournal.v1 import records_pb2
from runjournal_server.api.auth import (
    DEFAULT_SCOPES,
    UNRESTRICTED,
    PermissionDeniedError,
    Scope,
    TokenFileError,
    TokenTable,
    token_sha256,
)
from runjournal_server.core.authorship import SERVER_WRITTEN, refuse_server_written, server_written
from runjournal_server.core.errors import InvalidRecordError
from runjournal_server.core.records import encode
from runjournal_server.core.schema import validate
from tests.support import builders as b


def table(tmp_path: Path, scopes: str | None) -> TokenTable:
    path = tmp_path / "tokens.toml"
    text = f'[[tokens]]\nname = "t"\nsha256 = "{token_sha256("s")}"\nrun_id_prefixes = [""]\n'
    path.write_text(text + (f"scopes = {scopes}\n" if scopes is not None else ""))
    return TokenTable.from_file(path)


def scopes_of(tokens: TokenTable) -> frozenset[Scope]:
    return tokens.authenticate([("authorization", "Bearer s")]).scopes


def test_a_token_without_scopes_is_a_worker_only(tmp_path: Path) -> None:
    assert scopes_of(table(tmp_path, None)) == DEFAULT_SCOPES == {Scope.WORKER}


@pytest.mark.parametrize(
    ("text", "expected"),
    [('["worker"]', {Scope.WORKER}), ('["operator"]', {Scope.OPERATOR}), ('["operator", "worker"]', set(Scope))],
)
def test_scopes_are_read_from_the_tokens_file(tmp_path: Path, text: str, expected: set[Scope]) -> None:
    assert scopes_of(table(tmp_path, text)) == expected


@pytest.mark.parametrize("text", ["[]", '["admin"]', '"operator"', "[1]"])
def test_malformed_scopes_are_refused_with_the_known_ones(tmp_path: Path, text: str) -> None:
    with pytest.raises(TokenFileError, match="'worker', 'operator'"):
        table(tmp_path, text)


def test_a_missing_scope_is_permission_denied_naming_it(tmp_path: Path) -> None:
    access = table(tmp_path, '["worker"]').authenticate([("authorization", "Bearer s")])
    with pytest.raises(PermissionDeniedError) as caught:
        access.check_scope(frozenset({Scope.OPERATOR}), "run-1")
    assert caught.value.metadata == {"principal": "t", "run_id": "run-1", "scope": "operator"}


def test_with_auth_off_the_request_names_the_approver_and_nobody_is_recorded() -> None:
    assert UNRESTRICTED.principal is None
    assert UNRESTRICTED.approver("alice", "run-1") == "alice"
    UNRESTRICTED.check_scope(frozenset({Scope.OPERATOR}))
    UNRESTRICTED.check_appended([b.approval(5, "c1")], "run-1")


def answered(by: str, *, remote: bool = True) -> records_pb2.JournalRecord:
    record = b.result(5, "c1", "42", remote=remote)
    record.tool_result.answered_by = by
    return record


def tool_result_schema() -> jsonschema.Draft202012Validator:
    text = (resources.files("runjournal_server") / "schemas" / "tool_result.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def test_answered_by_is_stored_and_matches_the_schema() -> None:
    stored = encode(answered("ops"))
    assert json.loads(stored.body)["payload"]["answered_by"] == "ops"
    assert tool_result_schema().is_valid(json.loads(stored.body))


@pytest.mark.parametrize(
    ("record", "problem"),
    [(answered("ops", remote=False), "only on a remote result"), (answered("x" * 257), "1-256 characters")],
)
def test_answered_by_is_refused_off_a_remote_result_or_too_long(
    record: records_pb2.JournalRecord, problem: str
) -> None:
    with pytest.raises(InvalidRecordError, match=problem) as caught:
        validate(record)
    assert caught.value.field == "tool_result.answered_by"
    payload = {"tool_use_id": "c1", "answered_by": record.tool_result.answered_by}
    if record.tool_result.remote:
        payload["remote"] = True
    assert not tool_result_schema().is_valid({"id": "runjournal.v1.tool_result", "seq": 5, "payload": payload})


def forked_meta() -> records_pb2.JournalRecord:
    record = b.meta()
    record.meta.forked_from.CopyFrom(records_pb2.ForkOrigin(run_id="src", seq=3, prefix_sha256="0" * 64))
    return record


def spawned_meta() -> records_pb2.JournalRecord:
    record = b.meta()
    record.meta.spawned_by.CopyFrom(records_pb2.SpawnOrigin(run_id="p", tool_use_id="c1", seq=2, root_run_id="p"))
    return record


def child_deferral() -> records_pb2.JournalRecord:
    record = b.deferral(5, "c1")
    record.deferral.child_run_id = "child"
    return record


def child_result() -> records_pb2.JournalRecord:
    record = b.result(5, "c1", remote=True)
    record.tool_result.answered_by_run_id = "child"
    return record


SERVER_WRITTEN_EXAMPLES = {
    "claim": (b.claim(5), False),
    "meta.forked_from": (forked_meta(), False),
    "meta.spawned_by": (spawned_meta(), False),
    "deferral.child_run_id": (child_deferral(), False),
    "tool_result.answered_by_run_id": (child_result(), False),
    "approval": (b.approval(5, "c1"), True),
    "tool_result.answered_by": (answered("ops"), True),
}
"""One record carrying each part only the server writes, and whether that part names its caller (refused by auth)."""


def test_every_server_written_part_names_a_real_field_and_has_an_example() -> None:
    assert {part.field for part in SERVER_WRITTEN} == set(SERVER_WRITTEN_EXAMPLES)
    for part in SERVER_WRITTEN:
        kind, _, name = part.field.partition(".")
        payload = records_pb2.JournalRecord.DESCRIPTOR.fields_by_name[kind].message_type
        assert not name or name in payload.fields_by_name, part.field


@pytest.mark.parametrize("field", sorted(SERVER_WRITTEN_EXAMPLES))
def test_each_server_written_part_is_refused_on_exactly_one_path(tmp_path: Path, field: str) -> None:
    """With auth on: a part naming the caller by auth (PERMISSION_DENIED), any other by the request rule."""
    record, names_caller = SERVER_WRITTEN_EXAMPLES[field]
    part = server_written(record)
    assert part is not None and (part.field, part.names_caller) == (field, names_caller)
    access = table(tmp_path, '["worker", "operator"]').authenticate([("authorization", "Bearer s")])
    if names_caller:
        refuse_server_written(record)
        UNRESTRICTED.check_appended([record], "run-1")  # with auth off, a client may write it
        with pytest.raises(PermissionDeniedError, match=part.writer) as denied:
            access.check_appended([b.note(4), record], "run-1")
        assert denied.value.metadata == {"principal": "t", "run_id": "run-1"}
    else:
        access.check_appended([record], "run-1")
        with pytest.raises(InvalidRecordError, match=part.writer) as refused:
            refuse_server_written(record)
        assert (refused.value.field, refused.value.metadata["seq"]) == (field, str(record.seq))


@pytest.mark.parametrize(
    "record", [b.meta(), b.result(5, "c1", "42"), b.result(5, "c1", "42", remote=True), b.deferral(5, "c1"), b.note(5)]
)
def test_a_record_without_a_server_written_part_passes_both_paths(
    tmp_path: Path, record: records_pb2.JournalRecord
) -> None:
    assert server_written(record) is None
    refuse_server_written(record)
    table(tmp_path, '["worker", "operator"]').authenticate([("authorization", "Bearer s")]).check_appended(
        [record], "run-1"
    )

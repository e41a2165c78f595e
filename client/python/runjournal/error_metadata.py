"""Every error reason's ErrorInfo metadata: its keys, their types, and when each is present.

This table is the one statement of what a refusal's metadata holds. The
server builds every ``ErrorInfo`` through ``render_metadata``, which sends
only what the table declares, and logs whatever breaks it
(``metadata_problems``: a key not declared for the reason, a value of another
type, a missing always-present key) as the server bug it is. This client's
typed error properties (``runjournal.errors``) read the same keys as the same
types. A test on each side walks every reason against the table.

It lives in the client package, not the server's, because the server already
depends on this package (the generated ``runjournal.v1`` code) while the
client must never import the server. ``scripts/generate.py`` writes it as
``testdata/error_metadata.json``, with ``REASON_DOCS``, and from that the
error classes of every client: this package's ``_reason_errors``, the Go
client's ``reasons.go`` and the TypeScript client's ``reasons.ts``. People
read it in the error table of ``proto/runjournal/v1/journal_service.proto``.

On the wire ErrorInfo metadata values are strings: an ``int`` is written in
decimal, a ``list`` as its items joined by commas (the items never contain
one), a ``str`` as itself (possibly empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

MetadataType = type[int] | type[str] | type[list[str]]


@dataclass(frozen=True)
class Key:
    """One metadata key of a reason: its type, and whether every refusal with that reason carries it."""

    type: MetadataType
    always: bool


_ALWAYS_STR: Final = Key(str, always=True)
_ALWAYS_INT: Final = Key(int, always=True)
_SOMETIMES_STR: Final = Key(str, always=False)
_SOMETIMES_INT: Final = Key(int, always=False)

INDEX: Final = "index"
"""The 0-based position, in an AppendBatch request, of the record a refusal is about.

Present on every AppendBatch refusal that concerns one record of the batch,
and only there (never on Append, which has one record)."""

_INDEX: Final = {INDEX: _SOMETIMES_INT}
_CALL: Final = {"run_id": _ALWAYS_STR, "tool_use_id": _ALWAYS_STR}
_SEQ: Final = {"run_id": _ALWAYS_STR, "seq": _ALWAYS_INT, "last_seq": _ALWAYS_INT, **_INDEX}
_STORE: Final = {"run_id": _SOMETIMES_STR, "task_id": _SOMETIMES_STR}  # which one names what the store failed for

ERROR_METADATA: Final[Mapping[str, Mapping[str, Key]]] = {
    "INVALID_ARGUMENT": {"field": _ALWAYS_STR, **_INDEX},
    "INVALID_RECORD": {"field": _ALWAYS_STR, "seq": _SOMETIMES_INT, **_INDEX},
    "RECORD_TOO_LARGE": {"size": _ALWAYS_INT, "limit": _ALWAYS_INT, "seq": _SOMETIMES_INT, **_INDEX},
    "RESPONSE_TOO_LARGE": {"run_id": _ALWAYS_STR, "size": _ALWAYS_INT, "limit": _ALWAYS_INT},
    "RUN_NOT_FOUND": {"run_id": _ALWAYS_STR},
    "RUN_EXISTS": {"run_id": _ALWAYS_STR, **_INDEX},
    "SEQ_GAP": _SEQ,
    "SEQ_CONFLICT": _SEQ,
    "RUN_CLAIMED": {"run_id": _ALWAYS_STR, "claim_token": _ALWAYS_INT, "claimed_by": _ALWAYS_STR},
    "RUN_LOCKED": {"run_id": _ALWAYS_STR},
    "VERSION_MISMATCH": {"run_id": _ALWAYS_STR, "found_version": _ALWAYS_INT, "expected_version": _ALWAYS_INT},
    "CORRUPT_JOURNAL": {"run_id": _ALWAYS_STR, "line": _SOMETIMES_INT, "seq": _SOMETIMES_INT},
    "RESUME_REFUSED": {"run_id": _ALWAYS_STR, "fields": Key(list, always=True)},
    "ALREADY_ANSWERED": {**_CALL, "answered_at_seq": _ALWAYS_INT},
    "NOT_DEFERRED": _CALL,
    "ALREADY_DECIDED": {**_CALL, "decided_at_seq": _ALWAYS_INT},
    "CALL_NOT_PENDING": _CALL,
    "STORAGE_FULL": _STORE,
    "STORAGE_UNAVAILABLE": _STORE,
    "UNAUTHENTICATED": {},
    # ``principal`` is the token's name (never the token); ``run_id`` or
    # ``task_id`` the id outside its prefixes; ``scope`` the scope the call
    # needs and the token lacks.
    "PERMISSION_DENIED": {
        "principal": _ALWAYS_STR,
        "run_id": _SOMETIMES_STR,
        "task_id": _SOMETIMES_STR,
        "scope": _SOMETIMES_STR,
    },
    "TASK_NOT_FOUND": {"task_id": _ALWAYS_STR},
    "TASK_CONFLICT": {"task_id": _ALWAYS_STR},
    "ALREADY_COMPLETED": {"task_id": _ALWAYS_STR},
    "RUN_DELETED": {"run_id": _ALWAYS_STR, "last_seq": _ALWAYS_INT},
    "LAST_SEQ_MISMATCH": {"run_id": _ALWAYS_STR, "last_seq": _ALWAYS_INT, "expected_last_seq": _ALWAYS_INT},
    "TASK_DELETED": {"task_id": _ALWAYS_STR},
    # ``budget`` names the bound the call met: "calls" (journal and task calls,
    # ``max_concurrent_rpcs``), "health" (health and reflection,
    # ``max_health_rpcs``) or "connection" (the share of that one connection).
    "TOO_MANY_CALLS": {"budget": _ALWAYS_STR, "limit": _ALWAYS_INT},
}
"""Reason -> its metadata keys. Every reason the server reports is here."""

REASON_DOCS: Final[Mapping[str, str]] = {
    "INVALID_ARGUMENT": "a request field is malformed; `field` names it.",
    "INVALID_RECORD": "the record breaks its schema or the run's state; `field` names what is wrong.",
    "RECORD_TOO_LARGE": "the encoded record (`size` bytes) exceeds the server's maximum record size (`limit`).",
    "RESPONSE_TOO_LARGE": (
        "the folded state (`size` bytes) would not fit in one response (`limit`); fold again with a "
        "conversation_from, to get only the messages the caller lacks."
    ),
    "RUN_NOT_FOUND": "no journal exists for the run id.",
    "RUN_EXISTS": "a different meta record is already stored for the run id.",
    "SEQ_GAP": "the record's seq is beyond the run's last seq (`last_seq`) + 1.",
    "SEQ_CONFLICT": "a different record is already stored at the seq.",
    "RUN_CLAIMED": (
        "another worker claimed the run; this writer must stop. `claim_token` is the current holder's token, "
        "`claimed_by` its worker id (may be empty)."
    ),
    "RUN_LOCKED": "another server process holds the run. Not retried automatically.",
    "VERSION_MISMATCH": "the journal's format version (`found_version`) is not the server's (`expected_version`).",
    "CORRUPT_JOURNAL": "the stored journal is damaged at `line` and/or `seq`.",
    "RESUME_REFUSED": "the resume gate refused the claim; `fields` lists the fingerprint fields that refused it.",
    "ALREADY_ANSWERED": "the call has a result already, at `answered_at_seq`.",
    "NOT_DEFERRED": (
        "the call does not wait for this write: Answer needs a call deferred for an answer, Approve one "
        "deferred for a decision (`needs_approval`); a call never deferred waits for its worker."
    ),
    "ALREADY_DECIDED": "the call has an operator's decision already, at `decided_at_seq`.",
    "CALL_NOT_PENDING": "the call is not in the run's pending batch, so it cannot be decided.",
    "STORAGE_FULL": "the server's store is full; nothing was written.",
    "STORAGE_UNAVAILABLE": (
        "the store failed; resending the same request is safe. Not retried automatically: the caller decides "
        "whether and when."
    ),
    "UNAUTHENTICATED": "the call carried no valid bearer token (or a proxy in front of the server refused it).",
    "PERMISSION_DENIED": (
        "the token may not touch this run or task (outside its id prefixes), or the call needs a scope the token "
        'lacks (`scope`, e.g. "operator" for Answer and Approve). `principal` is the token\'s name as the server '
        "knows it."
    ),
    "TASK_NOT_FOUND": "no task with this id; `task_id` names it.",
    "TASK_CONFLICT": "the task id was already submitted with a different request (or labels).",
    "ALREADY_COMPLETED": (
        "the task has an outcome already; the first one stands. The refusal carries the stored task, with the "
        "outcome that won, among its details."
    ),
    "RUN_DELETED": (
        "the run was deleted (DeleteRun or retention); its id is never used again. `last_seq` is its last seq "
        "then. A watch of the run ends with it when the run is deleted while watched."
    ),
    "LAST_SEQ_MISMATCH": (
        "DeleteRun's `expected_last_seq` is not the run's last seq (`last_seq`); nothing was deleted. Something was "
        "appended after the caller looked: look at the run again before deleting it."
    ),
    "TASK_DELETED": "the task was deleted; its id is never used again.",
    "TOO_MANY_CALLS": (
        'the server already serves `limit` calls of this kind at once (`budget`: "calls" for journal and task '
        'calls, "health" for health and reflection, "connection" for one connection\'s share of those); '
        "nothing was done. Not retried automatically: retry later, or end streams no longer read."
    ),
}
"""Reason -> what it tells a client, for the clients' error classes (``scripts/generate.py`` writes them).

A clause that goes after "REASON: " in a class's documentation. A metadata
key in backquotes (`last_seq`) becomes the name each language gives it.
"""


def metadata_problems(reason: str, values: Mapping[str, object]) -> list[str]:
    """How a refusal's typed metadata breaks the table: undeclared keys, wrong types, missing keys.

    Empty when it keeps the table. Each problem is a server bug, never a
    client's mistake; the server logs them and tests fail on them.
    """
    declared = ERROR_METADATA.get(reason)
    if declared is None:
        return [f"reason {reason!r} is not in ERROR_METADATA"]
    problems = [f"{reason}: undeclared metadata key {k!r}" for k in sorted(set(values) - set(declared))]
    problems += [
        f"{reason}: metadata {k!r} must be {declared[k].type.__name__}, got {v!r}"
        for k, v in values.items()
        if k in declared and _render(declared[k].type, v) is None
    ]
    problems += [f"{reason}: missing metadata {k!r}" for k, key in declared.items() if key.always and k not in values]
    return problems


def render_metadata(reason: str, values: Mapping[str, object]) -> dict[str, str]:
    """The wire form (all strings) of a refusal's typed metadata: only its declared, well-typed keys.

    Whatever breaks the table (see ``metadata_problems``) is left out rather
    than sent, so a client never sees a key or a type the table does not
    promise, and a server bug still answers with the refusal's reason.
    """
    declared = ERROR_METADATA.get(reason, {})
    wire = {k: _render(declared[k].type, v) for k, v in values.items() if k in declared}
    return {k: v for k, v in wire.items() if v is not None}


def _render(kind: MetadataType, value: object) -> str | None:
    # bool is an int in Python; no key is a boolean, so True is a bug, not 1.
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if kind is str and isinstance(value, str):
        return value
    if kind is list and isinstance(value, list | tuple) and all(isinstance(i, str) and "," not in i for i in value):
        return ",".join(value)
    return None


def parse_metadata(kind: MetadataType, text: str) -> int | str | list[str] | None:
    """A wire value read back as its declared type; None when it does not parse (a damaged status)."""
    if kind is int:
        try:
            return int(text)
        except ValueError:
            return None
    if kind is list:
        return [item for item in text.split(",") if item]
    return text

"""Where a Claude Agent SDK session key lives in runjournal, and how its entries are stored: pure, no I/O.

A key (project key, session id, optional subpath) is one run, whose id is
``<namespace>_p<project>_s<session>[_k<subpath>]`` by the rule of
``_run_ids`` (escaped, hashed when too long, the key kept verbatim in the
run's labels, which ListRuns filters on and returns).

Each entry is one ``user`` record holding one ``opaque`` block (provider
``claude-agent-sdk``, type the entry's ``type``, JSON the entry's text):
``user`` because the fold makes it part of the conversation that
``runjournal runs show`` prints (a ``note`` is inert and never shown), and
``opaque`` because its JSON text is stored verbatim and validated as JSON
by the server, and no model adapter mistakes it for words of a user. A main
transcript's every write ends with a ``note`` holding the SDK's session
summary, so listing summaries reads one record per session.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import SessionKey, SessionStoreEntry, SessionSummaryEntry, fold_session_summary

from runjournal._builders import meta_record, note_record, text_block, user_record
from runjournal.adapters._run_ids import run_id_of
from runjournal.v1 import records_pb2

PROVIDER = "claude-agent-sdk"
"""The provider of the entries' opaque blocks and of the runs' fingerprint."""
LANGUAGE = "python"
"""Whose summary a summary note holds: each SDK folds its own shape (``is_sidechain`` here, ``isSidechain`` in TS)."""
SUMMARY_TEXT = "claude-agent-sdk session summary"

LABEL_NAMESPACE = "claude-agent-sdk/namespace"
LABEL_PROJECT = "claude-agent-sdk/project"
LABEL_SESSION = "claude-agent-sdk/session"
LABEL_SUBPATH = "claude-agent-sdk/subpath"
LABEL_TRANSCRIPT = "claude-agent-sdk/transcript"
MAIN, SUBAGENT = "main", "subagent"

MAX_LABEL_VALUE_CHARS = 256
MAX_OPAQUE_TYPE_CHARS = 128


@dataclass(frozen=True)
class Place:
    """A session key's run: its id and the labels that name the key."""

    run_id: str
    project_key: str
    session_id: str
    subpath: str | None
    labels: Mapping[str, str]

    @property
    def is_main(self) -> bool:
        return self.subpath is None


def place_of(namespace: str, key: Mapping[str, Any]) -> Place:
    """The run of ``key``, or ``ValueError`` for a key that names none (nothing is written for it)."""
    project_key = _part(key, "project_key")
    session_id = _part(key, "session_id")
    subpath = None if key.get("subpath") is None else _part(key, "subpath")
    if subpath == "":
        raise ValueError("subpath must not be empty: omit it for the main transcript")
    parts = [("p", project_key), ("s", session_id)] + ([("k", subpath)] if subpath is not None else [])
    run_id = run_id_of(namespace, parts)
    return Place(run_id, project_key, session_id, subpath, run_labels(namespace, project_key, session_id, subpath))


def run_labels(namespace: str, project_key: str, session_id: str, subpath: str | None) -> dict[str, str]:
    """The labels of a key's run: the key verbatim, and whether it is a main or a subagent transcript."""
    labels = label_filter(namespace, project_key, session_id, MAIN if subpath is None else SUBAGENT)
    if subpath is not None:
        labels[LABEL_SUBPATH] = subpath
    return labels


def label_filter(
    namespace: str, project_key: str, session_id: str | None = None, transcript: str | None = None
) -> dict[str, str]:
    """The ListRuns filter of the runs with these parts of a key (the server filters; nothing is listed twice)."""
    labels = {LABEL_NAMESPACE: namespace, LABEL_PROJECT: project_key}
    if session_id is not None:
        labels[LABEL_SESSION] = session_id
    if transcript is not None:
        labels[LABEL_TRANSCRIPT] = transcript
    return labels


def check_project_key(project_key: str) -> str:
    """``project_key`` unchanged, or ``ValueError`` for one no key can have (nothing could be listed under it)."""
    return _part({"project_key": project_key}, "project_key")


def _part(key: Mapping[str, Any], name: str) -> str:
    """One part of a session key, checked: a string that fits in a label, and valid Unicode."""
    value = key.get(name)
    if not isinstance(value, str):
        raise ValueError(f"the session key's {name} must be a string, got {type(value).__name__}")
    if len(value) > MAX_LABEL_VALUE_CHARS:
        raise ValueError(
            f"the session key's {name} has {len(value)} characters; at most {MAX_LABEL_VALUE_CHARS} fit in the "
            "run's labels, which keep the key for listing"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"the session key's {name} is not valid Unicode (a lone surrogate)") from err
    return value


# --- records ------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One entry, ready to store: its JSON text, its idempotency key and its type."""

    text: str
    uuid: str | None
    type: str


def prepare(entries: Iterable[SessionStoreEntry]) -> list[Entry]:
    """The entries as JSON text, in order; ``ValueError`` (before anything is written) for one that is not JSON."""
    prepared = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"entries[{index}] must be a JSON object, got {type(entry).__name__}")
        try:
            # Key order is kept (no sort): what load returns reads as what was appended.
            text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"entries[{index}] is not JSON-safe: {err}") from err
        uuid, kind = entry.get("uuid"), entry.get("type")
        shown = kind if isinstance(kind, str) and 1 <= len(kind) <= MAX_OPAQUE_TYPE_CHARS else "entry"
        prepared.append(Entry(text, uuid if isinstance(uuid, str) else None, shown))
    return prepared


def entry_record(entry: Entry) -> records_pb2.JournalRecord:
    opaque = records_pb2.OpaqueBlock(provider=PROVIDER, type=entry.type, json=entry.text)
    return user_record(content=[records_pb2.ContentBlock(opaque=opaque)])


def entry_of(record: records_pb2.JournalRecord) -> dict[str, Any] | None:
    """The entry a record holds, or None for any other record (meta, summary, anything a person added)."""
    if record.WhichOneof("payload") != "user" or len(record.user.content) != 1:
        return None
    block = record.user.content[0]
    if block.WhichOneof("block") != "opaque" or block.opaque.provider != PROVIDER:
        return None
    value = json.loads(block.opaque.json)
    return value if isinstance(value, dict) else None


def summary_record(data: Mapping[str, Any]) -> records_pb2.JournalRecord:
    return note_record(SUMMARY_TEXT, {"language": LANGUAGE, "data": dict(data)})


def summary_of(record: records_pb2.JournalRecord) -> dict[str, Any] | None:
    """The summary ``data`` a note of this language holds, or None."""
    if record.WhichOneof("payload") != "note" or record.note.text != SUMMARY_TEXT:
        return None
    value = json.loads(record.note.data_json or "null")
    if not isinstance(value, dict) or value.get("language") != LANGUAGE or not isinstance(value.get("data"), dict):
        return None
    return value["data"]


def creation_record(place: Place) -> records_pb2.JournalRecord:
    """The meta of a key's run: the key in its labels and, for people, in its prompt."""
    where = f" ({place.subpath})" if place.subpath is not None else ""
    prompt = f"Claude Agent SDK transcript: project {place.project_key}, session {place.session_id}{where}"
    fingerprint = records_pb2.Fingerprint(provider=PROVIDER, model="session-store")
    return meta_record(place.run_id, fingerprint, [text_block(prompt)], labels=place.labels)


def fold_summary(session_id: str, data: dict[str, Any] | None, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The SDK's own fold of ``entries`` onto ``data``; the store never reads what is inside."""
    prev: SessionSummaryEntry | None = None if data is None else {"session_id": session_id, "mtime": 0, "data": data}
    key: SessionKey = {"project_key": "", "session_id": session_id}
    return fold_session_summary(prev, key, entries)["data"]  # type: ignore[arg-type]


def epoch_ms(stamp: Any) -> int:
    """A protobuf ``Timestamp`` in Unix epoch milliseconds."""
    return int(stamp.seconds) * 1000 + int(stamp.nanos) // 1_000_000


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


# --- what a writer knows of a run ---------------------------------------------


@dataclass
class Transcript:
    """What a writer has read of one run: the last seq, the uuids stored, and (main) the folded summary."""

    place: Place
    last_seq: int = 0
    uuids: set[str] = field(default_factory=set)
    summary: dict[str, Any] | None = None

    def apply(self, seq: int, record: records_pb2.JournalRecord) -> None:
        """Takes in the record stored at ``seq`` (the one after ``last_seq``)."""
        if record.WhichOneof("payload") == "meta":
            self._check_meta(record.meta)
        entry = entry_of(record)
        if entry is not None:
            uuid = entry.get("uuid")
            if isinstance(uuid, str):
                self.uuids.add(uuid)
            if self.place.is_main:
                self.summary = fold_summary(self.place.session_id, self.summary, [entry])
        self.last_seq = seq

    def forget(self) -> None:
        """Back to knowing nothing of the run, to read it again from its first record."""
        self.last_seq, self.uuids, self.summary = 0, set(), None

    def new(self, entries: list[Entry]) -> list[Entry]:
        """The entries not stored yet: no uuid stored or earlier in the list (entries without a uuid always)."""
        seen: set[str] = set()
        fresh = []
        for entry in entries:
            if entry.uuid is not None:
                if entry.uuid in self.uuids or entry.uuid in seen:
                    continue
                seen.add(entry.uuid)
            fresh.append(entry)
        return fresh

    def batch(self, entries: list[Entry]) -> list[records_pb2.JournalRecord]:
        """The records that store ``entries`` next: the meta first for a new run, the summary last on a main one."""
        records = [] if self.last_seq else [creation_record(self.place)]
        records += [entry_record(entry) for entry in entries]
        if self.place.is_main:
            folded = fold_summary(self.place.session_id, self.summary, [json.loads(e.text) for e in entries])
            records.append(summary_record(folded))
        for offset, record in enumerate(records, start=self.last_seq + 1):
            record.seq = offset
        return records

    def _check_meta(self, meta: records_pb2.Meta) -> None:
        labels = dict(meta.labels)
        if any(labels.get(name) != value for name, value in self.place.labels.items()):
            raise ValueError(
                f"run {self.place.run_id} exists and is not this store's transcript of the key "
                f"(its labels are {labels}); nothing was written"
            )

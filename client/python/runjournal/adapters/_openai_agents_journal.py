"""Where an OpenAI Agents SDK session lives in runjournal, and how its history is kept: pure, no I/O.

A session is one run, whose id is ``<namespace>_s<session id>`` by the rule
of ``_run_ids`` (escaped, hashed when too long); the session id itself is kept
verbatim in the run's labels (``openai-agents/session``), which ListRuns
filters on.

The journal is append-only, and the SDK's history is not (``pop_item``,
``clear_session``), so history changes are records that supersede, and the
session's items are what the records fold to:

* an item is a ``user`` record holding one ``opaque`` block (provider
  ``openai-agents``, type the item's ``type``, JSON the item): ``opaque`` so
  its JSON text is stored verbatim, ``user`` so the server's fold shows it in
  ``runjournal runs show``. Not ``assistant``/``tool_result`` records: the
  server pairs tool calls with results there, and counts each assistant record
  as a model call, while the SDK adds items in any grouping it likes (a
  ``function_call`` may be popped, an output added without its call);
* every add ends with a ``note`` naming the write (a fresh id), so two
  writers adding equal items at one seq never look like a retry of each
  other (the append rule would call the second a duplicate and drop its item);
* a pop is a ``note`` naming the seq of the item it removes, a clear a
  ``note`` that removes every item before it. The removed items stay in the
  journal: ``Read`` and ``runs show`` still list them.

A note is optional to the server (no decision of the server depends on it);
to this adapter it is not, and the fold below refuses notes it cannot apply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runjournal._builders import meta_record, note_record, opaque_block, text_block, user_record
from runjournal.adapters._run_ids import run_id_of
from runjournal.v1 import records_pb2

PROVIDER = "openai-agents"
"""The provider of the items' opaque blocks and of the runs' fingerprint."""
OP_KEY = "openai_agents_session"
"""The key of a note's data that makes it one of this adapter's history records."""
LABEL_NAMESPACE = "openai-agents/namespace"
LABEL_SESSION = "openai-agents/session"

MAX_SESSION_ID_CHARS = 256
"""What a label value holds: the session id is kept verbatim in the run's labels."""
MAX_TYPE_CHARS = 128


class SessionJournalError(ValueError):
    """The session's run holds records this adapter cannot fold (written by something else)."""


# --- where a session lives -----------------------------------------------------


def check_session_id(session_id: str) -> str:
    """``session_id`` unchanged, or ``ValueError`` for one the run's labels cannot keep verbatim."""
    if not isinstance(session_id, str):
        raise ValueError(f"a session id must be a string, got {type(session_id).__name__}")
    if len(session_id) > MAX_SESSION_ID_CHARS:
        raise ValueError(
            f"a session id has at most {MAX_SESSION_ID_CHARS} characters (the run's labels keep it), "
            f"got {len(session_id)}"
        )
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError("the session id is not valid Unicode (a lone surrogate)") from err
    return session_id


def session_run_id(namespace: str, session_id: str) -> str:
    """The run id of ``session_id`` under ``namespace``: ``<namespace>_s<session id escaped>``."""
    return run_id_of(namespace, [("s", session_id)])


def run_labels(namespace: str, session_id: str) -> dict[str, str]:
    return {LABEL_NAMESPACE: namespace, LABEL_SESSION: session_id}


def creation_record(run_id: str, labels: Mapping[str, str]) -> records_pb2.JournalRecord:
    """The meta of a session's run: the session id in its labels and, for people, in its prompt."""
    prompt = f"OpenAI Agents SDK session {labels[LABEL_SESSION]}"
    fingerprint = records_pb2.Fingerprint(provider=PROVIDER, model="session")
    return meta_record(run_id, fingerprint, [text_block(prompt)], labels=labels)


# --- items and the records that change history -----------------------------------


@dataclass(frozen=True)
class EncodedItem:
    """One item as stored: its JSON text and the type its opaque block is labelled with."""

    type: str
    text: str


@dataclass(frozen=True)
class StoredItem:
    """A live item of the session and the seq of the record that holds it."""

    seq: int
    type: str
    text: str

    def value(self) -> Any:
        """The item, fresh from its JSON: no two callers share one object."""
        return json.loads(self.text)


def encode_items(items: Iterable[Any]) -> list[EncodedItem]:
    """The items as JSON text, in order; ``ValueError`` (before anything is written) for one that JSON would change."""
    encoded = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"items[{index}] must be a mapping (an input item dict), got {type(item).__name__}")
        try:
            # Key order kept (no sort): what get_items returns reads as what was added.
            text = json.dumps(item, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            text.encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError) as err:
            raise ValueError(f"items[{index}] is not JSON: {err}") from err
        if json.loads(text) != item:
            # Tuples, non-string keys: JSON would hand back something else, and the round trip is the promise.
            raise ValueError(f"items[{index}] does not come back equal from JSON (tuples, non-string keys?)")
        encoded.append(EncodedItem(type_of(item), text))
    return encoded


def type_of(item: Mapping[str, Any]) -> str:
    """The label of an item's opaque block: its ``type``; an easy input message (no type) is a ``message``."""
    kind = item.get("type")
    if isinstance(kind, str) and 1 <= len(kind) <= MAX_TYPE_CHARS:
        return kind
    return "message" if "role" in item else "item"


def item_record(item: EncodedItem) -> records_pb2.JournalRecord:
    return user_record(content=[opaque_block(PROVIDER, item.type, json_text=item.text)])


def added_note(write_id: str, first_seq: int, count: int) -> records_pb2.JournalRecord:
    where = f"seq {first_seq}" if count == 1 else f"seqs {first_seq}..{first_seq + count - 1}"
    text = f"openai-agents session: added {count} item{'s' if count != 1 else ''} at {where}"
    return note_record(text, {OP_KEY: {"op": "add", "write": write_id, "items": count}})


def popped_note(write_id: str, item: StoredItem) -> records_pb2.JournalRecord:
    text = f"openai-agents session: popped the {item.type} at seq {item.seq} (it stays in the journal)"
    return note_record(text, {OP_KEY: {"op": "pop", "write": write_id, "seq": item.seq}})


def cleared_note(write_id: str, items: list[StoredItem]) -> records_pb2.JournalRecord:
    count = f"{len(items)} item{'s' if len(items) != 1 else ''}"
    text = f"openai-agents session: cleared {count} (they stay in the journal)"
    return note_record(text, {OP_KEY: {"op": "clear", "write": write_id}})


# --- what a session has read of its run ------------------------------------------


@dataclass
class SessionJournal:
    """The fold of a session's run: the live items, and the last seq read."""

    run_id: str
    labels: Mapping[str, str]
    last_seq: int = 0
    live: list[StoredItem] = field(default_factory=list)

    def apply(self, seq: int, record: records_pb2.JournalRecord) -> None:
        """Takes in the record stored at ``seq`` (the one after ``last_seq``)."""
        kind = record.WhichOneof("payload")
        if kind == "meta":
            self._check_meta(record.meta)
        elif kind == "user":
            item = _item_of(seq, record.user)
            if item is not None:
                self.live.append(item)
        elif kind == "note":
            self._apply_op(seq, _op_of(record.note))
        self.last_seq = seq

    def items(self, limit: int | None) -> list[Any]:
        """The live items, fresh from their JSON (the latest ``limit`` of them, in order; all for None)."""
        if limit is None:
            chosen = self.live
        elif limit <= 0:
            chosen = []
        else:
            chosen = self.live[-limit:]
        return [item.value() for item in chosen]

    def place(self, drafts: list[records_pb2.JournalRecord]) -> list[records_pb2.JournalRecord]:
        """The drafts at the seqs after ``last_seq``, after the run's meta when it has none yet."""
        records = [] if self.last_seq else [creation_record(self.run_id, self.labels)]
        records += drafts
        for seq, record in enumerate(records, start=self.last_seq + 1):
            record.seq = seq
        return records

    def _check_meta(self, meta: records_pb2.Meta) -> None:
        labels = dict(meta.labels)
        if any(labels.get(key) != value for key, value in self.labels.items()):
            raise SessionJournalError(
                f"run {self.run_id} exists and is not this session's (its labels are {labels}); nothing was written"
            )

    def _apply_op(self, seq: int, op: Mapping[str, Any] | None) -> None:
        if op is None or op.get("op") == "add":
            return
        if op.get("op") == "clear":
            self.live.clear()
        elif op.get("op") == "pop" and self.live and op.get("seq") == self.live[-1].seq:
            self.live.pop()
        else:
            # A pop is written only after reading the item it names as the latest; anything else was not
            # written by this adapter, and guessing would show the SDK a history nobody wrote.
            raise SessionJournalError(f"run {self.run_id}: the note at seq {seq} does not apply ({dict(op)})")


def _item_of(seq: int, user: records_pb2.UserFollowUp) -> StoredItem | None:
    """The item a ``user`` record holds, or None for one this adapter did not write."""
    if len(user.content) != 1 or user.content[0].WhichOneof("block") != "opaque":
        return None
    block = user.content[0].opaque
    return StoredItem(seq, block.type, block.json) if block.provider == PROVIDER else None


def _op_of(note: records_pb2.Note) -> Mapping[str, Any] | None:
    """A history note's operation, or None for any other note (progress a person added)."""
    if not note.data_json:
        return None
    data = json.loads(note.data_json)
    op = data.get(OP_KEY) if isinstance(data, dict) else None
    return op if isinstance(op, dict) else None

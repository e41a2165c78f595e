"""Hypothesis strategies for valid journal records, shared by the test suites.

``records(kind)`` draws one valid ``Record`` (``schema.validate`` accepts it);
``record_payloads(kind)`` draws just its payload message. Strings are short so
that property tests stay fast; sizes and limits are tested explicitly.
"""

from __future__ import annotations

import json
from typing import Any, cast

from hypothesis import strategies as st

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.kinds import MAX_SEQ, Kind

INT32_MAX = (1 << 31) - 1

short_text = st.text(max_size=24)
nonempty_text = st.text(min_size=1, max_size=24)
printable_ascii = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
tool_use_ids = st.text(alphabet=printable_ascii, min_size=1, max_size=32)
run_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}", fullmatch=True)
sha256_hex = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
non_negative_int32 = st.integers(0, INT32_MAX)
STOP_REASONS = [cast("pb.StopReason", v) for v in pb.StopReason.values() if v]
TERMINAL_REASONS = [cast("pb.TerminalReason", v) for v in pb.TerminalReason.values() if v]

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | short_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(short_text, children, max_size=3),
    max_leaves=8,
)
json_object_texts = st.dictionaries(short_text, json_values, max_size=4).map(json.dumps)
json_value_texts = json_values.map(json.dumps)


@st.composite
def _text_blocks(draw: st.DrawFn) -> pb.ContentBlock:
    block = pb.ContentBlock()
    block.text.text = draw(short_text)
    return block


@st.composite
def _thinking_blocks(draw: st.DrawFn) -> pb.ContentBlock:
    block = pb.ContentBlock()
    if draw(st.booleans()):
        block.thinking.redacted = True
        block.thinking.data = draw(nonempty_text)
    else:
        block.thinking.thinking = draw(short_text)
    block.thinking.signature = draw(short_text)
    return block


@st.composite
def _tool_use_blocks(draw: st.DrawFn) -> pb.ContentBlock:
    block = pb.ContentBlock()
    block.tool_use.id = draw(tool_use_ids)
    block.tool_use.name = draw(nonempty_text)
    block.tool_use.input_json = draw(json_object_texts)
    return block


@st.composite
def _opaque_blocks(draw: st.DrawFn) -> pb.ContentBlock:
    block = pb.ContentBlock()
    block.opaque.provider = draw(st.text(min_size=1, max_size=64))
    block.opaque.type = draw(st.text(min_size=1, max_size=24))
    block.opaque.json = draw(json_value_texts)
    return block


plain_blocks = st.one_of(_text_blocks(), _opaque_blocks())
assistant_blocks = st.one_of(_text_blocks(), _thinking_blocks(), _tool_use_blocks(), _opaque_blocks())


def _tool_use_key(block: pb.ContentBlock) -> object:
    return block.tool_use.id if block.HasField("tool_use") else object()


@st.composite
def fingerprints(draw: st.DrawFn) -> pb.Fingerprint:
    return pb.Fingerprint(
        provider=draw(nonempty_text),
        model=draw(nonempty_text),
        system_prompt_sha256=draw(st.just("") | sha256_hex),
        thinking_mode=draw(st.sampled_from(["", "off", "enabled", "adaptive"])),
        tools_sha256=draw(st.just("") | sha256_hex),
        max_tokens=draw(non_negative_int32),
        max_iterations=draw(non_negative_int32),
    )


@st.composite
def _metas(draw: st.DrawFn) -> pb.Meta:
    meta = pb.Meta(
        format_version=1,
        run_id=draw(run_ids),
        interactive=draw(st.booleans()),
        task_id=draw(st.just("") | run_ids),
    )
    meta.created_at.seconds = draw(st.integers(-62135596800, 253402300799))
    meta.created_at.nanos = draw(st.integers(0, 999_999_999))
    meta.fingerprint.CopyFrom(draw(fingerprints()))
    meta.prompt.extend(draw(st.lists(plain_blocks, min_size=1, max_size=3)))
    label_keys = st.from_regex(r"[a-z0-9][a-z0-9_./-]{0,62}", fullmatch=True)
    meta.labels.update(draw(st.dictionaries(label_keys, st.text(max_size=256), max_size=4)))
    return meta


@st.composite
def _assistants(draw: st.DrawFn) -> pb.AssistantTurn:
    turn = pb.AssistantTurn(
        iteration=draw(st.integers(1, INT32_MAX)),
        stop_reason=draw(st.sampled_from(STOP_REASONS)),
    )
    turn.content.extend(draw(st.lists(assistant_blocks, min_size=1, max_size=4, unique_by=_tool_use_key)))
    if draw(st.booleans()):
        turn.usage.input_tokens = draw(non_negative_int32)
        turn.usage.output_tokens = draw(non_negative_int32)
        turn.usage.cache_read_tokens = draw(non_negative_int32)
        turn.usage.cache_write_tokens = draw(non_negative_int32)
    return turn


@st.composite
def _users(draw: st.DrawFn) -> pb.UserFollowUp:
    return pb.UserFollowUp(content=draw(st.lists(plain_blocks, min_size=1, max_size=3)))


@st.composite
def _tool_results(draw: st.DrawFn) -> pb.ToolResult:
    return pb.ToolResult(
        tool_use_id=draw(tool_use_ids),
        content=draw(st.lists(plain_blocks, max_size=3)),
        is_error=draw(st.booleans()),
        remote=draw(st.booleans()),
    )


@st.composite
def _deferrals(draw: st.DrawFn) -> pb.Deferral:
    return pb.Deferral(tool_use_id=draw(tool_use_ids), reason=draw(short_text), expected_answerer=draw(short_text))


@st.composite
def _approvals(draw: st.DrawFn) -> pb.Approval:
    return pb.Approval(
        tool_use_id=draw(tool_use_ids),
        decision=draw(st.sampled_from([pb.DECISION_APPROVED, pb.DECISION_DENIED])),
        approver=draw(nonempty_text),
        reason=draw(short_text),
    )


@st.composite
def _claims(draw: st.DrawFn) -> pb.ClaimNotice:
    return pb.ClaimNotice(
        worker_id=draw(nonempty_text),
        host=draw(short_text),
        pid=draw(non_negative_int32),
        reason=draw(short_text),
    )


@st.composite
def _terminals(draw: st.DrawFn) -> pb.Terminal:
    return pb.Terminal(reason=draw(st.sampled_from(TERMINAL_REASONS)), message=draw(short_text))


@st.composite
def _reconfigures(draw: st.DrawFn) -> pb.Reconfigure:
    names = [f.name for f in pb.Fingerprint.DESCRIPTOR.fields]
    changed = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    return pb.Reconfigure(fingerprint=draw(fingerprints()), changed_fields=changed)


@st.composite
def _notes(draw: st.DrawFn) -> pb.Note:
    text = draw(short_text)
    data_json = draw(st.just("") | json_value_texts)
    if not text and not data_json:
        text = "progress"
    return pb.Note(text=text, data_json=data_json)


@st.composite
def _compactions(draw: st.DrawFn) -> pb.Compaction:
    def message(blocks: list[pb.ContentBlock]) -> pb.ConversationMessage:
        role = draw(st.sampled_from([pb.ROLE_USER, pb.ROLE_ASSISTANT]))
        return pb.ConversationMessage(role=role, content=blocks)

    summary = draw(st.lists(st.lists(_said_blocks(), min_size=1, max_size=3).map(message), min_size=1, max_size=2))
    return pb.Compaction(
        upto_seq=draw(st.integers(1, (1 << 31) - 1)),
        summary=summary,
        provider=draw(st.text(max_size=64)),
        model=draw(short_text),
        trigger=draw(st.sampled_from([t for t in pb.CompactionTrigger.values() if t])),
        tokens_before=draw(non_negative_int32),
        usage=pb.Usage(input_tokens=draw(non_negative_int32), output_tokens=draw(non_negative_int32)),
    )


def _said_blocks() -> st.SearchStrategy[pb.ContentBlock]:
    """A text or opaque block that says something (a compaction summary holds no empty block)."""
    return plain_blocks.filter(
        lambda block: (
            bool(block.text.text.strip())
            if block.HasField("text")
            else block.opaque.json.strip() not in ("null", '""', "{}", "[]")
        )
    )


_PAYLOADS: dict[Kind, st.SearchStrategy[Any]] = {
    Kind.META: _metas(),
    Kind.ASSISTANT: _assistants(),
    Kind.USER: _users(),
    Kind.TOOL_RESULT: _tool_results(),
    Kind.DEFERRAL: _deferrals(),
    Kind.APPROVAL: _approvals(),
    Kind.CLAIM: _claims(),
    Kind.TERMINAL: _terminals(),
    Kind.RECONFIGURE: _reconfigures(),
    Kind.NOTE: _notes(),
    Kind.COMPACTION: _compactions(),
}


def record_payloads(kind: Kind | str) -> st.SearchStrategy[Any]:
    """A valid payload message of ``kind`` (e.g. ``pb.Meta`` for ``Kind.META``)."""
    return _PAYLOADS[Kind(kind)]


def records(
    kind: Kind | str | None = None,
    *,
    seq: int | st.SearchStrategy[int] | None = None,
    optional: bool | None = None,
) -> st.SearchStrategy[pb.JournalRecord]:
    """A valid ``Record`` of ``kind`` (any kind when None).

    ``seq`` defaults to 1 for meta and to any valid seq otherwise. ``optional``
    defaults to what the kind allows (always for note, never for meta,
    deferral and compaction, either for the rest); a value the kind forbids is ignored.
    """
    if kind is None:
        return st.sampled_from(list(Kind)).flatmap(lambda k: records(k, seq=seq, optional=optional))
    chosen = Kind(kind)

    @st.composite
    def build(draw: st.DrawFn) -> pb.JournalRecord:
        if seq is None:
            record_seq = 1 if chosen is Kind.META else draw(st.integers(1, MAX_SEQ))
        elif isinstance(seq, int):
            record_seq = seq
        else:
            record_seq = draw(seq)
        if chosen is Kind.NOTE:
            is_optional = True
        elif chosen in (Kind.META, Kind.DEFERRAL, Kind.COMPACTION):
            is_optional = False
        else:
            is_optional = draw(st.booleans()) if optional is None else optional
        record = pb.JournalRecord(seq=record_seq, optional=is_optional)
        getattr(record, chosen.value).CopyFrom(draw(record_payloads(chosen)))
        return record

    return build()

"""A folded run -> the ``messages`` of the next Messages API call, with the rules the API enforces.

* Each conversation message becomes one request message, block for block
  (``message_params``). Fold keeps every assistant record as its own message
  and merges consecutive user messages, so a turn continued after
  ``pause_turn`` is two assistant messages in a row, as the loop that
  appended each answer sent them.
* Tool results come first in their user message, and carry the
  ``toolset_name`` of the call they answer (the API requires it of a toolset
  member's result; the journal keeps it on the call).
* Anthropic's own ``compaction`` block: the API takes the conversation from
  the newest compaction block with content, which must be the first block
  sent, so everything before it is left out. (The journal's ``compaction``
  record is fold's business: ``RunState.conversation`` already starts with
  its summary.)
* Thinking is sent back unmodified. Only when the run's model changed (a
  ``reconfigure`` record) are the thinking blocks of turns written under
  another model than the one called now left out, and never those of the
  latest assistant turn, which the API needs exactly as it issued them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from runjournal.adapters._anthropic_blocks import (
    block_param,
    is_thinking,
    summarising_compaction,
    user_content,
)
from runjournal.v1.records_pb2 import ContentBlock, ConversationMessage, JournalRecord, Role, ToolResultBlock
from runjournal.v1.state_pb2 import RunState


def message_params(conversation: Sequence[ConversationMessage]) -> list[dict[str, Any]]:
    """Each message as the SDK's ``MessageParam``, block for block (no API rule applied)."""
    calls: dict[str, dict[str, Any]] = {}
    params = []
    for message in conversation:
        if message.role == Role.ROLE_ASSISTANT:
            content = [block_param(block) for block in message.content]
            calls.update((block["id"], block) for block in content if block.get("type") == "tool_use")
            params.append({"role": "assistant", "content": content})
        else:
            params.append({"role": "user", "content": _user_message_content(message.content, calls)})
    return params


def _user_message_content(blocks: Sequence[ContentBlock], calls: dict[str, dict[str, Any]]) -> Any:
    answers = [block.tool_result for block in blocks if block.WhichOneof("block") == "tool_result"]
    results = [_result_param(answer, calls) for answer in answers]
    others = [block for block in blocks if block.WhichOneof("block") != "tool_result"]
    if not results:
        return user_content(others)
    rest = user_content(others)
    tail = [] if rest is None else [{"type": "text", "text": rest}] if isinstance(rest, str) else rest
    return results + tail


def _result_param(result: ToolResultBlock, calls: dict[str, dict[str, Any]]) -> dict[str, Any]:
    param: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.tool_use_id}
    content = user_content(result.content)
    if content is not None:
        param["content"] = content
    if result.is_error:
        param["is_error"] = True
    toolset = calls.get(result.tool_use_id, {}).get("toolset_name")
    if isinstance(toolset, str):
        param["toolset_name"] = toolset
    return param


def newest_compaction(conversation: Sequence[ConversationMessage]) -> tuple[int, int] | None:
    """(message, block) of the newest Anthropic compaction block with content, or None."""
    for index in range(len(conversation) - 1, -1, -1):
        blocks = conversation[index].content
        for position in range(len(blocks) - 1, -1, -1):
            if summarising_compaction(blocks[position]):
                return index, position
    return None


def from_compaction(
    conversation: Sequence[ConversationMessage], models: Sequence[str], index: int, position: int
) -> tuple[list[ConversationMessage], list[str]]:
    """The conversation from block ``position`` of message ``index`` on, and the models of its assistant messages."""
    first = ConversationMessage()
    first.CopyFrom(conversation[index])
    del first.content[:position]
    before = sum(message.role == Role.ROLE_ASSISTANT for message in conversation[:index])
    return [first, *conversation[index + 1 :]], list(models[before:])


def assistant_models(records: Iterable[JournalRecord], state: RunState) -> list[str]:
    """The model that wrote each assistant message of ``state.conversation``, in order.

    Read from the run's records: the model in force is meta's, replaced by
    each ``reconfigure``; an assistant record is written under the one in
    force at its seq. Fold turns every assistant record into one message, so
    the messages after the compaction in force are those of the assistant
    records after its ``upto_seq`` (the pending turn is not among them), and
    the assistant messages of its summary are the compaction's, under the
    model in force when it was recorded.
    """
    model = ""
    expected = 1
    written: list[tuple[int, str]] = []
    summary_model, summary_assistants = "", 0
    for record in records:
        if record.seq > state.last_seq:
            break
        if record.seq != expected:
            raise ValueError(f"records must be the run's, from seq 1 without a gap; got seq {record.seq}")
        expected += 1
        kind = record.WhichOneof("payload")
        if kind == "meta":
            if record.meta.run_id != state.run_id:
                raise ValueError(f"records of run {record.meta.run_id!r} given for run {state.run_id!r}")
            model = record.meta.fingerprint.model
        elif kind == "reconfigure":
            model = record.reconfigure.fingerprint.model
        elif kind == "assistant":
            written.append((record.seq, model))
        elif kind == "compaction" and record.seq == state.compaction_seq:
            summary_model = model
            summary_assistants = sum(m.role == Role.ROLE_ASSISTANT for m in record.compaction.summary)
    if expected <= state.last_seq:
        raise ValueError(f"records end at seq {expected - 1}, before the state's last seq {state.last_seq}")
    pending = state.pending.assistant_seq if state.HasField("pending") else 0
    tail = [model for seq, model in written if seq > state.compacted_upto_seq and seq != pending]
    models = [summary_model] * summary_assistants + tail
    count = sum(message.role == Role.ROLE_ASSISTANT for message in state.conversation)
    if count != len(models):
        raise ValueError(f"the state holds {count} assistant messages but the records {len(models)}")
    return models


def strip_foreign_thinking(
    params: list[dict[str, Any]], conversation: Sequence[ConversationMessage], models: Sequence[str], model: str
) -> list[dict[str, Any]]:
    """Leave out the thinking of assistant messages written under another model, but the latest turn's.

    ``params`` and ``conversation`` are parallel. The latest assistant turn is
    the run of assistant messages after the last user message (one answer and
    its continuations after ``pause_turn``). A message left with no block is
    left out, and the user messages around it are joined.
    """
    writer = dict(zip((i for i, m in enumerate(conversation) if m.role == Role.ROLE_ASSISTANT), models, strict=True))
    latest = _latest_turn(conversation)
    out: list[dict[str, Any]] = []
    for index, param in enumerate(params):
        if index in writer and index not in latest and writer[index] != model:
            blocks = zip(param["content"], conversation[index].content, strict=True)
            kept = [sent for sent, block in blocks if not is_thinking(block)]
            if not kept:
                continue
            param = {"role": "assistant", "content": kept}
        if out and out[-1]["role"] == param["role"] == "user":
            out[-1] = {"role": "user", "content": _as_list(out[-1]["content"]) + _as_list(param["content"])}
            continue
        out.append(param)
    return out


def _latest_turn(conversation: Sequence[ConversationMessage]) -> set[int]:
    latest: set[int] = set()
    for index in range(len(conversation) - 1, -1, -1):
        if conversation[index].role == Role.ROLE_ASSISTANT:
            latest.add(index)
        elif latest:
            break
    return latest


def _as_list(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)

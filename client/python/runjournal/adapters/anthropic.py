"""runjournal for workers that call Claude with the ``anthropic`` SDK (``pip install runjournal[anthropic]``).

Four conversions, each exact (docs/integrations/anthropic.md has the table):

* ``assistant_record(message, iteration=...)``: a ``Message`` (or a finished
  stream's ``get_final_message()``, or a beta ``BetaMessage``) -> an
  ``assistant`` record keeping every block, the usage with its cache tokens
  and the stop reason.
* ``tool_result_record(param)``: the ``ToolResultBlockParam`` the loop sends
  -> a ``tool_result`` record; ``deferral_record(tool_use, ...)`` defers a
  call instead; ``user_blocks(content)`` / ``user_record(content)`` for the
  prompt and follow-ups.
* ``request_messages(state, system=..., records=...)``: a folded run (Claim,
  Fold) -> the ``messages`` and ``system`` arguments of the next
  ``messages.create``, with the API's rules applied (_anthropic_request).
* ``fingerprint(**create_kwargs)``: the run's fingerprint from the very
  arguments of ``messages.create``.

A typical resume::

    run = Run.claim(journal, run_id, "worker-2", fingerprint(**CALL, max_iterations=20))
    ...answer the pending calls (tool_result_record), then state = run.fold()...
    call = request_messages(state, system=CALL["system"], records=journal.read(run_id))
    message = client.messages.create(**{**CALL, **call})
    run.append(assistant_record(message, iteration=state.next_iteration))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from runjournal import _builders
from runjournal.adapters._anthropic_blocks import PROVIDER, block_type, model_block, user_blocks, wire
from runjournal.adapters._anthropic_request import (
    assistant_models,
    from_compaction,
    message_params,
    newest_compaction,
    strip_foreign_thinking,
)
from runjournal.fingerprint import canonical_json, make_fingerprint, system_prompt_sha256
from runjournal.v1 import records_pb2
from runjournal.v1.state_pb2 import RunState

__all__ = [
    "PROVIDER",
    "assistant_record",
    "deferral_record",
    "fingerprint",
    "message_params",
    "request_messages",
    "stop_reason",
    "system_text",
    "thinking_mode",
    "tool_result_content",
    "tool_result_record",
    "usage",
    "user_blocks",
    "user_record",
]

STOP_REASONS = {
    "end_turn": records_pb2.STOP_REASON_END_TURN,
    "tool_use": records_pb2.STOP_REASON_TOOL_USE,
    "max_tokens": records_pb2.STOP_REASON_MAX_TOKENS,
    "stop_sequence": records_pb2.STOP_REASON_STOP_SEQUENCE,
    "pause_turn": records_pb2.STOP_REASON_PAUSE_TURN,
    "refusal": records_pb2.STOP_REASON_REFUSAL,
    "compaction": records_pb2.STOP_REASON_COMPACTION,
    "model_context_window_exceeded": records_pb2.STOP_REASON_MODEL_CONTEXT_WINDOW_EXCEEDED,
}
TOOL_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"})


# --- what the model answered ---------------------------------------------------


def assistant_record(message: Any, *, iteration: int) -> records_pb2.JournalRecord:
    """A draft ``assistant`` record of one model call: every block, the usage and the stop reason.

    ``message`` is the SDK's ``Message``/``BetaMessage`` (from ``create``, or
    a stream's ``get_final_message()``), or the response's JSON as a mapping.
    """
    content = _field(message, "content")
    if not content:
        raise ValueError(
            "the message has no content block; an empty answer has no record (nor can it be sent back: "
            "the API refuses an empty assistant message)"
        )
    return _builders.assistant_record(
        iteration,
        [model_block(block) for block in content],
        stop_reason(_field(message, "stop_reason")),
        usage(_field(message, "usage")),
    )


def stop_reason(value: str | None) -> records_pb2.StopReason:
    """The journal's stop reason for the API's ``stop_reason``."""
    if value is None:
        raise ValueError("the message has no stop_reason: record a finished message (a stream's final message)")
    if value not in STOP_REASONS:
        raise ValueError(f"unknown Anthropic stop_reason {value!r}; known: {', '.join(STOP_REASONS)}")
    return STOP_REASONS[value]


def usage(value: Any) -> records_pb2.Usage:
    """The journal's usage for the API's: input and output tokens, cache reads and cache writes."""
    fields = wire(value) if value is not None else {}
    return records_pb2.Usage(
        input_tokens=fields.get("input_tokens") or 0,
        output_tokens=fields.get("output_tokens") or 0,
        cache_read_tokens=fields.get("cache_read_input_tokens") or 0,
        cache_write_tokens=fields.get("cache_creation_input_tokens") or 0,
    )


# --- what the loop sends --------------------------------------------------------


def tool_result_record(param: Mapping[str, Any], *, remote: bool = False) -> records_pb2.JournalRecord:
    """A draft ``tool_result`` record from the ``ToolResultBlockParam`` the loop sends.

    ``content`` (a string, a list of blocks, or none) comes back in the same
    shape, and ``is_error`` when true. Two keys of the block itself are not
    kept: ``cache_control`` (a cache breakpoint belongs to one request: set
    it when sending) and ``toolset_name`` (rebuilt from the call it answers).
    """
    fields = dict(param)
    if fields.get("type") != "tool_result" or not isinstance(fields.get("tool_use_id"), str):
        raise ValueError("expected a tool_result block: {'type': 'tool_result', 'tool_use_id': ..., ...}")
    unknown = set(fields) - TOOL_RESULT_KEYS
    if unknown:
        raise ValueError(f"a tool_result block with keys the journal cannot keep: {sorted(unknown)}")
    return _builders.tool_result_record(
        fields["tool_use_id"],
        tool_result_content(fields.get("content")),
        is_error=bool(fields.get("is_error", False)),
        remote=remote,
    )


def tool_result_content(content: str | Iterable[Any] | None) -> list[records_pb2.ContentBlock]:
    """A tool result's ``content`` as journal blocks, e.g. for ``JournalClient.answer`` of a deferred call."""
    if content is None:
        return []
    return user_blocks(content)


def deferral_record(
    tool_use: Any, reason: str, expected_answerer: str, *, needs_approval: bool = False
) -> records_pb2.JournalRecord:
    """A draft ``deferral`` record for a ``tool_use`` block of the model's answer (or its id)."""
    call_id = tool_use if isinstance(tool_use, str) else wire(tool_use).get("id")
    if not isinstance(call_id, str):
        raise ValueError("expected a tool_use block or its id")
    return _builders.deferral_record(call_id, reason, expected_answerer, needs_approval=needs_approval)


def user_record(content: str | Iterable[Any]) -> records_pb2.JournalRecord:
    """A draft ``user`` follow-up from a user message's ``content`` (a string or blocks)."""
    return _builders.user_record(content=user_blocks(content))


# --- the next request -----------------------------------------------------------


def request_messages(
    state: RunState,
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    records: Iterable[records_pb2.JournalRecord | tuple[records_pb2.JournalRecord, bytes]],
    model: str | None = None,
) -> dict[str, Any]:
    """The ``messages`` (and ``system``) arguments of the next ``messages.create``, from a folded run.

    ``state`` is a ``RunState`` from Claim or Fold (the default compacted
    conversation, from message 0) without unanswered calls. ``system`` is the
    system prompt the caller sends; it must hash to the run's fingerprint.
    ``records`` are the run's records (``JournalClient.read(run_id)``), which
    say which model wrote each turn. ``model`` is the model called now (the
    fingerprint's by default).
    """
    _check_state(state)
    _check_system(state, system)
    conversation = list(state.conversation)
    models = assistant_models((_record_of(item) for item in records), state)
    cut = newest_compaction(conversation)
    if cut is not None:
        conversation, models = from_compaction(conversation, models, *cut)
    now = model if model is not None else state.effective_fingerprint.model
    params = strip_foreign_thinking(message_params(conversation), conversation, models, now)
    arguments: dict[str, Any] = {"messages": params}
    if system is not None:
        arguments["system"] = system
    return arguments


def _check_state(state: RunState) -> None:
    if state.conversation_offset:
        raise ValueError("the state holds the conversation from a later message; fold it from message 0")
    if state.uncompacted:
        raise ValueError("an uncompacted state is for reading; fold without uncompacted to call the model")
    if state.HasField("pending"):
        open_calls = [call.tool_use.id for call in state.pending.calls if not call.answered]
        raise ValueError(f"calls {open_calls} have no result yet: record their results, then fold again")


def _check_system(state: RunState, system: str | Sequence[Mapping[str, Any]] | None) -> None:
    recorded = state.effective_fingerprint.system_prompt_sha256
    if recorded and system_prompt_sha256(system_text(system)) != recorded:
        raise ValueError(
            "the system prompt differs from the run's (its SHA-256 is not the fingerprint's "
            "system_prompt_sha256): pass the system the run was written with, or claim with force"
        )


def _record_of(item: records_pb2.JournalRecord | tuple[records_pb2.JournalRecord, bytes]) -> records_pb2.JournalRecord:
    return item[0] if isinstance(item, tuple) else item


# --- the fingerprint ------------------------------------------------------------


def fingerprint(
    *,
    model: str,
    max_tokens: int = 0,
    system: Any = None,
    tools: Any = None,
    thinking: Any = None,
    max_iterations: int = 0,
    **_other_arguments: Any,
) -> records_pb2.Fingerprint:
    """The run's fingerprint from the arguments of ``messages.create`` (``**call``; the rest are ignored).

    The system prompt and tools are hashed (docs/fingerprint.md), the thinking
    mode is ``thinking_mode(thinking)``; ``max_iterations`` is the worker's own.
    """
    tool_list = [] if _omitted(tools) else [wire(tool) for tool in tools]
    return make_fingerprint(
        PROVIDER,
        model,
        system_text(None if _omitted(system) else system),
        thinking_mode(None if _omitted(thinking) else thinking),
        tool_list,
        0 if _omitted(max_tokens) else max_tokens,
        max_iterations,
    )


def system_text(system: str | Sequence[Mapping[str, Any]] | None) -> str:
    """The text whose SHA-256 is the fingerprint's: a string as is, a list of blocks as canonical JSON, none as ""."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    return canonical_json([wire(block) for block in system])


def thinking_mode(thinking: Mapping[str, Any] | None) -> str:
    """``thinking``'s type ("enabled", "adaptive", ...), or "off" when absent or disabled."""
    if thinking is None:
        return "off"
    kind = block_type(wire(thinking))
    return "off" if kind == "disabled" else kind


def _omitted(value: Any) -> bool:
    return value is None or type(value).__name__ in ("NotGiven", "Omit")


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, Mapping) else getattr(message, name)

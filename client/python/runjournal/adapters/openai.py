"""The OpenAI Responses API (the ``openai`` SDK) and runjournal: records from the SDK's objects, and the
next request's arguments from a folded run. Needs ``runjournal[openai]``.

A worker's loop: fold the run; answer the calls ``pending_calls`` lists with ``tool_result_record``;
else call ``responses.create`` with ``request_kwargs(state, instructions=...)`` merged into the create
arguments, and append ``assistant_record(response, iteration=state.next_iteration)``. The whole loop, in
15 lines, is in docs/integrations/openai.md.

The same loop continues a run another worker (in any language) left part-way. The rules (which item
becomes which block, the stop reasons, what goes back) are in docs/integrations/openai.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openai import BaseModel, NotGiven, Omit
from openai.types.responses import CompactedResponse, Response, ResponseFunctionToolCall

from runjournal import _builders
from runjournal._builders import opaque_block, text_block
from runjournal.adapters._openai_input import CONTENT_PARTS, input_item_texts
from runjournal.adapters._openai_output import (
    PROVIDER,
    dumps,
    item_block,
    output_blocks,
    stop_reason_of,
    usage_of,
    wire_dict,
)
from runjournal.fingerprint import make_fingerprint, system_prompt_sha256
from runjournal.v1 import records_pb2, state_pb2

__all__ = [
    "PROVIDER",
    "PendingFunctionCall",
    "assistant_record",
    "compaction_record",
    "deferral_record",
    "fingerprint",
    "input_item_texts",
    "input_items",
    "item_block",
    "output_blocks",
    "pending_calls",
    "request_kwargs",
    "stop_reason_of",
    "tool_result_record",
    "usage_of",
    "user_blocks",
    "wire_dict",
]

DEFAULT_THINKING_MODE = "default"
"""The fingerprint's thinking mode when the call sets no ``reasoning.effort`` (the model's own default)."""


def fingerprint(
    *,
    model: str,
    instructions: str | NotGiven | Omit | None = None,
    tools: Iterable[Mapping[str, Any]] | NotGiven | Omit | None = None,
    reasoning: Mapping[str, Any] | NotGiven | Omit | None = None,
    max_output_tokens: int | NotGiven | Omit | None = None,
    max_iterations: int = 0,
    **_other: Any,
) -> records_pb2.Fingerprint:
    """The run's fingerprint from the ``responses.create`` arguments (any others, e.g. ``input``, are ignored).

    ``instructions`` is the system prompt (hashed; absent hashes as ""); the thinking mode is
    ``reasoning["effort"]`` (or "default"); a tool without a ``name`` (a built-in tool such as
    ``web_search``) is hashed under its ``type`` (``type:server_label`` for an MCP server), so
    the tool list has the names the fingerprint's canonical form needs.
    """
    effort = (_given(reasoning) or {}).get("effort")
    return make_fingerprint(
        PROVIDER,
        model,
        _given(instructions) or "",
        str(effort) if effort else DEFAULT_THINKING_MODE,
        [_named_tool(tool) for tool in _given(tools) or ()],
        _given(max_output_tokens) or 0,
        max_iterations,
    )


def _given(value: Any) -> Any:
    return None if isinstance(value, NotGiven | Omit) else value


def _named_tool(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(tool, BaseModel):
        tool = wire_dict(tool)
    if tool.get("name"):
        return tool
    label = tool.get("server_label")
    return {**tool, "name": f"{tool.get('type')}:{label}" if label else str(tool.get("type"))}


def user_blocks(content: str | Sequence[Mapping[str, Any]]) -> list[records_pb2.ContentBlock]:
    """A user's message for the prompt or a follow-up: a text, or content parts (``input_text`` becomes a
    text block, ``input_image``/``input_file``/``input_audio`` opaque blocks kept as given)."""
    if isinstance(content, str):
        return [text_block(content)]
    blocks = []
    for part in content:
        kind = part.get("type")
        if kind == "input_text" and set(part) == {"type", "text"}:
            blocks.append(text_block(str(part["text"])))
        elif kind in CONTENT_PARTS:
            blocks.append(opaque_block(PROVIDER, str(kind), json_text=dumps(dict(part))))
        else:
            raise ValueError(f"{kind!r} is not a content part of a user message (one of {sorted(CONTENT_PARTS)})")
    return blocks


def assistant_record(response: Response, *, iteration: int) -> records_pb2.JournalRecord:
    """A draft ``assistant`` record of one ``responses.create`` (or a stream's final response): every
    output item in order, usage with cache tokens, the stop reason."""
    blocks = output_blocks(response)
    return _builders.assistant_record(iteration, blocks, stop_reason_of(response), usage_of(response.usage))


def tool_result_record(
    output: Mapping[str, Any], *, is_error: bool = False, remote: bool = False
) -> records_pb2.JournalRecord:
    """A draft ``tool_result`` record of a ``function_call_output`` input item (the SDK's param shape),
    kept whole as an opaque block so it goes back to the API as it is."""
    item = dict(output)
    if item.get("type") != "function_call_output" or not isinstance(item.get("call_id"), str):
        raise ValueError(f"expected a function_call_output item with a call_id, got {dumps(item):.200}")
    block = opaque_block(PROVIDER, "function_call_output", json_text=dumps(item))
    return _builders.tool_result_record(item["call_id"], [block], is_error=is_error, remote=remote)


def deferral_record(
    call: ResponseFunctionToolCall | Mapping[str, Any],
    reason: str,
    expected_answerer: str,
    *,
    needs_approval: bool = False,
) -> records_pb2.JournalRecord:
    """A draft ``deferral`` record for a function call that waits for a person (or, with
    ``needs_approval``, for an operator's decision)."""
    call_id = wire_dict(call).get("call_id")
    if not isinstance(call_id, str):
        raise ValueError("a deferral needs a function call with a call_id")
    return _builders.deferral_record(call_id, reason, expected_answerer, needs_approval=needs_approval)


def compaction_record(
    compacted: CompactedResponse, *, upto_seq: int, model: str = "", tokens_before: int = 0
) -> records_pb2.JournalRecord:
    """A draft journal ``compaction`` record of a ``responses.compact`` answer: its output items (the
    user messages it kept and its compaction item), verbatim, replace records 1..``upto_seq``."""
    items = [wire_dict(item) for item in compacted.output]
    blocks = [opaque_block(PROVIDER, str(item["type"]), json_text=dumps(item)) for item in items]
    summary = [records_pb2.ConversationMessage(role=records_pb2.ROLE_USER, content=blocks)]
    return _builders.compaction_record(
        upto_seq,
        summary,
        trigger="provider",
        provider=PROVIDER,
        model=model,
        tokens_before=tokens_before,
        usage=usage_of(compacted.usage),
    )


@dataclass(frozen=True)
class PendingFunctionCall:
    """A call of the pending batch the worker must act on: run it, or, when ``denied`` by an operator,
    answer it with an error result instead."""

    call: ResponseFunctionToolCall
    denied: bool


def pending_calls(state: state_pb2.RunState) -> list[PendingFunctionCall]:
    """The pending batch's calls that wait for the worker (unanswered, not deferred to a person), as the
    SDK's own ``ResponseFunctionToolCall`` objects, in the order the model made them."""
    if not state.HasField("pending"):
        return []
    out = []
    for pending in state.pending.calls:
        if pending.answered or pending.waiting_for != state_pb2.WAITING_FOR_WORKER:
            continue
        use = pending.tool_use
        item = json.loads(use.provider_json) if use.provider_json else {
            "type": "function_call", "call_id": use.id, "name": use.name, "arguments": use.input_json,
        }  # fmt: skip
        call = ResponseFunctionToolCall.construct(**item)
        out.append(PendingFunctionCall(call=call, denied=pending.decision == records_pb2.DECISION_DENIED))
    return out


def input_items(conversation: Sequence[records_pb2.ConversationMessage]) -> list[dict[str, Any]]:
    """The ``input`` items of the next request (``input_item_texts`` parsed)."""
    return [json.loads(text) for text in input_item_texts(conversation)]


def request_kwargs(state: state_pb2.RunState, *, instructions: str | None = None) -> dict[str, Any]:
    """The ``input`` (and ``instructions``) arguments of the next ``responses.create`` for a folded run.

    Refused (ValueError) while calls of the last turn have no result (the API needs every call's output),
    and when ``instructions`` is not the text the run's fingerprint hashed.
    """
    if state.HasField("pending"):
        waiting = [call.tool_use.id for call in state.pending.calls if not call.answered]
        raise ValueError(f"calls {waiting} of the last turn have no result yet: answer them before the next request")
    want = state.effective_fingerprint.system_prompt_sha256
    if want and system_prompt_sha256(instructions or "") != want:
        raise ValueError(
            "these instructions are not the ones the run's fingerprint hashed (system_prompt_sha256 "
            f"{want[:12]}…); pass the instructions the run was created or reconfigured with"
        )
    kwargs: dict[str, Any] = {"input": input_items(state.conversation)}
    if instructions is not None:
        kwargs["instructions"] = instructions
    return kwargs

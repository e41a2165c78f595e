"""A Responses API ``Response`` as journal content: its output items as blocks, its usage, its stop reason.

Every item keeps the JSON the API sent: the SDK object's wire form (the keys the API set, by their API
names), without the fields the SDK adds for its own parsing helpers (``parsed``, ``parsed_arguments``),
written as compact JSON. A ``function_call`` becomes
the one typed ``tool_use`` block the journal tracks (id = ``call_id``, ``input_json`` = ``arguments`` as
the model wrote them, ``provider_json`` = the whole item); every other item is an opaque block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from openai import BaseModel
from openai.types.responses import Response, ResponseUsage

from runjournal import opaque_block, tool_use_block
from runjournal.v1 import records_pb2

PROVIDER = "openai"

CLIENT_RUN_CALLS = frozenset(
    {"custom_tool_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call", "mcp_approval_request"}
)
"""Calls the client must answer that a typed tool_use cannot hold (their input is not a JSON object, or
they have no name): kept opaque they would open no call, and the next request would fail for want of
their output, so they are refused here, where the worker can still see why."""


def dumps(value: object) -> str:
    """Compact JSON, non-ASCII as itself: the form this adapter writes a provider's item in."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def wire_dict(item: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """The item as the API sent it (an SDK object or a plain mapping of its JSON).

    The SDK object's fields the API set, by their API names, without the ones the SDK adds for its
    parsing helpers: the same dump the SDK makes when it sends a model back (``__api_exclude__``).
    """
    if isinstance(item, Mapping):
        return dict(item)
    exclude = getattr(item, "__api_exclude__", None) or None
    # warnings off: an item the SDK typed loosely (a user message in a compact window) is still what was sent.
    return item.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude=exclude, warnings=False)


def item_block(item: BaseModel | Mapping[str, Any]) -> records_pb2.ContentBlock:
    """One output item as a content block: a function call as a typed tool_use, anything else opaque."""
    data = wire_dict(item)
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"an output item needs a string 'type', got {data!r:.200}")
    if kind in CLIENT_RUN_CALLS:
        raise ValueError(
            f"a {kind} item is a call the worker must answer, but only function calls (JSON arguments, a name) "
            "can be tracked as journal calls; use function tools"
        )
    text = dumps(data)
    if kind == "function_call":
        arguments = data.get("arguments")
        if not isinstance(arguments, str) or not _is_json_object(arguments):
            raise ValueError(
                f"function call {data.get('call_id')!r} has arguments that are not a JSON object "
                f"(status {data.get('status')!r}): the output was cut short; ask again with more max_output_tokens"
            )
        return tool_use_block(str(data["call_id"]), str(data["name"]), arguments, provider_json=text)
    return opaque_block(PROVIDER, kind, json_text=text)


def output_blocks(response: Response) -> list[records_pb2.ContentBlock]:
    """The response's output items in order, as blocks.

    A trailing reasoning item (a response cut short while reasoning) is left out: the API refuses a
    reasoning item sent back without the item it produced, and the journal refuses a turn ending with
    one. An output with nothing else is refused: there is no turn to keep.
    """
    items = list(response.output or [])
    while items and wire_dict(items[-1]).get("type") == "reasoning":
        items.pop()
    if not items:
        raise ValueError(
            f"response {response.id!r} ({response.status}) has no output item but reasoning: nothing to record; "
            "ask again (with more max_output_tokens if it was cut short)"
        )
    return [item_block(item) for item in items]


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def usage_of(usage: ResponseUsage | None) -> records_pb2.Usage:
    """Token usage as the journal counts it: ``input_tokens`` uncached, cache reads and writes apart.

    OpenAI's ``input_tokens`` include the cached ones (``input_tokens_details.cached_tokens``) and those
    written to the cache (``cache_write_tokens``); the journal's, like Anthropic's, do not.
    """
    if usage is None:
        return records_pb2.Usage()
    details = usage.input_tokens_details
    cached = getattr(details, "cached_tokens", None) or 0
    written = getattr(details, "cache_write_tokens", None) or 0
    return records_pb2.Usage(
        input_tokens=max(usage.input_tokens - cached - written, 0),
        output_tokens=usage.output_tokens,
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


INCOMPLETE_STOPS = {
    "max_output_tokens": records_pb2.STOP_REASON_MAX_TOKENS,
    "content_filter": records_pb2.STOP_REASON_REFUSAL,
    "max_messages": records_pb2.STOP_REASON_PAUSE_TURN,
    "steered": records_pb2.STOP_REASON_PAUSE_TURN,
}


def stop_reason_of(response: Response) -> records_pb2.StopReason:
    """The journal's stop reason for a response (the table is in docs/integrations/openai.md).

    ``completed``: a function call in the output is TOOL_USE, else a refusal in the last message is
    REFUSAL, else END_TURN. ``incomplete``: by ``incomplete_details.reason`` (max_output_tokens →
    MAX_TOKENS, content_filter → REFUSAL, max_messages and steered → PAUSE_TURN: calling again goes on).
    Any other status is not a finished turn and is refused.
    """
    items = [wire_dict(item) for item in response.output or []]
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        return INCOMPLETE_STOPS.get(reason or "", records_pb2.STOP_REASON_UNSPECIFIED)
    if response.status not in (None, "completed"):
        raise ValueError(f"response {response.id!r} is {response.status}, not a finished turn: nothing to record")
    if any(item.get("type") == "function_call" for item in items):
        return records_pb2.STOP_REASON_TOOL_USE
    messages = [item for item in items if item.get("type") == "message"]
    if messages and any(part.get("type") == "refusal" for part in messages[-1].get("content") or []):
        return records_pb2.STOP_REASON_REFUSAL
    return records_pb2.STOP_REASON_END_TURN

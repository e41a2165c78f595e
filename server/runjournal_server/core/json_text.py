"""JSON text fields (tool input, a provider's own call, opaque blocks, note data, task documents): the
checks on the text itself, shared by records and tasks.

Pure: no grpc, asyncio, nats or file system.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from runjournal.v1 import records_pb2 as pb
from runjournal_server.core.payload_json import load_json

MAX_JSON_DEPTH = 64
"""Deepest nesting accepted in the JSON text fields (tool input, opaque blocks, note data)."""


def json_text_problem(text: str, *, want_object: bool = False) -> str | None:
    """Why ``text`` is not an acceptable JSON value (or object), or None when it is."""
    try:
        value = load_json(text)
    except RecursionError:
        return f"JSON is nested more than {MAX_JSON_DEPTH} levels deep"
    except ValueError as err:
        return f"is not valid JSON: {err}"
    if want_object and not isinstance(value, dict):
        return f"must be a JSON object, got {type(value).__name__}"
    # Every array or object opens with a bracket, so text with few brackets (even counting those inside
    # strings) cannot be nested deeper than their number: most tool inputs skip the walk.
    if text.count("{") + text.count("[") > MAX_JSON_DEPTH and nesting_exceeds(value, MAX_JSON_DEPTH):
        return f"JSON is nested more than {MAX_JSON_DEPTH} levels deep"
    return None


def provider_call_disagreement(use: pb.ToolUseBlock) -> str | None:
    """Where a tool_use block's ``provider_json`` (a JSON object) disagrees with its typed fields, or None.

    The typed fields are what the journal acts on (results, deferrals and approvals name ``id``); the
    provider's text is what goes back to the model. Both must describe one call, or a worker would run one
    call and send the model another.
    """
    item = load_json(use.provider_json)
    if item.get("name") != use.name:
        return f"its name {item.get('name')!r} is not the block's name {use.name!r}"
    id_key = "call_id" if "call_id" in item else "id"
    if item.get(id_key) != use.id:
        return f"its {id_key} {item.get(id_key)!r} is not the block's id {use.id!r}"
    if "arguments" in item:
        if item["arguments"] != use.input_json:
            return "its arguments are not the block's input_json, as text"
    elif "input" in item:
        if _canonical(item["input"]) != _canonical(load_json(use.input_json)):
            return "its input is not the block's input_json, as a JSON value"
    else:
        return "it has neither arguments (OpenAI) nor input (Anthropic)"
    return None


def _canonical(value: object) -> str:
    # Sorted keys, and true/1/1.0 kept apart (Python's == would call them equal).
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def nesting_exceeds(value: object, limit: int) -> bool:
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[object]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False

"""Anthropic Messages API content blocks <-> journal content blocks, exactly.

A block the model sent becomes a typed journal block only when the typed
block rebuilds it exactly: ``text`` with no key but ``type`` and ``text``,
``thinking`` with ``thinking`` and ``signature`` only, ``redacted_thinking``
with ``data`` only, ``tool_use`` (its other keys, such as ``caller``, kept in
``provider_json``). Every other block, and any of those carrying one more key
(a text with ``citations``, even ``"citations":null``), is an opaque block
holding the block's JSON text as the SDK sends it back (see ``wire``).

On the user side (a prompt, a follow-up, a tool result's content) the SDK
takes a string or a list of blocks, and the two are different requests: a
string is one typed text block, and a list holding exactly one plain text
block keeps that block opaque, so each converts back to the shape it came in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from runjournal._builders import opaque_block, redacted_thinking_block, text_block, thinking_block, tool_use_block
from runjournal.v1.records_pb2 import ContentBlock

PROVIDER = "anthropic"

TYPED_KEYS = {
    "text": frozenset({"type", "text"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
TOOL_USE_KEYS = frozenset({"type", "id", "name", "input"})
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
MODEL_ONLY_TYPES = frozenset({"thinking", "redacted_thinking", "tool_use", "tool_result"})
"""Block types a user-side content cannot carry: the model's own blocks, and results (their own record)."""


def wire(value: Any) -> dict[str, Any]:
    """A block (an SDK model or a mapping) as the SDK sends it in a request body.

    For a model that is what the SDK itself sends when the object is passed
    back: the fields the API set (``exclude_unset``), by their API names, in
    JSON mode, without the fields the SDK never sends (``__api_exclude__``).
    """
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", exclude_unset=True, by_alias=True, exclude=getattr(value, "__api_exclude__", None))
        return dict(dumped)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"expected an Anthropic SDK object or a mapping, got {type(value).__name__}")


def json_text(value: Any) -> str:
    """JSON text as the SDK writes a request body: compact, non-ASCII as itself, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def block_type(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"an Anthropic content block needs a string 'type', got {dict(block)!r:.200}")
    return kind


def model_block(value: Any) -> ContentBlock:
    """One block of a model's answer (``Message.content[i]``)."""
    block = wire(value)
    kind = block_type(block)
    keys = frozenset(block)
    if kind == "tool_use":
        if not keys >= TOOL_USE_KEYS:
            raise ValueError(f"a tool_use block needs id, name and input, got keys {sorted(keys)}")
        extra = json_text(block) if keys != TOOL_USE_KEYS else ""
        return tool_use_block(block["id"], block["name"], json_text(block["input"]), provider_json=extra)
    if keys == TYPED_KEYS.get(kind) and all(isinstance(block[key], str) for key in keys):
        if kind == "text":
            return text_block(block["text"])
        if kind == "thinking":
            return thinking_block(block["thinking"], block["signature"])
        return redacted_thinking_block(block["data"])
    return opaque_block(PROVIDER, kind, json_text=json_text(block))


def user_blocks(content: str | Iterable[Any]) -> list[ContentBlock]:
    """User-side content (a string or a list of blocks) as journal blocks that convert back to the same shape."""
    if isinstance(content, str):
        return [text_block(content)]
    blocks = [wire(item) for item in content]
    for block in blocks:
        kind = block_type(block)
        if kind in MODEL_ONLY_TYPES:
            raise ValueError(
                f"a {kind} block cannot be user content here: tool results are tool_result records "
                "(tool_result_record), and thinking and tool_use are the model's (assistant_record)"
            )
    if len(blocks) == 1:  # a one-block list is not the string it would fold to as a typed text
        return [opaque_block(PROVIDER, block_type(blocks[0]), json_text=json_text(blocks[0]))]
    return [_user_block(block) for block in blocks]


def _user_block(block: dict[str, Any]) -> ContentBlock:
    kind = block_type(block)
    if kind == "text" and frozenset(block) == TYPED_KEYS["text"] and isinstance(block["text"], str):
        return text_block(block["text"])
    return opaque_block(PROVIDER, kind, json_text=json_text(block))


def user_content(blocks: Iterable[ContentBlock]) -> str | list[dict[str, Any]] | None:
    """Journal blocks back to user-side content: one typed text is the string; none is None."""
    items = list(blocks)
    if not items:
        return None
    if len(items) == 1 and items[0].WhichOneof("block") == "text":
        return items[0].text.text
    return [block_param(item) for item in items]


def block_param(block: ContentBlock) -> dict[str, Any]:
    """One journal block as the request block the SDK sends (tool results are built by the caller)."""
    kind = block.WhichOneof("block")
    if kind == "text":
        return {"type": "text", "text": block.text.text}
    if kind == "thinking" and block.thinking.redacted:
        return {"type": "redacted_thinking", "data": block.thinking.data}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking.thinking, "signature": block.thinking.signature}
    if kind == "tool_use":
        use = block.tool_use
        if use.provider_json:
            return dict(json.loads(use.provider_json))
        return {"type": "tool_use", "id": use.id, "name": use.name, "input": json.loads(use.input_json)}
    if kind == "opaque":
        if block.opaque.provider != PROVIDER:
            raise ValueError(
                f"an opaque {block.opaque.provider!r} block ({block.opaque.type}) cannot be sent to Anthropic; "
                "a run keeps one provider"
            )
        parsed = json.loads(block.opaque.json)
        if not isinstance(parsed, dict):
            raise ValueError(f"an opaque Anthropic {block.opaque.type} block must be a JSON object")
        return parsed
    raise ValueError(f"no Anthropic request block for a {kind} block here")


def is_thinking(block: ContentBlock) -> bool:
    """Thinking the model signed: typed thinking, or an opaque thinking block that carried more keys."""
    kind = block.WhichOneof("block")
    return kind == "thinking" or (
        kind == "opaque" and block.opaque.provider == PROVIDER and block.opaque.type in THINKING_TYPES
    )


def summarising_compaction(block: ContentBlock) -> bool:
    """An Anthropic ``compaction`` block with content: the conversation restarts at it.

    A compaction whose ``content`` is null failed and is a no-op for the API,
    which accepts it sent back anywhere.
    """
    if block.WhichOneof("block") != "opaque" or block.opaque.provider != PROVIDER:
        return False
    if block.opaque.type != "compaction":
        return False
    parsed = json.loads(block.opaque.json)
    return isinstance(parsed, dict) and parsed.get("content") is not None

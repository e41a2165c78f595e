"""A folded conversation back as the ``input`` items of the next ``responses.create``, each as JSON text.

Every item the model sent goes back as the text the journal holds, untouched: an opaque item's ``json``,
a function call's ``provider_json``. Items keep their order, so each reasoning item stays right before the
function call or message it produced, as the API requires. What the journal built itself becomes the
smallest item the API takes:

* user text and content parts (``input_image``, ``input_file``, ...) in a row: one user message item;
* a tool result holding its ``function_call_output`` item: that item; any other result (an answer given
  through ``Answer``, an error written for a denied call): a ``function_call_output`` of its text;
* a typed call without ``provider_json``: a ``function_call`` of its fields; typed assistant text: an
  assistant message item.

The request starts at the newest ``compaction`` item the model returned in a turn (server-side
compaction, ``context_management``): it stands for everything before it, which the API lets a client
drop (and this one does, so the request stays small). The journal's own compaction record is already
the start of the fold's conversation, and its summary is sent whole: a ``responses.compact`` window is
its user messages followed by its compaction item, all of which the next request needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from runjournal.adapters._openai_output import PROVIDER, dumps
from runjournal.v1 import records_pb2

CONTENT_PARTS = frozenset({"input_text", "input_image", "input_file", "input_audio"})
"""Opaque user blocks that are parts of a message's content rather than items of their own."""


def input_item_texts(conversation: Sequence[records_pb2.ConversationMessage]) -> list[str]:
    """The request's ``input`` items as JSON text, from the newest compaction item the model returned on."""
    items: list[str] = []
    start = 0
    for message in conversation:
        if message.role != records_pb2.ROLE_ASSISTANT:
            items.extend(_user_items(message.content))
            continue
        for block in message.content:
            text, kind = _assistant_item(block)
            if kind == "compaction":
                start = len(items)
            items.append(text)
    return items[start:]


def _assistant_item(block: records_pb2.ContentBlock) -> tuple[str, str]:
    """The item's JSON text and its type."""
    kind = block.WhichOneof("block")
    if kind == "opaque":
        return _own_opaque(block), block.opaque.type
    if kind == "tool_use":
        use = block.tool_use
        if use.provider_json:
            return use.provider_json, "function_call"
        fields = {"type": "function_call", "call_id": use.id, "name": use.name, "arguments": use.input_json}
        return dumps(fields), "function_call"
    if kind == "text":
        return dumps({"type": "message", "role": "assistant", "content": block.text.text}), "message"
    raise ValueError(f"an assistant {kind} block has no Responses API form (is this run an OpenAI one?)")


def _user_items(blocks: Sequence[records_pb2.ContentBlock]) -> list[str]:
    items: list[str] = []
    parts: list[str] = []
    for block in blocks:
        kind = block.WhichOneof("block")
        if kind == "text":
            parts.append(dumps({"type": "input_text", "text": block.text.text}))
            continue
        if kind == "opaque" and block.opaque.type in CONTENT_PARTS:
            parts.append(_own_opaque(block))
            continue
        items.extend(_user_message(parts))
        parts = []
        if kind == "tool_result":
            items.append(_function_call_output(block.tool_result))
        elif kind == "opaque":
            items.append(_own_opaque(block))
        else:
            raise ValueError(f"a user {kind} block has no Responses API form")
    items.extend(_user_message(parts))
    return items


def _user_message(parts: list[str]) -> list[str]:
    if not parts:
        return []
    return ['{"type":"message","role":"user","content":[' + ",".join(parts) + "]}"]


def _function_call_output(result: records_pb2.ToolResultBlock) -> str:
    content = list(result.content)
    if len(content) == 1 and content[0].WhichOneof("block") == "opaque":
        item = content[0].opaque
        if item.provider == PROVIDER and item.type == "function_call_output":
            return item.json
    # A result the journal wrote (an answer from a person, a denial): its text, or its parts.
    if len(content) == 1 and content[0].WhichOneof("block") == "text":
        output = dumps(content[0].text.text)
    else:
        parts = [_output_part(block) for block in content]
        output = "[" + ",".join(parts) + "]"
    return '{"type":"function_call_output","call_id":' + dumps(result.tool_use_id) + ',"output":' + output + "}"


def _output_part(block: records_pb2.ContentBlock) -> str:
    if block.WhichOneof("block") == "text":
        return dumps({"type": "input_text", "text": block.text.text})
    if block.WhichOneof("block") == "opaque" and block.opaque.type in CONTENT_PARTS:
        return _own_opaque(block)
    raise ValueError(f"a tool result's {block.WhichOneof('block')} block has no function_call_output form")


def _own_opaque(block: records_pb2.ContentBlock) -> str:
    if block.opaque.provider != PROVIDER:
        raise ValueError(f"an opaque {block.opaque.provider} {block.opaque.type} block cannot go to the OpenAI API")
    return block.opaque.json

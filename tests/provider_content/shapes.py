"""The folded conversation back in each provider's request shape, as JSON text per block or item.

No client converts a fold back to a provider request yet, so the tests carry
the conversion a client would make, as small as it can be while exact:

* an opaque block of the provider is sent as its ``json`` text, untouched;
* a typed block is rebuilt from its fields, in the provider's key order and
  compact form (the fixtures of typed blocks are in that form, so the rebuilt
  text equals the provider's: the values are what must be kept, and are);
* a tool result is the client's own block around the result's content
  (Anthropic), or its opaque ``function_call_output`` (OpenAI).

Each function returns text, not parsed JSON: equality is then byte equality.
"""

from __future__ import annotations

import json

from runjournal.v1.records_pb2 import ContentBlock, ConversationMessage, Role


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def members(*pairs: tuple[str, str]) -> str:
    """A JSON object from its members' texts, in the order given (values already JSON text)."""
    return "{" + ",".join(f"{dumps(key)}:{value}" for key, value in pairs) + "}"


def anthropic_block(block: ContentBlock) -> str:
    """One block of a Messages API request."""
    kind = block.WhichOneof("block")
    if kind == "text":
        return members(("type", '"text"'), ("text", dumps(block.text.text)))
    if kind == "thinking" and block.thinking.redacted:
        return members(("type", '"redacted_thinking"'), ("data", dumps(block.thinking.data)))
    if kind == "thinking":
        thinking = block.thinking
        return members(
            ("type", '"thinking"'), ("thinking", dumps(thinking.thinking)), ("signature", dumps(thinking.signature))
        )
    if kind == "tool_use":
        use = block.tool_use
        return members(
            ("type", '"tool_use"'), ("id", dumps(use.id)), ("name", dumps(use.name)), ("input", use.input_json)
        )
    if kind == "tool_result":
        result = block.tool_result
        content = "[" + ",".join(anthropic_block(inner) for inner in result.content) + "]"
        error = [("is_error", "true")] if result.is_error else []
        return members(
            ("type", '"tool_result"'), ("tool_use_id", dumps(result.tool_use_id)), ("content", content), *error
        )
    if kind == "opaque" and block.opaque.provider == "anthropic":
        return block.opaque.json
    raise ValueError(f"no Anthropic form for {block}")


def anthropic_messages(conversation: list[ConversationMessage]) -> list[tuple[str, list[str]]]:
    """Each message's role and blocks, as a Messages API request holds them."""
    return [(_role(message), [anthropic_block(block) for block in message.content]) for message in conversation]


def openai_items(conversation: list[ConversationMessage]) -> list[str]:
    """The ``input`` items of a Responses API request, in order.

    An assistant message's opaque items go as they are; a typed tool_use whose
    id is the ``call_id`` of an opaque ``function_call`` of the same message
    is the journal's handle on that item and is not sent twice. A tool result
    sends its opaque ``function_call_output``. The user's own text becomes a
    user message item (the client writes it; no provider bytes to keep).
    """
    items: list[str] = []
    for message in conversation:
        paired = _function_call_ids(message)
        texts: list[str] = []
        for block in message.content:
            kind = block.WhichOneof("block")
            if kind == "text" and message.role == Role.ROLE_USER:
                texts.append(block.text.text)
                continue
            items.extend(_user_message(texts))
            texts = []
            if kind == "opaque" and block.opaque.provider == "openai":
                items.append(block.opaque.json)
            elif kind == "tool_use" and block.tool_use.id in paired:
                continue
            elif kind == "tool_result":
                items.extend(_openai_output(inner) for inner in block.tool_result.content)
            else:
                raise ValueError(f"no Responses form for {block}")
        items.extend(_user_message(texts))
    return items


def _openai_output(block: ContentBlock) -> str:
    if block.WhichOneof("block") == "opaque" and block.opaque.type == "function_call_output":
        return block.opaque.json
    raise ValueError(f"a tool result holds its function_call_output item, not {block}")


def _function_call_ids(message: ConversationMessage) -> set[str]:
    ids = set()
    for block in message.content:
        if block.WhichOneof("block") == "opaque" and block.opaque.type == "function_call":
            ids.add(json.loads(block.opaque.json)["call_id"])
    return ids


def _user_message(texts: list[str]) -> list[str]:
    if not texts:
        return []
    content = [{"type": "input_text", "text": text} for text in texts]
    return [dumps({"type": "message", "role": "user", "content": content})]


def _role(message: ConversationMessage) -> str:
    return "assistant" if message.role == Role.ROLE_ASSISTANT else "user"

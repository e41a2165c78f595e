"""The folded conversation back in the Anthropic Messages API's request shape, as JSON text per block.

The conversion a client makes, as small as it can be while exact (OpenAI's is
the adapter's own, ``runjournal.adapters.openai.input_item_texts``):

* an opaque block of the provider is sent as its ``json`` text, untouched;
* a typed block is rebuilt from its fields, in the provider's key order and
  compact form (the fixtures of typed blocks are in that form, so the rebuilt
  text equals the provider's: the values are what must be kept, and are);
* a tool result is the client's own block around the result's content.

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


def _role(message: ConversationMessage) -> str:
    return "assistant" if message.role == Role.ROLE_ASSISTANT else "user"

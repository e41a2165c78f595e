"""POST /v1/messages of a fake Anthropic Messages API: the rules that matter here, enforced, and scripted answers.

The SDKs are pointed at ``FakeModel.base_url`` (the ``anthropic`` SDKs add
``/v1/messages``). A ``Script`` picks each answer from the request body
alone, never from how many calls came before, so a worker resumed in another
process gets what the first would have got. Before answering, the request is
held to what the real API refuses with a 400 (an ``invalid_request_error``):

* every ``tool_use`` of an assistant message is answered by a ``tool_result``
  in the next message, a user message whose content starts with the results
  (no other block before them), and no result answers anything else;
* thinking comes back exactly as issued: a thinking block's ``signature``
  signs its model and its text, a redacted block's ``data`` its model and
  payload (``signed_thinking``, ``redacted_thinking``), and outside the latest
  assistant turn a block signed by another model than the one called is
  refused; with thinking on, the latest turn, when it calls tools, starts
  with a thinking block;
* every other block of an assistant message is one the script answers with,
  equal as JSON (encrypted content, citations and ids unchanged);
* a ``compaction`` block with content is the first block of the request and
  the only one.

Consecutive messages of the same role are taken as one turn, as the API does.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fake_model.server import FakeModel, Recorded, send_sse

PATH = "/v1/messages"


@dataclass(frozen=True)
class Answer:
    """What the model says: its blocks, why it stopped, and the usage to report."""

    content: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 100, "output_tokens": 20})


@dataclass(frozen=True)
class Script:
    """``answer(body)`` picks the answer from the request; ``catalogue`` holds every unsigned block it answers with."""

    answer: Callable[[dict[str, Any]], Answer | None]
    catalogue: list[dict[str, Any]]


class Refused(Exception):
    """The request breaks a rule of the API: answered 400."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


def signed_thinking(model: str, thinking: str) -> dict[str, Any]:
    """A thinking block the fake issues for ``model``: its signature names the model and signs the text."""
    signature = base64.b64encode(f"{model}|{_digest(model, thinking)}".encode()).decode()
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def redacted_thinking(model: str, payload: str) -> dict[str, Any]:
    data = base64.b64encode(f"{model}|{payload}|{_digest(model, payload)}".encode()).decode()
    return {"type": "redacted_thinking", "data": data}


def signer(block: dict[str, Any]) -> str:
    """The model whose signature a thinking block carries; Refused when it was not issued as it stands."""
    try:
        if block["type"] == "thinking":
            model, digest = base64.b64decode(block["signature"]).decode().split("|")
            intact = digest == _digest(model, block["thinking"]) and set(block) == {"type", "thinking", "signature"}
        else:
            model, payload, digest = base64.b64decode(block["data"]).decode().split("|")
            intact = digest == _digest(model, payload) and set(block) == {"type", "data"}
    except (KeyError, ValueError) as err:
        raise Refused(f"messages: a {block.get('type')} block with an invalid signature") from err
    if not intact:
        raise Refused(f"messages: a {block['type']} block was modified (its signature does not verify)")
    return model


def turns(messages: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The conversation as turns: consecutive messages of one role joined, a string content as a text block."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if out and out[-1][0] == message["role"]:
            out[-1][1].extend(blocks)
        else:
            out.append((message["role"], blocks))
    return out


def check(body: dict[str, Any], script: Script) -> None:
    """Raise Refused where the real API would answer 400."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Refused("messages: at least one message is required")
    conversation = turns(messages)
    _check_compaction(conversation)
    _check_tool_results(conversation)
    _check_assistant_blocks(conversation, body, script)


def _check_compaction(conversation: list[tuple[str, list[dict[str, Any]]]]) -> None:
    places = [
        (t, b)
        for t, (_, blocks) in enumerate(conversation)
        for b, block in enumerate(blocks)
        if block.get("type") == "compaction" and block.get("content") is not None
    ]
    if len(places) > 1:
        raise Refused("compaction_block_ambiguous: send only the compaction block the conversation returned last")
    if places and places[0] != (0, 0):
        raise Refused("compaction_block_misplaced: the compaction block is not the first block of the conversation")


def _check_tool_results(conversation: list[tuple[str, list[dict[str, Any]]]]) -> None:
    for index, (role, blocks) in enumerate(conversation):
        calls = [block["id"] for block in blocks if role == "assistant" and block.get("type") == "tool_use"]
        if role == "user":
            kinds = [block.get("type") for block in blocks]
            first_other = next((i for i, kind in enumerate(kinds) if kind != "tool_result"), len(kinds))
            if "tool_result" in kinds[first_other:]:
                raise Refused(f"messages.{index}: tool_result blocks must come first in the user message")
            previous = conversation[index - 1][1] if index else []
            asked = {block["id"] for block in previous if block.get("type") == "tool_use"}
            answered = [block["tool_use_id"] for block in blocks[:first_other]]
            if set(answered) - asked:
                raise Refused(f"messages.{index}: tool_result for unknown tool_use ids {sorted(set(answered) - asked)}")
        if calls:
            following = conversation[index + 1][1] if index + 1 < len(conversation) else []
            answered = {block.get("tool_use_id") for block in following if block.get("type") == "tool_result"}
            if set(calls) - answered:
                missing = sorted(set(calls) - answered)
                raise Refused(
                    f"messages.{index + 1}: tool_use ids were found without tool_result blocks immediately after: "
                    f"{', '.join(missing)}"
                )


def _check_assistant_blocks(
    conversation: list[tuple[str, list[dict[str, Any]]]], body: dict[str, Any], script: Script
) -> None:
    last_assistant = max((i for i, (role, _) in enumerate(conversation) if role == "assistant"), default=-1)
    thinking_on = (body.get("thinking") or {}).get("type") not in (None, "disabled")
    for index, (role, blocks) in enumerate(conversation):
        if role != "assistant":
            continue
        for block in blocks:
            if block.get("type") in ("thinking", "redacted_thinking"):
                model = signer(block)
                if index != last_assistant and model != body.get("model"):
                    raise Refused(
                        f"messages.{index}: a thinking block signed by {model!r}, not by {body.get('model')!r}, "
                        "in an earlier turn"
                    )
            elif block not in script.catalogue:
                raise Refused(
                    f"messages.{index}: a {block.get('type')} block the model never sent: {json.dumps(block)[:200]}"
                )
        calls = any(block.get("type") == "tool_use" for block in blocks)
        if (
            index == last_assistant
            and thinking_on
            and calls
            and blocks[0].get("type") not in ("thinking", "redacted_thinking")
        ):
            raise Refused(f"messages.{index}: with thinking on, the assistant turn must start with a thinking block")


def message_json(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    """The Message JSON; its id derives from the request, so a repeated request gets the same message."""
    return {
        "id": "msg_" + _digest(json.dumps(body, sort_keys=True)),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": answer.content,
        "stop_reason": answer.stop_reason,
        "stop_sequence": None,
        "usage": answer.usage,
    }


def stream_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The message as the API streams it: each block started empty where the API does so, then its deltas."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        opening, deltas = _block_events(block)
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": usage}
    yield "message_stop", {"type": "message_stop"}


def _block_events(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = block["type"]
    if kind == "text" and set(block) == {"type", "text"}:
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
    if kind == "thinking":
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas
    if kind in ("tool_use", "server_tool_use"):
        opening = {key: ({} if key == "input" else value) for key, value in block.items()}
        return opening, [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    return block, []


def serve(fake: FakeModel, script: Script, *, checked: bool = True) -> None:
    """Route POST /v1/messages of ``fake`` to ``script``, with the API's checks unless ``checked`` is false
    (a test that sends the providers' recorded blocks, whose signatures the fake cannot verify)."""

    async def messages(request: Recorded) -> web.StreamResponse:
        body = request.body or {}
        try:
            if checked:
                check(body, script)
            answer = script.answer(body)
            if answer is None:
                raise Refused("the fake model's script has no answer for this conversation")
        except Refused as err:
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": str(err)}}
            return web.json_response(error, status=400)
        message = message_json(body, answer)
        if body.get("stream"):
            return await send_sse(list(stream_events(message)))
        return web.json_response(message)

    fake.route(PATH, messages)

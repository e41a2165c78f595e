"""``POST /v1/responses`` of the OpenAI Responses API, played from recorded-shape items.

The conversation is the one ``tests/provider_content/loops.py`` appends (its items are the files of
``testdata/provider_content/openai/``): reasoning with ``encrypted_content``, commentary, two function
calls, their outputs, a final answer; then a follow-up answered after a compaction item and a web
search; then a closing message. Which turn answers is chosen from the request alone: the text of its
last user message and how many function call outputs follow it. So a worker that resumes a run in
another process, in another language, gets what the first one would have.

What the real API refuses and a conversion could get wrong is refused here too, with a 400 in the
API's error shape: an item the model issued (reasoning, call, message, compaction, web search) sent
back different from how it was issued, or unknown; a reasoning item not followed by the item it
produced; a function call output whose ``call_id`` no earlier function call has, or given twice; a
function call without its output.

``POST /v1/responses/compact`` answers the window to go on with: the request's user messages, then
the compaction item.

Both transports: a JSON response, or, with ``"stream": true``, the server-sent events the SDKs
accumulate (``response.created``, each item ``added`` then ``done`` with its deltas between,
``response.completed``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.fake_model.server import FakeModel, Recorded, send_sse

PATH = "/v1/responses"
COMPACT_PATH = "/v1/responses/compact"
FIXTURES = Path(__file__).resolve().parents[2] / "testdata" / "provider_content" / "openai"
QUESTION = "What's the weather in Paris, and should I take an umbrella?"
FOLLOW_UPS = ("And tomorrow?", "Thanks!")


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Turn:
    """One answer: its output items (fixture names) for a request whose last user text is ``user_text``
    with ``outputs`` function call outputs after it."""

    user_text: str
    outputs: int
    items: tuple[str, ...]


SCRIPT = (
    Turn(QUESTION, 0, ("reasoning", "message_commentary", "function_call", "function_call_forecast")),
    Turn(QUESTION, 2, ("reasoning_final", "message_final_answer")),
    Turn(FOLLOW_UPS[0], 0, ("compaction", "web_search_call", "message_after_compaction")),
    Turn(FOLLOW_UPS[1], 0, ("message_closing",)),
)


class Refusal(Exception):
    """A request the real API would refuse: answered 400 with this message."""


class OpenAIResponses:
    """The fake's ``/v1/responses`` handler and what it issued (every output item, by id)."""

    def __init__(self) -> None:
        self.issued: dict[str, dict[str, Any]] = {}
        self.produced_by: dict[str, str] = {}  # reasoning item id -> the id of the item it produced
        for turn in SCRIPT:
            ids = [fixture(name).get("id") for name in turn.items]
            for name, item_id, next_id in zip(turn.items, ids, [*ids[1:], None], strict=True):
                item = fixture(name)
                self.issued[str(item_id)] = item
                if item["type"] == "reasoning" and next_id is not None:
                    self.produced_by[str(item_id)] = str(next_id)

    def install(self, fake: FakeModel) -> OpenAIResponses:
        fake.route(PATH, self.handle)
        fake.route(COMPACT_PATH, self.compact)
        return self

    async def compact(self, request: Recorded) -> web.StreamResponse:
        """``responses.compact``: the window to go on with, the user's messages then one compaction item."""
        body = request.body if isinstance(request.body, dict) else {}
        try:
            items = input_items(body)
            self.check(items)
        except Refusal as refusal:
            return error(str(refusal))
        kept = [item for item in items if user_text(item) is not None]
        usage = {
            "input_tokens": 2400,
            "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 0},
            "output_tokens": 300,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2700,
        }
        output = [*kept, fixture("compaction")]
        return web.json_response(
            {
                "id": "resp_cmp_1",
                "object": "response.compaction",
                "created_at": 1757549000,
                "output": output,
                "usage": usage,
            }
        )

    async def handle(self, request: Recorded) -> web.StreamResponse:
        body = request.body if isinstance(request.body, dict) else {}
        try:
            items = input_items(body)
            self.check(items)
            index, turn = answer_for(items)
        except Refusal as refusal:
            return error(str(refusal))
        response = self.response(body, index, turn)
        if body.get("stream"):
            return await send_sse(stream_events(response))
        return web.json_response(response)

    def check(self, items: list[dict[str, Any]]) -> None:
        for position, item in enumerate(items):
            self.check_issued(item, items[position + 1] if position + 1 < len(items) else None)
        check_outputs(items)

    def check_issued(self, item: dict[str, Any], following: dict[str, Any] | None) -> None:
        """An item the model produced comes back as it was issued, a reasoning item with what it produced."""
        item_id = item.get("id")
        if isinstance(item_id, str) and item_id.split("_", 1)[0] in ("rs", "fc", "msg", "cmp", "ws"):
            if item_id not in self.issued:
                raise Refusal(f"Item with id '{item_id}' not found.")
            if item != self.issued[item_id]:
                raise Refusal(f"Item '{item_id}' of type '{item.get('type')}' is not the item the model produced.")
        if item.get("type") == "reasoning" and (following or {}).get("id") != self.produced_by.get(str(item_id)):
            raise Refusal(f"Item '{item_id}' of type 'reasoning' was provided without its required following item.")

    def response(self, body: dict[str, Any], index: int, turn: Turn) -> dict[str, Any]:
        include = body.get("include") or []
        output = []
        for name in turn.items:
            item = fixture(name)
            if item["type"] == "reasoning" and "reasoning.encrypted_content" not in include:
                del item["encrypted_content"]
            output.append(item)
        cached = 512 * index
        return {
            "id": f"resp_{hashlib.sha256(json.dumps(output).encode()).hexdigest()[:40]}",
            "object": "response",
            "created_at": 1757540000 + index,
            "status": "completed",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": body.get("model"),
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
            "store": body.get("store", True),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": body.get("tools") or [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": 1200 + 700 * index,
                "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 64},
                "output_tokens": 150 + 10 * index,
                "output_tokens_details": {"reasoning_tokens": 64},
                "total_tokens": 1350 + 710 * index,
            },
            "metadata": {},
        }


def check_outputs(items: list[dict[str, Any]]) -> None:
    """Each function call output answers one earlier call, once; every call has its output."""
    calls: set[str] = set()
    answered: set[str] = set()
    for item in items:
        if item.get("type") == "function_call":
            calls.add(str(item.get("call_id")))
        if item.get("type") == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in calls:
                raise Refusal(f"No tool call found for function call output with call_id {call_id}.")
            if call_id in answered:
                raise Refusal(f"Duplicate function call output for call_id {call_id}.")
            answered.add(call_id)
    for call_id in sorted(calls - answered):
        raise Refusal(f"No tool output found for function call {call_id}.")


def input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise Refusal("'input' must be a string or a list of items.")
    return raw


def user_text(item: dict[str, Any]) -> str | None:
    """The text of a user message item (EasyInputMessage or a message of input_text parts), or None."""
    if item.get("role") != "user" or item.get("type", "message") != "message":
        return None
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if part.get("type") == "input_text")


def answer_for(items: list[dict[str, Any]]) -> tuple[int, Turn]:
    last_user = max((i for i, item in enumerate(items) if user_text(item) is not None), default=None)
    if last_user is None:
        raise Refusal("The fake model answers conversations with a user message.")
    text = user_text(items[last_user])
    outputs = sum(1 for item in items[last_user:] if item.get("type") == "function_call_output")
    for index, turn in enumerate(SCRIPT):
        if (turn.user_text, turn.outputs) == (text, outputs):
            return index, turn
    raise Refusal(f"The fake model has no answer after {text!r} with {outputs} function call outputs.")


def error(message: str) -> web.Response:
    payload = {"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": None}}
    return web.json_response(payload, status=400)


def stream_events(response: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """The server-sent events of ``response``, as the API streams one: every item added, its deltas, done."""
    events: list[dict[str, Any]] = []
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events += [{"type": "response.created", "response": started}, {"type": "response.in_progress", "response": started}]
    for index, item in enumerate(response["output"]):
        events += item_events(index, item)
    events.append({"type": "response.completed", "response": response})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return [(event["type"], event) for event in events]


def item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"output_index": index, "item_id": item.get("id")}
    kind = item["type"]
    if kind == "message":
        added = {**item, "status": "in_progress", "content": []}
        events = [{"type": "response.output_item.added", "output_index": index, "item": added}]
        for part_index, part in enumerate(item["content"]):
            empty = {**part, "text": ""}
            where = {**at, "content_index": part_index}
            events += [
                {"type": "response.content_part.added", **where, "part": empty},
                {"type": "response.output_text.delta", **where, "delta": part["text"], "logprobs": []},
                {"type": "response.output_text.done", **where, "text": part["text"], "logprobs": []},
                {"type": "response.content_part.done", **where, "part": part},
            ]
    elif kind == "function_call":
        added = {**item, "status": "in_progress", "arguments": ""}
        events = [
            {"type": "response.output_item.added", "output_index": index, "item": added},
            {"type": "response.function_call_arguments.delta", **at, "delta": item["arguments"]},
            {"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]},
        ]
    else:
        added = {key: value for key, value in item.items() if key != "encrypted_content"}
        events = [{"type": "response.output_item.added", "output_index": index, "item": added}]
    return [*events, {"type": "response.output_item.done", "output_index": index, "item": item}]

"""POST /v1/responses for the OpenAI Agents SDK session tests: a weather agent in two steps.

The answer is chosen from the request alone: when the last input item is a
``function_call_output`` the model answers in words, otherwise it reasons
(a reasoning item with ``encrypted_content``) and calls ``get_weather`` once,
with a call id numbered by the user messages so far (so a second turn's call
has an id of its own). Non-streaming, as ``Runner.run`` asks.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests.fake_model.server import FakeModel, Recorded

PATH = "/v1/responses"
MODEL = "gpt-fake"


def serve_weather_agent(fake: FakeModel) -> None:
    fake.route(PATH, answer)


async def answer(request: Recorded) -> web.Response:
    items: list[dict[str, Any]] = request.body["input"]
    turn = sum(1 for item in items if item.get("role") == "user")
    if items and items[-1].get("type") == "function_call_output":
        output = [
            {
                "id": f"msg_{turn}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"Sunny, turn {turn}.", "annotations": []}],
            }
        ]
    else:
        city = "Paris" if turn == 1 else "Lisbon"
        output = [
            {
                "id": f"rs_{turn}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": f"Look up {city}."}],
                "encrypted_content": f"gAAAAB-opaque-{turn}==",
            },
            {
                "id": f"fc_{turn}",
                "type": "function_call",
                "call_id": f"call_{turn}",
                "name": "get_weather",
                "arguments": json.dumps({"city": city}),
                "status": "completed",
            },
        ]
    return web.json_response(response_body(f"resp_{turn}_{len(items)}", output))


def response_body(response_id: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_750_000_000,
        "status": "completed",
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 4},
            "total_tokens": 30,
        },
    }

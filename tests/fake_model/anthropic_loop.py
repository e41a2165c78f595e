"""The tool loop the Anthropic hand-off workers run, and the fake model's side of it.

Four calls, one answer each, picked from the request alone:

1. the prompt only -> thinking, a server web search (``encrypted_content``),
   cited text; stops with ``pause_turn``;
2. the paused turn sent back (streamed) -> thinking, redacted thinking, text
   and two parallel tool calls;
3. both results sent -> a ``compaction`` block; stops with ``compaction``;
4. the conversation from that block -> a second web search that hit its
   limit (the error form) and the final text; ``end_turn``.

A worker is killed after the first of the two results of call 2; the
worker that resumes sends call 3, which must equal the uninterrupted run's.
The blocks are the provider-content fixtures (``testdata/provider_content``).
The TypeScript worker (client/ts/test/workers/anthropic-worker.ts) holds the
same call arguments and tool outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fake_model.anthropic import Answer, Script, redacted_thinking, signed_thinking, turns

FIXTURES = Path(__file__).resolve().parents[2] / "testdata" / "provider_content" / "anthropic"

MODEL = "claude-fake-4-5"
SYSTEM = "You compare revenue figures with exchange rates. Quote figures exactly and name their source."
THINKING = {"type": "enabled", "budget_tokens": 2048}
MAX_TOKENS = 4096
BETAS = ["compact-2026-01-12"]
CONTEXT_MANAGEMENT = {"edits": [{"type": "compact_20260112", "pause_after_compaction": True}]}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_exchange_rate",
        "description": "The reference rate between two currencies on a date",
        "input_schema": {
            "type": "object",
            "properties": {"base": {"type": "string"}, "quote": {"type": "string"}, "date": {"type": "string"}},
            "required": ["base", "quote"],
        },
    },
    {
        "name": "render_revenue_chart",
        "description": "A chart of revenue by month",
        "input_schema": {
            "type": "object",
            "properties": {
                "quarter": {"type": "string"},
                "months": {"type": "array", "items": {"type": "string"}},
                "currency": {"type": "string"},
            },
        },
    },
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
]
QUESTION = "Compare Q3 revenue in the report with today's EUR/USD rate and the latest news."
RATE_TEXT = "1 EUR = 1.0842 USD (ECB reference rate, 2025-10-01)"
CHART_CAPTION = "Q3 revenue by month, EUR"


def fixture(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return value


def prompt() -> list[dict[str, Any]]:
    """The first user message's content: a PDF, a cached instruction, the question."""
    return [fixture("document"), fixture("text_cache_control"), {"type": "text", "text": QUESTION}]


def tool_output(name: str) -> str | list[dict[str, Any]]:
    """What each client tool returns, as the tool_result's content."""
    if name == "get_exchange_rate":
        return RATE_TEXT
    if name == "render_revenue_chart":
        return [fixture("image"), {"type": "text", "text": CHART_CAPTION}]
    raise ValueError(f"no tool {name!r}")


SEARCHED = [fixture("server_tool_use"), fixture("web_search_tool_result"), fixture("text_citations_web")]
BRIDGE = {"type": "text", "text": "; the report itself says "}
PLANNED = {"type": "text", "text": "I'll fetch the rate and chart the months."}
CALLS = [fixture("tool_use"), fixture("tool_use_chart")]
FINAL = [fixture("server_tool_use_again"), fixture("web_search_tool_result_error")]
FINAL_TEXT = {"type": "text", "text": "Revenue grew 12%; in dollars, USD 4.55M."}
CATALOGUE = [*SEARCHED, BRIDGE, fixture("text_citations_document"), PLANNED, *CALLS, fixture("compaction"), *FINAL]
CATALOGUE.append(FINAL_TEXT)


def answer(body: dict[str, Any]) -> Answer | None:
    model = body["model"]
    conversation = turns(body["messages"])
    role, blocks = conversation[-1]
    if conversation[0][1][0].get("type") == "compaction":
        return Answer([*FINAL, FINAL_TEXT], "end_turn", {"input_tokens": 300, "output_tokens": 40})
    if len(conversation) == 1:
        thinking = signed_thinking(model, "The user wants Q3 revenue against today's rate: search the news first.")
        content = [thinking, *SEARCHED, BRIDGE, fixture("text_citations_document")]
        usage = {"input_tokens": 1200, "output_tokens": 310, "cache_creation_input_tokens": 800}
        return Answer(content, "pause_turn", usage)
    if role == "assistant":
        thinking = signed_thinking(model, "I need the rate and a chart: call both tools in parallel.")
        content = [thinking, redacted_thinking(model, "weighing sources"), PLANNED, *CALLS]
        usage = {"input_tokens": 40, "output_tokens": 150, "cache_read_input_tokens": 2000}
        return Answer(content, "tool_use", usage)
    answered = {block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"}
    if answered == {call["id"] for call in CALLS}:
        usage = {"input_tokens": 3000, "output_tokens": 90, "cache_read_input_tokens": 2000}
        return Answer([fixture("compaction")], "compaction", usage)
    return None


SCRIPT = Script(answer=answer, catalogue=CATALOGUE)

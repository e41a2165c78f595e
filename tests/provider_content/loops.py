"""The two tool loops the tests append, one per provider, built from the fixtures.

Each block sits in the record where a client puts it: what the model sent in
an ``assistant`` record, what the user or a tool sent in the ``meta`` prompt, a
``user`` follow-up or a ``tool_result``. Where each kind goes and why (a typed
block or an opaque one) is the table of ``docs/provider-content.md``.

``PLACES`` names, for each fixture, where it lands: the seq and the path of
the block inside the record's payload, and its place in the folded
conversation (message index, block index and, inside a tool result, the index
in the result's content).
"""

from __future__ import annotations

from dataclasses import dataclass

from runjournal.v1.records_pb2 import (
    AssistantTurn,
    ContentBlock,
    JournalRecord,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    Usage,
    UserFollowUp,
)
from tests.provider_content.fixtures import opaque, provider_json, provider_value, raw_member
from tests.support import builders as b

TOOL_USE = StopReason.STOP_REASON_TOOL_USE
END_TURN = StopReason.STOP_REASON_END_TURN


@dataclass(frozen=True)
class Place:
    """Where one fixture lands: in the record at ``seq`` (``field[index]`` of its payload) and in the fold."""

    seq: int
    field: str
    index: int
    message: int
    block: int
    inner: int | None = None


def text(value: str) -> ContentBlock:
    return ContentBlock(text=TextBlock(text=value))


def thinking(name: str) -> ContentBlock:
    """Anthropic ``thinking``/``redacted_thinking`` as the typed block: the values, taken from the fixture."""
    value = provider_value("anthropic", name)
    if value["type"] == "redacted_thinking":
        return ContentBlock(thinking=ThinkingBlock(redacted=True, data=value["data"]))
    return ContentBlock(thinking=ThinkingBlock(thinking=value["thinking"], signature=value["signature"]))


def anthropic_tool_use(name: str) -> ContentBlock:
    """Anthropic ``tool_use`` as the typed block, its input the provider's own text of ``input``."""
    value = provider_value("anthropic", name)
    input_json = raw_member(provider_json("anthropic", name), "input")
    return ContentBlock(tool_use=ToolUseBlock(id=value["id"], name=value["name"], input_json=input_json))


def openai_call(name: str) -> ContentBlock:
    """OpenAI ``function_call``: one typed tool_use, id = its ``call_id``, the item itself as ``provider_json``.

    The typed fields are the call the journal tracks (results, deferrals and
    approvals name ``call_id``), ``input_json`` is ``arguments`` as the model
    wrote it, and ``provider_json`` keeps the item's own text (its ``fc_`` id
    and ``status``) for the request, which sends it instead of a rebuilt item.
    """
    value = provider_value("openai", name)
    return ContentBlock(
        tool_use=ToolUseBlock(
            id=value["call_id"],
            name=value["name"],
            input_json=value["arguments"],
            provider_json=provider_json("openai", name),
        )
    )


def assistant(seq: int, iteration: int, content: list[ContentBlock], stop: StopReason) -> JournalRecord:
    usage = Usage(input_tokens=1200 * iteration, output_tokens=300)
    return JournalRecord(
        seq=seq, assistant=AssistantTurn(iteration=iteration, content=content, stop_reason=stop, usage=usage)
    )


def result(seq: int, call_id: str, content: list[ContentBlock]) -> JournalRecord:
    return JournalRecord(seq=seq, tool_result=ToolResult(tool_use_id=call_id, content=content))


def user(seq: int, content: list[ContentBlock]) -> JournalRecord:
    return JournalRecord(seq=seq, user=UserFollowUp(content=content))


def meta(run_id: str, provider: str, prompt: list[ContentBlock]) -> JournalRecord:
    record = b.meta(run_id=run_id, fp=b.fingerprint(provider=provider, model=f"{provider}-model"))
    del record.meta.prompt[:]
    record.meta.prompt.extend(prompt)
    return record


def call_id(provider: str, name: str) -> str:
    value = provider_value(provider, name)
    return str(value["call_id"] if provider == "openai" else value["id"])


ANTHROPIC_QUESTION = "Compare Q3 revenue in the report with today's EUR/USD rate and the latest news."


def anthropic_records(run_id: str) -> list[JournalRecord]:
    """A Claude tool loop: thinking, parallel calls, server web search with citations, a compaction."""
    rate, chart = call_id("anthropic", "tool_use"), call_id("anthropic", "tool_use_chart")
    return [
        meta(run_id, "anthropic", [opaque("anthropic", "document"), opaque("anthropic", "text_cache_control"),
                                   text(ANTHROPIC_QUESTION)]),
        assistant(2, 1, [thinking("thinking"), text("I'll fetch the rate and chart the months."),
                         anthropic_tool_use("tool_use"), anthropic_tool_use("tool_use_chart")], TOOL_USE),
        result(3, rate, [text("1 EUR = 1.0842 USD (ECB reference rate, 2025-10-01)")]),
        result(4, chart, [opaque("anthropic", "image"), text("Q3 revenue by month, EUR")]),
        user(5, [opaque("anthropic", "image"), text("Here is the slide the board saw.")]),
        assistant(6, 2, [
            thinking("thinking_omitted"), thinking("redacted_thinking"),
            opaque("anthropic", "server_tool_use"), opaque("anthropic", "web_search_tool_result"),
            opaque("anthropic", "server_tool_use_again"), opaque("anthropic", "web_search_tool_result_error"),
            opaque("anthropic", "text_citations_web"), text(", so "),
            opaque("anthropic", "text_citations_document"), text(" is about USD 4.55M."),
        ], END_TURN),
        user(7, [text("Keep going, briefly.")]),
        assistant(8, 3, [opaque("anthropic", "compaction"), text("Revenue grew 12%; in dollars, USD 4.55M.")],
                  END_TURN),
        user(9, [text("Thanks. Anything else?")]),
        assistant(10, 4, [opaque("anthropic", "compaction_null"), text("No, that is all.")], END_TURN),
    ]  # fmt: skip


ANTHROPIC_PLACES: dict[str, list[Place]] = {
    "document": [Place(1, "prompt", 0, 0, 0)],
    "text_cache_control": [Place(1, "prompt", 1, 0, 1)],
    "thinking": [Place(2, "content", 0, 1, 0)],
    "tool_use": [Place(2, "content", 2, 1, 2)],
    "tool_use_chart": [Place(2, "content", 3, 1, 3)],
    "image": [Place(4, "content", 0, 2, 1, inner=0), Place(5, "content", 0, 2, 2)],
    "thinking_omitted": [Place(6, "content", 0, 3, 0)],
    "redacted_thinking": [Place(6, "content", 1, 3, 1)],
    "server_tool_use": [Place(6, "content", 2, 3, 2)],
    "web_search_tool_result": [Place(6, "content", 3, 3, 3)],
    "server_tool_use_again": [Place(6, "content", 4, 3, 4)],
    "web_search_tool_result_error": [Place(6, "content", 5, 3, 5)],
    "text_citations_web": [Place(6, "content", 6, 3, 6)],
    "text_citations_document": [Place(6, "content", 8, 3, 8)],
    "compaction": [Place(8, "content", 0, 5, 0)],
    "compaction_null": [Place(10, "content", 0, 7, 0)],
}

OPENAI_QUESTION = "What's the weather in Paris, and should I take an umbrella?"
OPENAI_FOLLOW_UPS = ("And tomorrow?", "Thanks!")


def openai_records(run_id: str) -> list[JournalRecord]:
    """A Responses API tool loop: reasoning, commentary, two function calls and their outputs, a compaction
    with a web search after it (the conversation ``tests/fake_model/openai.py`` plays)."""
    weather, forecast = call_id("openai", "function_call"), call_id("openai", "function_call_forecast")
    return [
        meta(run_id, "openai", [text(OPENAI_QUESTION)]),
        assistant(2, 1, [opaque("openai", "reasoning"), opaque("openai", "message_commentary"),
                         openai_call("function_call"), openai_call("function_call_forecast")], TOOL_USE),
        result(3, weather, [opaque("openai", "function_call_output")]),
        result(4, forecast, [opaque("openai", "function_call_output_forecast")]),
        assistant(5, 2, [opaque("openai", "reasoning_final"), opaque("openai", "message_final_answer")], END_TURN),
        user(6, [text(OPENAI_FOLLOW_UPS[0])]),
        assistant(7, 3, [opaque("openai", "compaction"), opaque("openai", "web_search_call"),
                         opaque("openai", "message_after_compaction")], END_TURN),
        user(8, [text(OPENAI_FOLLOW_UPS[1])]),
        assistant(9, 4, [opaque("openai", "message_closing")], END_TURN),
    ]  # fmt: skip


OPENAI_PLACES: dict[str, list[Place]] = {
    "reasoning": [Place(2, "content", 0, 1, 0)],
    "message_commentary": [Place(2, "content", 1, 1, 1)],
    "function_call": [Place(2, "content", 2, 1, 2)],
    "function_call_forecast": [Place(2, "content", 3, 1, 3)],
    "function_call_output": [Place(3, "content", 0, 2, 0, inner=0)],
    "function_call_output_forecast": [Place(4, "content", 0, 2, 1, inner=0)],
    "reasoning_final": [Place(5, "content", 0, 3, 0)],
    "message_final_answer": [Place(5, "content", 1, 3, 1)],
    "compaction": [Place(7, "content", 0, 5, 0)],
    "web_search_call": [Place(7, "content", 1, 5, 1)],
    "message_after_compaction": [Place(7, "content", 2, 5, 2)],
    "message_closing": [Place(9, "content", 0, 7, 0)],
}

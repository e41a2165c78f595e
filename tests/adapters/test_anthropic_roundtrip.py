"""Every Anthropic block type: SDK object -> record -> SDK request param, through a real server on both backends.

Each test answers a first call with the provider-content fixtures
(``testdata/provider_content/anthropic``) through the real SDK, records the
``Message`` with the adapter, appends it to a journal server, folds the run,
builds the next call with ``request_messages`` and sends it through the SDK.
The same call is sent as an uninterrupted SDK loop sends it (the answer's own
``content`` objects appended). The two request bodies must be equal as JSON,
and every opaque block's JSON text must be in both, byte for byte. These are
the rows of the round-trip table in docs/integrations/anthropic.md.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from anthropic import Anthropic

from runjournal import JournalClient, Run
from runjournal.adapters import anthropic as adapter
from runjournal.v1 import records_pb2
from tests.adapters.conftest_anthropic import Recorder, anthropic_recorder, journal_server
from tests.fake_model.anthropic import PATH, Answer
from tests.fake_model.server import Recorded
from tests.provider_content.fixtures import provider_json, provider_value
from tests.servers import ServerProcess

__all__ = ["anthropic_recorder", "journal_server"]

SYSTEM = "You answer briefly."
CALL: dict[str, Any] = {"model": "claude-fake-4-5", "max_tokens": 1024, "system": SYSTEM}
BETAS = ["compact-2026-01-12"]


@dataclass(frozen=True)
class Trip:
    message: Any
    stored: records_pb2.JournalRecord
    """The assistant record as Read returns it from the server."""
    state: Any
    reference: Recorded
    adapted: Recorded

    def opaque_texts(self) -> list[str]:
        return [block.opaque.json for block in self.stored.assistant.content if block.WhichOneof("block") == "opaque"]


def trip(
    server: ServerProcess,
    recorder: Recorder,
    content: list[dict[str, Any]],
    *,
    stop: str = "end_turn",
    prompt: Any = None,
    results: list[dict[str, Any]] | None = None,
    follow_up: Any = None,
    beta: bool = False,
) -> Trip:
    """One call answered with ``content``, recorded, folded and converted; then the next call sent both ways."""
    prompt = prompt if prompt is not None else f"case {uuid.uuid4().hex}"
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 7}
    recorder.expect(prompt, Answer(content, stop, usage))
    sdk = Anthropic(api_key="fake-key", base_url=recorder.fake.base_url, max_retries=0)
    messages = sdk.beta.messages if beta else sdk.messages
    extra: dict[str, Any] = {"betas": BETAS} if beta else {}
    first = [{"role": "user", "content": prompt}]
    message = messages.create(**CALL, **extra, messages=first)  # type: ignore[call-overload]

    run_id = f"anthropic-trip-{uuid.uuid4().hex[:12]}"
    with JournalClient(server.address) as journal:
        run = Run.create(journal, run_id, adapter.fingerprint(**CALL), prompt_blocks=adapter.user_blocks(prompt))
        seq = run.append(adapter.assistant_record(message, iteration=1))
        for result in results or []:
            run.append(adapter.tool_result_record(result))
        if follow_up is not None:
            run.append(adapter.user_record(follow_up))
        state = journal.fold(run_id)
        call = adapter.request_messages(state, system=SYSTEM, records=journal.read(run_id))
        [stored] = [record for record, _ in journal.read(run_id, seq) if record.seq == seq]

    sent: list[dict[str, Any]] = [*first, {"role": "assistant", "content": message.content}]
    if results:
        sent.append({"role": "user", "content": results})
    if follow_up is not None:
        sent.append({"role": "user", "content": follow_up})
    if stop == "compaction":  # an SDK loop sends the conversation from the compaction block on
        sent = [{"role": "assistant", "content": message.content}]
    before = len(recorder.fake.requests_to(PATH))
    messages.create(**{**CALL, **call}, **extra)  # type: ignore[call-overload]
    messages.create(**CALL, **extra, messages=sent)  # type: ignore[call-overload]
    adapted, reference = recorder.fake.requests_to(PATH)[before:]
    return Trip(message, stored, state, reference, adapted)


def assert_same_request(found: Trip) -> None:
    assert found.adapted.body == found.reference.body
    for text in found.opaque_texts():
        assert text.encode() in found.adapted.raw
        assert text.encode() in found.reference.raw


def kinds(record: records_pb2.JournalRecord) -> list[tuple[str, str]]:
    return [(block.WhichOneof("block") or "", block.opaque.type) for block in record.assistant.content]


def test_thinking_with_its_signature(journal_server: ServerProcess, anthropic_recorder: Recorder) -> None:
    want = provider_value("anthropic", "thinking")
    found = trip(journal_server, anthropic_recorder, [want, {"type": "text", "text": "So."}])
    thinking = found.stored.assistant.content[0].thinking
    assert (thinking.thinking, thinking.signature, thinking.redacted) == (want["thinking"], want["signature"], False)
    assert_same_request(found)
    assert found.adapted.body["messages"][1]["content"][0] == want


def test_thinking_with_display_omitted_keeps_its_empty_text(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    want = provider_value("anthropic", "thinking_omitted")
    found = trip(journal_server, anthropic_recorder, [want, {"type": "text", "text": "So."}])
    assert (found.stored.assistant.content[0].thinking.thinking, kinds(found.stored)[0]) == ("", ("thinking", ""))
    assert_same_request(found)
    assert found.adapted.body["messages"][1]["content"][0] == {**want, "thinking": ""}


def test_redacted_thinking(journal_server: ServerProcess, anthropic_recorder: Recorder) -> None:
    want = provider_value("anthropic", "redacted_thinking")
    found = trip(journal_server, anthropic_recorder, [want, {"type": "text", "text": "So."}])
    thinking = found.stored.assistant.content[0].thinking
    assert (thinking.redacted, thinking.data) == (True, want["data"])
    assert_same_request(found)


def test_tool_use_and_its_results_as_string_list_and_error(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    rate, chart = provider_value("anthropic", "tool_use"), provider_value("anthropic", "tool_use_chart")
    image = provider_value("anthropic", "image")
    results = [
        {"type": "tool_result", "tool_use_id": rate["id"], "content": "1 EUR = 1.0842 USD"},
        {"type": "tool_result", "tool_use_id": chart["id"], "content": [image], "is_error": True},
    ]
    found = trip(journal_server, anthropic_recorder, [rate, chart], stop="tool_use", results=results)
    use = found.stored.assistant.content[0].tool_use
    assert (use.id, use.name, use.input_json, use.provider_json) == (
        rate["id"],
        rate["name"],
        '{"base":"EUR","quote":"USD","date":"2025-10-01"}',
        "",
    )
    assert_same_request(found)
    assert found.adapted.body["messages"][2]["content"] == results
    assert provider_json("anthropic", "image").encode() in found.adapted.raw


def test_tool_use_with_a_caller_keeps_the_whole_block(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    call = {
        "type": "tool_use",
        "id": "toolu_01Pq8uKPwQhVtUoJgbX5sS3c",
        "name": "get_exchange_rate",
        "input": {"base": "EUR", "quote": "USD"},
        "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_01Rbq1CkSyJt4v8ZsPhLx6nB"},
    }
    result = {"type": "tool_result", "tool_use_id": call["id"], "content": "1.0842"}
    found = trip(journal_server, anthropic_recorder, [call], stop="tool_use", results=[result])
    use = found.stored.assistant.content[0].tool_use
    assert json.loads(use.provider_json) == call
    assert json.loads(use.input_json) == call["input"]
    assert_same_request(found)


@pytest.mark.parametrize(
    "names",
    [
        ["server_tool_use", "web_search_tool_result"],
        ["server_tool_use_again", "web_search_tool_result_error"],
    ],
    ids=["encrypted_content", "error_form"],
)
def test_server_tool_use_and_web_search_results(
    journal_server: ServerProcess, anthropic_recorder: Recorder, names: list[str]
) -> None:
    blocks = [provider_value("anthropic", name) for name in names]
    found = trip(journal_server, anthropic_recorder, [*blocks, {"type": "text", "text": "Found it."}])
    assert kinds(found.stored)[:2] == [("opaque", block["type"]) for block in blocks]
    assert found.state.counters.tool_calls == 0 and not found.state.HasField("pending")
    assert_same_request(found)


def test_text_with_citations_keeps_its_block_boundaries(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    content = [
        provider_value("anthropic", "text_citations_web"),
        {"type": "text", "text": ", so "},
        provider_value("anthropic", "text_citations_document"),
        {"type": "text", "text": " is about USD 4.55M."},
    ]
    found = trip(journal_server, anthropic_recorder, content)
    assert kinds(found.stored) == [("opaque", "text"), ("text", ""), ("opaque", "text"), ("text", "")]
    assert_same_request(found)
    assert found.adapted.body["messages"][1]["content"] == content


def test_prompt_blocks_document_and_cache_control(journal_server: ServerProcess, anthropic_recorder: Recorder) -> None:
    prompt = [
        provider_value("anthropic", "document"),
        provider_value("anthropic", "text_cache_control"),
        {"type": "text", "text": f"Summarise it ({uuid.uuid4().hex})."},
    ]
    found = trip(journal_server, anthropic_recorder, [{"type": "text", "text": "A summary."}], prompt=prompt)
    first = found.state.conversation[0].content
    assert [block.WhichOneof("block") for block in first] == ["opaque", "opaque", "text"]
    assert_same_request(found)
    for name in ("document", "text_cache_control"):
        assert provider_json("anthropic", name).encode() in found.adapted.raw


def test_an_image_in_a_follow_up(journal_server: ServerProcess, anthropic_recorder: Recorder) -> None:
    image = provider_value("anthropic", "image")
    follow_up = [image, {"type": "text", "text": "Here is the slide."}]
    found = trip(journal_server, anthropic_recorder, [{"type": "text", "text": "Send it."}], follow_up=follow_up)
    assert_same_request(found)
    assert found.adapted.body["messages"][2]["content"] == follow_up
    assert provider_json("anthropic", "image").encode() in found.adapted.raw


def test_the_newest_compaction_block_starts_the_request(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    compaction = provider_value("anthropic", "compaction")
    found = trip(journal_server, anthropic_recorder, [compaction], stop="compaction", beta=True)
    assert found.stored.assistant.stop_reason == records_pb2.STOP_REASON_COMPACTION
    assert kinds(found.stored) == [("opaque", "compaction")]
    assert_same_request(found)
    assert found.adapted.body["messages"] == [{"role": "assistant", "content": [compaction]}]


def test_a_null_compaction_is_sent_back_where_it_was(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    null = provider_value("anthropic", "compaction_null")
    found = trip(journal_server, anthropic_recorder, [null, {"type": "text", "text": "Go on."}], beta=True)
    assert_same_request(found)
    assert [message["role"] for message in found.adapted.body["messages"]] == ["user", "assistant"]


def test_usage_with_cache_tokens_and_the_stop_reason(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    found = trip(journal_server, anthropic_recorder, [{"type": "text", "text": "Stopped."}], stop="pause_turn")
    usage = found.stored.assistant.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_write_tokens, usage.cache_read_tokens) == (10, 5, 3, 7)
    assert found.stored.assistant.stop_reason == records_pb2.STOP_REASON_PAUSE_TURN
    assert (found.state.counters.cache_read_tokens, found.state.counters.cache_write_tokens) == (7, 3)
    assert_same_request(found)


def test_the_journal_compaction_sends_its_summary_first(
    journal_server: ServerProcess, anthropic_recorder: Recorder
) -> None:
    """The journal's own compaction record: the fold's conversation starts with its summary, and so does the call."""
    sdk = Anthropic(api_key="fake-key", base_url=anthropic_recorder.fake.base_url, max_retries=0)
    run_id = f"anthropic-trip-{uuid.uuid4().hex[:12]}"
    with JournalClient(journal_server.address) as journal:
        run = Run.create(journal, run_id, adapter.fingerprint(**CALL), prompt_blocks=adapter.user_blocks("Hello."))
        long = {"content": [{"type": "text", "text": "A long answer."}], "stop_reason": "end_turn", "usage": {}}
        seq = run.append(adapter.assistant_record(long, iteration=1))
        run.compaction(seq, "The user said hello; the model answered at length.", trigger="auto")
        run.append(adapter.user_record("Shorter, please."))
        state = journal.fold(run_id)
        call = adapter.request_messages(state, system=SYSTEM, records=journal.read(run_id))
    summary = {"type": "text", "text": "The user said hello; the model answered at length."}
    assert call["messages"] == [{"role": "user", "content": [summary, {"type": "text", "text": "Shorter, please."}]}]
    before = len(anthropic_recorder.fake.requests_to(PATH))
    anthropic_recorder.expect(call["messages"][0]["content"], Answer([{"type": "text", "text": "Short."}], "end_turn"))
    sdk.messages.create(**{**CALL, **call})
    [sent] = anthropic_recorder.fake.requests_to(PATH)[before:]
    assert sent.body["messages"] == call["messages"]

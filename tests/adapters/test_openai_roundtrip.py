"""Every OpenAI item type, SDK object → record → SDK request param, through a real server on both backends.

The agent loop runs in this process through the real ``openai`` SDK against the fake Responses API:
each ``Response`` becomes an assistant record (``assistant_record``), each ``function_call_output``
param a tool result (``tool_result_record``), and each request's ``input`` comes from ``Fold``
(``request_kwargs``). For each row of the table in docs/integrations/openai.md one test shows:

* the record's JSON text is the SDK object's wire form, equal as JSON to the item the API sent;
* that text comes back byte for byte from ``Read`` (checked against the bytes the backend holds) and
  from ``Fold``, and ``input_item_texts`` of the fold sends it byte for byte;
* the SDK's next request holds the item, equal as JSON to the one the API sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from openai import OpenAI
from openai.types.responses import Response

from runjournal import JournalClient, Run
from runjournal.adapters import openai as oai
from runjournal.v1 import records_pb2, state_pb2
from tests.adapters.conftest_openai import RUN_HEADER, OpenAIFake, agent, journal_server, openai_fake
from tests.adapters.workers.openai_worker import CREATE_PARAMS, ended_turn
from tests.fake_model.openai import fixture
from tests.provider_content.roundtrip import stored_bytes
from tests.servers import ServerProcess

__all__ = ["journal_server", "openai_fake"]


@dataclass
class SdkLoop:
    """One run of the agent loop in this process, and everything it sent, got and stored."""

    server: ServerProcess
    run_id: str
    responses: list[Response] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    records: list[records_pb2.JournalRecord] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    state: state_pb2.RunState = field(default_factory=state_pb2.RunState)

    def block_of(self, item_id: str) -> tuple[int, records_pb2.ContentBlock]:
        """The seq and block of the record that holds the model's item ``item_id``."""
        for record in self.records:
            for block in record.assistant.content if record.HasField("assistant") else ():
                if json.loads(item_text(block)).get("id") == item_id:
                    return record.seq, block
        raise AssertionError(f"no record holds {item_id}")

    def sdk_item(self, item_id: str) -> Any:
        return next(item for response in self.responses for item in response.output if item.id == item_id)


def item_text(block: records_pb2.ContentBlock) -> str:
    """The JSON text a block keeps for its item: an opaque block's, or a typed call's ``provider_json``."""
    return block.tool_use.provider_json if block.HasField("tool_use") else block.opaque.json


def run_loop(server: ServerProcess, fake: OpenAIFake, *, stream: bool) -> SdkLoop:
    spec = agent()
    params = {name: spec[name] for name in CREATE_PARAMS}
    loop = SdkLoop(server, f"oai-rt-{uuid.uuid4().hex[:10]}")
    model = OpenAI(
        base_url=f"{fake.url}/v1", api_key="sk-fake", max_retries=0, default_headers={RUN_HEADER: loop.run_id}
    )
    with JournalClient(server.address) as client:
        run = Run.create(
            client, loop.run_id, oai.fingerprint(**params), prompt_blocks=oai.user_blocks(spec["question"])
        )
        while True:
            state = run.fold()
            if state.HasField("pending"):
                for pending in oai.pending_calls(state):
                    output = {
                        "type": "function_call_output",
                        "call_id": pending.call.call_id,
                        "output": spec["tool_outputs"][pending.call.name],
                    }
                    loop.outputs.append(output)
                    run.append(oai.tool_result_record(output))
                continue
            if ended_turn(state):
                follow_up = spec["follow_ups"].get(str(state.counters.llm_calls))
                if follow_up is None:
                    break
                run.user(content=oai.user_blocks(follow_up))
                continue
            request = {**params, **oai.request_kwargs(state, instructions=params["instructions"])}
            if stream:
                with model.responses.stream(**request) as events:
                    response: Response = events.get_final_response()
            else:
                response = model.responses.create(**request)
            loop.responses.append(response)
            run.append(oai.assistant_record(response, iteration=state.next_iteration))
        read = list(client.read(loop.run_id))
        loop.state = client.fold(loop.run_id)
    loop.records, loop.lines = [record for record, _ in read], [line for _, line in read]
    assert loop.lines == stored_bytes(server, loop.run_id, len(read)), "Read's lines are not the store's bytes"
    loop.requests = fake.bodies(loop.run_id)
    return loop


@pytest.fixture(scope="module")
def sdk_loop(journal_server: ServerProcess, openai_fake: OpenAIFake) -> SdkLoop:
    return run_loop(journal_server, openai_fake, stream=False)


def fold_at(server: ServerProcess, run_id: str, seq: int) -> state_pb2.RunState:
    with JournalClient(server.address) as client:
        return client.fold(run_id, seq)


def assert_round_trip(loop: SdkLoop, fixture_name: str, request_index: int) -> str:
    """The model's item: SDK object → record → Read, store and Fold byte for byte → the request that follows."""
    want = fixture(fixture_name)
    seq, block = loop.block_of(want["id"])
    text = item_text(block)
    sdk = loop.sdk_item(want["id"])
    assert json.loads(text) == sdk.model_dump(mode="json", by_alias=True, exclude_unset=True) == want
    [read] = [record for record in loop.records if record.seq == seq]
    assert block in read.assistant.content
    assert json.dumps(text, ensure_ascii=False).encode() in loop.lines[seq - 1]
    # Sent back: the fold as of the request's moment gives the text byte for byte, the SDK sends the item.
    before = fold_at(loop.server, loop.run_id, request_seq(loop, request_index))
    assert text in oai.input_item_texts(before.conversation)
    assert want in loop.requests[request_index]["input"]
    return text


def request_seq(loop: SdkLoop, request_index: int) -> int:
    """The last seq before the assistant record that answered request ``request_index``."""
    answers = [record.seq for record in loop.records if record.HasField("assistant")]
    return answers[request_index] - 1


def test_a_reasoning_item_keeps_its_encrypted_content_and_summary(sdk_loop: SdkLoop) -> None:
    text = assert_round_trip(sdk_loop, "reasoning", 1)
    assert json.loads(text)["encrypted_content"] == fixture("reasoning")["encrypted_content"]
    assert_round_trip(sdk_loop, "reasoning_final", 2)


def test_a_function_call_is_one_typed_call_holding_its_item(sdk_loop: SdkLoop) -> None:
    for name in ("function_call", "function_call_forecast"):
        text = assert_round_trip(sdk_loop, name, 1)
        _, block = sdk_loop.block_of(fixture(name)["id"])
        want = fixture(name)
        assert (block.tool_use.id, block.tool_use.name) == (want["call_id"], want["name"])
        assert block.tool_use.input_json == want["arguments"]
        assert json.loads(text)["id"].startswith("fc_")


def test_a_function_call_output_param_is_sent_back_as_given(sdk_loop: SdkLoop) -> None:
    results = [record for record in sdk_loop.records if record.HasField("tool_result")]
    assert [record.tool_result.tool_use_id for record in results] == [out["call_id"] for out in sdk_loop.outputs]
    texts = oai.input_item_texts(fold_at(sdk_loop.server, sdk_loop.run_id, request_seq(sdk_loop, 1)).conversation)
    for record, output in zip(results, sdk_loop.outputs, strict=True):
        [block] = record.tool_result.content
        assert (block.opaque.provider, block.opaque.type) == ("openai", "function_call_output")
        assert json.loads(block.opaque.json) == output
        assert block.opaque.json in texts
        assert output in sdk_loop.requests[1]["input"]
    assert sdk_loop.outputs == [fixture("function_call_output"), fixture("function_call_output_forecast")]


def test_assistant_messages_keep_their_phase(sdk_loop: SdkLoop) -> None:
    for name, request_index in (("message_commentary", 1), ("message_final_answer", 2)):
        text = assert_round_trip(sdk_loop, name, request_index)
        assert json.loads(text)["phase"] == fixture(name)["phase"]


def test_a_compaction_item_is_kept_and_the_next_request_starts_with_it(sdk_loop: SdkLoop) -> None:
    text = assert_round_trip(sdk_loop, "compaction", 3)
    assert sdk_loop.requests[3]["input"][0] == json.loads(text)
    assert oai.input_item_texts(sdk_loop.state.conversation)[0] == text


def test_a_web_search_call_is_kept_and_opens_no_call(sdk_loop: SdkLoop) -> None:
    assert_round_trip(sdk_loop, "web_search_call", 3)
    assert sdk_loop.state.counters.tool_calls == 2


def test_the_users_text_becomes_a_user_message(sdk_loop: SdkLoop) -> None:
    def message(text: str) -> dict[str, Any]:
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}

    spec = agent()
    assert sdk_loop.records[0].meta.prompt == oai.user_blocks(spec["question"])
    assert sdk_loop.requests[0]["input"] == [message(spec["question"])]
    assert sdk_loop.requests[2]["input"][-1] == message(spec["follow_ups"]["2"])


def test_the_usage_and_stop_reasons_are_the_responses(sdk_loop: SdkLoop) -> None:
    turns = [record.assistant for record in sdk_loop.records if record.HasField("assistant")]
    assert [turn.stop_reason for turn in turns] == [
        records_pb2.STOP_REASON_TOOL_USE, *[records_pb2.STOP_REASON_END_TURN] * 3
    ]  # fmt: skip
    for turn, response in zip(turns, sdk_loop.responses, strict=True):
        assert response.usage is not None
        details = response.usage.input_tokens_details
        assert turn.usage.cache_read_tokens == details.cached_tokens
        assert turn.usage.cache_write_tokens == details.cache_write_tokens
        assert (
            turn.usage.input_tokens == response.usage.input_tokens - details.cached_tokens - details.cache_write_tokens
        )
        assert turn.usage.output_tokens == response.usage.output_tokens
    assert sdk_loop.state.counters.cache_read_tokens == sum(turn.usage.cache_read_tokens for turn in turns) > 0


def test_a_streamed_response_makes_the_record_an_unstreamed_one_makes(
    sdk_loop: SdkLoop, journal_server: ServerProcess, openai_fake: OpenAIFake
) -> None:
    streamed = run_loop(journal_server, openai_fake, stream=True)
    assert all(request["stream"] is True for request in streamed.requests)
    turns = [record.assistant for record in streamed.records if record.HasField("assistant")]
    assert turns == [record.assistant for record in sdk_loop.records if record.HasField("assistant")]


@pytest.fixture
def compacted_run(journal_server: ServerProcess, openai_fake: OpenAIFake) -> Iterator[tuple[str, list[Any]]]:
    """A run compacted with ``responses.compact`` after its first answer, then continued by one turn."""
    spec = agent()
    params = {name: spec[name] for name in CREATE_PARAMS}
    run_id = f"oai-compact-{uuid.uuid4().hex[:10]}"
    model = OpenAI(
        base_url=f"{openai_fake.url}/v1", api_key="sk-fake", max_retries=0, default_headers={RUN_HEADER: run_id}
    )
    with JournalClient(journal_server.address) as client:
        run = Run.create(client, run_id, oai.fingerprint(**params), prompt_blocks=oai.user_blocks(spec["question"]))
        for _ in range(2):  # the tool turn and the answer
            state = run.fold()
            request = {**params, **oai.request_kwargs(state, instructions=params["instructions"])}
            run.append(oai.assistant_record(model.responses.create(**request), iteration=state.next_iteration))
            for pending in oai.pending_calls(run.fold()):
                output = {"type": "function_call_output", "call_id": pending.call.call_id}
                run.append(oai.tool_result_record({**output, "output": spec["tool_outputs"][pending.call.name]}))
        state = run.fold()
        compacted = model.responses.compact(model=params["model"], input=oai.input_items(state.conversation))
        run.append(oai.compaction_record(compacted, upto_seq=run.last_seq, model=params["model"]))
        run.user(content=oai.user_blocks(spec["follow_ups"]["2"]))
        state = run.fold()
        request = {**params, **oai.request_kwargs(state, instructions=params["instructions"])}
        run.append(oai.assistant_record(model.responses.create(**request), iteration=state.next_iteration))
        yield run_id, [oai.wire_dict(item) for item in compacted.output]


def test_a_journal_compaction_of_a_compact_window_sends_the_window_whole(
    compacted_run: tuple[str, list[Any]], journal_server: ServerProcess, openai_fake: OpenAIFake
) -> None:
    run_id, window = compacted_run
    [_, _, compact, after] = [r.body for r in openai_fake.fake.requests if r.headers.get(RUN_HEADER) == run_id]
    # The window as the API sent it: the user's message, then the compaction item.
    assert window == [compact["input"][0], fixture("compaction")]
    follow_up = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And tomorrow?"}]}
    assert after["input"] == [*window, follow_up]
    with JournalClient(journal_server.address) as client:
        state = client.fold(run_id)
        whole = client.fold(run_id, uncompacted=True)
    assert state.compaction_seq > 0 and len(whole.conversation) > len(state.conversation)
    [summary] = [
        record.compaction for record, _ in client_read(journal_server, run_id) if record.HasField("compaction")
    ]
    assert [json.loads(block.opaque.json) for block in summary.summary[0].content] == window
    assert summary.trigger == records_pb2.COMPACTION_TRIGGER_PROVIDER


def client_read(server: ServerProcess, run_id: str) -> list[tuple[records_pb2.JournalRecord, bytes]]:
    with JournalClient(server.address) as client:
        return list(client.read(run_id))

"""Thinking across a model change: left out of earlier turns another model wrote, kept in the latest turn.

A run starts under model A; a worker claims it under model B with ``force``
(the server writes a ``reconfigure`` record); later one claims it back under
A. The fake Messages API signs each thinking block for the model that wrote
it and refuses, outside the latest turn, a block signed by another model than
the one called. ``request_messages`` reads the run's records to know which
model wrote each turn; the requests it builds pass, and the same conversation
sent unstripped is refused, on both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from anthropic import Anthropic

from runjournal import JournalClient, Run
from runjournal.adapters import anthropic as adapter
from runjournal.v1 import state_pb2
from tests.adapters.conftest_anthropic import journal_server, new_run_id
from tests.fake_model import anthropic as fake_anthropic
from tests.fake_model.anthropic import Answer, Script, signed_thinking
from tests.fake_model.server import FakeModel
from tests.servers import ServerProcess

__all__ = ["journal_server"]

SYSTEM = "Think, then answer."
CALL: dict[str, Any] = {"max_tokens": 2048, "system": SYSTEM, "thinking": {"type": "enabled", "budget_tokens": 1024}}
CALL_TOOL = {"type": "tool_use", "id": "toolu_01ModelSwitch", "name": "lookup", "input": {"q": "rate"}}
TOOLS = [{"name": "lookup", "description": "Look it up", "input_schema": {"type": "object"}}]


def answer(body: dict[str, Any]) -> Answer | None:
    """By the last user message: its text names the step; a tool result gets the answer after the call."""
    model = body["model"]
    content = body["messages"][-1]["content"]
    last = content if isinstance(content, str) else content[-1].get("text", content[-1]["type"])
    if last == "tool_result":
        return Answer([signed_thinking(model, "The rate is in."), {"type": "text", "text": "1.08."}], "end_turn")
    if last == "Look it up.":
        return Answer([signed_thinking(model, "I should look it up."), CALL_TOOL], "tool_use")
    return Answer([signed_thinking(model, f"Answering {last!r}."), {"type": "text", "text": f"Re: {last}"}], "end_turn")


SCRIPT = Script(
    answer, [CALL_TOOL, *({"type": "text", "text": text} for text in ("1.08.", "Re: Hello.", "Re: Again."))]
)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeModel]:
    with FakeModel() as model:
        fake_anthropic.serve(model, SCRIPT)
        yield model


class Worker:
    """A worker on the run under one model: each call built from the fold with the adapter, then recorded."""

    def __init__(self, journal: JournalClient, sdk: Anthropic, run: Run, model: str) -> None:
        self.journal, self.sdk, self.run, self.model = journal, sdk, run, model

    def request(self) -> dict[str, Any]:
        state = self.run.fold()
        records = self.journal.read(self.run.run_id)
        return adapter.request_messages(state, system=SYSTEM, records=records, model=self.model)

    def call(self) -> anthropic.types.Message:
        state = self.run.fold()
        message = self.sdk.messages.create(**{**CALL, **self.request()}, model=self.model, tools=TOOLS)
        self.run.append(adapter.assistant_record(message, iteration=state.next_iteration))
        return message

    def say(self, text: str) -> None:
        self.run.append(adapter.user_record(text))


def fingerprint(model: str) -> Any:
    return adapter.fingerprint(model=model, tools=TOOLS, **CALL)


def thinking_per_turn(body: dict[str, Any]) -> list[list[str]]:
    """The thinking texts of each assistant message of a request."""
    return [
        [block["thinking"] for block in message["content"] if block["type"] == "thinking"]
        for message in body["messages"]
        if message["role"] == "assistant"
    ]


def test_thinking_of_another_models_turns_is_left_out_but_the_latest_turns_is_kept(
    journal_server: ServerProcess, fake: FakeModel
) -> None:
    run_id = new_run_id("anthropic-models")
    sdk = Anthropic(api_key="fake-key", base_url=fake.base_url, max_retries=0)
    with JournalClient(journal_server.address) as journal:
        first = Worker(journal, sdk, Run.create(journal, run_id, fingerprint("claude-a"), "Hello."), "claude-a")
        first.call()
        first.say("Look it up.")
        call = first.call()
        assert call.stop_reason == "tool_use"

        # Model B takes over with the call unanswered: answer it, then call B.
        run = Run.claim(journal, run_id, "worker-b", fingerprint("claude-b"), force=True)
        assert run.gate is not None and run.gate.reconfigured
        second = Worker(journal, sdk, run, "claude-b")
        second.run.append(
            adapter.tool_result_record({"type": "tool_result", "tool_use_id": CALL_TOOL["id"], "content": "1.0842"})
        )
        unstripped = adapter.message_params(list(second.run.fold().conversation))
        with pytest.raises(anthropic.BadRequestError, match="signed by 'claude-a'"):
            sdk.messages.create(model="claude-b", tools=TOOLS, **CALL, messages=unstripped)
        second.call()
        sent = fake.requests[-1].body
        # A's first answer lost its thinking; the latest turn (A's call) kept it, as the API requires.
        assert thinking_per_turn(sent) == [[], ["I should look it up."]]

        # Back to A: B's turn is left out once it is not the latest.
        run = Run.claim(journal, run_id, "worker-a2", fingerprint("claude-a"), force=True)
        third = Worker(journal, sdk, run, "claude-a")
        third.say("Again.")
        third.call()
        assert thinking_per_turn(fake.requests[-1].body) == [
            ["Answering 'Hello.'."], ["I should look it up."], ["The rate is in."],
        ]  # fmt: skip
        third.say("Last.")
        third.call()
        assert thinking_per_turn(fake.requests[-1].body) == [
            ["Answering 'Hello.'."], ["I should look it up."], [], ["Answering 'Again.'."],
        ]  # fmt: skip
        reconfigures = [record for record, _ in journal.read(run_id) if record.WhichOneof("payload") == "reconfigure"]
        assert [record.reconfigure.fingerprint.model for record in reconfigures] == ["claude-b", "claude-a"]
        assert journal.fold(run_id).status == state_pb2.RUN_STATUS_OPEN

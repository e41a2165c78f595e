"""A worked example: a run that crashes, is resumed, waits for people, and finishes.

Start a server (``runjournal serve``), then (with ``pip install runjournal[anthropic]``)::

    python examples/worked_example.py --address 127.0.0.1:50051

The workers speak the ``anthropic`` SDK's objects through ``runjournal.adapters.anthropic``:
each model turn is the ``Message`` that ``client.messages.create`` returned (here written
out, so the example needs no API key), recorded with ``assistant_record``; each result
is the ``tool_result`` block the loop sends back, recorded with ``tool_result_record``;
and a worker that resumes rebuilds the next call's ``messages`` from the fold with
``request_messages``.

Three workers take turns on one run, each with its own client as if they were
separate processes:

1. worker-a creates the run, records a model turn asking for two tool calls and
   the result of the first one, then crashes.
2. worker-b claims the run, sees the pending batch (one of two calls answered),
   finishes it and records the next turn, which asks a person a question and
   wants to deploy. It defers the question to a person and the deploy to an
   operator's decision (``needs_approval``), and suspends.
3. People read the inbox (``client.inbox``, as ``runjournal inbox``), answer
   the question (``client.answer``, as ``runjournal answer``) and approve the
   deploy (``client.approve``, as ``runjournal approve``).
4. worker-c claims the run, runs the approved deploy and finishes.

Every step checks what the server reports; the script exits 1 on anything
unexpected. Each execution uses a new run id.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from anthropic.types import Message

from runjournal import (
    AlreadyAnsweredError,
    AlreadyDecidedError,
    JournalClient,
    Run,
    RunClaimedError,
    RunJournalError,
    tool_result_record,
)
from runjournal.adapters import anthropic as adapter
from runjournal.v1 import records_pb2, state_pb2

SYSTEM_PROMPT = "You are a release assistant. Check the weather and the news, then ask before deploying."
TOOLS = [
    {"name": "weather", "description": "Weather for a city", "input_schema": {"type": "object"}},
    {"name": "news", "description": "Headlines for a topic", "input_schema": {"type": "object"}},
    {"name": "deploy", "description": "Deploy a release", "input_schema": {"type": "object"}},
    {"name": "ask_person", "description": "Ask a person a question", "input_schema": {"type": "object"}},
]
CALL: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": SYSTEM_PROMPT, "tools": TOOLS}
"""The arguments of every ``client.messages.create(**CALL, messages=...)`` of the run."""
FINGERPRINT = adapter.fingerprint(**CALL, max_iterations=10)


def answer(content: list[dict[str, Any]], stop_reason: str, input_tokens: int, output_tokens: int) -> Message:
    """A model turn as ``client.messages.create`` returns it."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return Message.model_validate(
        {"id": "msg_example", "type": "message", "role": "assistant", "model": CALL["model"], "content": content}
        | {"stop_reason": stop_reason, "stop_sequence": None, "usage": usage}
    )


def tool_use(call_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def result(call_id: str, content: str) -> dict[str, Any]:
    """The ``tool_result`` block a loop sends back for a call."""
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


TURN_1 = answer(
    [
        {"type": "text", "text": "Let me check the weather and the news first."},
        tool_use("call_weather", "weather", {"city": "Lisbon"}),
        tool_use("call_news", "news", {"topic": "outages"}),
    ],
    "tool_use",
    812,
    64,
)
TURN_2 = answer(
    [
        {"type": "text", "text": "All clear. I need the release notes' audience, and deploying needs a sign-off."},
        tool_use("call_ask", "ask_person", {"question": "Who gets the release notes?"}),
        tool_use("call_deploy", "deploy", {"release": "2.4"}),
    ],
    "tool_use",
    901,
    41,
)
TURN_3 = answer([{"type": "text", "text": "Release 2.4 is deployed."}], "end_turn", 0, 9)


class Unexpected(Exception):
    """The server reported something this example does not expect."""


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise Unexpected(what)
    print(f"   ok: {what}")


def step(title: str) -> None:
    print(f"\n== {title}")


def status_name(status: int) -> str:
    return state_pb2.RunStatus.Name(status).removeprefix("RUN_STATUS_").lower()


def show_pending(state: state_pb2.RunState) -> None:
    pending = state.pending
    print(f"   pending batch of iteration {pending.iteration} (assistant at seq {pending.assistant_seq}):")
    for call in pending.calls:
        if call.answered:
            where = f"answered at seq {call.result_seq}"
        elif call.decision:
            decision = records_pb2.Decision.Name(call.decision).removeprefix("DECISION_").lower()
            where = f"{decision} by {call.approval.approver!r} at seq {call.approval_seq}, not run yet"
        elif call.deferred:
            what = "a decision" if call.waiting_for == state_pb2.WAITING_FOR_DECISION else "an answer"
            where = f"deferred at seq {call.deferral_seq}: waits for {what} from {call.deferral.expected_answerer!r}"
        else:
            where = "NOT answered yet"
        print(f"     - {call.tool_use.id} {call.tool_use.name}({call.tool_use.input_json}): {where}")


def show_next_call(client: JournalClient, run: Run) -> None:
    """What the worker sends the model next: the folded run as ``messages.create``'s arguments."""
    state = run.fold()
    call = adapter.request_messages(state, system=SYSTEM_PROMPT, records=client.read(run.run_id))
    messages = call["messages"]
    print(f"   the next call: client.messages.create(**CALL, messages=...) with {len(messages)} messages:")
    for message in messages:
        content = message["content"]
        blocks = [content] if isinstance(content, str) else [block.get("type") for block in content]
        print(f"     - {message['role']}: {blocks}")
    last = messages[-1]["content"]
    expect(
        messages[-1]["role"] == "user" and all(block["type"] == "tool_result" for block in last),
        "it ends with the results of every call of the last turn",
    )


def new_run_id() -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
    return f"worked-example-{stamp}-{uuid.uuid4().hex[:8]}"


def worker_a_crashes(address: str, run_id: str) -> None:
    step(f"1. worker-a creates run {run_id}")
    with JournalClient(address) as client:
        run = Run.create(
            client,
            run_id,
            FINGERPRINT,
            "Is it a good day to ship release 2.4?",
            labels={"example": "worked"},
        )
        print(f"   seq 1 meta written; claim token {run.claim_token}, next seq {run.next_seq}")
        seq = run.append(adapter.assistant_record(TURN_1, iteration=1))
        print(f"   seq {seq} assistant turn 1 asks for call_weather and call_news")
        seq = run.append(adapter.tool_result_record(result("call_weather", "Sunny, 24°C")))
        print(f"   seq {seq} tool_result for call_weather")
        expect(run.next_seq == 4, "worker-a's next record would be seq 4")
    print("   worker-a crashes before running call_news (its client is gone)")


def worker_b_resumes_and_suspends(address: str, run_id: str) -> None:
    step("2. worker-b claims the run")
    with JournalClient(address) as client:
        run = Run.claim(client, run_id, "worker-b", FINGERPRINT)
        print(f"   claim token {run.claim_token}, next seq {run.next_seq}")
        assert run.state is not None and run.gate is not None
        expect(run.gate.allowed and not run.gate.differences, "the resume gate allows the same configuration")
        expect(run.state.HasField("pending"), "the claim reports a pending batch")
        show_pending(run.state)
        answered = [call.answered for call in run.state.pending.calls]
        expect(answered == [True, False], "one of the two calls is answered")
        print(f"   resume reminder: {run.resume_reminder!r}")

        step("2b. worker-a comes back and tries to write with its old token")
        stale = tool_result_record("call_news", text="stale")
        stale.seq = run.next_seq
        try:
            client.append(run_id, 1, stale)
        except RunClaimedError as err:
            print(f"   refused: {err.reason} (claimed by {err.claimed_by!r} at token {err.claim_token})")
            expect(err.claim_token == run.claim_token, "the refusal names worker-b's claim")
        else:
            raise Unexpected("a stale worker was allowed to append")

        step("2c. worker-b finishes the batch; the model asks a question and wants to deploy")
        seq = run.append(adapter.tool_result_record(result("call_news", "No outages reported today.")))
        print(f"   seq {seq} tool_result for call_news (batch complete)")
        show_next_call(client, run)
        seq = run.append(adapter.assistant_record(TURN_2, iteration=2))
        print(f"   seq {seq} assistant turn 2 asks for call_ask and call_deploy")
        ask, deploy = (block for block in TURN_2.content if block.type == "tool_use")
        seq = run.append(adapter.deferral_record(ask, "only a person knows the audience", "release-manager"))
        print(f"   seq {seq} deferral of call_ask to release-manager (awaits an answer)")
        reason = "production deploys need an on-call sign-off"
        seq = run.append(adapter.deferral_record(deploy, reason, "on-call", needs_approval=True))
        print(f"   seq {seq} deferral of call_deploy to on-call (awaits a decision)")
        seq = run.terminal("suspended", "waiting for people")
        print(f"   seq {seq} terminal: suspended")
        state = client.fold(run_id)
        expect(state.status == state_pb2.RUN_STATUS_SUSPENDED, "the run is suspended")
        show_pending(state)


def people_answer_and_approve(address: str, run_id: str) -> None:
    step("3. people read the inbox")
    with JournalClient(address) as client:
        print(f"   equivalent command line: runjournal inbox --address {address}")
        inbox = {summary.run_id: summary for summary in client.inbox(labels={"example": "worked"})}
        expect(run_id in inbox, "the run is in the inbox")
        for call in inbox[run_id].waiting_calls:
            what = state_pb2.WaitingFor.Name(call.waiting_for).removeprefix("WAITING_FOR_").lower()
            print(f"     - {call.tool_use_id} {call.tool_name}: {what} from {call.expected_answerer!r}: {call.reason}")
        waiting = [(call.tool_use_id, call.waiting_for) for call in inbox[run_id].waiting_calls]
        expect(
            waiting == [("call_ask", state_pb2.WAITING_FOR_ANSWER), ("call_deploy", state_pb2.WAITING_FOR_DECISION)],
            "call_ask waits for an answer, call_deploy for a decision",
        )

    step("3b. the release manager answers call_ask")
    answer_text = "The whole company, plus the two customers who asked for 2.4."
    with tempfile.TemporaryDirectory() as tmp:
        result_file = Path(tmp) / "answer.txt"
        result_file.write_text(answer_text, encoding="utf-8")
        print("   equivalent command line:")
        print(f"     runjournal answer {run_id} call_ask --result-file {result_file} --address {address}")
        with JournalClient(address) as client:
            seq = client.answer(run_id, "call_ask", text=result_file.read_text(encoding="utf-8"))
            print(f"   seq {seq} tool_result for call_ask (remote), written by the server")
            try:
                client.answer(run_id, "call_ask", text="answering twice")
            except AlreadyAnsweredError as err:
                print(f"   a second answer is refused: {err.reason} at seq {err.answered_at_seq}")
                expect(err.answered_at_seq == seq, "the refusal points at the first answer")
            else:
                raise Unexpected("a second answer was accepted")

    step("3c. on-call approves call_deploy")
    with JournalClient(address) as client:
        print("   equivalent command line:")
        print(
            f"     runjournal approve {run_id} call_deploy --approve --reason 'change window open' --address {address}"
        )
        seq = client.approve(run_id, "call_deploy", "approved", "on-call", "change window open")
        print(f"   seq {seq} approval of call_deploy, written by the server")
        try:
            client.approve(run_id, "call_deploy", "denied", "someone-else")
        except AlreadyDecidedError as err:
            print(f"   a second decision is refused: {err.reason} at seq {err.decided_at_seq}")
            expect(err.decided_at_seq == seq, "the refusal points at the first decision")
        else:
            raise Unexpected("a second decision was accepted")
        expect(
            run_id not in {summary.run_id for summary in client.inbox(labels={"example": "worked"})},
            "nothing of the run waits for a person any more",
        )
        state = client.fold(run_id)
        expect(state.status == state_pb2.RUN_STATUS_OPEN, "the run is open again")


def worker_c_finishes(address: str, run_id: str) -> None:
    step("4. worker-c claims the run, runs the approved deploy and finishes")
    with JournalClient(address) as client:
        run = Run.claim(client, run_id, "worker-c", FINGERPRINT)
        assert run.state is not None
        show_pending(run.state)
        deploy = [call for call in run.state.pending.calls if not call.answered]
        expect(
            [(call.tool_use.id, call.decision) for call in deploy] == [("call_deploy", records_pb2.DECISION_APPROVED)],
            "only the approved call_deploy is left to run",
        )
        expect(run.state.next_iteration == 3, "the run resumes at iteration 3")
        print(f"   claim token {run.claim_token}, next seq {run.next_seq}")
        seq = run.append(adapter.tool_result_record(result("call_deploy", "Release 2.4 deployed to production.")))
        print(f"   seq {seq} tool_result for call_deploy: worker-c ran the approved call")
        show_next_call(client, run)
        seq = run.append(adapter.assistant_record(TURN_3, iteration=3))
        print(f"   seq {seq} assistant turn 3 (end_turn)")
        seq = run.terminal("completed", "release 2.4 shipped")
        print(f"   seq {seq} terminal: completed")
        state = run.fold()
        expect(state.status == state_pb2.RUN_STATUS_COMPLETED, "the run is completed")
        counters = state.counters
        print(
            f"   {len(state.conversation)} messages; {counters.llm_calls} model calls, "
            f"{counters.tool_calls} tool results ({counters.remote_tool_calls} remote), "
            f"{counters.deferrals} deferrals; last seq {state.last_seq}"
        )
        expect(
            (counters.llm_calls, counters.tool_calls, counters.remote_tool_calls, counters.deferrals) == (3, 4, 1, 2),
            "3 model calls, 4 tool results (one of them remote) and 2 deferrals",
        )

        step("5. the journal, as stored")
        kinds = []
        for record, line in client.read(run_id):
            kind = record.WhichOneof("payload")
            kinds.append(kind)
            print(f"   seq {record.seq:>2} {kind:<12} {len(line):>4} bytes")
        expected_kinds = [
            "meta", "assistant", "tool_result", "claim", "tool_result", "assistant", "deferral",
            "deferral", "terminal", "tool_result", "approval", "claim", "tool_result", "assistant", "terminal",
        ]  # fmt: skip
        expect(kinds == expected_kinds, "the journal holds exactly the records above")
        listed = {summary.run_id: summary for summary in client.iter_runs(labels={"example": "worked"})}
        expect(run_id in listed, "the run is listed under its label")
        print(f"   listed as {status_name(listed[run_id].status)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default="127.0.0.1:50051", help="the server (default 127.0.0.1:50051)")
    args = parser.parse_args(argv)
    run_id = new_run_id()
    try:
        worker_a_crashes(args.address, run_id)
        worker_b_resumes_and_suspends(args.address, run_id)
        people_answer_and_approve(args.address, run_id)
        worker_c_finishes(args.address, run_id)
    except Unexpected as err:
        print(f"\nUNEXPECTED: {err}", file=sys.stderr)
        return 1
    except RunJournalError as err:
        print(f"\nUNEXPECTED server error: {err!r}", file=sys.stderr)
        return 1
    print(f"\nrun {run_id} completed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

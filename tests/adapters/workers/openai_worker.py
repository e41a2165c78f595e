"""A Python agent worker on the OpenAI adapter: the loop of ``openai_agent.json`` through the real ``openai`` SDK.

    python -m tests.adapters.workers.openai_worker --journal HOST:PORT --model-url URL --agent PATH
        --run RUN_ID (--create | --claim WORKER_ID) [--stream] [--die-after-results N]

Every step is decided from the folded run alone, so a worker in either language that claims the run
part-way continues where the journal says: calls of the pending batch first (each answered with the
agent's canned tool output), then a model call built by ``request_kwargs``, a follow-up after the turns
the agent lists, or the terminal record. ``--die-after-results N`` SIGKILLs the process right after the
N-th tool result it appended: a crash at a deterministic point, with nothing flushed or closed.
``x-runjournal-run`` on each model request lets the test pick the run's requests out of the fake's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from openai import OpenAI

from runjournal import JournalClient, Run
from runjournal.adapters import openai as oai
from runjournal.v1 import records_pb2, state_pb2

CREATE_PARAMS = ("model", "instructions", "tools", "reasoning", "max_output_tokens", "store", "include")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--journal", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--agent", required=True, type=Path)
    parser.add_argument("--run", required=True)
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--create", action="store_true")
    who.add_argument("--claim", metavar="WORKER_ID")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--die-after-results", type=int, default=0)
    args = parser.parse_args(argv)
    agent = json.loads(args.agent.read_text(encoding="utf-8"))
    params = {name: agent[name] for name in CREATE_PARAMS}
    model = OpenAI(
        base_url=f"{args.model_url}/v1",
        api_key="sk-fake",
        max_retries=0,
        default_headers={"x-runjournal-run": args.run},
    )
    with JournalClient(args.journal) as client:
        fingerprint = oai.fingerprint(**params)
        if args.create:
            run = Run.create(client, args.run, fingerprint, prompt_blocks=oai.user_blocks(agent["question"]))
        else:
            run = Run.claim(client, args.run, args.claim, fingerprint, reason="hand-off")
        loop(run, model, agent, params, stream=args.stream, die_after=args.die_after_results)
    return 0


def loop(
    run: Run, model: OpenAI, agent: dict[str, Any], params: dict[str, Any], *, stream: bool, die_after: int
) -> None:
    written = 0
    while True:
        state = run.fold()
        if state.HasField("pending"):
            calls = oai.pending_calls(state)
            if not calls:
                return  # only calls waiting for a person: nothing for a worker to do
            for pending in calls:
                output = {
                    "type": "function_call_output",
                    "call_id": pending.call.call_id,
                    "output": agent["tool_outputs"][pending.call.name],
                }
                run.append(oai.tool_result_record(output))
                written += 1
                if written == die_after:
                    os.kill(os.getpid(), signal.SIGKILL)
            continue
        if ended_turn(state):
            follow_up = agent["follow_ups"].get(str(state.counters.llm_calls))
            if follow_up is None:
                run.terminal("completed")
                return
            run.user(content=oai.user_blocks(follow_up))
            continue
        request = {**params, **oai.request_kwargs(state, instructions=params["instructions"])}
        if stream:
            with model.responses.stream(**request) as events:
                response = events.get_final_response()
        else:
            response = model.responses.create(**request)
        run.append(oai.assistant_record(response, iteration=state.next_iteration))


def ended_turn(state: state_pb2.RunState) -> bool:
    """The model spoke last and asked for nothing: the run waits for the user (or ends)."""
    return bool(state.conversation) and state.conversation[-1].role == records_pb2.ROLE_ASSISTANT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

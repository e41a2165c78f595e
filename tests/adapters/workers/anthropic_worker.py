"""A Python worker of the Anthropic hand-off: the tool loop of ``tests/fake_model/anthropic_loop.py`` through the SDK.

    python -m tests.adapters.workers.anthropic_worker --journal HOST:PORT --model-url URL --run RUN_ID
        (--create [--die-after-results N] | --resume WORKER_ID)

``--create`` creates the run and runs the loop as any SDK loop does: the
conversation kept in memory (each answer's ``content`` appended as it came,
the results as the SDK's tool_result params), every call and result recorded
through the adapter. With ``--die-after-results N`` the worker SIGKILLs
itself right after the N-th tool result of a turn is stored: a crash at a
known point, no timing involved. ``--resume`` claims the run, runs the calls
the journal says are unanswered, and rebuilds the conversation from the fold
with ``request_messages`` before going on. Every request carries the header
``x-runjournal-run`` so the test can tell the runs apart at the fake model.
Exits 0 when the run completed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from anthropic import Anthropic

from runjournal import JournalClient, Run
from runjournal.adapters import anthropic as adapter
from tests.fake_model import anthropic_loop as loop

CALL: dict[str, Any] = {
    "model": loop.MODEL,
    "max_tokens": loop.MAX_TOKENS,
    "system": loop.SYSTEM,
    "tools": loop.TOOLS,
    "thinking": loop.THINKING,
    "context_management": loop.CONTEXT_MANAGEMENT,
}
STREAMED_ITERATION = 2
"""The call that is streamed (its final message recorded), in both languages."""


def start(journal: JournalClient, run_id: str, args: argparse.Namespace) -> tuple[Run, list[Any], int]:
    """The run handle, the conversation to send next and the next iteration."""
    fingerprint = adapter.fingerprint(**CALL, max_iterations=10)
    if args.create:
        run = Run.create(journal, run_id, fingerprint, prompt_blocks=adapter.user_blocks(loop.prompt()))
        return run, [{"role": "user", "content": loop.prompt()}], 1
    run = Run.claim(journal, run_id, args.resume, fingerprint, reason="resume after a crash")
    state = run.state
    assert state is not None
    if state.HasField("pending"):
        for call in state.pending.calls:
            if not call.answered:
                result = {"type": "tool_result", "tool_use_id": call.tool_use.id}
                result["content"] = loop.tool_output(call.tool_use.name)
                run.append(adapter.tool_result_record(result))
        state = run.fold()
    request = adapter.request_messages(state, system=loop.SYSTEM, records=journal.read(run_id))
    return run, request["messages"], state.next_iteration


def work(journal: JournalClient, model: Anthropic, run_id: str, args: argparse.Namespace) -> None:
    run, messages, iteration = start(journal, run_id, args)
    while True:
        arguments = {**CALL, "messages": messages, "betas": loop.BETAS}
        if iteration == STREAMED_ITERATION:
            with model.beta.messages.stream(**arguments) as stream:
                message = stream.get_final_message()
        else:
            message = model.beta.messages.create(**arguments)
        run.append(adapter.assistant_record(message, iteration=iteration))
        iteration += 1
        if message.stop_reason == "tool_use":
            results = []
            for block in message.content:
                if block.type == "tool_use":
                    result = {"type": "tool_result", "tool_use_id": block.id, "content": loop.tool_output(block.name)}
                    run.append(adapter.tool_result_record(result))
                    results.append(result)
                    if len(results) == args.die_after_results:
                        os.kill(os.getpid(), signal.SIGKILL)
            messages += [{"role": "assistant", "content": message.content}, {"role": "user", "content": results}]
        elif message.stop_reason == "pause_turn":
            messages.append({"role": "assistant", "content": message.content})
        elif message.stop_reason == "compaction":
            # The API takes the conversation from the compaction block on.
            first = next(i for i, block in enumerate(message.content) if block.type == "compaction")
            messages = [{"role": "assistant", "content": message.content[first:]}]
        elif message.stop_reason == "end_turn":
            run.terminal("completed")
            return
        else:
            raise RuntimeError(f"unexpected stop_reason {message.stop_reason!r}: {json.dumps(message.to_dict())}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--run", required=True)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--create", action="store_true")
    mode.add_argument("--resume", metavar="WORKER_ID")
    parser.add_argument("--die-after-results", type=int, default=0)
    args = parser.parse_args(argv)
    headers = {"x-runjournal-run": args.run}
    model = Anthropic(api_key="fake-key", base_url=args.model_url, default_headers=headers, max_retries=0)
    with JournalClient(args.journal) as journal:
        work(journal, model, args.run, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

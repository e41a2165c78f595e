"""The newcomer flow with the installed `runjournal` wheel: python newcomer.py ADDRESS RUN_ID."""

import sys

from runjournal import CaughtUp, JournalClient, Run, tool_use_block
from runjournal.fingerprint import make_fingerprint

address, run_id = sys.argv[1], sys.argv[2]
fp = make_fingerprint(provider="anthropic", model="m", system_prompt="s", thinking_mode="off", tools=[])
with JournalClient(address) as first, JournalClient(address) as second:
    run = Run.create(first, run_id, fp, "hello")
    run.assistant(1, [tool_use_block("call_1", "lookup", {"q": "x"})], "tool_use")
    taken = Run.claim(second, run_id, worker_id="worker-2", fingerprint=fp)
    pending = [f"{c.tool_use.id}:{str(c.answered).lower()}" for c in taken.state.pending.calls]
    taken.deferral("call_1", "needs a person", "alice")
    taken.note("waiting")  # data is optional
    answer_seq = first.answer(run_id, "call_1", text="42")
    kinds = []
    for item in first.watch(run_id):  # break: the caller's own stop ends it cleanly
        if isinstance(item, CaughtUp):
            break
        kinds.append(item.record.WhichOneof("payload"))
    fork = first.fork_run(run_id, 2, run_id + "-fork")
    print(f"pending={','.join(pending)} kinds={','.join(kinds)} answer_seq={answer_seq}", end=" ")
    print(f"fork={fork.last_seq}/{fork.forked_from.seq}")

// The newcomer flow with the installed @runjournal/client tarball: node newcomer.mjs ADDRESS RUN_ID
import { JournalClient, Run, makeFingerprint, toolUseBlock } from "@runjournal/client";

const [address, runId] = process.argv.slice(2);
const fp = makeFingerprint({ provider: "anthropic", model: "m", systemPrompt: "s", thinkingMode: "off", tools: [] });
const first = new JournalClient({ address });
const second = new JournalClient({ address });
const run = await Run.create(first, runId, fp, "hello");
await run.assistant(1, [toolUseBlock("call_1", "lookup", { q: "x" })], "tool_use");
const taken = await Run.claim(second, runId, "worker-2", fp);
const pending = taken.state.pending.calls.map((c) => `${c.toolUse.id}:${c.answered}`);
await taken.deferral("call_1", "needs a person", "alice");
await taken.note("waiting"); // data is optional
const answerSeq = await first.answer(runId, "call_1", "42");
const kinds = [];
const stop = new AbortController();
for await (const item of first.watch(runId, { signal: stop.signal })) {
  // aborting is the caller's own stop: the loop ends, nothing is thrown
  if (item.kind === "caughtUp") stop.abort();
  else kinds.push(item.record.payload.case.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase()));
}
const fork = await first.forkRun(runId, 2n, runId + "-fork");
console.log(`pending=${pending.join(",")} kinds=${kinds.join(",")} answer_seq=${answerSeq} fork=${fork.lastSeq}/${fork.forkedFrom.seq}`);
first.close();
second.close();

/** A compaction through the TypeScript client against a real server the test starts. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import {
  InvalidRecordError,
  JournalClient,
  makeFingerprint,
  Run,
  type RunState,
  toolUseBlock,
} from "../../src/index.js";
import { startServer, unavailable } from "./server.js";

const skip = unavailable();

/** The conversation in short: messages split by "|", blocks by " " (a call as "tool_use", a result as its text). */
function texts(state: RunState): string {
  return state.conversation
    .map((message) =>
      message.content
        .map(({ block }) => {
          if (block.case === "toolUse") return "tool_use";
          if (block.case === "toolResult") {
            const first = block.value.content[0]?.block;
            return first?.case === "text" ? first.value.text : "";
          }
          return block.case === "text" ? block.value.text : block.case;
        })
        .join(" "),
    )
    .join("|");
}

test("a compaction: a split refused naming the call, then the compacted and the uncompacted conversation", { skip }, async () => {
  const server = await startServer();
  const client = new JournalClient({ address: server.address, timeoutMs: 10_000 });
  try {
    const runId = `ts-compact-${randomBytes(5).toString("hex")}`;
    const fingerprint = makeFingerprint({ provider: "anthropic", model: "m", systemPrompt: "", thinkingMode: "off", tools: [] });
    const run = await Run.create(client, runId, fingerprint, "hello");
    await run.assistant(1, [toolUseBlock("c1", "search", {})], "tool_use");
    await run.toolResult("c1", "found");

    // Between the call (seq 2) and its result (seq 3): refused, naming the call; the seq stays.
    await assert.rejects(run.compaction(2, "half", "manual"), (err: unknown) => {
      assert.ok(err instanceof InvalidRecordError);
      assert.match(err.message, /c1/);
      return true;
    });
    assert.equal(run.nextSeq, 4n);
    assert.equal(await run.compaction(run.lastSeq, "so far", "auto", { provider: "anthropic", model: "claude-x", tokensBefore: 1000 }), 4n);
    await run.user("and now?");

    const state = await run.fold();
    assert.equal(state.compactionSeq, 4n);
    assert.equal(state.compactedUptoSeq, 3n);
    assert.equal(texts(state), "so far and now?", "the follow-up merges into the summary's user message");
    const whole = await client.fold(runId, { uncompacted: true });
    assert.equal(whole.uncompacted, true);
    assert.equal(texts(whole), "hello|tool_use|found and now?");
    const claimed = await Run.claim(client, runId, "worker-b", fingerprint, { uncompacted: true });
    assert.equal(texts(claimed.state!), "hello|tool_use|found and now?");
    assert.equal((await run.fold({ uncompacted: true })).conversation.length, 3);
  } finally {
    client.close();
    await server.stop();
  }
});

/** Sub-agent runs from the TypeScript client against a real server the test starts: spawn, wait, tree delete. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  InvalidArgumentError,
  JournalClient,
  makeFingerprint,
  Run,
  RunDeletedError,
  toolUseBlock,
  textBlock,
  WaitingFor,
} from "../../src/index.js";
import { type Server, startWithClient, stopWithClient, unavailable } from "./server.js";

const skip = unavailable();
const fingerprint = makeFingerprint({
  provider: "anthropic",
  model: "claude-test",
  systemPrompt: "You are a test.",
  thinkingMode: "off",
  tools: [],
  maxTokens: 1024,
});
const newRunId = () => `ts-${randomBytes(6).toString("hex")}`;

describe("sub-agent runs against a real server", { skip }, () => {
  let server: Server;
  let client: JournalClient;

  before(async () => ({ server, client } = await startWithClient()));
  after(() => stopWithClient({ server, client }));

  test("a child answers its parent's call once, and the parent is deleted only with its tree", async () => {
    const parentId = newRunId();
    const childId = `${parentId}-child`;
    const parent = await Run.create(client, parentId, fingerprint, "delegate");
    await parent.assistant(1, [toolUseBlock("c1", "research", { q: "a" })], "tool_use");
    const child = { fingerprint, prompt: "look up a", reason: "sub-agent" };
    const spawned = await client.spawnRun(parentId, "c1", childId, child);
    assert.equal(spawned.duplicate, false);
    assert.equal(spawned.spawnedBy?.rootRunId, parentId);
    assert.equal((await client.spawnRun(parentId, "c1", childId, child)).duplicate, true);
    const waiting = (await client.fold(parentId)).pending?.calls[0];
    assert.equal(waiting?.waitingFor, WaitingFor.CHILD);
    assert.equal(waiting?.childRunId, childId);

    const worker = await Run.claim(client, childId, "sub-worker", fingerprint);
    await worker.assistant(1, [textBlock("a is 1")], "end_turn");
    await worker.terminal("completed", "ok");
    const result = await client.waitForChild(parentId, "c1");
    assert.equal(result.answeredByRunId, childId);
    assert.equal(result.content[0]?.block.case === "text" ? result.content[0].block.value.text : "", "a is 1");

    const last = (await client.fold(parentId)).lastSeq;
    await assert.rejects(client.deleteRun(parentId, last), (err: unknown) => err instanceof InvalidArgumentError && err.field === "with_children");
    assert.equal((await client.deleteRunTree(parentId, last)).deleted, true);
    await assert.rejects(client.fold(childId), RunDeletedError);
  });
});

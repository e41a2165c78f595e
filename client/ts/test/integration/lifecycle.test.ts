/** Watch, ForkRun, DeleteRun and DeleteTask of the TypeScript client against a real server the test starts. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  JournalClient,
  LastSeqMismatchError,
  makeFingerprint,
  Run,
  RunDeletedError,
  TaskDeletedError,
  type WatchItem,
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
const shape = (item: WatchItem) => (item.kind === "caughtUp" ? `caughtUp@${item.headSeq}` : `record@${item.seq}`);

describe("the run lifecycle against a real server", { skip }, () => {
  let server: Server;
  let client: JournalClient;

  before(async () => ({ server, client } = await startWithClient()));
  after(() => stopWithClient({ server, client }));

  test("aborting the signal of watch, watchRuns or read ends the loop with nothing thrown", async () => {
    const runId = newRunId();
    const run = await Run.create(client, runId, fingerprint, "hello");
    await run.note("two");
    const seen: string[] = [];
    const stopWatch = new AbortController();
    for await (const item of client.watch(runId, { signal: stopWatch.signal })) {
      seen.push(shape(item));
      if (item.kind === "caughtUp") stopWatch.abort();
    }
    assert.deepEqual(seen, ["record@1", "record@2", "caughtUp@2"]);
    const stopRuns = new AbortController();
    for await (const item of client.watchRuns({ signal: stopRuns.signal })) {
      if (item.kind === "caughtUp") stopRuns.abort();
    }
    const stopRead = new AbortController();
    stopRead.abort();
    const read = [];
    for await (const item of client.read(runId, { signal: stopRead.signal })) read.push(item);
    assert.deepEqual(read, []);
  });

  test("a watch follows the run live and ends with RunDeletedError when it is deleted", async () => {
    const runId = newRunId();
    const run = await Run.create(client, runId, fingerprint, "hello");
    await run.note("two");
    const watch = client.watch(runId);
    const next = async () => shape((await watch.next()).value as WatchItem);
    assert.deepEqual([await next(), await next(), await next()], ["record@1", "record@2", "caughtUp@2"]);
    const last = await run.note("three, while watched");
    assert.equal(await next(), `record@${last}`);

    await assert.rejects(
      client.deleteRun(runId, last - 1n),
      (err: unknown) => err instanceof LastSeqMismatchError && err.lastSeq === last && err.expectedLastSeq === last - 1n,
    );
    const deleted = await client.deleteRun(runId, last);
    assert.equal(deleted.deleted, true);
    await assert.rejects(watch.next(), RunDeletedError);
    await assert.rejects(client.fold(runId), (err: unknown) => err instanceof RunDeletedError && err.lastSeq === last);
  });

  test("a fork copies the prefix, names its parent and is found by it", async () => {
    const source = newRunId();
    const run = await Run.create(client, source, fingerprint, "hello");
    await run.note("two");
    await run.note("three");
    const fork = await client.forkRun(source, 2n, `${source}-fork`);
    assert.equal(fork.lastSeq, 2n);
    assert.equal(fork.forkedFrom?.runId, source);
    const page = await client.listRuns({ parentRunId: source });
    assert.deepEqual(page.runs.map((r) => r.runId), [`${source}-fork`]);
    assert.equal((await client.fold(source)).lastSeq, 3n);
  });

  test("a deleted task keeps a tombstone", async () => {
    const taskId = `task-${newRunId()}`;
    await client.tasks.submit(taskId, { request: { q: 1 } });
    assert.equal(await client.tasks.delete(taskId), true);
    assert.equal(await client.tasks.delete(taskId), false);
    await assert.rejects(client.tasks.get(taskId), TaskDeletedError);
  });
});

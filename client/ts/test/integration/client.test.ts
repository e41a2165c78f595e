/** The TypeScript client against a real server the test starts. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  AlreadyAnsweredError,
  assistantRecord,
  terminalRecord,
  DeadlineExceededError,
  InvalidRecordError,
  JournalClient,
  makeFingerprint,
  noteRecord,
  ResumeRefusedError,
  Run,
  RunClaimedError,
  RunNotFoundError,
  RunStatus,
  SeqGapError,
  StopReason,
  textBlock,
  toolUseBlock,
  UnavailableError,
  UnauthenticatedError,
  PermissionDeniedError,
  Decision,
  RunJournalError,
} from "../../src/index.js";
import { type Server, startServer, startWithClient, stopWithClient, unavailable } from "./server.js";

const skip = unavailable();
const fingerprint = makeFingerprint({
  provider: "anthropic",
  model: "claude-test",
  systemPrompt: "You are a test.",
  thinkingMode: "off",
  tools: [{ name: "get_weather", description: "Weather.", input_schema: { type: "object" } }],
  maxTokens: 1024,
});
const newRunId = () => `ts-${randomBytes(6).toString("hex")}`;

describe("against a real server", { skip }, () => {
  let server: Server;
  let client: JournalClient;

  before(async () => ({ server, client } = await startWithClient()));
  after(() => stopWithClient({ server, client }));

  test("create, a tool turn, results, terminal; fold and read agree", async () => {
    const runId = newRunId();
    const run = await Run.create(client, runId, fingerprint, "What is the weather in Paris?", { labels: { suite: "ts" } });
    assert.equal(run.claimToken, 1n);
    assert.equal(run.nextSeq, 2n);
    await run.assistant(1, [toolUseBlock("tu_1", "get_weather", { city: "Paris" })], "tool_use", { inputTokens: 10, outputTokens: 3 });
    await run.toolResult("tu_1", "18C, clear");
    await run.note("progress", { step: 1 });
    const last = await run.appendBatch([
      assistantRecord(2, [textBlock("It is 18C.")], "end_turn"),
      terminalRecord("completed"),
    ]);
    assert.equal(last, 6n);
    assert.equal(run.nextSeq, 7n);
    const state = await client.fold(runId);
    assert.equal(state.status, RunStatus.COMPLETED);
    assert.equal(state.conversation.length, 4);
    const items = [];
    for await (const item of client.read(runId)) items.push(item);
    assert.deepEqual(items.map((i) => i.seq), [1n, 2n, 3n, 4n, 5n, 6n]);
    assert.equal(items[1]!.record.payload.case, "assistant");
    assert.equal((items[1]!.record.payload.value as { stopReason: StopReason }).stopReason, StopReason.TOOL_USE);
    assert.match(new TextDecoder().decode(items[0]!.storedLine), /"runjournal\.v1\.meta"/);
    const from5 = [];
    for await (const item of client.read(runId, { fromSeq: 5n })) from5.push(item.seq);
    assert.deepEqual(from5, [5n, 6n]);
  });

  test("a resent append is a verified duplicate; a different record at the seq is a conflict", async () => {
    const runId = newRunId();
    const createdAt = new Date("2024-01-02T03:04:05Z");
    const run = await Run.create(client, runId, fingerprint, "hi", { createdAt });
    const again = await Run.create(client, runId, fingerprint, "hi", { createdAt });
    assert.equal(again.nextSeq, 2n);
    const note = noteRecord("n");
    note.seq = 2n;
    assert.equal((await client.append(runId, 1n, note)).duplicate, false);
    assert.equal((await client.append(runId, 1n, note)).duplicate, true);
    const gap = noteRecord("far");
    gap.seq = 9n;
    await assert.rejects(client.append(runId, 1n, gap), (err: unknown) => {
      assert.ok(err instanceof SeqGapError);
      assert.equal(err.seq, 9n);
      assert.equal(err.lastSeq, 2n);
      assert.equal(err.runId, runId);
      return true;
    });
    void run;
  });

  test("a claim supersedes the creator: RUN_CLAIMED carries the new token and worker", async () => {
    const runId = newRunId();
    const creator = await Run.create(client, runId, fingerprint, "hi");
    const taker = await Run.claim(client, runId, "worker-b", fingerprint, { reason: "test" });
    assert.equal(taker.claimToken, 2n);
    assert.equal(taker.nextSeq, 3n);
    assert.ok(taker.state);
    await assert.rejects(creator.note("stale"), (err: unknown) => {
      assert.ok(err instanceof RunClaimedError);
      assert.equal(err.claimToken, 2n);
      assert.equal(err.claimedBy, "worker-b");
      return true;
    });
    assert.equal(creator.nextSeq, 2n);
    assert.equal(await taker.note("fresh"), 3n);
  });

  test("the resume gate refuses another provider, with the fields", async () => {
    const runId = newRunId();
    await Run.create(client, runId, fingerprint, "hi");
    const other = makeFingerprint({ provider: "openai", model: "claude-test", systemPrompt: "You are a test.", thinkingMode: "off", tools: [] });
    await assert.rejects(Run.claim(client, runId, "w", other, { force: true }), (err: unknown) => {
      assert.ok(err instanceof ResumeRefusedError);
      assert.ok(err.fields.includes("provider"), String(err.fields));
      return true;
    });
  });

  test("deferral, Answer, a retried Answer and AlreadyAnswered", async () => {
    const runId = newRunId();
    const run = await Run.create(client, runId, fingerprint, "hi");
    await run.assistant(1, [toolUseBlock("tu_a", "get_weather", { city: "Oslo" })], "tool_use");
    await run.deferral("tu_a", "needs a person", "ops");
    const seq = await client.answer(runId, "tu_a", "-3C");
    assert.equal(seq, 4n);
    await assert.rejects(client.answer(runId, "tu_a", "-3C"), (err: unknown) => {
      assert.ok(err instanceof AlreadyAnsweredError);
      assert.equal(err.answeredAtSeq, 4n);
      assert.equal(err.toolUseId, "tu_a");
      return true;
    });
    const waiting = [];
    for await (const summary of client.inbox()) waiting.push(summary.runId);
    assert.ok(!waiting.includes(runId));
  });

  test("approve a pending call", async () => {
    const runId = newRunId();
    const run = await Run.create(client, runId, fingerprint, "hi");
    await run.assistant(1, [toolUseBlock("tu_x", "get_weather", { city: "Rome" })], "tool_use");
    await run.deferral("tu_x", "risky", "ops", { needsApproval: true });
    const seq = await client.approve(runId, "tu_x", "approved", "alice", { reason: "fine" });
    assert.equal(seq, 4n);
    const state = await client.fold(runId);
    assert.equal(state.pending?.calls[0]?.decision, Decision.APPROVED);
  });

  test("typed errors: RUN_NOT_FOUND, INVALID_RECORD with field", async () => {
    await assert.rejects(client.fold(newRunId()), RunNotFoundError);
    const runId = newRunId();
    const run = await Run.create(client, runId, fingerprint, "hi");
    await assert.rejects(run.toolResult("no_such_call", "x"), (err: unknown) => {
      assert.ok(err instanceof InvalidRecordError);
      assert.equal(typeof err.field, "string");
      return true;
    });
  });

  test("a deadline too short is DEADLINE_EXCEEDED after the retries", async () => {
    const hurried = new JournalClient({ address: server.address, timeoutMs: 1, retry: { maxAttempts: 2, initialBackoffMs: 1, maxBackoffMs: 1 } });
    try {
      const runId = newRunId();
      await Run.create(client, runId, fingerprint, "hi");
      let failed: unknown;
      for (let i = 0; i < 20 && failed === undefined; i++) {
        try {
          await hurried.fold(runId);
        } catch (err) {
          failed = err;
        }
      }
      assert.ok(failed instanceof DeadlineExceededError, String(failed));
    } finally {
      hurried.close();
    }
  });
});

describe("transport failures", { skip }, () => {
  test("a stopped server is UNAVAILABLE after the policy's attempts", async () => {
    const server = await startServer();
    const address = server.address;
    await server.stop();
    const client = new JournalClient({ address, retry: { maxAttempts: 3, initialBackoffMs: 5, maxBackoffMs: 10 } });
    try {
      await assert.rejects(client.fold("anything"), UnavailableError);
    } finally {
      client.close();
    }
  });
});

describe("token auth", { skip }, () => {
  let server: Server;
  before(async () => {
    server = await startServer({
      tokens: { worker: { token: "w-secret", scopes: ["worker"] }, operator: { token: "o-secret", scopes: ["operator"] } },
    });
  });
  after(async () => server?.stop());

  test("no token is UNAUTHENTICATED; a token without the scope is PERMISSION_DENIED with scope", async () => {
    const anonymous = new JournalClient({ address: server.address });
    const worker = new JournalClient({ address: server.address, token: "w-secret" });
    try {
      await assert.rejects(anonymous.fold("x-1"), UnauthenticatedError);
      const runId = newRunId();
      const run = await Run.create(worker, runId, fingerprint, "hi");
      await run.assistant(1, [toolUseBlock("tu_1", "get_weather", {})], "tool_use");
      await run.deferral("tu_1", "why", "ops");
      await assert.rejects(worker.answer(runId, "tu_1", "x"), (err: unknown) => {
        assert.ok(err instanceof PermissionDeniedError);
        assert.equal(err.principal, "worker");
        assert.equal(err.scope, "operator");
        return true;
      });
    } finally {
      anonymous.close();
      worker.close();
    }
  });
});

describe("the worked example", { skip }, () => {
  test("examples/worked-example.ts runs to completion against a real server", async () => {
    const { main } = await import("../../examples/worked-example.js");
    const server = await startServer();
    const log = console.log;
    console.log = () => {};
    try {
      assert.equal(await main(["--address", server.address]), 0);
    } finally {
      console.log = log;
      await server.stop();
    }
  });
});

describe("TLS", { skip }, () => {
  test("a TLS client reaches a TLS server with the server's certificate as its root", async (t) => {
    const { execFileSync } = await import("node:child_process");
    const { mkdtempSync, readFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "runjournal-ts-tls-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    try {
      execFileSync("openssl", [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
      ], { stdio: "ignore" });
    } catch {
      if (process.env["CI"] === "true") throw new Error("openssl is needed for the TLS test");
      t.skip("no openssl");
      return;
    }
    const server = await startServer({ extraArgs: ["--tls-cert", cert, "--tls-key", key] });
    const secure = new JournalClient({ address: server.address, tls: { ca: readFileSync(cert) } });
    const plain = new JournalClient({ address: server.address, retry: { maxAttempts: 1 }, timeoutMs: 2000 });
    try {
      const runId = newRunId();
      const run = await Run.create(secure, runId, fingerprint, "over TLS");
      assert.equal(run.nextSeq, 2n);
      assert.equal((await secure.fold(runId)).lastSeq, 1n);
      await assert.rejects(plain.fold(runId), (err: unknown) => err instanceof RunJournalError && !(err instanceof RunNotFoundError));
    } finally {
      secure.close();
      plain.close();
      await server.stop();
    }
  });
});

describe("tasks", { skip }, () => {
  test("submit is idempotent, a different request conflicts; the first completion wins", async () => {
    const { TaskConflictError, AlreadyCompletedError, TaskNotFoundError, TaskState } = await import("../../src/index.js");
    const server = await startServer();
    const journal = new JournalClient({ address: server.address });
    const tasks = journal.tasks;
    try {
      const taskId = `task-${randomBytes(5).toString("hex")}`;
      const first = await tasks.submit(taskId, { request: { q: "weather", city: "Paris" } }, { labels: { team: "ts" } });
      assert.equal(first.created, true);
      assert.equal(first.task.requestJson, '{"city":"Paris","q":"weather"}');
      const again = await tasks.submit(taskId, { requestJson: '{"city":"Paris","q":"weather"}' }, { labels: { team: "ts" } });
      assert.equal(again.created, false);
      await assert.rejects(tasks.submit(taskId, { request: { q: "other" } }, { labels: { team: "ts" } }), TaskConflictError);
      const done = await tasks.complete(taskId, { result: { temp: 18 } });
      assert.equal(done.state, TaskState.SUCCEEDED);
      await assert.rejects(tasks.complete(taskId, { failure: { code: "late", message: "too late" } }), (err: unknown) => {
        assert.ok(err instanceof AlreadyCompletedError);
        assert.equal(err.taskId, taskId);
        assert.equal(err.storedTask?.outcome?.kind.case, "resultJson");
        assert.equal(err.storedTask?.outcome?.kind.value, '{"temp":18}');
        return true;
      });
      assert.equal((await tasks.get(taskId)).state, TaskState.SUCCEEDED);
      const listed = [];
      for await (const task of tasks.iter({ labels: { team: "ts" }, state: "succeeded" })) listed.push(task.taskId);
      assert.deepEqual(listed, [taskId]);
      await assert.rejects(tasks.get(`task-${randomBytes(5).toString("hex")}`), TaskNotFoundError);
    } finally {
      journal.close();
      await server.stop();
    }
  });
});

/** The retry policy, against an in-memory server that fails the way a network does. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, equals } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import {
  type AppendRequest,
  AppendRequestSchema,
  backoffMs,
  DEFAULT_RETRY_POLICY,
  ERROR_DOMAIN,
  ErrorInfoSchema,
  JournalClient,
  JournalRecordSchema,
  JournalService,
  noteRecord,
  type ReadRequest,
  retryPolicy,
  Run,
  StorageUnavailableError,
  UnavailableError,
  RunClaimedError,
  RunLockedError,
} from "../../src/index.js";

const fast = { initialBackoffMs: 1, maxBackoffMs: 2, maxAttempts: 5 };

function refusal(reason: string, code: Code, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError("refused", code, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain: ERROR_DOMAIN, metadata }) },
  ]);
}

/** A JournalService whose Append fails with `failures` in turn, then succeeds; it keeps every request. */
function flakyAppend(failures: ConnectError[]) {
  const seen: AppendRequest[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      append(request) {
        seen.push(request);
        const failure = failures.shift();
        if (failure) throw failure;
        return { seq: request.record!.seq, lastSeq: request.record!.seq, duplicate: seen.length > 1 };
      },
    });
  });
  return { seen, client: new JournalClient({ address: "unused", transport, retry: fast }) };
}

test("backoff is capped exponential with jitter in [cap/2, cap]", () => {
  const p = retryPolicy({ initialBackoffMs: 100, maxBackoffMs: 1000, multiplier: 2 });
  assert.equal(backoffMs(p, 1, () => 0), 50);
  assert.equal(backoffMs(p, 1, () => 1), 100);
  assert.equal(backoffMs(p, 3, () => 1), 400);
  assert.equal(backoffMs(p, 10, () => 1), 1000);
  assert.equal(backoffMs(p, 10, () => 0), 500);
  assert.throws(() => retryPolicy({ maxAttempts: 0 }));
  assert.throws(() => retryPolicy({ multiplier: 0.5 }));
  assert.throws(() => retryPolicy({ budgetMs: -1 }));
  assert.equal(DEFAULT_RETRY_POLICY.maxAttempts, Infinity);
});

test("a transport UNAVAILABLE or DEADLINE_EXCEEDED is retried with the very same request", async () => {
  const { seen, client } = flakyAppend([new ConnectError("down", Code.Unavailable), new ConnectError("slow", Code.DeadlineExceeded)]);
  const record = noteRecord("x");
  record.seq = 2n;
  const response = await client.append("run-1", 1n, record);
  assert.equal(response.seq, 2n);
  assert.equal(seen.length, 3);
  for (const request of seen) assert.ok(equals(AppendRequestSchema, request, seen[0]!), "every attempt sends the same request");
});

test("a CANCELLED from a server shutting down (no ErrorInfo) is resent, the same request; a cancel the caller asked for is not", async () => {
  // gRPC's stop cancels the calls a server had queued at SIGTERM; the drain refuses new ones UNAVAILABLE.
  const { seen, client } = flakyAppend([new ConnectError("CANCELLED", Code.Canceled), new ConnectError("draining", Code.Unavailable)]);
  const record = noteRecord("x");
  record.seq = 2n;
  const response = await client.append("run-1", 1n, record);
  assert.equal(response.seq, 2n);
  assert.equal(seen.length, 3);
  for (const request of seen) assert.ok(equals(AppendRequestSchema, request, seen[0]!), "every attempt sends the same request");
  const controller = new AbortController();
  const cancelled = flakyAppend([]);
  controller.abort();
  await assert.rejects(cancelled.client.append("run-1", 1n, record, { signal: controller.signal }));
  assert.ok(cancelled.seen.length <= 1, "the caller's own cancel is never resent");
});

test("the retries stop after maxAttempts with the transport error", async () => {
  const failures = Array.from({ length: 10 }, () => new ConnectError("down", Code.Unavailable));
  const { seen, client } = flakyAppend(failures);
  await assert.rejects(client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n })), UnavailableError);
  assert.equal(seen.length, fast.maxAttempts);
});

test("STORAGE_UNAVAILABLE (nothing was stored) is resent, the very same request, until the attempts are spent", async () => {
  const storageUnavailable = () => refusal("STORAGE_UNAVAILABLE", Code.Unavailable, { run_id: "run-1" });
  const { seen, client } = flakyAppend([storageUnavailable(), storageUnavailable()]);
  const record = noteRecord("x");
  record.seq = 2n;
  const response = await client.append("run-1", 1n, record);
  assert.equal(response.seq, 2n);
  assert.equal(seen.length, 3);
  for (const request of seen) assert.ok(equals(AppendRequestSchema, request, seen[0]!), "every attempt sends the same request");
  const spent = flakyAppend(Array.from({ length: 10 }, storageUnavailable));
  await assert.rejects(spent.client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n })), StorageUnavailableError);
  assert.equal(spent.seen.length, fast.maxAttempts);
});

test("any other status with an ErrorInfo is an answer, never retried (RUN_LOCKED, RUN_CLAIMED)", async () => {
  const one = flakyAppend([refusal("RUN_LOCKED", Code.Unavailable, { run_id: "run-1" })]);
  await assert.rejects(one.client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n })), RunLockedError);
  assert.equal(one.seen.length, 1);
  const two = flakyAppend([refusal("RUN_CLAIMED", Code.FailedPrecondition, { run_id: "run-1", claim_token: "7", claimed_by: "w2" })]);
  await assert.rejects(two.client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n })), (err: unknown) => {
    assert.ok(err instanceof RunClaimedError);
    assert.equal(err.claimToken, 7n);
    assert.equal(err.claimedBy, "w2");
    return true;
  });
  assert.equal(two.seen.length, 1);
});

test("the Run handle advances its seq only on acknowledgement, and a retry rebuilds the same seq", async () => {
  const { seen, client } = flakyAppend([new ConnectError("down", Code.Unavailable)]);
  const run = new Run(client, { runId: "run-1", claimToken: 3n, nextSeq: 4n, resumeReminder: "" });
  assert.equal(await run.note("a"), 4n);
  assert.equal(run.nextSeq, 5n);
  assert.deepEqual(seen.map((r) => [r.record!.seq, r.claimToken]), [[4n, 3n], [4n, 3n]]);
  const failing = flakyAppend([refusal("SEQ_CONFLICT", Code.Aborted, { run_id: "run-1", seq: "4", last_seq: "9" })]);
  const stuck = new Run(failing.client, { runId: "run-1", claimToken: 3n, nextSeq: 4n, resumeReminder: "" });
  await assert.rejects(stuck.note("a"));
  assert.equal(stuck.nextSeq, 4n, "a refused append does not move the handle");
});

test("Read resumes after a transport failure from the record after the last one yielded", async () => {
  const requests: ReadRequest[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      async *read(request) {
        requests.push(request);
        const from = request.fromSeq > 0n ? request.fromSeq : 1n;
        for (let seq = from; seq <= 5n; seq++) {
          if (requests.length === 1 && seq === 3n) throw new ConnectError("connection reset", Code.Unavailable);
          yield { seq, record: { seq }, storedLine: new TextEncoder().encode(`{"seq":${seq}}`) };
        }
      },
    });
  });
  const client = new JournalClient({ address: "unused", transport, retry: fast });
  const seqs: bigint[] = [];
  for await (const item of client.read("run-1")) seqs.push(item.seq);
  assert.deepEqual(seqs, [1n, 2n, 3n, 4n, 5n]);
  assert.deepEqual(requests.map((r) => r.fromSeq), [0n, 3n]);
});

test("a bearer token is sent as the authorization header of every call", async () => {
  const headers: (string | null)[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      append(request, context) {
        headers.push(context.requestHeader.get("authorization"));
        return { seq: request.record!.seq, lastSeq: request.record!.seq };
      },
    });
  });
  const client = new JournalClient({ address: "unused", transport, token: "s3cret" });
  await client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n }));
  assert.deepEqual(headers, ["Bearer s3cret"]);
});

test("a CompleteTask whose reply was lost and whose resend finds our outcome returns the stored task", async () => {
  const { TaskService, TaskSchema, TaskState, AlreadyCompletedError } = await import("../../src/index.js");
  let calls = 0;
  const stored = create(TaskSchema, {
    taskId: "t-1",
    state: TaskState.SUCCEEDED,
    outcome: { kind: { case: "resultJson", value: '{"ok":true}' }, completedAt: { seconds: 5n } },
  });
  const transport = createRouterTransport(({ service }) => {
    service(TaskService, {
      completeTask() {
        calls++;
        if (calls === 1) throw new ConnectError("reply lost", Code.Unavailable);
        throw new ConnectError("already completed", Code.AlreadyExists, undefined, [
          { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "ALREADY_COMPLETED", domain: ERROR_DOMAIN, metadata: { task_id: "t-1" } }) },
          { desc: TaskSchema, value: stored },
        ]);
      },
    });
  });
  const client = new JournalClient({ address: "unused", transport, retry: fast });
  const task = await client.tasks.complete("t-1", { result: { ok: true } });
  assert.equal(task.taskId, "t-1");
  assert.equal(calls, 2);
  // A first attempt refused ALREADY_COMPLETED lost to someone else, whatever the outcome says.
  calls = 1;
  await assert.rejects(client.tasks.complete("t-1", { result: { ok: true } }), AlreadyCompletedError);
  // A resend that finds another outcome is refused too.
  calls = 0;
  await assert.rejects(client.tasks.complete("t-1", { result: { ok: false } }), AlreadyCompletedError);
});

test("a Read item of a kind the server cannot decode is placed at the response's seq", async () => {
  const { readItem, ReadResponseSchema } = await import("../../src/index.js");
  const bare = readItem(create(ReadResponseSchema, { seq: 7n, record: { optional: true }, storedLine: new Uint8Array([123, 125]) }));
  assert.equal(bare.seq, 7n);
  assert.equal(bare.record.seq, 7n);
  assert.equal(bare.record.payload.case, undefined);
  const none = readItem(create(ReadResponseSchema, { seq: 8n }));
  assert.equal(none.record.seq, 8n);
});

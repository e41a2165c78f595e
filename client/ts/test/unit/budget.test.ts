/** The retry budget (issue 23): resends ride through seconds of STORAGE_UNAVAILABLE, as a JetStream leader change gives. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import {
  DEFAULT_RETRY_POLICY,
  ERROR_DOMAIN,
  ErrorInfoSchema,
  JournalClient,
  JournalRecordSchema,
  JournalService,
  RunJournalError,
  RunLockedError,
  StorageUnavailableError,
  UnavailableError,
} from "../../src/index.js";
import { Attempts, type RetryPolicy } from "../../src/retry.js";

/** Longer than five attempts' backoff (at most 1.5 s, the policy before issue 23), shorter than the default budget. */
const OUTAGE_MS = 3000;

function refusal(reason: string, code: Code): ConnectError {
  return new ConnectError("refused", code, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain: ERROR_DOMAIN, metadata: { run_id: "run-1" } }) },
  ]);
}

/** A JournalService whose Append and Read fail with `failure()` until `ms` have passed; it counts the calls. */
function outage(ms: number, failure: () => ConnectError, retry?: Partial<RetryPolicy>) {
  const until = performance.now() + ms;
  const calls = { append: 0, read: 0 };
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      append(request) {
        calls.append += 1;
        if (performance.now() < until) throw failure();
        return { seq: request.record!.seq, lastSeq: request.record!.seq, duplicate: false };
      },
      async *read() {
        calls.read += 1;
        if (performance.now() < until) throw failure();
        for (let seq = 1n; seq <= 3n; seq++) yield { seq, record: { seq }, storedLine: new Uint8Array() };
      },
    });
  });
  return { calls, client: new JournalClient({ address: "unused", transport, retry }) };
}

const storageUnavailable = () => refusal("STORAGE_UNAVAILABLE", Code.Unavailable);

test("the default policy rides through seconds of STORAGE_UNAVAILABLE", async () => {
  const { calls, client } = outage(OUTAGE_MS, storageUnavailable);
  const response = await client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n }));
  assert.equal(response.seq, 2n);
  assert.ok(calls.append > 5, `only ${calls.append} attempts`);
});

test("Read resumes through seconds of STORAGE_UNAVAILABLE with the default policy", async () => {
  const { client } = outage(OUTAGE_MS, storageUnavailable);
  const seqs: bigint[] = [];
  for await (const item of client.read("run-1")) seqs.push(item.seq);
  assert.deepEqual(seqs, [1n, 2n, 3n]);
});

test("a budget shorter than the outage surfaces STORAGE_UNAVAILABLE", async () => {
  const { calls, client } = outage(60_000, storageUnavailable, { budgetMs: 300, initialBackoffMs: 10, maxBackoffMs: 20 });
  await assert.rejects(client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n })), StorageUnavailableError);
  assert.ok(calls.append > 1, "resent while the budget lasted");
});

test("an answer with an ErrorInfo is never resent by the default policy", async () => {
  for (const [failure, error] of [
    [() => refusal("SEQ_GAP", Code.FailedPrecondition), RunJournalError],
    [() => refusal("RUN_LOCKED", Code.Unavailable), RunLockedError],
  ] as const) {
    const { calls, client } = outage(60_000, failure);
    await assert.rejects(client.append("run-1", 1n, create(JournalRecordSchema, { seq: 2n })), error);
    assert.equal(calls.append, 1);
  }
});

test("the budget, not a count, ends the resends; it counts from the first failure", () => {
  let now = 1000;
  const attempts = new Attempts(DEFAULT_RETRY_POLICY, Math.random, () => now);
  now += 60_000; // a stream that ran well for a minute before it failed gets a whole budget
  const err = new ConnectError("down", Code.Unavailable);
  for (let i = 0; i < 50; i++) assert.ok(attempts.delayAfter(err) <= 1000);
  now += 18_500;
  assert.ok(attempts.delayAfter(err) <= 1000, "a resend starting before 20 s is made");
  now += 1500;
  assert.throws(() => attempts.delayAfter(err), UnavailableError);
  const capped = new Attempts({ ...DEFAULT_RETRY_POLICY, maxAttempts: 3 }, Math.random, () => now);
  capped.delayAfter(err);
  capped.delayAfter(err);
  assert.throws(() => capped.delayAfter(err), UnavailableError);
});

test("the default policy covers a leader change and notices recovery within a second", () => {
  assert.deepEqual({ ...DEFAULT_RETRY_POLICY }, { budgetMs: 20_000, maxAttempts: Infinity, initialBackoffMs: 100, maxBackoffMs: 1000, multiplier: 2 });
});

/** Watch, WatchRuns, ForkRun, DeleteRun and DeleteTask against an in-memory server that breaks where a test says. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import {
  ERROR_DOMAIN,
  ErrorInfoSchema,
  JournalClient,
  JournalRecordSchema,
  JournalService,
  LastSeqMismatchError,
  type ListRunsRequest,
  RunDeletedError,
  RunExistsError,
  type RunsItem,
  RunSummarySchema,
  TaskDeletedError,
  TaskService,
  type WatchItem,
  type WatchRunsResponse,
  WatchRunsResponseSchema,
} from "../../src/index.js";

const fast = { initialBackoffMs: 1, maxBackoffMs: 2, maxAttempts: 3 };
const STORED = 3n;
const LAST = 12n;

function refusal(reason: string, code: Code, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError("refused", code, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain: ERROR_DOMAIN, metadata }) },
  ]);
}

const held = (context: HandlerContext) => new Promise<void>((resolve) => context.signal.addEventListener("abort", () => resolve()));

/** A run with 3 stored records and live ones up to 12; a stream breaks before each seq of `breaks` (once). */
function watcher(options: { breaks?: bigint[]; deletedAfter?: bigint; endsAfter?: bigint[] } = {}) {
  const breaks = new Set(options.breaks ?? []);
  const ends = new Set(options.endsAfter ?? []);
  const afterSeqs: bigint[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      async *watch(request, context) {
        afterSeqs.push(request.afterSeq);
        const head = request.afterSeq > STORED ? request.afterSeq : STORED;
        for (let seq = request.afterSeq + 1n; seq <= LAST; seq++) {
          if (seq === head + 1n) yield { event: { case: "caughtUp", value: { headSeq: head } } };
          if (breaks.delete(seq)) throw new ConnectError("connection reset", Code.Unavailable);
          const record = create(JournalRecordSchema, { seq });
          yield { event: { case: "record", value: { seq, record, storedLine: new TextEncoder().encode(`line ${seq}`) } } };
          if (seq === options.deletedAfter) throw refusal("RUN_DELETED", Code.NotFound, { run_id: request.runId, last_seq: String(seq) });
          if (ends.delete(seq)) return;
        }
        await held(context);
      },
    });
  });
  return { afterSeqs, client: new JournalClient({ address: "unused", transport, retry: fast }) };
}

const shape = (item: WatchItem) => (item.kind === "caughtUp" ? `caughtUp@${item.headSeq}` : String(item.seq));
const EXPECTED = ["1", "2", "3", "caughtUp@3", "4", "5", "6", "7", "8", "9", "10", "11", "12"];

async function untilLast(items: AsyncGenerator<WatchItem>): Promise<string[]> {
  const got: string[] = [];
  for await (const item of items) {
    got.push(shape(item));
    if (item.kind === "record" && item.seq === LAST) break;
  }
  return got;
}

test("a watch resumes from the last seq after every break, more breaks than attempts, without a gap or a repeat", async () => {
  const { afterSeqs, client } = watcher({ breaks: [2n, 5n, 7n, 9n, 11n] });
  assert.deepEqual(await untilLast(client.watch("r1")), EXPECTED);
  assert.deepEqual(afterSeqs, [0n, 1n, 4n, 6n, 8n, 10n]);
});

test("a watch the server ends is resumed like a break", async () => {
  const { afterSeqs, client } = watcher({ endsAfter: [6n] });
  assert.deepEqual(await untilLast(client.watch("r1", { afterSeq: 2n })), EXPECTED.slice(2));
  assert.deepEqual(afterSeqs, [2n, 6n]);
});

test("a run deleted while watched ends the watch with RunDeletedError and is not resumed", async () => {
  const { afterSeqs, client } = watcher({ deletedAfter: 5n });
  await assert.rejects(untilLast(client.watch("r1")), (err: unknown) => err instanceof RunDeletedError && err.lastSeq === 5n);
  assert.deepEqual(afterSeqs, [0n]);
});

test("breaks back to back beyond the policy end the watch with the transport error", async () => {
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      async *watch() {
        throw new ConnectError("down", Code.Unavailable);
      },
    });
  });
  const client = new JournalClient({ address: "unused", transport, retry: fast });
  await assert.rejects(untilLast(client.watch("r1")), (err: unknown) => err instanceof Error && err.constructor.name === "UnavailableError");
});

const run = (runId: string, lastSeq: bigint): WatchRunsResponse =>
  create(WatchRunsResponseSchema, { event: { case: "run", value: create(RunSummarySchema, { runId, lastSeq }) } });
const CAUGHT_UP = create(WatchRunsResponseSchema, { event: { case: "caughtUp", value: {} } });

test("watchRuns resumes without repeats and reports the runs gone meanwhile as left", async () => {
  const streams = [
    [run("a", 1n), run("b", 1n), CAUGHT_UP, run("a", 2n)],
    [run("a", 2n), run("c", 1n), CAUGHT_UP, run("a", 3n)],
  ];
  let calls = 0;
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      async *watchRuns(request, context) {
        assert.deepEqual(request.labels, { team: "x" });
        const index = calls++;
        yield* streams[index]!;
        if (index + 1 < streams.length) throw new ConnectError("connection reset", Code.Unavailable);
        await held(context);
      },
    });
  });
  const client = new JournalClient({ address: "unused", transport, retry: fast });
  const got: string[] = [];
  const show = (item: RunsItem) =>
    item.kind === "run" ? `${item.run.runId}@${item.run.lastSeq}` : item.kind === "left" ? `left:${item.runId}:${item.deleted}` : "caughtUp";
  for await (const item of client.watchRuns({ labels: { team: "x" } })) {
    got.push(show(item));
    if (got.length === 7) break;
  }
  assert.deepEqual(got, ["a@1", "b@1", "caughtUp", "a@2", "c@1", "left:b:false", "a@3"]);
  assert.equal(calls, 2);
});

function forking(meta: { sourceRunId: string; seq: number }) {
  let forks = 0;
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      forkRun(request) {
        forks++;
        if (forks === 1) throw new ConnectError("reply lost", Code.Unavailable);
        throw refusal("RUN_EXISTS", Code.AlreadyExists, { run_id: request.newRunId });
      },
      async *read(request) {
        const forkedFrom = { runId: meta.sourceRunId, seq: meta.seq, prefixSha256: "cd" };
        const record = create(JournalRecordSchema, { seq: 1n, payload: { case: "meta", value: { runId: request.runId, forkedFrom } } });
        yield { seq: 1n, record };
      },
    });
  });
  return { forks: () => forks, client: new JournalClient({ address: "unused", transport, retry: fast }) };
}

test("a fork resent after a lost reply that finds its own fork returns it", async () => {
  const { forks, client } = forking({ sourceRunId: "r1", seq: 4 });
  const answer = await client.forkRun("r1", 4n, "r1-b");
  assert.equal(answer.lastSeq, 4n);
  assert.equal(answer.forkedFrom?.prefixSha256, "cd");
  assert.equal(forks(), 2);
});

test("a fork resent after a lost reply that finds another run is RunExistsError", async () => {
  const { client } = forking({ sourceRunId: "another", seq: 4 });
  await assert.rejects(client.forkRun("r1", 4n, "r1-b"), RunExistsError);
});

test("deleteRun sends the expected last seq; LAST_SEQ_MISMATCH carries both seqs and is not retried", async () => {
  const seen: bigint[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      deleteRun(request) {
        seen.push(request.expectedLastSeq);
        throw refusal("LAST_SEQ_MISMATCH", Code.FailedPrecondition, { run_id: request.runId, last_seq: "8", expected_last_seq: "7" });
      },
    });
  });
  const client = new JournalClient({ address: "unused", transport, retry: fast });
  await assert.rejects(
    client.deleteRun("r1", 7n),
    (err: unknown) => err instanceof LastSeqMismatchError && err.lastSeq === 8n && err.expectedLastSeq === 7n,
  );
  assert.deepEqual(seen, [7n]);
});

test("listRuns sends the parent and stopped-before filters; tasks.delete answers whether it deleted", async () => {
  let listed: ListRunsRequest | undefined;
  const transport = createRouterTransport(({ service }) => {
    service(JournalService, {
      listRuns(request) {
        listed = request;
        return {};
      },
    });
    service(TaskService, {
      deleteTask(request) {
        if (request.taskId === "gone") throw refusal("TASK_DELETED", Code.NotFound, { task_id: "gone" });
        return { deleted: true };
      },
    });
  });
  const client = new JournalClient({ address: "unused", transport, retry: fast });
  const when = new Date("2026-11-01T12:00:00Z");
  await client.listRuns({ parentRunId: "r1", stoppedBefore: when });
  assert.equal(listed?.parentRunId, "r1");
  assert.equal(timestampDate(listed!.stoppedBefore!).getTime(), when.getTime());
  assert.equal(await client.tasks.delete("t1"), true);
  await assert.rejects(client.tasks.delete("gone"), TaskDeletedError);
});

/**
 * The runjournal clients: a thin layer over the generated stubs.
 *
 * Every call has a deadline; transport failures (UNAVAILABLE / DEADLINE_EXCEEDED
 * without an ErrorInfo) are retried with the very same request (see `retry.ts`);
 * every failure is thrown as a `RunJournalError` subclass chosen by the server's
 * ErrorInfo reason (see `errors.ts`). `JournalClient` speaks JournalService and
 * `TaskClient` TaskService; they share one HTTP/2 connection (`client.tasks`).
 */
import { hostname } from "node:os";
import { clone, create, equals } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type CallOptions, Code, ConnectError, type Client, createClient, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { SecureClientSessionOptions } from "node:http2";
import { type ContentLike, contentOf, type DecisionLike, decisionValue, enumValue, FORMAT_VERSION } from "./builders.js";
import {
  AlreadyAnsweredError,
  AlreadyCompletedError,
  AlreadyDecidedError,
  asTransportFailure,
  RunExistsError,
  RunJournalError,
} from "./errors.js";
import {
  type AnswerRequest,
  AnswerRequestSchema,
  type AppendBatchResponse,
  type AppendResponse,
  type ApproveRequest,
  ApproveRequestSchema,
  type ClaimResponse,
  type DeleteRunResponse,
  type ForkRunResponse,
  ForkRunResponseSchema,
  type SpawnRunResponse,
  JournalService,
  type ListRunsResponse,
} from "./gen/runjournal/v1/journal_service_pb.js";
import {
  ContentBlockSchema as ContentBlockSchemaRef,
  type Fingerprint,
  type JournalRecord,
  MetaSchema,
  type ToolResult,
} from "./gen/runjournal/v1/records_pb.js";
import { type RunState, RunStatus, type RunSummary } from "./gen/runjournal/v1/state_pb.js";
import {
  CompleteTaskRequestSchema,
  type ListTasksResponse,
  type Task,
  TaskFailureSchema,
  type TaskOutcome,
  TaskOutcomeSchema,
  TaskService,
  TaskState,
} from "./gen/runjournal/v1/task_service_pb.js";
import { canonicalJson } from "./fingerprint.js";
import { readItem, type StoredRecord } from "./read-item.js";
import { Attempts, pauseUnlessAborted, type RetryPolicy, retryPolicy, sleep } from "./retry.js";
import { type RunsItem, RunsResume, type WatchItem, watchItem } from "./watch.js";

export { readItem, type StoredRecord } from "./read-item.js";

/** The deadline of every call unless the client or the call says otherwise. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** The gRPC message limit, matching the server's default (64 MiB). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface TlsOptions {
  /** PEM root certificates to trust instead of the system's. */
  ca?: string | Buffer;
  /** PEM client certificate and key, for mutual TLS. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** The name to verify the server's certificate against (default: the address's host). */
  servername?: string;
}

export interface ClientOptions {
  /** `host:port` of the server. */
  address: string;
  /** Plaintext (the default) or TLS: `true` for the system roots, or explicit options. */
  tls?: boolean | TlsOptions;
  /** A bearer token, sent as `authorization: Bearer <token>` with every call. */
  token?: string;
  /** The deadline of each attempt, in milliseconds (default 10 s); every method can override it. */
  timeoutMs?: number;
  /** The retry policy for transport failures and STORAGE_UNAVAILABLE (default: resent for 20 s, backoff 100 ms to 1 s). */
  retry?: Partial<RetryPolicy>;
  /** More headers sent with every call. */
  headers?: Record<string, string>;
  /** Use this transport instead of dialling `address` (tests, custom setups). */
  transport?: Transport;
}

/** Per-call options. */
/** The child run `spawnRun` creates: what its meta holds beyond what the server sets. */
export interface SpawnedChild {
  fingerprint: Fingerprint;
  prompt: ContentLike;
  labels?: Record<string, string>;
  interactive?: boolean;
  /** Why the call was delegated, for people (the parent's deferral reason). */
  reason?: string;
}

export interface CallSettings {
  /** This call's deadline per attempt, in milliseconds. */
  timeoutMs?: number;
  /** Cancels the call (and any retry wait). */
  signal?: AbortSignal;
}

/** A `RunStatus` value, or its short name ("open", "completed", ...). */
export type RunStatusLike = RunStatus | string;
/** A `TaskState` value, or its short name ("submitted", "succeeded", "failed"). */
export type TaskStateLike = TaskState | string;

/** The connection and call settings both clients share. */
class Channel {
  readonly transport: Transport;
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly headers: Record<string, string>;
  private readonly sessionManager: Http2SessionManager | undefined;

  constructor(options: ClientOptions) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.retry = retryPolicy(options.retry);
    this.headers = { ...(options.headers ?? {}) };
    if (options.token !== undefined) this.headers["authorization"] = `Bearer ${options.token}`;
    if (options.transport !== undefined) {
      this.transport = options.transport;
      return;
    }
    const secure = options.tls !== undefined && options.tls !== false;
    const baseUrl = `${secure ? "https" : "http"}://${options.address}`;
    const tls: TlsOptions = typeof options.tls === "object" ? options.tls : {};
    const nodeOptions: SecureClientSessionOptions = {};
    if (secure) {
      if (tls.ca !== undefined) nodeOptions.ca = tls.ca;
      if (tls.cert !== undefined) nodeOptions.cert = tls.cert;
      if (tls.key !== undefined) nodeOptions.key = tls.key;
      if (tls.servername !== undefined) nodeOptions.servername = tls.servername;
    }
    this.sessionManager = new Http2SessionManager(baseUrl, { idleConnectionTimeoutMs: 60_000 }, nodeOptions);
    this.transport = createGrpcTransport({
      baseUrl,
      sessionManager: this.sessionManager,
      readMaxBytes: MAX_MESSAGE_BYTES,
      writeMaxBytes: MAX_MESSAGE_BYTES,
    });
  }

  callOptions(settings: CallSettings | undefined): CallOptions {
    return {
      timeoutMs: settings?.timeoutMs ?? this.timeoutMs,
      headers: this.headers,
      signal: settings?.signal,
    };
  }

  attempts(): Attempts {
    return new Attempts(this.retry);
  }

  /** Sends `request` until it is answered or the failure is not a transport one; the same request each time. */
  async call<Res>(send: (options: CallOptions) => Promise<Res>, settings?: CallSettings, attempts = this.attempts()): Promise<Res> {
    for (;;) {
      let delay: number;
      try {
        return await send(this.callOptions(settings));
      } catch (err) {
        delay = attempts.delayAfter(asTransportFailure(err, settings?.signal));
      }
      await sleep(delay, settings?.signal);
    }
  }

  close(): void {
    this.sessionManager?.abort();
  }
}


export interface ClaimOptions extends CallSettings {
  /** Accept blocking differences (and tool differences with a pending batch). */
  force?: boolean;
  /** Defaults to this machine's host name. */
  host?: string;
  /** Defaults to this process's id. */
  pid?: number;
  reason?: string;
  conversationFrom?: number;
  /** The state holds the whole conversation, as if no compaction had happened. */
  uncompacted?: boolean;
}

export interface ListRunsOptions extends CallSettings {
  pageSize?: number;
  pageToken?: string;
  status?: RunStatusLike;
  labels?: Record<string, string>;
  waitingForPerson?: boolean;
  taskId?: string;
  /** Only runs forked from this run. */
  parentRunId?: string;
  /** Only stopped runs whose last record was stored before this time (what retention deletes). */
  stoppedBefore?: Date;
}

/** The filters of WatchRuns: those of ListRuns. */
export type WatchRunsOptions = Pick<ListRunsOptions, "status" | "labels" | "waitingForPerson" | "taskId" | "parentRunId"> & {
  /** Stops the watch. */
  signal?: AbortSignal;
};

/**
 * A watch stream the server ended OK: a watch never ends by itself, so it is a server
 * going away (or a proxy closing an idle stream), resumed like a transport failure.
 */
const STREAM_ENDED = new ConnectError("the server ended a watch stream", Code.Unavailable);

/** A client of `runjournal.v1.JournalService`. Call `close()` when done (or use `await using`). */
export class JournalClient {
  readonly stub: Client<typeof JournalService>;
  private readonly channel: Channel;
  private readonly ownsChannel: boolean;

  constructor(options: ClientOptions);
  constructor(channel: Channel, owns: false);
  constructor(options: ClientOptions | Channel, owns = true) {
    this.channel = options instanceof Channel ? options : new Channel(options);
    this.ownsChannel = owns;
    this.stub = createClient(JournalService, this.channel.transport);
  }

  /** A TaskClient on this client's connection; closing it does nothing, closing this client closes both. */
  get tasks(): TaskClient {
    return new TaskClient(this.channel, false);
  }

  get timeoutMs(): number {
    return this.channel.timeoutMs;
  }

  get retry(): RetryPolicy {
    return this.channel.retry;
  }

  close(): void {
    if (this.ownsChannel) this.channel.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /** Appends one record at `record.seq`; `duplicate` in the answer marks a verified retry. */
  append(runId: string, claimToken: bigint, record: JournalRecord, settings?: CallSettings): Promise<AppendResponse> {
    const request = { runId, claimToken, record };
    return this.channel.call((o) => this.stub.append(request, o), settings);
  }

  /** Appends consecutive records, all or nothing. */
  appendBatch(
    runId: string,
    claimToken: bigint,
    records: readonly JournalRecord[],
    settings?: CallSettings,
  ): Promise<AppendBatchResponse> {
    const request = { runId, claimToken, records: [...records] };
    return this.channel.call((o) => this.stub.appendBatch(request, o), settings);
  }

  /** Claims the run for `workerId`; `host`/`pid` default to this process's. */
  claim(runId: string, workerId: string, fingerprint: Fingerprint, options: ClaimOptions = {}): Promise<ClaimResponse> {
    const request = {
      runId,
      workerId,
      fingerprint,
      force: options.force ?? false,
      host: options.host ?? hostname(),
      pid: options.pid ?? process.pid,
      reason: options.reason ?? "",
      conversationFrom: options.conversationFrom ?? 0,
      uncompacted: options.uncompacted ?? false,
    };
    return this.channel.call((o) => this.stub.claim(request, o), options);
  }

  /**
   * The folded state of the run (as of `asOfSeq`; 0 folds every record). With
   * `uncompacted` the conversation is the whole one, as if no compaction had happened.
   */
  async fold(
    runId: string,
    options: CallSettings & { asOfSeq?: bigint; conversationFrom?: number; uncompacted?: boolean } = {},
  ): Promise<RunState> {
    const request = {
      runId,
      asOfSeq: options.asOfSeq ?? 0n,
      conversationFrom: options.conversationFrom ?? 0,
      uncompacted: options.uncompacted ?? false,
    };
    const response = await this.channel.call((o) => this.stub.fold(request, o), options);
    if (response.state === undefined) throw new RunJournalError("Fold answered without a state");
    return response.state;
  }

  /**
   * Answers a deferred call; the result record's seq. Needs no claim token.
   * When a transport failure hid the reply of an attempt that landed, the resent
   * request finds the call answered; if the stored result is ours, its seq is
   * returned instead of `AlreadyAnsweredError`.
   */
  answer(
    runId: string,
    toolUseId: string,
    content: ContentLike,
    options: CallSettings & { isError?: boolean } = {},
  ): Promise<bigint> {
    const request = create(AnswerRequestSchema, {
      runId,
      toolUseId,
      content: contentOf(content),
      isError: options.isError ?? false,
    });
    return this.writeOutOfBand(request, options);
  }

  /**
   * Records an operator's decision ("approved" / "denied") on a pending call; the approval's seq.
   * With token auth on pass `approver: ""`: the server records the token's name.
   */
  approve(
    runId: string,
    toolUseId: string,
    decision: DecisionLike,
    approver: string,
    options: CallSettings & { reason?: string } = {},
  ): Promise<bigint> {
    const request = create(ApproveRequestSchema, {
      runId,
      toolUseId,
      decision: decisionValue(decision),
      approver,
      reason: options.reason ?? "",
    });
    return this.writeOutOfBand(request, options);
  }

  /** One page of runs, newest first. */
  listRuns(options: ListRunsOptions = {}): Promise<ListRunsResponse> {
    const request = {
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
      status: typeof options.status === "string" ? enumValue(RunStatus, options.status) : (options.status ?? 0),
      labels: { ...(options.labels ?? {}) },
      waitingForPerson: options.waitingForPerson ?? false,
      taskId: options.taskId ?? "",
      parentRunId: options.parentRunId ?? "",
      stoppedBefore: options.stoppedBefore === undefined ? undefined : timestampFromDate(options.stoppedBefore),
    };
    return this.channel.call((o) => this.stub.listRuns(request, o), options);
  }

  /** Every run matching the filters, across all pages. */
  async *iterRuns(options: Omit<ListRunsOptions, "pageToken"> = {}): AsyncGenerator<RunSummary> {
    let pageToken = "";
    for (;;) {
      const page = await this.listRuns({ ...options, pageToken });
      yield* page.runs;
      pageToken = page.nextPageToken;
      if (!pageToken) return;
    }
  }

  /** The human inbox: every run with a call waiting for a person. */
  inbox(options: Omit<ListRunsOptions, "pageToken" | "waitingForPerson"> = {}): AsyncGenerator<RunSummary> {
    return this.iterRuns({ ...options, waitingForPerson: true });
  }

  /**
   * The run's stored records from `fromSeq`, each with its stored line.
   * A transport failure mid-stream resumes from the record after the last one
   * yielded (within the retry policy), so no record is yielded twice or skipped.
   * `timeoutMs` bounds each attempt's whole stream. Aborting `signal` ends the loop, nothing thrown.
   */
  async *read(runId: string, options: CallSettings & { fromSeq?: bigint } = {}): AsyncGenerator<StoredRecord> {
    const attempts = this.channel.attempts();
    let next = options.fromSeq ?? 0n;
    for (;;) {
      if (options.signal?.aborted) return; // the caller's own stop, before or between streams
      const controller = new AbortController();
      const onAbort = () => controller.abort(options.signal?.reason);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      let delay: number;
      try {
        const callOptions = { ...this.channel.callOptions(options), signal: controller.signal };
        for await (const response of this.stub.read({ runId, fromSeq: next }, callOptions)) {
          const item = readItem(response);
          next = item.seq + 1n;
          yield item;
        }
        return;
      } catch (err) {
        if (options.signal?.aborted) return; // the caller's own stop ends the loop, nothing thrown
        delay = attempts.delayAfter(asTransportFailure(err, options.signal));
      } finally {
        options.signal?.removeEventListener("abort", onAbort);
        controller.abort(); // ends the stream when the consumer stops early
      }
      if (!(await pauseUnlessAborted(delay, options.signal))) return;
    }
  }

  /**
   * Follows the run: its stored records after `afterSeq` in seq order, one `caughtUp`
   * item (everything stored when the watch began has been yielded), then each record
   * as it is acknowledged, with no gap and no duplicate. It never ends by itself:
   * stop iterating or abort `signal` (either ends the loop, nothing thrown). The stream has no deadline.
   *
   * After a transport failure (UNAVAILABLE or DEADLINE_EXCEEDED without a reason, or
   * a stream the server ended) it watches again from the last seq yielded, within the
   * retry policy, whose attempts start over once an item arrives; `caughtUp` is
   * yielded once. A refusal is thrown and never resumed: `RunDeletedError` also when
   * the run is deleted while watched.
   */
  async *watch(runId: string, options: { afterSeq?: bigint; signal?: AbortSignal } = {}): AsyncGenerator<WatchItem> {
    let attempts = this.channel.attempts();
    let last = options.afterSeq ?? 0n;
    let caughtUp = false;
    for (;;) {
      if (options.signal?.aborted) return; // the caller's own stop, before or between streams
      const stream = this.stream(options.signal);
      let delay: number;
      try {
        for await (const response of this.stub.watch({ runId, afterSeq: last }, stream.options)) {
          attempts = this.channel.attempts();
          const item = watchItem(response);
          if (item === undefined || (item.kind === "caughtUp" && caughtUp)) continue; // a resumed stream's catch-up: told once
          if (item.kind === "record") last = item.seq;
          else caughtUp = true;
          yield item;
        }
        delay = attempts.delayAfter(STREAM_ENDED);
      } catch (err) {
        if (options.signal?.aborted) return; // the caller's own stop ends the loop, nothing thrown
        delay = attempts.delayAfter(asTransportFailure(err, options.signal));
      } finally {
        stream.end();
      }
      if (!(await pauseUnlessAborted(delay, options.signal))) return;
    }
  }

  /**
   * Follows the listing: every matching run's summary (`run`), one `caughtUp`, then a
   * `run` each time a matching run changes (the newest state; a slow reader may miss
   * intermediate ones, never get a stale one) and `left` for a run that stops matching
   * or is deleted. It never ends by itself, and has no deadline: stop iterating or abort
   * `signal` (either ends the loop, nothing thrown).
   *
   * After a transport failure it watches again, within the retry policy (its attempts
   * start over once an item arrives): a summary equal to the one last yielded is not
   * repeated, and a run yielded before that the new stream does not send is yielded as
   * `left` with `deleted` false. `caughtUp` is yielded once.
   */
  async *watchRuns(options: WatchRunsOptions = {}): AsyncGenerator<RunsItem> {
    const request = {
      status: typeof options.status === "string" ? enumValue(RunStatus, options.status) : (options.status ?? 0),
      labels: { ...(options.labels ?? {}) },
      waitingForPerson: options.waitingForPerson ?? false,
      taskId: options.taskId ?? "",
      parentRunId: options.parentRunId ?? "",
    };
    let attempts = this.channel.attempts();
    const shown = new RunsResume();
    for (;;) {
      if (options.signal?.aborted) return; // the caller's own stop, before or between streams
      const stream = this.stream(options.signal);
      let delay: number;
      try {
        for await (const response of this.stub.watchRuns(request, stream.options)) {
          attempts = this.channel.attempts();
          yield* shown.items(response);
        }
        delay = attempts.delayAfter(STREAM_ENDED);
      } catch (err) {
        if (options.signal?.aborted) return; // the caller's own stop ends the loop, nothing thrown
        delay = attempts.delayAfter(asTransportFailure(err, options.signal));
      } finally {
        stream.end();
      }
      shown.resuming();
      if (!(await pauseUnlessAborted(delay, options.signal))) return;
    }
  }

  /**
   * Branches `runId` at `atSeq` (0n: its last record) into the new run `newRunId`: its
   * records 2..atSeq are the source's, its meta's `forkedFrom` names the source, the seq
   * and the hash of the copied prefix; the source is unchanged. When a transport failure
   * hid the reply of an attempt that created the fork, the resent request is refused
   * RUN_EXISTS; if the new run's meta says it is this fork, that answer is returned.
   */
  async forkRun(runId: string, atSeq: bigint, newRunId: string, settings: CallSettings = {}): Promise<ForkRunResponse> {
    const attempts = this.channel.attempts();
    try {
      return await this.channel.call((o) => this.stub.forkRun({ runId, atSeq, newRunId }, o), settings, attempts);
    } catch (err) {
      if (attempts.made === 1 || !(err instanceof RunExistsError) || err.runId !== newRunId) throw err;
      const meta = await this.recordAt(newRunId, 1n, settings);
      const origin = meta?.payload.case === "meta" ? meta.payload.value.forkedFrom : undefined;
      if (origin === undefined || origin.runId !== runId || (atSeq !== 0n && BigInt(origin.seq) !== atSeq)) throw err;
      return create(ForkRunResponseSchema, { runId: newRunId, lastSeq: BigInt(origin.seq), forkedFrom: origin });
    }
  }

  /**
   * Deletes the run if its last seq is still `expectedLastSeq` (`LastSeqMismatchError`
   * if not, and nothing is deleted). The run id is never used again (`RunDeletedError`).
   * Deleting a deleted run answers `deleted` false with its last seq, so a transport
   * retry is safe; after one, `deleted` may be false although this call's lost first
   * attempt deleted it. `erased` says whether the run's bytes are gone already (JetStream
   * erases them in the background after the answer; deleting again waits for that). With
   * token auth on it needs the operator scope.
   */
  deleteRun(runId: string, expectedLastSeq: bigint, settings?: CallSettings): Promise<DeleteRunResponse> {
    return this.channel.call((o) => this.stub.deleteRun({ runId, expectedLastSeq }, o), settings);
  }

  /**
   * Deletes `runId` and every run spawned under it, children before their parents, if
   * `runId`'s last seq is still `expectedLastSeq` (`deleteRun` refuses a run with children:
   * `InvalidArgumentError` naming `with_children`).
   */
  deleteRunTree(runId: string, expectedLastSeq: bigint, settings?: CallSettings): Promise<DeleteRunResponse> {
    return this.channel.call((o) => this.stub.deleteRun({ runId, expectedLastSeq, withChildren: true }, o), settings);
  }

  /**
   * Delegates call `toolUseId` of run `runId`'s pending batch to a new child run `newRunId`,
   * whose meta is made of `child` (format 2; the server sets its run id, creation time and
   * `spawnedBy`). The parent's call then waits for the child (`WAITING_FOR_CHILD`); the
   * child's claim token is 1, the spawner's. When the child stops (any terminal but
   * suspended) the server answers the call exactly once with the child's final answer, or
   * an error naming how it stopped (`waitForChild`). Spawning again with the same child id
   * is a verified duplicate (`duplicate` true), so a retry is safe; another child id for
   * the same call is `InvalidArgumentError`.
   */
  spawnRun(
    runId: string,
    toolUseId: string,
    newRunId: string,
    child: SpawnedChild,
    settings?: CallSettings,
  ): Promise<SpawnRunResponse> {
    const meta = create(MetaSchema, {
      formatVersion: FORMAT_VERSION,
      fingerprint: child.fingerprint,
      prompt: contentOf(child.prompt),
      labels: child.labels ?? {},
      interactive: child.interactive ?? false,
    });
    const reason = child.reason ?? "";
    return this.channel.call((o) => this.stub.spawnRun({ runId, toolUseId, newRunId, meta, reason }, o), settings);
  }

  /**
   * Waits, on a watch of run `runId`, for the result of call `toolUseId` and returns it: the
   * child's outcome (`answeredByRunId` names the child), or the answer a person gave first.
   * It returns at once when the result is stored already; `signal` ends the wait.
   */
  async waitForChild(runId: string, toolUseId: string, options: { signal?: AbortSignal } = {}): Promise<ToolResult> {
    for await (const item of this.watch(runId, { signal: options.signal })) {
      if (item.kind !== "record") continue;
      const payload = item.record.payload;
      if (payload.case === "toolResult" && payload.value.toolUseId === toolUseId) return payload.value;
    }
    throw new Error(`the watch of run ${runId} ended before call ${toolUseId} had its result`);
  }

  /** The options of one watch stream: no deadline, cancelled by the caller's signal or by `end()`. */
  private stream(signal: AbortSignal | undefined): { options: CallOptions; end: () => void } {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    return {
      options: { headers: this.channel.headers, signal: controller.signal },
      end: () => {
        signal?.removeEventListener("abort", onAbort);
        controller.abort(); // ends the stream when the consumer stops early
      },
    };
  }

  private async writeOutOfBand(request: AnswerRequest | ApproveRequest, settings: CallSettings): Promise<bigint> {
    const attempts = this.channel.attempts();
    try {
      const response =
        request.$typeName === "runjournal.v1.AnswerRequest"
          ? await this.channel.call((o) => this.stub.answer(request, o), settings, attempts)
          : await this.channel.call((o) => this.stub.approve(request, o), settings, attempts);
      return response.seq;
    } catch (err) {
      const seq = landedSeq(err, request);
      if (attempts.made === 1 || seq === undefined) throw err;
      const stored = await this.recordAt(request.runId, seq, settings);
      if (stored === undefined || !isOwnWrite(stored, request)) throw err;
      return seq;
    }
  }

  private async recordAt(runId: string, seq: bigint, settings: CallSettings): Promise<JournalRecord | undefined> {
    for await (const item of this.read(runId, { ...settings, fromSeq: seq })) {
      return item.seq === seq ? item.record : undefined;
    }
    return undefined;
  }
}

function landedSeq(err: unknown, request: AnswerRequest | ApproveRequest): bigint | undefined {
  if (request.$typeName === "runjournal.v1.AnswerRequest" && err instanceof AlreadyAnsweredError) return err.answeredAtSeq;
  if (request.$typeName === "runjournal.v1.ApproveRequest" && err instanceof AlreadyDecidedError) return err.decidedAtSeq;
  return undefined;
}

function isOwnWrite(stored: JournalRecord, request: AnswerRequest | ApproveRequest): boolean {
  if (request.$typeName === "runjournal.v1.AnswerRequest") {
    if (stored.payload.case !== "toolResult") return false;
    const result = stored.payload.value;
    return (
      result.toolUseId === request.toolUseId &&
      result.isError === request.isError &&
      result.content.length === request.content.length &&
      result.content.every((block, i) => equals(ContentBlockSchemaRef, block, request.content[i]!))
    );
  }
  if (stored.payload.case !== "approval") return false;
  const approval = stored.payload.value;
  return (
    (!request.approver || approval.approver === request.approver) &&
    approval.toolUseId === request.toolUseId &&
    approval.decision === request.decision &&
    approval.reason === request.reason
  );
}


/** What a task is asked: a JSON value (sent as canonical JSON), or JSON text. */
export type TaskRequestLike = { request: unknown } | { requestJson: string };
/** A task's outcome: a JSON result (canonical JSON), JSON text, or a failure. */
export type TaskOutcomeLike = { result: unknown } | { resultJson: string } | { failure: { code: string; message: string } };

/** A client of `runjournal.v1.TaskService`. */
export class TaskClient {
  readonly stub: Client<typeof TaskService>;
  private readonly channel: Channel;
  private readonly ownsChannel: boolean;

  constructor(options: ClientOptions);
  constructor(channel: Channel, owns: false);
  constructor(options: ClientOptions | Channel, owns = true) {
    this.channel = options instanceof Channel ? options : new Channel(options);
    this.ownsChannel = owns;
    this.stub = createClient(TaskService, this.channel.transport);
  }

  close(): void {
    if (this.ownsChannel) this.channel.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Submits a task; the stored task, and whether this call stored it. The same
   * request (and labels) again is accepted with `created` false; a different one
   * under the same id is `TaskConflictError`.
   */
  async submit(
    taskId: string,
    what: TaskRequestLike,
    options: CallSettings & { labels?: Record<string, string> } = {},
  ): Promise<{ task: Task; created: boolean }> {
    const requestJson = "requestJson" in what ? what.requestJson : canonicalJson(what.request);
    const request = { taskId, requestJson, labels: { ...(options.labels ?? {}) } };
    const response = await this.channel.call((o) => this.stub.submitTask(request, o), options);
    return { task: response.task!, created: response.created };
  }

  /**
   * Records the task's outcome; the task with the stored outcome. The first
   * completion wins: a later one is `AlreadyCompletedError` whose `storedTask`
   * holds the winner. When a transport failure hid the reply of an attempt that
   * landed, the resent request finds our very outcome stored and returns it.
   */
  async complete(taskId: string, outcome: TaskOutcomeLike, settings: CallSettings = {}): Promise<Task> {
    const kind: TaskOutcome["kind"] =
      "failure" in outcome
        ? { case: "failure", value: create(TaskFailureSchema, outcome.failure) }
        : { case: "resultJson", value: "resultJson" in outcome ? outcome.resultJson : canonicalJson(outcome.result) };
    const request = create(CompleteTaskRequestSchema, { taskId, outcome: { kind } });
    const attempts = this.channel.attempts();
    try {
      const response = await this.channel.call((o) => this.stub.completeTask(request, o), settings, attempts);
      return response.task!;
    } catch (err) {
      if (!(err instanceof AlreadyCompletedError) || attempts.made === 1) throw err;
      const stored = err.storedTask;
      if (stored?.outcome === undefined || stored.taskId !== taskId) throw err;
      const theirs = clone(TaskOutcomeSchema, stored.outcome);
      theirs.completedAt = undefined;
      if (!equals(TaskOutcomeSchema, theirs, request.outcome!)) throw err;
      return stored;
    }
  }

  /** The task, with its outcome once completed. */
  async get(taskId: string, settings?: CallSettings): Promise<Task> {
    const response = await this.channel.call((o) => this.stub.getTask({ taskId }, o), settings);
    return response.task!;
  }

  /**
   * Deletes the task's request and outcome; true when this call deleted it (false for
   * a task deleted already, so a transport retry is safe). The id is never used again
   * (`TaskDeletedError`); runs that name the task are kept. With token auth on it needs
   * the operator scope.
   */
  async delete(taskId: string, settings?: CallSettings): Promise<boolean> {
    const response = await this.channel.call((o) => this.stub.deleteTask({ taskId }, o), settings);
    return response.deleted;
  }

  /** One page of tasks, newest first; `state` e.g. "submitted", "succeeded" or "failed". */
  list(
    options: CallSettings & { pageSize?: number; pageToken?: string; state?: TaskStateLike; labels?: Record<string, string> } = {},
  ): Promise<ListTasksResponse> {
    const request = {
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
      state: typeof options.state === "string" ? enumValue(TaskState, options.state) : (options.state ?? 0),
      labels: { ...(options.labels ?? {}) },
    };
    return this.channel.call((o) => this.stub.listTasks(request, o), options);
  }

  /** Every task matching the filters, across all pages. */
  async *iter(
    options: CallSettings & { pageSize?: number; state?: TaskStateLike; labels?: Record<string, string> } = {},
  ): AsyncGenerator<Task> {
    let pageToken = "";
    for (;;) {
      const page = await this.list({ ...options, pageToken });
      yield* page.tasks;
      pageToken = page.nextPageToken;
      if (!pageToken) return;
    }
  }
}

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
import { type CallOptions, type Client, createClient, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { SecureClientSessionOptions } from "node:http2";
import { type ContentLike, contentOf, type DecisionLike, decisionValue, enumValue } from "./builders.js";
import { AlreadyAnsweredError, AlreadyCompletedError, AlreadyDecidedError, asTransportFailure, RunJournalError } from "./errors.js";
import {
  type AnswerRequest,
  AnswerRequestSchema,
  type AppendBatchResponse,
  type AppendResponse,
  type ApproveRequest,
  ApproveRequestSchema,
  type ClaimResponse,
  JournalService,
  type ListRunsResponse,
  type ReadResponse,
} from "./gen/runjournal/v1/journal_service_pb.js";
import {
  ContentBlockSchema as ContentBlockSchemaRef,
  type Fingerprint,
  type JournalRecord,
  JournalRecordSchema,
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
import { Attempts, type RetryPolicy, retryPolicy, sleep } from "./retry.js";

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
  /** The retry policy for transport failures (default: 5 attempts, 100 ms to 5 s backoff). */
  retry?: Partial<RetryPolicy>;
  /** More headers sent with every call. */
  headers?: Record<string, string>;
  /** Use this transport instead of dialling `address` (tests, custom setups). */
  transport?: Transport;
}

/** Per-call options. */
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

/** One stored record as Read streams it. */
export interface StoredRecord {
  /** The record, placed at its seq (for an unknown kind only `seq` and `optional` are set). */
  record: JournalRecord;
  /** The stored line (canonical JSON with its checksum), without the newline. */
  storedLine: Uint8Array;
  seq: bigint;
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
}

export interface ListRunsOptions extends CallSettings {
  pageSize?: number;
  pageToken?: string;
  status?: RunStatusLike;
  labels?: Record<string, string>;
  waitingForPerson?: boolean;
  taskId?: string;
}

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
    };
    return this.channel.call((o) => this.stub.claim(request, o), options);
  }

  /** The folded state of the run (as of `asOfSeq`; 0 folds every record). */
  async fold(
    runId: string,
    options: CallSettings & { asOfSeq?: bigint; conversationFrom?: number } = {},
  ): Promise<RunState> {
    const request = { runId, asOfSeq: options.asOfSeq ?? 0n, conversationFrom: options.conversationFrom ?? 0 };
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
   * `timeoutMs` bounds each attempt's whole stream.
   */
  async *read(runId: string, options: CallSettings & { fromSeq?: bigint } = {}): AsyncGenerator<StoredRecord> {
    const attempts = this.channel.attempts();
    let next = options.fromSeq ?? 0n;
    for (;;) {
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
        delay = attempts.delayAfter(asTransportFailure(err, options.signal));
      } finally {
        options.signal?.removeEventListener("abort", onAbort);
        controller.abort(); // ends the stream when the consumer stops early
      }
      await sleep(delay, options.signal);
    }
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

/** A Read item with its seq from `response.seq` (set for every kind), and the record placed there. */
export function readItem(response: ReadResponse): StoredRecord {
  const seq = response.seq || response.record?.seq || 0n;
  const record = response.record ?? create(JournalRecordSchema, { seq });
  if (!record.seq) record.seq = seq;
  return { record, storedLine: response.storedLine, seq };
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

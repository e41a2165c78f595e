/**
 * Errors of the runjournal client: one class per server reason.
 *
 * Every refusal from the server is a gRPC status carrying a `google.rpc.ErrorInfo`
 * detail (domain `runjournal.dev`) whose `reason` is a stable upper-case word.
 * `fromConnectError` maps that reason to a class (never the message text), so code
 * can test `err instanceof RunClaimedError` and read `err.claimToken` without parsing.
 *
 * The metadata keys of each reason and their types are the table in
 * proto/runjournal/v1/journal_service.proto (pinned in testdata/error_metadata.json):
 * `int` keys are parsed to `bigint`, `str` keys stay strings, `list` keys become
 * `string[]`. Keys are exposed in camelCase (`answered_at_seq` -> `answeredAtSeq`).
 *
 * A status without an ErrorInfo did not come from the journal logic: it is a
 * transport failure (`UnavailableError`, `DeadlineExceededError`), an
 * authentication layer in front of the server (`UnauthenticatedError`,
 * `PermissionDeniedError`) or something else (`StatusError`). A reason this
 * client does not know (a newer server) is `UnknownReasonError`.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { type Task, TaskSchema } from "./gen/runjournal/v1/task_service_pb.js";

/** The `ErrorInfo.domain` of every runjournal refusal. */
export const ERROR_DOMAIN = "runjournal.dev";

/** How a metadata value is written on the wire: decimal integer, text, or comma-joined list. */
export type MetadataType = "int" | "str" | "list";

/** The metadata keys of one reason and their types. */
export type MetadataKeys = Readonly<Record<string, MetadataType>>;

/** The snake_case metadata key as the camelCase property name the error exposes. */
export function propertyName(key: string): string {
  return key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** A wire value read back as its type; undefined when it does not parse (a damaged status). */
export function parseMetadataValue(type: MetadataType, text: string): bigint | string | string[] | undefined {
  switch (type) {
    case "int":
      return /^-?[0-9]+$/.test(text) ? BigInt(text) : undefined;
    case "list":
      return text.split(",").filter((item) => item !== "");
    case "str":
      return text;
  }
}

export interface RunJournalErrorOptions {
  code?: Code;
  reason?: string;
  metadata?: Readonly<Record<string, string>>;
  cause?: unknown;
}

/**
 * Base of every error the client throws.
 *
 * `reason` is the ErrorInfo reason ("" when the status had none), `code` the
 * gRPC status code, `metadata` the raw ErrorInfo metadata (strings) and
 * `rawMessage` the server's explanation, meant for people. `cause` is the
 * underlying `ConnectError`, whose `findDetails` reaches any other detail.
 */
export class RunJournalError extends Error {
  /** The reason a subclass stands for ("" for the classes chosen by code). */
  static readonly REASON: string = "";
  /** The metadata keys the reason carries, with their types. */
  static readonly KEYS: MetadataKeys = {};

  readonly code: Code;
  readonly reason: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly rawMessage: string;

  // Typed metadata, set only for the keys the reason declares (and present).
  readonly runId?: string;
  readonly taskId?: string;
  readonly seq?: bigint;
  readonly lastSeq?: bigint;
  readonly index?: bigint;
  readonly toolUseId?: string;
  readonly field?: string;
  readonly size?: bigint;
  readonly limit?: bigint;
  readonly claimToken?: bigint;
  readonly claimedBy?: string;
  readonly foundVersion?: bigint;
  readonly expectedVersion?: bigint;
  readonly line?: bigint;
  readonly fields?: string[];
  readonly answeredAtSeq?: bigint;
  readonly decidedAtSeq?: bigint;
  readonly principal?: string;
  readonly scope?: string;

  constructor(message: string, options: RunJournalErrorOptions = {}) {
    const code = options.code ?? Code.Unknown;
    const reason = options.reason ?? "";
    super(`${reason || Code[code]}: ${message}`, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.reason = reason;
    this.rawMessage = message;
    this.metadata = { ...(options.metadata ?? {}) };
    const keys = (new.target as unknown as typeof RunJournalError).KEYS;
    const self = this as unknown as Record<string, unknown>;
    for (const [key, type] of Object.entries(keys)) {
      const text = this.metadata[key];
      if (text === undefined) continue;
      const value = parseMetadataValue(type, text);
      if (value !== undefined) self[propertyName(key)] = value;
    }
  }
}

const INDEX = { index: "int" } as const;
const CALL = { run_id: "str", tool_use_id: "str" } as const;
const SEQ = { run_id: "str", seq: "int", last_seq: "int", ...INDEX } as const;
const STORE = { run_id: "str", task_id: "str" } as const;

// --- errors the server reports with an ErrorInfo reason ---------------------

/** INVALID_ARGUMENT: a request field is malformed; `field` names it. */
export class InvalidArgumentError extends RunJournalError {
  static override readonly REASON = "INVALID_ARGUMENT";
  static override readonly KEYS: MetadataKeys = { field: "str", ...INDEX };
  declare readonly field: string;
}

/** INVALID_RECORD: the record breaks its schema or the run's state. */
export class InvalidRecordError extends RunJournalError {
  static override readonly REASON = "INVALID_RECORD";
  static override readonly KEYS: MetadataKeys = { field: "str", seq: "int", ...INDEX };
  declare readonly field: string;
}

/** RECORD_TOO_LARGE: the encoded record exceeds the server's maximum record size. */
export class RecordTooLargeError extends RunJournalError {
  static override readonly REASON = "RECORD_TOO_LARGE";
  static override readonly KEYS: MetadataKeys = { size: "int", limit: "int", seq: "int", ...INDEX };
  declare readonly size: bigint;
  declare readonly limit: bigint;
}

/** RESPONSE_TOO_LARGE: the folded state would not fit in one response; ask with conversationFrom. */
export class ResponseTooLargeError extends RunJournalError {
  static override readonly REASON = "RESPONSE_TOO_LARGE";
  static override readonly KEYS: MetadataKeys = { run_id: "str", size: "int", limit: "int" };
  declare readonly runId: string;
  declare readonly size: bigint;
  declare readonly limit: bigint;
}

/** RUN_NOT_FOUND: no journal exists for the run id. */
export class RunNotFoundError extends RunJournalError {
  static override readonly REASON = "RUN_NOT_FOUND";
  static override readonly KEYS: MetadataKeys = { run_id: "str" };
  declare readonly runId: string;
}

/** RUN_EXISTS: a different meta record is already stored for the run id. */
export class RunExistsError extends RunJournalError {
  static override readonly REASON = "RUN_EXISTS";
  static override readonly KEYS: MetadataKeys = { run_id: "str", ...INDEX };
  declare readonly runId: string;
}

/** RUN_DELETED: the run was deleted (DeleteRun or retention); its id is never used again. `lastSeq` is its last seq then. */
export class RunDeletedError extends RunJournalError {
  static override readonly REASON = "RUN_DELETED";
  static override readonly KEYS: MetadataKeys = { run_id: "str", last_seq: "int" };
  declare readonly runId: string;
  declare readonly lastSeq: bigint;
}

/**
 * LAST_SEQ_MISMATCH: DeleteRun's `expectedLastSeq` is not the run's last seq (`lastSeq`);
 * nothing was deleted. Something was appended after the caller looked: look again.
 */
export class LastSeqMismatchError extends RunJournalError {
  static override readonly REASON = "LAST_SEQ_MISMATCH";
  static override readonly KEYS: MetadataKeys = { run_id: "str", last_seq: "int", expected_last_seq: "int" };
  declare readonly runId: string;
  declare readonly lastSeq: bigint;
  declare readonly expectedLastSeq: bigint;
}

/** SEQ_GAP: the record's seq is beyond `lastSeq + 1`. */
export class SeqGapError extends RunJournalError {
  static override readonly REASON = "SEQ_GAP";
  static override readonly KEYS: MetadataKeys = SEQ;
  declare readonly runId: string;
  declare readonly seq: bigint;
  declare readonly lastSeq: bigint;
}

/** SEQ_CONFLICT: a different record is already stored at the seq. */
export class SeqConflictError extends RunJournalError {
  static override readonly REASON = "SEQ_CONFLICT";
  static override readonly KEYS: MetadataKeys = SEQ;
  declare readonly runId: string;
  declare readonly seq: bigint;
  declare readonly lastSeq: bigint;
}

/**
 * RUN_CLAIMED: another worker claimed the run; this writer must stop.
 * `claimToken` is the current holder's token, `claimedBy` its worker id (may be empty).
 */
export class RunClaimedError extends RunJournalError {
  static override readonly REASON = "RUN_CLAIMED";
  static override readonly KEYS: MetadataKeys = { run_id: "str", claim_token: "int", claimed_by: "str" };
  declare readonly runId: string;
  declare readonly claimToken: bigint;
  declare readonly claimedBy: string;
}

/** RUN_LOCKED: another server process holds the run. Not retried automatically. */
export class RunLockedError extends RunJournalError {
  static override readonly REASON = "RUN_LOCKED";
  static override readonly KEYS: MetadataKeys = { run_id: "str" };
  declare readonly runId: string;
}

/** VERSION_MISMATCH: the journal's format version is not the server's. */
export class VersionMismatchError extends RunJournalError {
  static override readonly REASON = "VERSION_MISMATCH";
  static override readonly KEYS: MetadataKeys = { run_id: "str", found_version: "int", expected_version: "int" };
  declare readonly runId: string;
  declare readonly foundVersion: bigint;
  declare readonly expectedVersion: bigint;
}

/** CORRUPT_JOURNAL: the stored journal is damaged at `line` and/or `seq`. */
export class CorruptJournalError extends RunJournalError {
  static override readonly REASON = "CORRUPT_JOURNAL";
  static override readonly KEYS: MetadataKeys = { run_id: "str", line: "int", seq: "int" };
  declare readonly runId: string;
}

/** RESUME_REFUSED: the resume gate refused the claim; `fields` lists why. */
export class ResumeRefusedError extends RunJournalError {
  static override readonly REASON = "RESUME_REFUSED";
  static override readonly KEYS: MetadataKeys = { run_id: "str", fields: "list" };
  declare readonly runId: string;
  declare readonly fields: string[];
}

/** ALREADY_ANSWERED: the call has a result already, at `answeredAtSeq`. */
export class AlreadyAnsweredError extends RunJournalError {
  static override readonly REASON = "ALREADY_ANSWERED";
  static override readonly KEYS: MetadataKeys = { ...CALL, answered_at_seq: "int" };
  declare readonly runId: string;
  declare readonly toolUseId: string;
  declare readonly answeredAtSeq: bigint;
}

/** NOT_DEFERRED: the call was never deferred, so it takes no answer. */
export class NotDeferredError extends RunJournalError {
  static override readonly REASON = "NOT_DEFERRED";
  static override readonly KEYS: MetadataKeys = CALL;
  declare readonly runId: string;
  declare readonly toolUseId: string;
}

/** ALREADY_DECIDED: the call has an operator's decision already, at `decidedAtSeq`. */
export class AlreadyDecidedError extends RunJournalError {
  static override readonly REASON = "ALREADY_DECIDED";
  static override readonly KEYS: MetadataKeys = { ...CALL, decided_at_seq: "int" };
  declare readonly runId: string;
  declare readonly toolUseId: string;
  declare readonly decidedAtSeq: bigint;
}

/** CALL_NOT_PENDING: the call is not in the run's pending batch, so it cannot be decided. */
export class CallNotPendingError extends RunJournalError {
  static override readonly REASON = "CALL_NOT_PENDING";
  static override readonly KEYS: MetadataKeys = CALL;
  declare readonly runId: string;
  declare readonly toolUseId: string;
}

/** TASK_NOT_FOUND: no task with this id. */
export class TaskNotFoundError extends RunJournalError {
  static override readonly REASON = "TASK_NOT_FOUND";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;
}

/** TASK_CONFLICT: the task id was already submitted with a different request (or labels). */
export class TaskConflictError extends RunJournalError {
  static override readonly REASON = "TASK_CONFLICT";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;
}

/** ALREADY_COMPLETED: the task has an outcome already; the first one stands. */
export class AlreadyCompletedError extends RunJournalError {
  static override readonly REASON = "ALREADY_COMPLETED";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;

  /** The stored task with the outcome that won, as the server attached it (undefined if it did not). */
  get storedTask(): Task | undefined {
    return this.cause instanceof ConnectError ? this.cause.findDetails(TaskSchema)[0] : undefined;
  }
}

/** TASK_DELETED: the task was deleted; its id is never used again. */
export class TaskDeletedError extends RunJournalError {
  static override readonly REASON = "TASK_DELETED";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;
}

/** STORAGE_FULL: the server's store is full; nothing was written. */
export class StorageFullError extends RunJournalError {
  static override readonly REASON = "STORAGE_FULL";
  static override readonly KEYS: MetadataKeys = STORE;
}

/** STORAGE_UNAVAILABLE: the store failed; resending the same request is safe. Not retried automatically. */
export class StorageUnavailableError extends RunJournalError {
  static override readonly REASON = "STORAGE_UNAVAILABLE";
  static override readonly KEYS: MetadataKeys = STORE;
}

/** A runjournal reason this client does not know (a newer server). */
export class UnknownReasonError extends RunJournalError {}

// --- statuses without an ErrorInfo: not from the journal logic ----------------

/** A gRPC status without a runjournal ErrorInfo and no more specific class. */
export class StatusError extends RunJournalError {}

/** UNAVAILABLE without a reason: the server could not be reached. */
export class UnavailableError extends StatusError {}

/** DEADLINE_EXCEEDED: no answer within the call's deadline. */
export class DeadlineExceededError extends StatusError {}

/** UNAUTHENTICATED: the call carried no valid bearer token (or a proxy refused it). */
export class UnauthenticatedError extends StatusError {
  static override readonly REASON = "UNAUTHENTICATED";
  static override readonly KEYS: MetadataKeys = {};
}

/**
 * PERMISSION_DENIED: the token may not touch this run or task (outside its id
 * prefixes), or the call needs a scope the token lacks (`scope`).
 * `principal` is the token's name as the server knows it.
 */
export class PermissionDeniedError extends StatusError {
  static override readonly REASON = "PERMISSION_DENIED";
  static override readonly KEYS: MetadataKeys = { principal: "str", run_id: "str", task_id: "str", scope: "str" };
  declare readonly principal: string;
}

type ErrorClass = typeof RunJournalError;

/** Every reason the server reports, with its class. */
export const REASON_ERRORS: Readonly<Record<string, ErrorClass>> = Object.fromEntries(
  [
    InvalidArgumentError,
    InvalidRecordError,
    RecordTooLargeError,
    ResponseTooLargeError,
    RunNotFoundError,
    RunExistsError,
    RunDeletedError,
    LastSeqMismatchError,
    SeqGapError,
    SeqConflictError,
    RunClaimedError,
    RunLockedError,
    VersionMismatchError,
    CorruptJournalError,
    ResumeRefusedError,
    AlreadyAnsweredError,
    NotDeferredError,
    AlreadyDecidedError,
    CallNotPendingError,
    TaskNotFoundError,
    TaskConflictError,
    AlreadyCompletedError,
    TaskDeletedError,
    StorageFullError,
    StorageUnavailableError,
    UnauthenticatedError,
    PermissionDeniedError,
  ].map((cls) => [cls.REASON, cls]),
);

/** Classes for statuses that carry no ErrorInfo, by code. */
export const CODE_ERRORS: ReadonlyMap<Code, ErrorClass> = new Map<Code, ErrorClass>([
  [Code.Unavailable, UnavailableError],
  [Code.DeadlineExceeded, DeadlineExceededError],
  [Code.Unauthenticated, UnauthenticatedError],
  [Code.PermissionDenied, PermissionDeniedError],
]);

/** The first `google.rpc.ErrorInfo` detail of a failed call, if any. */
export function errorInfo(err: ConnectError) {
  return err.findDetails(ErrorInfoSchema)[0];
}

/** The client error for any failure of a call: chosen by ErrorInfo reason, else by code. */
export function fromConnectError(thrown: unknown): RunJournalError {
  if (thrown instanceof RunJournalError) return thrown;
  const err = ConnectError.from(thrown);
  const info = errorInfo(err);
  const message = err.rawMessage || Code[err.code];
  if (info !== undefined && info.domain === ERROR_DOMAIN) {
    const cls = REASON_ERRORS[info.reason] ?? UnknownReasonError;
    return new cls(message, { code: err.code, reason: info.reason, metadata: info.metadata, cause: err });
  }
  const cls = CODE_ERRORS.get(err.code) ?? StatusError;
  return new cls(message, {
    code: err.code,
    reason: info?.reason ?? "",
    metadata: info?.metadata ?? {},
    cause: err,
  });
}

/**
 * A failure as the retry rule sees it. Node's HTTP/2 client reports a connection
 * lost under a call as CANCELED ("http/2 stream closed with error code CANCEL"),
 * where gRPC's own clients say UNAVAILABLE. So a CANCELED without an ErrorInfo
 * that the caller did not ask for (its signal is not aborted) is turned into the
 * transport UNAVAILABLE it is; a call the caller cancelled stays CANCELED.
 */
export function asTransportFailure(thrown: unknown, callerSignal?: AbortSignal): unknown {
  if (thrown instanceof RunJournalError || callerSignal?.aborted) return thrown;
  const err = ConnectError.from(thrown);
  if (err.code !== Code.Canceled || errorInfo(err) !== undefined) return thrown;
  return new ConnectError(`connection lost: ${err.rawMessage}`, Code.Unavailable, err.metadata, undefined, err);
}

/**
 * True for a transport-level UNAVAILABLE / DEADLINE_EXCEEDED carrying no ErrorInfo.
 * A status with an ErrorInfo (STORAGE_UNAVAILABLE, RUN_LOCKED, ...) is an answer
 * from the server, and the caller decides what to do about it.
 */
export function isRetryable(thrown: unknown): boolean {
  const err = thrown instanceof RunJournalError ? thrown.cause : thrown;
  if (thrown instanceof RunJournalError && !(err instanceof ConnectError)) {
    return (thrown.code === Code.Unavailable || thrown.code === Code.DeadlineExceeded) && thrown.reason === "";
  }
  const connect = ConnectError.from(err);
  if (connect.code !== Code.Unavailable && connect.code !== Code.DeadlineExceeded) return false;
  return errorInfo(connect) === undefined;
}

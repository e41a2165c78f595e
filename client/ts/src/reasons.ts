// GENERATED from testdata/error_metadata.json by scripts/generate.py: do not edit by hand.
// Edit client/python/runjournal/error_metadata.py and run `python scripts/generate.py`; CI fails when this file differs.
/**
 * Every server reason's error class, with a typed field for each of its ErrorInfo metadata keys
 * (written from testdata/error_metadata.json on the bases of error-base.ts; import them from errors.ts).
 */
import { type MetadataKeys, RunJournalError, StatusError, StoredTaskDetail } from "./error-base.js";

/** The typed metadata an error may carry: each set when its reason declares it and the refusal has it. */
export interface ErrorMetadata {
  readonly answeredAtSeq?: bigint;
  readonly budget?: string;
  readonly claimToken?: bigint;
  readonly claimedBy?: string;
  readonly decidedAtSeq?: bigint;
  readonly expectedLastSeq?: bigint;
  readonly expectedVersion?: bigint;
  readonly field?: string;
  readonly fields?: string[];
  readonly foundVersion?: bigint;
  readonly index?: bigint;
  readonly lastSeq?: bigint;
  readonly limit?: bigint;
  readonly line?: bigint;
  readonly principal?: string;
  readonly runId?: string;
  readonly scope?: string;
  readonly seq?: bigint;
  readonly size?: bigint;
  readonly taskId?: string;
  readonly toolUseId?: string;
}

/** ALREADY_ANSWERED: the call has a result already, at `answeredAtSeq`. */
export class AlreadyAnsweredError extends RunJournalError {
  static override readonly REASON = "ALREADY_ANSWERED";
  static override readonly KEYS: MetadataKeys = { answered_at_seq: "int", run_id: "str", tool_use_id: "str" };
  declare readonly answeredAtSeq: bigint;
  declare readonly runId: string;
  declare readonly toolUseId: string;
}

/**
 * ALREADY_COMPLETED: the task has an outcome already; the first one stands. The refusal carries the stored task,
 * with the outcome that won, among its details.
 */
export class AlreadyCompletedError extends StoredTaskDetail {
  static override readonly REASON = "ALREADY_COMPLETED";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;
}

/** ALREADY_DECIDED: the call has an operator's decision already, at `decidedAtSeq`. */
export class AlreadyDecidedError extends RunJournalError {
  static override readonly REASON = "ALREADY_DECIDED";
  static override readonly KEYS: MetadataKeys = { decided_at_seq: "int", run_id: "str", tool_use_id: "str" };
  declare readonly decidedAtSeq: bigint;
  declare readonly runId: string;
  declare readonly toolUseId: string;
}

/** CALL_NOT_PENDING: the call is not in the run's pending batch, so it cannot be decided. */
export class CallNotPendingError extends RunJournalError {
  static override readonly REASON = "CALL_NOT_PENDING";
  static override readonly KEYS: MetadataKeys = { run_id: "str", tool_use_id: "str" };
  declare readonly runId: string;
  declare readonly toolUseId: string;
}

/** CORRUPT_JOURNAL: the stored journal is damaged at `line` and/or `seq`. */
export class CorruptJournalError extends RunJournalError {
  static override readonly REASON = "CORRUPT_JOURNAL";
  static override readonly KEYS: MetadataKeys = { line: "int", run_id: "str", seq: "int" };
  declare readonly runId: string;
}

/** INVALID_ARGUMENT: a request field is malformed; `field` names it. */
export class InvalidArgumentError extends RunJournalError {
  static override readonly REASON = "INVALID_ARGUMENT";
  static override readonly KEYS: MetadataKeys = { field: "str", index: "int" };
  declare readonly field: string;
}

/** INVALID_RECORD: the record breaks its schema or the run's state; `field` names what is wrong. */
export class InvalidRecordError extends RunJournalError {
  static override readonly REASON = "INVALID_RECORD";
  static override readonly KEYS: MetadataKeys = { field: "str", index: "int", seq: "int" };
  declare readonly field: string;
}

/**
 * LAST_SEQ_MISMATCH: DeleteRun's `expectedLastSeq` is not the run's last seq (`lastSeq`); nothing was deleted.
 * Something was appended after the caller looked: look at the run again before deleting it.
 */
export class LastSeqMismatchError extends RunJournalError {
  static override readonly REASON = "LAST_SEQ_MISMATCH";
  static override readonly KEYS: MetadataKeys = { expected_last_seq: "int", last_seq: "int", run_id: "str" };
  declare readonly expectedLastSeq: bigint;
  declare readonly lastSeq: bigint;
  declare readonly runId: string;
}

/**
 * NOT_DEFERRED: the call does not wait for this write: Answer needs a call deferred for an answer, Approve one
 * deferred for a decision (`needs_approval`); a call never deferred waits for its worker.
 */
export class NotDeferredError extends RunJournalError {
  static override readonly REASON = "NOT_DEFERRED";
  static override readonly KEYS: MetadataKeys = { run_id: "str", tool_use_id: "str" };
  declare readonly runId: string;
  declare readonly toolUseId: string;
}

/**
 * PERMISSION_DENIED: the token may not touch this run or task (outside its id prefixes), or the call needs a scope
 * the token lacks (`scope`, e.g. "operator" for Answer and Approve). `principal` is the token's name as the server
 * knows it.
 */
export class PermissionDeniedError extends StatusError {
  static override readonly REASON = "PERMISSION_DENIED";
  static override readonly KEYS: MetadataKeys = { principal: "str", run_id: "str", scope: "str", task_id: "str" };
  declare readonly principal: string;
}

/** RECORD_TOO_LARGE: the encoded record (`size` bytes) exceeds the server's maximum record size (`limit`). */
export class RecordTooLargeError extends RunJournalError {
  static override readonly REASON = "RECORD_TOO_LARGE";
  static override readonly KEYS: MetadataKeys = { index: "int", limit: "int", seq: "int", size: "int" };
  declare readonly limit: bigint;
  declare readonly size: bigint;
}

/**
 * RESPONSE_TOO_LARGE: the folded state (`size` bytes) would not fit in one response (`limit`); fold again with a
 * conversation_from, to get only the messages the caller lacks.
 */
export class ResponseTooLargeError extends RunJournalError {
  static override readonly REASON = "RESPONSE_TOO_LARGE";
  static override readonly KEYS: MetadataKeys = { limit: "int", run_id: "str", size: "int" };
  declare readonly limit: bigint;
  declare readonly runId: string;
  declare readonly size: bigint;
}

/** RESUME_REFUSED: the resume gate refused the claim; `fields` lists the fingerprint fields that refused it. */
export class ResumeRefusedError extends RunJournalError {
  static override readonly REASON = "RESUME_REFUSED";
  static override readonly KEYS: MetadataKeys = { fields: "list", run_id: "str" };
  declare readonly fields: string[];
  declare readonly runId: string;
}

/**
 * RUN_CLAIMED: another worker claimed the run; this writer must stop. `claimToken` is the current holder's token,
 * `claimedBy` its worker id (may be empty).
 */
export class RunClaimedError extends RunJournalError {
  static override readonly REASON = "RUN_CLAIMED";
  static override readonly KEYS: MetadataKeys = { claim_token: "int", claimed_by: "str", run_id: "str" };
  declare readonly claimToken: bigint;
  declare readonly claimedBy: string;
  declare readonly runId: string;
}

/**
 * RUN_DELETED: the run was deleted (DeleteRun or retention); its id is never used again. `lastSeq` is its last seq
 * then. A watch of the run ends with it when the run is deleted while watched.
 */
export class RunDeletedError extends RunJournalError {
  static override readonly REASON = "RUN_DELETED";
  static override readonly KEYS: MetadataKeys = { last_seq: "int", run_id: "str" };
  declare readonly lastSeq: bigint;
  declare readonly runId: string;
}

/** RUN_EXISTS: a different meta record is already stored for the run id. */
export class RunExistsError extends RunJournalError {
  static override readonly REASON = "RUN_EXISTS";
  static override readonly KEYS: MetadataKeys = { index: "int", run_id: "str" };
  declare readonly runId: string;
}

/** RUN_LOCKED: another server process holds the run. Not retried automatically. */
export class RunLockedError extends RunJournalError {
  static override readonly REASON = "RUN_LOCKED";
  static override readonly KEYS: MetadataKeys = { run_id: "str" };
  declare readonly runId: string;
}

/** RUN_NOT_FOUND: no journal exists for the run id. */
export class RunNotFoundError extends RunJournalError {
  static override readonly REASON = "RUN_NOT_FOUND";
  static override readonly KEYS: MetadataKeys = { run_id: "str" };
  declare readonly runId: string;
}

/** SEQ_CONFLICT: a different record is already stored at the seq. */
export class SeqConflictError extends RunJournalError {
  static override readonly REASON = "SEQ_CONFLICT";
  static override readonly KEYS: MetadataKeys = { index: "int", last_seq: "int", run_id: "str", seq: "int" };
  declare readonly lastSeq: bigint;
  declare readonly runId: string;
  declare readonly seq: bigint;
}

/** SEQ_GAP: the record's seq is beyond the run's last seq (`lastSeq`) + 1. */
export class SeqGapError extends RunJournalError {
  static override readonly REASON = "SEQ_GAP";
  static override readonly KEYS: MetadataKeys = { index: "int", last_seq: "int", run_id: "str", seq: "int" };
  declare readonly lastSeq: bigint;
  declare readonly runId: string;
  declare readonly seq: bigint;
}

/** STORAGE_FULL: the server's store is full; nothing was written. */
export class StorageFullError extends RunJournalError {
  static override readonly REASON = "STORAGE_FULL";
  static override readonly KEYS: MetadataKeys = { run_id: "str", task_id: "str" };
}

/**
 * STORAGE_UNAVAILABLE: the store failed; resending the same request is safe. Not retried automatically: the caller
 * decides whether and when.
 */
export class StorageUnavailableError extends RunJournalError {
  static override readonly REASON = "STORAGE_UNAVAILABLE";
  static override readonly KEYS: MetadataKeys = { run_id: "str", task_id: "str" };
}

/** TASK_CONFLICT: the task id was already submitted with a different request (or labels). */
export class TaskConflictError extends RunJournalError {
  static override readonly REASON = "TASK_CONFLICT";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;
}

/** TASK_DELETED: the task was deleted; its id is never used again. */
export class TaskDeletedError extends RunJournalError {
  static override readonly REASON = "TASK_DELETED";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;
}

/** TASK_NOT_FOUND: no task with this id; `taskId` names it. */
export class TaskNotFoundError extends RunJournalError {
  static override readonly REASON = "TASK_NOT_FOUND";
  static override readonly KEYS: MetadataKeys = { task_id: "str" };
  declare readonly taskId: string;
}

/**
 * TOO_MANY_CALLS: the server already serves `limit` calls of this kind at once (`budget`: "calls" for journal and
 * task calls, "health" for health and reflection, "connection" for one connection's share of those); nothing was
 * done. Not retried automatically: retry later, or end streams no longer read.
 */
export class TooManyCallsError extends RunJournalError {
  static override readonly REASON = "TOO_MANY_CALLS";
  static override readonly KEYS: MetadataKeys = { budget: "str", limit: "int" };
  declare readonly budget: string;
  declare readonly limit: bigint;
}

/** UNAUTHENTICATED: the call carried no valid bearer token (or a proxy in front of the server refused it). */
export class UnauthenticatedError extends StatusError {
  static override readonly REASON = "UNAUTHENTICATED";
  static override readonly KEYS: MetadataKeys = {};
}

/** VERSION_MISMATCH: the journal's format version (`foundVersion`) is not the server's (`expectedVersion`). */
export class VersionMismatchError extends RunJournalError {
  static override readonly REASON = "VERSION_MISMATCH";
  static override readonly KEYS: MetadataKeys = { expected_version: "int", found_version: "int", run_id: "str" };
  declare readonly expectedVersion: bigint;
  declare readonly foundVersion: bigint;
  declare readonly runId: string;
}

/** Every reason the server reports, with its class. */
export const REASON_ERRORS: Readonly<Record<string, typeof RunJournalError>> = Object.fromEntries(
  [
    AlreadyAnsweredError,
    AlreadyCompletedError,
    AlreadyDecidedError,
    CallNotPendingError,
    CorruptJournalError,
    InvalidArgumentError,
    InvalidRecordError,
    LastSeqMismatchError,
    NotDeferredError,
    PermissionDeniedError,
    RecordTooLargeError,
    ResponseTooLargeError,
    ResumeRefusedError,
    RunClaimedError,
    RunDeletedError,
    RunExistsError,
    RunLockedError,
    RunNotFoundError,
    SeqConflictError,
    SeqGapError,
    StorageFullError,
    StorageUnavailableError,
    TaskConflictError,
    TaskDeletedError,
    TaskNotFoundError,
    TooManyCallsError,
    UnauthenticatedError,
    VersionMismatchError,
  ].map((cls) => [cls.REASON, cls]),
);

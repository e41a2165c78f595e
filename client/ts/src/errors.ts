/**
 * Errors of the runjournal client: one class per server reason.
 *
 * Every refusal from the server is a gRPC status carrying a `google.rpc.ErrorInfo`
 * detail (domain `runjournal.dev`) whose `reason` is a stable upper-case word.
 * `fromConnectError` maps that reason to a class (never the message text), so code
 * can test `err instanceof RunClaimedError` and read `err.claimToken` without parsing.
 *
 * The reason classes and their typed metadata fields are generated from the one table
 * (testdata/error_metadata.json) into reasons.ts, on the bases of error-base.ts.
 *
 * A status without an ErrorInfo did not come from the journal logic: it is a
 * transport failure (`UnavailableError`, `DeadlineExceededError`), an
 * authentication layer in front of the server (`UnauthenticatedError`,
 * `PermissionDeniedError`) or something else (`StatusError`). A reason this
 * client does not know (a newer server) is `UnknownReasonError`.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { RunJournalError, StatusError } from "./error-base.js";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { PermissionDeniedError, REASON_ERRORS, UnauthenticatedError } from "./reasons.js";

export * from "./error-base.js";
export * from "./reasons.js";

/** The `ErrorInfo.domain` of every runjournal refusal. */
export const ERROR_DOMAIN = "runjournal.dev";

/** A runjournal reason this client does not know (a newer server). */
export class UnknownReasonError extends RunJournalError {}

// --- statuses without an ErrorInfo: not from the journal logic ----------------

/** UNAVAILABLE without a reason: the server could not be reached. */
export class UnavailableError extends StatusError {}

/** DEADLINE_EXCEEDED: no answer within the call's deadline. */
export class DeadlineExceededError extends StatusError {}

type ErrorClass = typeof RunJournalError;

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

// The journal service: append records, claim runs, fold, answer deferred calls,
// list and read runs.
//
// Errors. Every refusal is a gRPC status carrying a `google.rpc.ErrorInfo`
// detail with domain "runjournal.dev" and a stable upper-case `reason`; clients
// branch on the reason, never on the message text. (Only gRPC's own refusals
// carry none: RESOURCE_EXHAUSTED for a request over the receive limit; and a
// call refused UNAVAILABLE while the server shuts down, which did nothing and
// is resent like a transport failure.) The metadata carries the
// numbers a client needs (`run_id`, `last_seq`, `claim_token`, `claimed_by`,
// `answered_at_seq`, `line`, `seq`, ...). The reasons and their codes:
//
//   INVALID_ARGUMENT     INVALID_ARGUMENT   a field is malformed; `field` names it
//   INVALID_RECORD       INVALID_ARGUMENT   the record breaks its schema or the run's state
//   RECORD_TOO_LARGE     RESOURCE_EXHAUSTED a record exceeds the maximum record size
//   RESPONSE_TOO_LARGE   RESOURCE_EXHAUSTED a Claim's or Fold's state would not fit in one
//                                           response; ask with `conversation_from`
//   RUN_NOT_FOUND        NOT_FOUND          no journal for the run id
//   RUN_EXISTS           ALREADY_EXISTS     a meta record for an existing run
//   RUN_DELETED          NOT_FOUND          the run was deleted (DeleteRun or retention);
//                                           its id is never used again
//   LAST_SEQ_MISMATCH    FAILED_PRECONDITION DeleteRun's expected_last_seq is not the run's
//   SEQ_GAP              FAILED_PRECONDITION seq > last_seq + 1
//   SEQ_CONFLICT         ABORTED            a different record is stored at seq
//   RUN_CLAIMED          FAILED_PRECONDITION the claim token is not the latest claim
//   RUN_LOCKED           UNAVAILABLE        another server process holds the run
//   VERSION_MISMATCH     FAILED_PRECONDITION the journal's format version is not one this server reads (1, 2)
//   CORRUPT_JOURNAL      DATA_LOSS          the stored journal is damaged
//   RESUME_REFUSED       FAILED_PRECONDITION the resume gate refused the claim (or an
//                                           appended `reconfigure`)
//   ALREADY_ANSWERED     ALREADY_EXISTS     the call already has a result
//   NOT_DEFERRED         FAILED_PRECONDITION the call does not wait for this write: never
//                                           deferred, or deferred for the other one (Answer
//                                           needs a deferral for an answer, Approve one for
//                                           a decision)
//   ALREADY_DECIDED      ALREADY_EXISTS     the call already has an operator decision
//   CALL_NOT_PENDING     FAILED_PRECONDITION the call is not in the run's pending batch
//   STORAGE_FULL         RESOURCE_EXHAUSTED the disk is full; nothing was written
//   STORAGE_UNAVAILABLE  UNAVAILABLE        the store failed; retry the same request
//   UNAUTHENTICATED      UNAUTHENTICATED    token auth is on and no valid bearer token was sent
//   PERMISSION_DENIED    PERMISSION_DENIED  the run id is outside the token's run-id prefixes, or
//                                           the call needs a scope the token lacks
//   TOO_MANY_CALLS       RESOURCE_EXHAUSTED the server serves as many calls of this kind as it
//                                           admits at once; nothing was done
//
// The metadata of each reason (values are strings: integers in decimal, lists
// comma-joined; `?` marks a key present only when it applies). This table is
// pinned, with the same keys and types, in the Python package
// `runjournal.error_metadata`, which the server builds every ErrorInfo with:
//
//   INVALID_ARGUMENT     field, index?
//   INVALID_RECORD       field, seq?, index?
//   RECORD_TOO_LARGE     size, limit, seq?, index?
//   RESPONSE_TOO_LARGE   run_id, size, limit
//   RUN_NOT_FOUND        run_id
//   RUN_EXISTS           run_id, index?
//   RUN_DELETED          run_id, last_seq (the run's last seq when it was deleted)
//   LAST_SEQ_MISMATCH    run_id, last_seq, expected_last_seq
//   SEQ_GAP              run_id, seq, last_seq, index?
//   SEQ_CONFLICT         run_id, seq, last_seq, index?
//   RUN_CLAIMED          run_id, claim_token, claimed_by (may be empty)
//   RUN_LOCKED           run_id
//   VERSION_MISMATCH     run_id, found_version, expected_version
//   CORRUPT_JOURNAL      run_id, line?, seq?
//   RESUME_REFUSED       run_id, fields (list)
//   ALREADY_ANSWERED     run_id, tool_use_id, answered_at_seq
//   NOT_DEFERRED         run_id, tool_use_id
//   ALREADY_DECIDED      run_id, tool_use_id, decided_at_seq
//   CALL_NOT_PENDING     run_id, tool_use_id
//   STORAGE_FULL         run_id? or task_id?
//   STORAGE_UNAVAILABLE  run_id? or task_id?
//   UNAUTHENTICATED      (none)
//   PERMISSION_DENIED    principal (the token's name), run_id? or task_id?, scope?
//   TASK_NOT_FOUND, TASK_CONFLICT, ALREADY_COMPLETED, TASK_DELETED   task_id
//   TOO_MANY_CALLS       budget ("calls", "health" or "connection"), limit
//
// `index` is set only by AppendBatch, on a refusal about one record of the
// batch: its 0-based position in `AppendBatchRequest.records`.
//
// A deleted run (DeleteRun, retention) answers RUN_DELETED to every call that
// names it (Append, AppendBatch, Claim, Fold, Read, Watch, Answer, Approve,
// ForkRun, SpawnRun; DeleteRun but for a retry, see there), with the last seq
// it had: never RUN_NOT_FOUND, nor a check of the run's state (a request
// malformed in itself may hear INVALID_ARGUMENT first).
//
// Positions in a run. A seq a request names as a place in the run must be
// one the run has: Fold's `as_of_seq`, ForkRun's `at_seq` and Watch's
// `after_seq` at most the run's last seq, and Read's `from_seq` at most the
// last seq + 1 (the empty read of a client that has every record and
// resumes after the last one). Beyond that is INVALID_ARGUMENT naming the
// field, with the run's last seq in the message: no client can have
// received the record before such a position, so it is a caller's mistake
// (a run id mixed up, a seq of another run), never an empty answer that
// would look like "nothing new". 0 means "from the start" or "the whole
// run" in each of them; a negative seq is INVALID_ARGUMENT.
//
// What a worker should resend. Nothing was acknowledged, and resending the
// very same request (same run, seq, bytes and claim token) is safe, after:
//   - UNAVAILABLE or DEADLINE_EXCEEDED without an ErrorInfo: the call never
//     reached the journal logic, or its answer was lost (the clients resend
//     these themselves, with backoff);
//   - STORAGE_UNAVAILABLE: the store did not acknowledge; a record it may
//     still store later is then answered as a verified duplicate (the
//     clients resend this too);
//   - RUN_LOCKED: another server process holds the run (file backend).
// The three clients resend these first two themselves for a time budget,
// 20 s by default from the first failure, with backoff capped at 1 s (each
// attempt keeps the call's deadline); docs/clients.md has the rule.
// Resend with backoff until the worker's own deadline, through any replica:
// on the JetStream backend a leader change of the NATS cluster takes about
// 6 s, a hung NATS node is left within 1-2 s, and the server holds an append,
// or a run's creation, through that (up to 4 NATS request timeouts) before it
// answers STORAGE_UNAVAILABLE; docs/jetstream-backend.md has the measured
// waits.
// Every other reason is an answer about the run (SEQ_GAP, SEQ_CONFLICT,
// RUN_CLAIMED, ...) or the request, and resending changes nothing; after
// STORAGE_FULL, resend only once space was made.
//
// With token auth on, every RPC takes `authorization: Bearer <token>` metadata
// and may fail UNAUTHENTICATED or PERMISSION_DENIED; ListRuns then lists only
// the runs within the token's prefixes. Each token has scopes: `worker` for
// Append, AppendBatch and Claim (and TaskService's SubmitTask and
// CompleteTask) and ForkRun, `operator` for Answer, Approve and DeleteRun (and
// TaskService's DeleteTask); either scope may Fold, Read, Watch, WatchRuns
// and list. A call without the scope it needs is PERMISSION_DENIED with
// `scope` naming it. With auth on, Approve records the token's name as the
// approver and Answer records it as the result's `answered_by`, so neither
// can be written through Append (PERMISSION_DENIED).

// @generated by protoc-gen-es v2.13.0 with parameter "target=ts,import_extension=js"
// @generated from file runjournal/v1/journal_service.proto (package runjournal.v1, syntax proto3)
/* eslint-disable */

import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import { fileDesc, messageDesc, serviceDesc } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { file_google_protobuf_timestamp } from "@bufbuild/protobuf/wkt";
import type { ContentBlock, Decision, Fingerprint, ForkOrigin, JournalRecord, Meta, SpawnOrigin } from "./records_pb.js";
import { file_runjournal_v1_records } from "./records_pb.js";
import type { GateReport, RunState, RunStatus, RunSummary } from "./state_pb.js";
import { file_runjournal_v1_state } from "./state_pb.js";
import type { Message } from "@bufbuild/protobuf";

/**
 * Describes the file runjournal/v1/journal_service.proto.
 */
export const file_runjournal_v1_journal_service: GenFile = /*@__PURE__*/
  fileDesc("CiNydW5qb3VybmFsL3YxL2pvdXJuYWxfc2VydmljZS5wcm90bxINcnVuam91cm5hbC52MSJiCg1BcHBlbmRSZXF1ZXN0Eg4KBnJ1bl9pZBgBIAEoCRITCgtjbGFpbV90b2tlbhgCIAEoAxIsCgZyZWNvcmQYAyABKAsyHC5ydW5qb3VybmFsLnYxLkpvdXJuYWxSZWNvcmQiQgoOQXBwZW5kUmVzcG9uc2USCwoDc2VxGAEgASgDEhEKCWR1cGxpY2F0ZRgCIAEoCBIQCghsYXN0X3NlcRgDIAEoAyJoChJBcHBlbmRCYXRjaFJlcXVlc3QSDgoGcnVuX2lkGAEgASgJEhMKC2NsYWltX3Rva2VuGAIgASgDEi0KB3JlY29yZHMYAyADKAsyHC5ydW5qb3VybmFsLnYxLkpvdXJuYWxSZWNvcmQiTgoTQXBwZW5kQmF0Y2hSZXNwb25zZRIRCglmaXJzdF9zZXEYASABKAMSEgoKZHVwbGljYXRlcxgCIAEoBRIQCghsYXN0X3NlcRgDIAEoAyLMAQoMQ2xhaW1SZXF1ZXN0Eg4KBnJ1bl9pZBgBIAEoCRIRCgl3b3JrZXJfaWQYAiABKAkSDAoEaG9zdBgDIAEoCRILCgNwaWQYBCABKAUSDgoGcmVhc29uGAUgASgJEi8KC2ZpbmdlcnByaW50GAYgASgLMhoucnVuam91cm5hbC52MS5GaW5nZXJwcmludBINCgVmb3JjZRgHIAEoCBIZChFjb252ZXJzYXRpb25fZnJvbRgIIAEoBRITCgt1bmNvbXBhY3RlZBgJIAEoCCKgAQoNQ2xhaW1SZXNwb25zZRITCgtjbGFpbV90b2tlbhgBIAEoAxIQCghsYXN0X3NlcRgCIAEoAxImCgVzdGF0ZRgDIAEoCzIXLnJ1bmpvdXJuYWwudjEuUnVuU3RhdGUSJwoEZ2F0ZRgEIAEoCzIZLnJ1bmpvdXJuYWwudjEuR2F0ZVJlcG9ydBIXCg9yZXN1bWVfcmVtaW5kZXIYBSABKAkiYAoLRm9sZFJlcXVlc3QSDgoGcnVuX2lkGAEgASgJEhEKCWFzX29mX3NlcRgCIAEoAxIZChFjb252ZXJzYXRpb25fZnJvbRgDIAEoBRITCgt1bmNvbXBhY3RlZBgEIAEoCCI2CgxGb2xkUmVzcG9uc2USJgoFc3RhdGUYASABKAsyFy5ydW5qb3VybmFsLnYxLlJ1blN0YXRlInQKDUFuc3dlclJlcXVlc3QSDgoGcnVuX2lkGAEgASgJEhMKC3Rvb2xfdXNlX2lkGAIgASgJEiwKB2NvbnRlbnQYAyADKAsyGy5ydW5qb3VybmFsLnYxLkNvbnRlbnRCbG9jaxIQCghpc19lcnJvchgEIAEoCCIdCg5BbnN3ZXJSZXNwb25zZRILCgNzZXEYASABKAMiggEKDkFwcHJvdmVSZXF1ZXN0Eg4KBnJ1bl9pZBgBIAEoCRITCgt0b29sX3VzZV9pZBgCIAEoCRIpCghkZWNpc2lvbhgDIAEoDjIXLnJ1bmpvdXJuYWwudjEuRGVjaXNpb24SEAoIYXBwcm92ZXIYBCABKAkSDgoGcmVhc29uGAUgASgJIh4KD0FwcHJvdmVSZXNwb25zZRILCgNzZXEYASABKAMi9QIKD0xpc3RSdW5zUmVxdWVzdBIRCglwYWdlX3NpemUYASABKAUSEgoKcGFnZV90b2tlbhgCIAEoCRIoCgZzdGF0dXMYAyABKA4yGC5ydW5qb3VybmFsLnYxLlJ1blN0YXR1cxI6CgZsYWJlbHMYBCADKAsyKi5ydW5qb3VybmFsLnYxLkxpc3RSdW5zUmVxdWVzdC5MYWJlbHNFbnRyeRIaChJ3YWl0aW5nX2Zvcl9wZXJzb24YBSABKAgSDwoHdGFza19pZBgGIAEoCRIVCg1wYXJlbnRfcnVuX2lkGAcgASgJEjIKDnN0b3BwZWRfYmVmb3JlGAggASgLMhouZ29vZ2xlLnByb3RvYnVmLlRpbWVzdGFtcBIZChFzcGF3bmVkX2J5X3J1bl9pZBgJIAEoCRITCgtyb290X3J1bl9pZBgKIAEoCRotCgtMYWJlbHNFbnRyeRILCgNrZXkYASABKAkSDQoFdmFsdWUYAiABKAk6AjgBIlQKEExpc3RSdW5zUmVzcG9uc2USJwoEcnVucxgBIAMoCzIZLnJ1bmpvdXJuYWwudjEuUnVuU3VtbWFyeRIXCg9uZXh0X3BhZ2VfdG9rZW4YAiABKAkiLwoLUmVhZFJlcXVlc3QSDgoGcnVuX2lkGAEgASgJEhAKCGZyb21fc2VxGAIgASgDIl4KDFJlYWRSZXNwb25zZRIsCgZyZWNvcmQYASABKAsyHC5ydW5qb3VybmFsLnYxLkpvdXJuYWxSZWNvcmQSEwoLc3RvcmVkX2xpbmUYAiABKAwSCwoDc2VxGAMgASgDIjEKDFdhdGNoUmVxdWVzdBIOCgZydW5faWQYASABKAkSEQoJYWZ0ZXJfc2VxGAIgASgDInUKDVdhdGNoUmVzcG9uc2USLQoGcmVjb3JkGAEgASgLMhsucnVuam91cm5hbC52MS5SZWFkUmVzcG9uc2VIABIsCgljYXVnaHRfdXAYAiABKAsyFy5ydW5qb3VybmFsLnYxLkNhdWdodFVwSABCBwoFZXZlbnQiHAoIQ2F1Z2h0VXASEAoIaGVhZF9zZXEYASABKAMinAIKEFdhdGNoUnVuc1JlcXVlc3QSKAoGc3RhdHVzGAEgASgOMhgucnVuam91cm5hbC52MS5SdW5TdGF0dXMSOwoGbGFiZWxzGAIgAygLMisucnVuam91cm5hbC52MS5XYXRjaFJ1bnNSZXF1ZXN0LkxhYmVsc0VudHJ5EhoKEndhaXRpbmdfZm9yX3BlcnNvbhgDIAEoCBIPCgd0YXNrX2lkGAQgASgJEhUKDXBhcmVudF9ydW5faWQYBSABKAkSGQoRc3Bhd25lZF9ieV9ydW5faWQYBiABKAkSEwoLcm9vdF9ydW5faWQYByABKAkaLQoLTGFiZWxzRW50cnkSCwoDa2V5GAEgASgJEg0KBXZhbHVlGAIgASgJOgI4ASKcAQoRV2F0Y2hSdW5zUmVzcG9uc2USKAoDcnVuGAEgASgLMhkucnVuam91cm5hbC52MS5SdW5TdW1tYXJ5SAASLAoJY2F1Z2h0X3VwGAIgASgLMhcucnVuam91cm5hbC52MS5DYXVnaHRVcEgAEiYKBGxlZnQYAyABKAsyFi5ydW5qb3VybmFsLnYxLlJ1bkxlZnRIAEIHCgVldmVudCIqCgdSdW5MZWZ0Eg4KBnJ1bl9pZBgBIAEoCRIPCgdkZWxldGVkGAIgASgIIkQKDkZvcmtSdW5SZXF1ZXN0Eg4KBnJ1bl9pZBgBIAEoCRIOCgZhdF9zZXEYAiABKAMSEgoKbmV3X3J1bl9pZBgDIAEoCSJjCg9Gb3JrUnVuUmVzcG9uc2USDgoGcnVuX2lkGAEgASgJEhAKCGxhc3Rfc2VxGAIgASgDEi4KC2ZvcmtlZF9mcm9tGAMgASgLMhkucnVuam91cm5hbC52MS5Gb3JrT3JpZ2luIlQKEERlbGV0ZVJ1blJlcXVlc3QSDgoGcnVuX2lkGAEgASgJEhkKEWV4cGVjdGVkX2xhc3Rfc2VxGAIgASgDEhUKDXdpdGhfY2hpbGRyZW4YAyABKAgiRgoRRGVsZXRlUnVuUmVzcG9uc2USEAoIbGFzdF9zZXEYASABKAMSDwoHZGVsZXRlZBgCIAEoCBIOCgZlcmFzZWQYAyABKAgifQoPU3Bhd25SdW5SZXF1ZXN0Eg4KBnJ1bl9pZBgBIAEoCRITCgt0b29sX3VzZV9pZBgCIAEoCRISCgpuZXdfcnVuX2lkGAMgASgJEiEKBG1ldGEYBCABKAsyEy5ydW5qb3VybmFsLnYxLk1ldGESDgoGcmVhc29uGAUgASgJIo0BChBTcGF3blJ1blJlc3BvbnNlEg4KBnJ1bl9pZBgBIAEoCRIQCghsYXN0X3NlcRgCIAEoAxIuCgpzcGF3bmVkX2J5GAMgASgLMhoucnVuam91cm5hbC52MS5TcGF3bk9yaWdpbhIUCgxkZWZlcnJhbF9zZXEYBCABKAMSEQoJZHVwbGljYXRlGAUgASgIMtIHCg5Kb3VybmFsU2VydmljZRJFCgZBcHBlbmQSHC5ydW5qb3VybmFsLnYxLkFwcGVuZFJlcXVlc3QaHS5ydW5qb3VybmFsLnYxLkFwcGVuZFJlc3BvbnNlElQKC0FwcGVuZEJhdGNoEiEucnVuam91cm5hbC52MS5BcHBlbmRCYXRjaFJlcXVlc3QaIi5ydW5qb3VybmFsLnYxLkFwcGVuZEJhdGNoUmVzcG9uc2USQgoFQ2xhaW0SGy5ydW5qb3VybmFsLnYxLkNsYWltUmVxdWVzdBocLnJ1bmpvdXJuYWwudjEuQ2xhaW1SZXNwb25zZRI/CgRGb2xkEhoucnVuam91cm5hbC52MS5Gb2xkUmVxdWVzdBobLnJ1bmpvdXJuYWwudjEuRm9sZFJlc3BvbnNlEkUKBkFuc3dlchIcLnJ1bmpvdXJuYWwudjEuQW5zd2VyUmVxdWVzdBodLnJ1bmpvdXJuYWwudjEuQW5zd2VyUmVzcG9uc2USSAoHQXBwcm92ZRIdLnJ1bmpvdXJuYWwudjEuQXBwcm92ZVJlcXVlc3QaHi5ydW5qb3VybmFsLnYxLkFwcHJvdmVSZXNwb25zZRJLCghMaXN0UnVucxIeLnJ1bmpvdXJuYWwudjEuTGlzdFJ1bnNSZXF1ZXN0Gh8ucnVuam91cm5hbC52MS5MaXN0UnVuc1Jlc3BvbnNlEkEKBFJlYWQSGi5ydW5qb3VybmFsLnYxLlJlYWRSZXF1ZXN0GhsucnVuam91cm5hbC52MS5SZWFkUmVzcG9uc2UwARJECgVXYXRjaBIbLnJ1bmpvdXJuYWwudjEuV2F0Y2hSZXF1ZXN0GhwucnVuam91cm5hbC52MS5XYXRjaFJlc3BvbnNlMAESUAoJV2F0Y2hSdW5zEh8ucnVuam91cm5hbC52MS5XYXRjaFJ1bnNSZXF1ZXN0GiAucnVuam91cm5hbC52MS5XYXRjaFJ1bnNSZXNwb25zZTABEkgKB0ZvcmtSdW4SHS5ydW5qb3VybmFsLnYxLkZvcmtSdW5SZXF1ZXN0Gh4ucnVuam91cm5hbC52MS5Gb3JrUnVuUmVzcG9uc2USTgoJRGVsZXRlUnVuEh8ucnVuam91cm5hbC52MS5EZWxldGVSdW5SZXF1ZXN0GiAucnVuam91cm5hbC52MS5EZWxldGVSdW5SZXNwb25zZRJLCghTcGF3blJ1bhIeLnJ1bmpvdXJuYWwudjEuU3Bhd25SdW5SZXF1ZXN0Gh8ucnVuam91cm5hbC52MS5TcGF3blJ1blJlc3BvbnNlYgZwcm90bzM", [file_google_protobuf_timestamp, file_runjournal_v1_records, file_runjournal_v1_state]);

/**
 * Request of JournalService.Append.
 *
 * @generated from message runjournal.v1.AppendRequest
 */
export type AppendRequest = Message<"runjournal.v1.AppendRequest"> & {
  /**
   * The run id (1-128 characters of [A-Za-z0-9_-], starting with a letter or
   * digit).
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The writer's claim token: the seq of its claim record, or 1 for the
   * worker that created the run and has not been superseded. Ignored for the
   * meta record that creates the run.
   *
   * @generated from field: int64 claim_token = 2;
   */
  claimToken: bigint;

  /**
   * The record to append; `record.seq` is the position it must take.
   *
   * @generated from field: runjournal.v1.JournalRecord record = 3;
   */
  record?: JournalRecord | undefined;
};

/**
 * Describes the message runjournal.v1.AppendRequest.
 * Use `create(AppendRequestSchema)` to create a new message.
 */
export const AppendRequestSchema: GenMessage<AppendRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 0);

/**
 * Response of JournalService.Append.
 *
 * @generated from message runjournal.v1.AppendResponse
 */
export type AppendResponse = Message<"runjournal.v1.AppendResponse"> & {
  /**
   * The seq the record has in the journal.
   *
   * @generated from field: int64 seq = 1;
   */
  seq: bigint;

  /**
   * True when the record was already stored (a retry): nothing was written.
   *
   * @generated from field: bool duplicate = 2;
   */
  duplicate: boolean;

  /**
   * The journal's last seq after the call.
   *
   * @generated from field: int64 last_seq = 3;
   */
  lastSeq: bigint;
};

/**
 * Describes the message runjournal.v1.AppendResponse.
 * Use `create(AppendResponseSchema)` to create a new message.
 */
export const AppendResponseSchema: GenMessage<AppendResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 1);

/**
 * Request of JournalService.AppendBatch.
 *
 * @generated from message runjournal.v1.AppendBatchRequest
 */
export type AppendBatchRequest = Message<"runjournal.v1.AppendBatchRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The writer's claim token, as in AppendRequest.
   *
   * @generated from field: int64 claim_token = 2;
   */
  claimToken: bigint;

  /**
   * Consecutive records: each seq is the previous one + 1. At most 1,000.
   *
   * @generated from field: repeated runjournal.v1.JournalRecord records = 3;
   */
  records: JournalRecord[];
};

/**
 * Describes the message runjournal.v1.AppendBatchRequest.
 * Use `create(AppendBatchRequestSchema)` to create a new message.
 */
export const AppendBatchRequestSchema: GenMessage<AppendBatchRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 2);

/**
 * Response of JournalService.AppendBatch.
 *
 * @generated from message runjournal.v1.AppendBatchResponse
 */
export type AppendBatchResponse = Message<"runjournal.v1.AppendBatchResponse"> & {
  /**
   * The seq of the first record of the batch.
   *
   * @generated from field: int64 first_seq = 1;
   */
  firstSeq: bigint;

  /**
   * How many leading records were already stored (verified duplicates).
   *
   * @generated from field: int32 duplicates = 2;
   */
  duplicates: number;

  /**
   * The journal's last seq after the call.
   *
   * @generated from field: int64 last_seq = 3;
   */
  lastSeq: bigint;
};

/**
 * Describes the message runjournal.v1.AppendBatchResponse.
 * Use `create(AppendBatchResponseSchema)` to create a new message.
 */
export const AppendBatchResponseSchema: GenMessage<AppendBatchResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 3);

/**
 * Request of JournalService.Claim.
 *
 * @generated from message runjournal.v1.ClaimRequest
 */
export type ClaimRequest = Message<"runjournal.v1.ClaimRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The claiming worker's id (1-256 characters), stored in the claim record.
   *
   * @generated from field: string worker_id = 2;
   */
  workerId: string;

  /**
   * The worker's host name, for diagnostics.
   *
   * @generated from field: string host = 3;
   */
  host: string;

  /**
   * The worker's process id, for diagnostics.
   *
   * @generated from field: int32 pid = 4;
   */
  pid: number;

  /**
   * Why the run is claimed, for diagnostics.
   *
   * @generated from field: string reason = 5;
   */
  reason: string;

  /**
   * The configuration the worker will run under, compared by the resume gate.
   *
   * @generated from field: runjournal.v1.Fingerprint fingerprint = 6;
   */
  fingerprint?: Fingerprint | undefined;

  /**
   * Accept blocking differences (and tool differences with a pending batch).
   * Hard differences are refused even when forced.
   *
   * @generated from field: bool force = 7;
   */
  force: boolean;

  /**
   * Return the state's conversation from this message index on, as
   * FoldRequest.conversation_from does (0 returns all of it). A worker that
   * resumes a long run asks for what it lacks, so the answer stays small.
   *
   * @generated from field: int32 conversation_from = 8;
   */
  conversationFrom: number;

  /**
   * Return the whole conversation since the prompt, as if no compaction had
   * happened, as FoldRequest.uncompacted does.
   *
   * @generated from field: bool uncompacted = 9;
   */
  uncompacted: boolean;
};

/**
 * Describes the message runjournal.v1.ClaimRequest.
 * Use `create(ClaimRequestSchema)` to create a new message.
 */
export const ClaimRequestSchema: GenMessage<ClaimRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 4);

/**
 * Response of JournalService.Claim.
 *
 * @generated from message runjournal.v1.ClaimResponse
 */
export type ClaimResponse = Message<"runjournal.v1.ClaimResponse"> & {
  /**
   * The claim token: the seq of the claim record. Send it with every Append.
   *
   * @generated from field: int64 claim_token = 1;
   */
  claimToken: bigint;

  /**
   * The journal's last seq after the claim (and reconfigure) records: the
   * worker's first record goes at last_seq + 1.
   *
   * @generated from field: int64 last_seq = 2;
   */
  lastSeq: bigint;

  /**
   * The folded state after the claim.
   *
   * @generated from field: runjournal.v1.RunState state = 3;
   */
  state?: RunState | undefined;

  /**
   * The resume gate's report.
   *
   * @generated from field: runjournal.v1.GateReport gate = 4;
   */
  gate?: GateReport | undefined;

  /**
   * Text the worker may add to its system prompt to tell the model it was
   * resumed. Never part of any fingerprint.
   *
   * @generated from field: string resume_reminder = 5;
   */
  resumeReminder: string;
};

/**
 * Describes the message runjournal.v1.ClaimResponse.
 * Use `create(ClaimResponseSchema)` to create a new message.
 */
export const ClaimResponseSchema: GenMessage<ClaimResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 5);

/**
 * Request of JournalService.Fold.
 *
 * @generated from message runjournal.v1.FoldRequest
 */
export type FoldRequest = Message<"runjournal.v1.FoldRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * Fold only the records up to this seq; 0 folds them all. Beyond the run's
   * last seq it is INVALID_ARGUMENT ("has only N records").
   *
   * @generated from field: int64 as_of_seq = 2;
   */
  asOfSeq: bigint;

  /**
   * Return the conversation from this message index on (0 returns all of
   * it). Every message but the last is final once it has appeared; the last
   * may still grow when a follow-up merges into it. So a worker that keeps
   * the conversation asks from its last known index and replaces that message:
   * on a long run this answers in a fraction of the time of a full fold.
   * RunState.conversation_offset and conversation_size describe the slice.
   *
   * @generated from field: int32 conversation_from = 3;
   */
  conversationFrom: number;

  /**
   * Return the whole conversation since the prompt, as if no compaction had
   * happened (for audit and export); by default a compaction's summary
   * replaces the messages it covers (RunState.compaction_seq).
   *
   * @generated from field: bool uncompacted = 4;
   */
  uncompacted: boolean;
};

/**
 * Describes the message runjournal.v1.FoldRequest.
 * Use `create(FoldRequestSchema)` to create a new message.
 */
export const FoldRequestSchema: GenMessage<FoldRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 6);

/**
 * Response of JournalService.Fold.
 *
 * @generated from message runjournal.v1.FoldResponse
 */
export type FoldResponse = Message<"runjournal.v1.FoldResponse"> & {
  /**
   * The folded state.
   *
   * @generated from field: runjournal.v1.RunState state = 1;
   */
  state?: RunState | undefined;
};

/**
 * Describes the message runjournal.v1.FoldResponse.
 * Use `create(FoldResponseSchema)` to create a new message.
 */
export const FoldResponseSchema: GenMessage<FoldResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 7);

/**
 * Request of JournalService.Answer.
 *
 * @generated from message runjournal.v1.AnswerRequest
 */
export type AnswerRequest = Message<"runjournal.v1.AnswerRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The deferred call to answer.
   *
   * @generated from field: string tool_use_id = 2;
   */
  toolUseId: string;

  /**
   * The result: text and opaque blocks.
   *
   * @generated from field: repeated runjournal.v1.ContentBlock content = 3;
   */
  content: ContentBlock[];

  /**
   * True when the answer is a failure.
   *
   * @generated from field: bool is_error = 4;
   */
  isError: boolean;
};

/**
 * Describes the message runjournal.v1.AnswerRequest.
 * Use `create(AnswerRequestSchema)` to create a new message.
 */
export const AnswerRequestSchema: GenMessage<AnswerRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 8);

/**
 * Response of JournalService.Answer.
 *
 * @generated from message runjournal.v1.AnswerResponse
 */
export type AnswerResponse = Message<"runjournal.v1.AnswerResponse"> & {
  /**
   * The seq of the written tool_result record.
   *
   * @generated from field: int64 seq = 1;
   */
  seq: bigint;
};

/**
 * Describes the message runjournal.v1.AnswerResponse.
 * Use `create(AnswerResponseSchema)` to create a new message.
 */
export const AnswerResponseSchema: GenMessage<AnswerResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 9);

/**
 * Request of JournalService.Approve.
 *
 * @generated from message runjournal.v1.ApproveRequest
 */
export type ApproveRequest = Message<"runjournal.v1.ApproveRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The call decided on; it must be in the run's pending batch.
   *
   * @generated from field: string tool_use_id = 2;
   */
  toolUseId: string;

  /**
   * The decision (approved or denied).
   *
   * @generated from field: runjournal.v1.Decision decision = 3;
   */
  decision: Decision;

  /**
   * Who decides (1-256 characters). With token auth on, leave it empty (or
   * send the token's own name): the server records the authenticated token's
   * name, and refuses a different name with PERMISSION_DENIED, so an
   * approval never names someone who did not send it. With auth off it is
   * required and recorded as sent.
   *
   * @generated from field: string approver = 4;
   */
  approver: string;

  /**
   * Why, for the record.
   *
   * @generated from field: string reason = 5;
   */
  reason: string;
};

/**
 * Describes the message runjournal.v1.ApproveRequest.
 * Use `create(ApproveRequestSchema)` to create a new message.
 */
export const ApproveRequestSchema: GenMessage<ApproveRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 10);

/**
 * Response of JournalService.Approve.
 *
 * @generated from message runjournal.v1.ApproveResponse
 */
export type ApproveResponse = Message<"runjournal.v1.ApproveResponse"> & {
  /**
   * The seq of the written approval record.
   *
   * @generated from field: int64 seq = 1;
   */
  seq: bigint;
};

/**
 * Describes the message runjournal.v1.ApproveResponse.
 * Use `create(ApproveResponseSchema)` to create a new message.
 */
export const ApproveResponseSchema: GenMessage<ApproveResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 11);

/**
 * Request of JournalService.ListRuns.
 *
 * @generated from message runjournal.v1.ListRunsRequest
 */
export type ListRunsRequest = Message<"runjournal.v1.ListRunsRequest"> & {
  /**
   * The maximum number of runs to return, 1-1000; 0 means 100.
   *
   * @generated from field: int32 page_size = 1;
   */
  pageSize: number;

  /**
   * The `next_page_token` of a previous call with the same filters (any
   * `page_size`), or empty for the first page. With other filters it is
   * INVALID_ARGUMENT: a token continues only the listing that made it.
   *
   * @generated from field: string page_token = 2;
   */
  pageToken: string;

  /**
   * Only runs with this status; unspecified matches every status.
   *
   * @generated from field: runjournal.v1.RunStatus status = 3;
   */
  status: RunStatus;

  /**
   * Only runs whose labels include every one of these key/value pairs.
   *
   * @generated from field: map<string, string> labels = 4;
   */
  labels: { [key: string]: string };

  /**
   * Only runs that wait for a person (the human inbox): a deferred call
   * without an answer, or a call awaiting a decision.
   *
   * @generated from field: bool waiting_for_person = 5;
   */
  waitingForPerson: boolean;

  /**
   * Only runs whose meta names this task; empty matches every run.
   *
   * @generated from field: string task_id = 6;
   */
  taskId: string;

  /**
   * Only runs forked from this run (meta.forked_from.run_id); empty matches
   * every run.
   *
   * @generated from field: string parent_run_id = 7;
   */
  parentRunId: string;

  /**
   * Only stopped runs (a terminal record describes them) whose last record
   * was stored before this time (RunSummary.updated_at): what retention and
   * `runjournal gc` delete. Unset matches every run.
   *
   * @generated from field: google.protobuf.Timestamp stopped_before = 8;
   */
  stoppedBefore?: Timestamp | undefined;

  /**
   * Only child runs spawned by this run (meta.spawned_by.run_id); empty
   * matches every run.
   *
   * @generated from field: string spawned_by_run_id = 9;
   */
  spawnedByRunId: string;

  /**
   * Only this run and the runs spawned under it, at any depth
   * (meta.spawned_by.root_run_id); empty matches every run.
   *
   * @generated from field: string root_run_id = 10;
   */
  rootRunId: string;
};

/**
 * Describes the message runjournal.v1.ListRunsRequest.
 * Use `create(ListRunsRequestSchema)` to create a new message.
 */
export const ListRunsRequestSchema: GenMessage<ListRunsRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 12);

/**
 * Response of JournalService.ListRuns.
 *
 * @generated from message runjournal.v1.ListRunsResponse
 */
export type ListRunsResponse = Message<"runjournal.v1.ListRunsResponse"> & {
  /**
   * The runs of this page, newest first (by created time, then run id).
   *
   * @generated from field: repeated runjournal.v1.RunSummary runs = 1;
   */
  runs: RunSummary[];

  /**
   * The token for the next page; empty on the last page.
   *
   * @generated from field: string next_page_token = 2;
   */
  nextPageToken: string;
};

/**
 * Describes the message runjournal.v1.ListRunsResponse.
 * Use `create(ListRunsResponseSchema)` to create a new message.
 */
export const ListRunsResponseSchema: GenMessage<ListRunsResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 13);

/**
 * Request of JournalService.Read.
 *
 * @generated from message runjournal.v1.ReadRequest
 */
export type ReadRequest = Message<"runjournal.v1.ReadRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The first seq to send; 0 or 1 sends from the start. At most the run's
   * last seq + 1 (which sends nothing); beyond, INVALID_ARGUMENT.
   *
   * @generated from field: int64 from_seq = 2;
   */
  fromSeq: bigint;
};

/**
 * Describes the message runjournal.v1.ReadRequest.
 * Use `create(ReadRequestSchema)` to create a new message.
 */
export const ReadRequestSchema: GenMessage<ReadRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 14);

/**
 * One stored record, as streamed by JournalService.Read.
 *
 * @generated from message runjournal.v1.ReadResponse
 */
export type ReadResponse = Message<"runjournal.v1.ReadResponse"> & {
  /**
   * The record. For a record of a protocol id this server does not know (an
   * `optional` record from a newer writer), only `seq` and `optional` are set
   * and no payload is: `stored_line` holds the record whole.
   *
   * @generated from field: runjournal.v1.JournalRecord record = 1;
   */
  record?: JournalRecord | undefined;

  /**
   * The stored line exactly as kept by the backend (canonical JSON with its
   * checksum), without the trailing newline.
   *
   * @generated from field: bytes stored_line = 2;
   */
  storedLine: Uint8Array;

  /**
   * The record's seq, always set, whatever its kind. A client resuming a
   * broken stream asks again with `from_seq` = the last `seq` it received + 1,
   * so no record is repeated or skipped.
   *
   * @generated from field: int64 seq = 3;
   */
  seq: bigint;
};

/**
 * Describes the message runjournal.v1.ReadResponse.
 * Use `create(ReadResponseSchema)` to create a new message.
 */
export const ReadResponseSchema: GenMessage<ReadResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 15);

/**
 * Request of JournalService.Watch.
 *
 * @generated from message runjournal.v1.WatchRequest
 */
export type WatchRequest = Message<"runjournal.v1.WatchRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * Send the records after this seq; 0 sends from the start. At most the
   * run's last seq (a seq a client can have received); beyond,
   * INVALID_ARGUMENT.
   *
   * @generated from field: int64 after_seq = 2;
   */
  afterSeq: bigint;
};

/**
 * Describes the message runjournal.v1.WatchRequest.
 * Use `create(WatchRequestSchema)` to create a new message.
 */
export const WatchRequestSchema: GenMessage<WatchRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 16);

/**
 * One item of JournalService.Watch.
 *
 * @generated from message runjournal.v1.WatchResponse
 */
export type WatchResponse = Message<"runjournal.v1.WatchResponse"> & {
  /**
   * What the item is.
   *
   * @generated from oneof runjournal.v1.WatchResponse.event
   */
  event: {
    /**
     * A stored record, as Read sends it.
     *
     * @generated from field: runjournal.v1.ReadResponse record = 1;
     */
    value: ReadResponse;
    case: "record";
  } | {
    /**
     * Sent once, after the records stored when the watch began.
     *
     * @generated from field: runjournal.v1.CaughtUp caught_up = 2;
     */
    value: CaughtUp;
    case: "caughtUp";
  } | { case: undefined; value?: undefined };
};

/**
 * Describes the message runjournal.v1.WatchResponse.
 * Use `create(WatchResponseSchema)` to create a new message.
 */
export const WatchResponseSchema: GenMessage<WatchResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 17);

/**
 * The end of the stored part of a watch: live items follow.
 *
 * @generated from message runjournal.v1.CaughtUp
 */
export type CaughtUp = Message<"runjournal.v1.CaughtUp"> & {
  /**
   * Watch: the run's last seq when the stored part ended (every record up to
   * it has been sent). WatchRuns: 0.
   *
   * @generated from field: int64 head_seq = 1;
   */
  headSeq: bigint;
};

/**
 * Describes the message runjournal.v1.CaughtUp.
 * Use `create(CaughtUpSchema)` to create a new message.
 */
export const CaughtUpSchema: GenMessage<CaughtUp> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 18);

/**
 * Request of JournalService.WatchRuns. The filters are those of
 * ListRunsRequest.
 *
 * @generated from message runjournal.v1.WatchRunsRequest
 */
export type WatchRunsRequest = Message<"runjournal.v1.WatchRunsRequest"> & {
  /**
   * Only runs with this status; unspecified matches every status.
   *
   * @generated from field: runjournal.v1.RunStatus status = 1;
   */
  status: RunStatus;

  /**
   * Only runs whose labels include every one of these key/value pairs.
   *
   * @generated from field: map<string, string> labels = 2;
   */
  labels: { [key: string]: string };

  /**
   * Only runs that wait for a person.
   *
   * @generated from field: bool waiting_for_person = 3;
   */
  waitingForPerson: boolean;

  /**
   * Only runs whose meta names this task.
   *
   * @generated from field: string task_id = 4;
   */
  taskId: string;

  /**
   * Only runs forked from this run.
   *
   * @generated from field: string parent_run_id = 5;
   */
  parentRunId: string;

  /**
   * Only child runs spawned by this run.
   *
   * @generated from field: string spawned_by_run_id = 6;
   */
  spawnedByRunId: string;

  /**
   * Only this run and the runs spawned under it, at any depth.
   *
   * @generated from field: string root_run_id = 7;
   */
  rootRunId: string;
};

/**
 * Describes the message runjournal.v1.WatchRunsRequest.
 * Use `create(WatchRunsRequestSchema)` to create a new message.
 */
export const WatchRunsRequestSchema: GenMessage<WatchRunsRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 19);

/**
 * One item of JournalService.WatchRuns.
 *
 * @generated from message runjournal.v1.WatchRunsResponse
 */
export type WatchRunsResponse = Message<"runjournal.v1.WatchRunsResponse"> & {
  /**
   * What the item is.
   *
   * @generated from oneof runjournal.v1.WatchRunsResponse.event
   */
  event: {
    /**
     * The summary of a matching run, as it is now.
     *
     * @generated from field: runjournal.v1.RunSummary run = 1;
     */
    value: RunSummary;
    case: "run";
  } | {
    /**
     * Sent once, after the summaries of the runs that matched when the watch
     * began.
     *
     * @generated from field: runjournal.v1.CaughtUp caught_up = 2;
     */
    value: CaughtUp;
    case: "caughtUp";
  } | {
    /**
     * A run sent before that no longer matches, or was deleted.
     *
     * @generated from field: runjournal.v1.RunLeft left = 3;
     */
    value: RunLeft;
    case: "left";
  } | { case: undefined; value?: undefined };
};

/**
 * Describes the message runjournal.v1.WatchRunsResponse.
 * Use `create(WatchRunsResponseSchema)` to create a new message.
 */
export const WatchRunsResponseSchema: GenMessage<WatchRunsResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 20);

/**
 * A run that left a WatchRuns stream.
 *
 * @generated from message runjournal.v1.RunLeft
 */
export type RunLeft = Message<"runjournal.v1.RunLeft"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * True when the run was deleted; false when it no longer matches.
   *
   * @generated from field: bool deleted = 2;
   */
  deleted: boolean;
};

/**
 * Describes the message runjournal.v1.RunLeft.
 * Use `create(RunLeftSchema)` to create a new message.
 */
export const RunLeftSchema: GenMessage<RunLeft> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 21);

/**
 * Request of JournalService.ForkRun.
 *
 * @generated from message runjournal.v1.ForkRunRequest
 */
export type ForkRunRequest = Message<"runjournal.v1.ForkRunRequest"> & {
  /**
   * The source run.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The source's last record to copy (>= 1); 0 copies every record. Beyond
   * the source's last seq, INVALID_ARGUMENT.
   *
   * @generated from field: int64 at_seq = 2;
   */
  atSeq: bigint;

  /**
   * The new run's id (same grammar as a run id); it must not exist.
   *
   * @generated from field: string new_run_id = 3;
   */
  newRunId: string;
};

/**
 * Describes the message runjournal.v1.ForkRunRequest.
 * Use `create(ForkRunRequestSchema)` to create a new message.
 */
export const ForkRunRequestSchema: GenMessage<ForkRunRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 22);

/**
 * Response of JournalService.ForkRun.
 *
 * @generated from message runjournal.v1.ForkRunResponse
 */
export type ForkRunResponse = Message<"runjournal.v1.ForkRunResponse"> & {
  /**
   * The new run's id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The new run's last seq (the source's seq it was forked at).
   *
   * @generated from field: int64 last_seq = 2;
   */
  lastSeq: bigint;

  /**
   * Where it branched off, as its meta records it.
   *
   * @generated from field: runjournal.v1.ForkOrigin forked_from = 3;
   */
  forkedFrom?: ForkOrigin | undefined;
};

/**
 * Describes the message runjournal.v1.ForkRunResponse.
 * Use `create(ForkRunResponseSchema)` to create a new message.
 */
export const ForkRunResponseSchema: GenMessage<ForkRunResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 23);

/**
 * Request of JournalService.DeleteRun.
 *
 * @generated from message runjournal.v1.DeleteRunRequest
 */
export type DeleteRunRequest = Message<"runjournal.v1.DeleteRunRequest"> & {
  /**
   * The run id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The run's last seq as the caller last saw it (>= 1). For a run deleted
   * already, only its last seq when it was deleted answers (a retry).
   *
   * @generated from field: int64 expected_last_seq = 2;
   */
  expectedLastSeq: bigint;

  /**
   * Also delete every run spawned under this one (its children, theirs, ...),
   * each at its last seq, children before their parents, so a deletion cut
   * short never leaves a child without its parent. Without it, deleting a
   * run that has children is INVALID_ARGUMENT naming them.
   *
   * @generated from field: bool with_children = 3;
   */
  withChildren: boolean;
};

/**
 * Describes the message runjournal.v1.DeleteRunRequest.
 * Use `create(DeleteRunRequestSchema)` to create a new message.
 */
export const DeleteRunRequestSchema: GenMessage<DeleteRunRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 24);

/**
 * Response of JournalService.DeleteRun.
 *
 * @generated from message runjournal.v1.DeleteRunResponse
 */
export type DeleteRunResponse = Message<"runjournal.v1.DeleteRunResponse"> & {
  /**
   * The run's last seq when it was deleted.
   *
   * @generated from field: int64 last_seq = 1;
   */
  lastSeq: bigint;

  /**
   * False when the run was already deleted (a retry): nothing changed.
   *
   * @generated from field: bool deleted = 2;
   */
  deleted: boolean;

  /**
   * True when no byte of the run's records is left in the store; false while
   * they are erased in the background (JetStream). DeleteRun again waits
   * for the erasure and answers true.
   *
   * @generated from field: bool erased = 3;
   */
  erased: boolean;
};

/**
 * Describes the message runjournal.v1.DeleteRunResponse.
 * Use `create(DeleteRunResponseSchema)` to create a new message.
 */
export const DeleteRunResponseSchema: GenMessage<DeleteRunResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 25);

/**
 * Request of JournalService.SpawnRun.
 *
 * @generated from message runjournal.v1.SpawnRunRequest
 */
export type SpawnRunRequest = Message<"runjournal.v1.SpawnRunRequest"> & {
  /**
   * The parent run.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The parent's call to delegate; it must be in the parent's pending batch.
   *
   * @generated from field: string tool_use_id = 2;
   */
  toolUseId: string;

  /**
   * The child run's id (same grammar as a run id). Send the same id on a
   * retry: a spawn is verified by it.
   *
   * @generated from field: string new_run_id = 3;
   */
  newRunId: string;

  /**
   * The child's meta, as an Append of its meta would send it: format version
   * 2 or later, fingerprint, prompt, interactive, labels. `run_id` may be
   * empty (it is `new_run_id`); `created_at` is set by the server when unset;
   * `task_id`, `forked_from` and `spawned_by` must be empty (the task is the
   * root's; the server writes `spawned_by`).
   *
   * @generated from field: runjournal.v1.Meta meta = 4;
   */
  meta?: Meta | undefined;

  /**
   * Why the call was delegated, for people (the deferral's reason).
   *
   * @generated from field: string reason = 5;
   */
  reason: string;
};

/**
 * Describes the message runjournal.v1.SpawnRunRequest.
 * Use `create(SpawnRunRequestSchema)` to create a new message.
 */
export const SpawnRunRequestSchema: GenMessage<SpawnRunRequest> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 26);

/**
 * Response of JournalService.SpawnRun.
 *
 * @generated from message runjournal.v1.SpawnRunResponse
 */
export type SpawnRunResponse = Message<"runjournal.v1.SpawnRunResponse"> & {
  /**
   * The child run's id.
   *
   * @generated from field: string run_id = 1;
   */
  runId: string;

  /**
   * The child's last seq now (1 right after it was created).
   *
   * @generated from field: int64 last_seq = 2;
   */
  lastSeq: bigint;

  /**
   * The child's meta link, as stored.
   *
   * @generated from field: runjournal.v1.SpawnOrigin spawned_by = 3;
   */
  spawnedBy?: SpawnOrigin | undefined;

  /**
   * The seq of the parent's deferral naming the child.
   *
   * @generated from field: int64 deferral_seq = 4;
   */
  deferralSeq: bigint;

  /**
   * True when the call had been delegated to this child already (a retry):
   * nothing new was written but what a cut-short spawn had left to do.
   *
   * @generated from field: bool duplicate = 5;
   */
  duplicate: boolean;
};

/**
 * Describes the message runjournal.v1.SpawnRunResponse.
 * Use `create(SpawnRunResponseSchema)` to create a new message.
 */
export const SpawnRunResponseSchema: GenMessage<SpawnRunResponse> = /*@__PURE__*/
  messageDesc(file_runjournal_v1_journal_service, 27);

/**
 * Keeps the durable journals of agent runs. The server owns sequence checking,
 * claiming, folding and journal locks, so every client gets the same semantics.
 *
 * @generated from service runjournal.v1.JournalService
 */
export const JournalService: GenService<{
  /**
   * Appends one record to a run. A run is created by appending its `meta`
   * record at seq 1. The append rule: seq == last_seq + 1 is written;
   * seq <= last_seq is a retry, acknowledged as a duplicate only when the
   * stored record is byte-identical, else SEQ_CONFLICT; seq > last_seq + 1 is
   * SEQ_GAP. The record is validated against its schema and against the run's
   * folded state before anything is written. Acknowledged means durable.
   * RUN_EXISTS is a different `meta` at seq 1 of an existing run; any other
   * record there is SEQ_CONFLICT. An appended `reconfigure` passes the resume
   * gate first (see Reconfigure): a hard or blocking change is RESUME_REFUSED.
   *
   * Errors: INVALID_ARGUMENT, INVALID_RECORD, RECORD_TOO_LARGE, RUN_NOT_FOUND,
   * RUN_EXISTS, SEQ_GAP, SEQ_CONFLICT, RUN_CLAIMED, RUN_LOCKED,
   * RESUME_REFUSED, CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL,
   * STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.Append
   */
  append: {
    methodKind: "unary";
    input: typeof AppendRequestSchema;
    output: typeof AppendResponseSchema;
  },
  /**
   * Appends several consecutive records of one run, all or nothing, with one
   * write and one sync. A batch that repeats already-stored records verifies
   * them like single appends and writes only the new tail. All or nothing
   * holds across a crash too: a batch the server died in the middle of is
   * never read back in part, and a batch that creates a run (meta and more)
   * leaves the whole run or none.
   *
   * Errors: as Append. A refusal about one record of the batch (INVALID_RECORD,
   * RECORD_TOO_LARGE, SEQ_CONFLICT, SEQ_GAP for the first new record,
   * RUN_EXISTS for a different meta, INVALID_ARGUMENT for a record out of
   * sequence) carries `index`, the record's 0-based position in `records`; a
   * refusal about the run (RUN_CLAIMED, CORRUPT_JOURNAL, ...) carries none.
   *
   * @generated from rpc runjournal.v1.JournalService.AppendBatch
   */
  appendBatch: {
    methodKind: "unary";
    input: typeof AppendBatchRequestSchema;
    output: typeof AppendBatchResponseSchema;
  },
  /**
   * Takes over a run for a worker. Order: load and gate first (a refusal
   * writes nothing and takes no lock); then append the `claim` record; then a
   * `reconfigure` record when a fingerprint difference was crossed; then read
   * `last_seq`. The claim's seq is the worker's claim token for every later
   * Append; any earlier holder is refused at its next append. The answer
   * carries the folded state; when it would not fit in the server's largest
   * response (`max_send_message_bytes`), the claim is refused with
   * RESPONSE_TOO_LARGE before anything is written: claim again with
   * `conversation_from` and read the conversation with Fold.
   *
   * Errors: INVALID_ARGUMENT, RUN_NOT_FOUND, RESUME_REFUSED, RUN_LOCKED,
   * RESPONSE_TOO_LARGE (with `size` and `limit`), CORRUPT_JOURNAL,
   * VERSION_MISMATCH, STORAGE_FULL, STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.Claim
   */
  claim: {
    methodKind: "unary";
    input: typeof ClaimRequestSchema;
    output: typeof ClaimResponseSchema;
  },
  /**
   * Returns the folded state of a run, now or as of a given seq.
   *
   * Errors: INVALID_ARGUMENT (also an `as_of_seq` beyond the run's last seq:
   * "has only N records"), RUN_NOT_FOUND, RUN_DELETED, CORRUPT_JOURNAL,
   * VERSION_MISMATCH, RESPONSE_TOO_LARGE.
   *
   * @generated from rpc runjournal.v1.JournalService.Fold
   */
  fold: {
    methodKind: "unary";
    input: typeof FoldRequestSchema;
    output: typeof FoldResponseSchema;
  },
  /**
   * Answers a deferred call of the run's pending batch by writing exactly one
   * ordinary `tool_result` record (remote), so the next resume is an ordinary
   * resume. It validates before taking any lock; a refusal writes nothing.
   * Needs no claim token. With token auth on it needs the `operator` scope
   * and the record's `answered_by` is the token's name.
   *
   * Answer and Approve keep one rule: a person's write is taken only for
   * what the call waits for (PendingCall.waiting_for). Answer takes a call
   * deferred for an answer (WAITING_FOR_ANSWER), or delegated to a child run
   * (WAITING_FOR_CHILD: a person may take it back; the child's outcome then
   * becomes a note). A call already answered is ALREADY_ANSWERED (with
   * `answered_at_seq`); a call not in the pending batch, never deferred (its
   * worker runs it), or deferred for an operator's decision
   * (`needs_approval`, decided or not) is NOT_DEFERRED: answering it would
   * settle it without the decision the worker asked for. To keep such a call
   * from running, deny it with Approve; its worker then answers it with an
   * error result.
   *
   * Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
   * ALREADY_ANSWERED, NOT_DEFERRED, RUN_LOCKED, CORRUPT_JOURNAL,
   * VERSION_MISMATCH, RECORD_TOO_LARGE, STORAGE_FULL, STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.Answer
   */
  answer: {
    methodKind: "unary";
    input: typeof AnswerRequestSchema;
    output: typeof AnswerResponseSchema;
  },
  /**
   * Records an operator's decision on a call of the run's pending batch that
   * was deferred for one (a `deferral` with `needs_approval`: the call is
   * WAITING_FOR_DECISION), by writing exactly one `approval` record. It
   * validates before taking any lock: a call already answered is
   * ALREADY_ANSWERED (with `answered_at_seq`), a call already decided is
   * ALREADY_DECIDED (with `decided_at_seq`), a call not in the pending batch
   * is CALL_NOT_PENDING, and a call in it that waits for no decision (never
   * deferred: its worker runs it; or deferred for an answer, or to a child
   * run) is NOT_DEFERRED, by the rule of Answer: a decision nobody asked for
   * would take the call from its worker, or from the person who was to
   * answer it. A refusal writes nothing. Needs no claim token. An approved
   * call is then run by the worker; a denied one is answered by the worker
   * with an error result. With token auth on it needs the `operator` scope
   * and the approver is the token's name (see ApproveRequest.approver).
   *
   * Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
   * ALREADY_ANSWERED, ALREADY_DECIDED, CALL_NOT_PENDING, NOT_DEFERRED,
   * RUN_LOCKED, CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL,
   * STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.Approve
   */
  approve: {
    methodKind: "unary";
    input: typeof ApproveRequestSchema;
    output: typeof ApproveResponseSchema;
  },
  /**
   * Lists runs, newest first, with summaries derived by the listing rule (the
   * meta and the last non-inert record; journals are not folded). A run is
   * listed with status CORRUPT when the part the listing reads (its meta and
   * its tail) is damaged, or when this server already found its journal
   * damaged while reading it whole (Fold, Claim, Append, Read); such runs are
   * never hidden. A run the store fails to read (STORAGE_UNAVAILABLE) is
   * listed with status UNAVAILABLE and never fails the page.
   *
   * The order and the filters are answered from a listing index (the runs'
   * places and last known states, checked against the journals at every
   * start and told of every write); every summary returned is read from its
   * journal. A token walks only the runs under its prefixes, so a listing's
   * latency does not tell how many runs other tenants have. Known
   * limitation: while the index is being rebuilt (a missing or damaged
   * index), and always on the JetStream backend (which keeps no index: a
   * replica hears of another's writes a moment late), the listing reads
   * every run instead: slower, and its timing then reveals roughly how many
   * runs the store holds.
   *
   * Pages follow AIP-158: a `page_token` continues only the listing that
   * made it, so the next call sends the same filters (only `page_size` may
   * change); a token sent with other filters, or by a token of other run-id
   * prefixes, is INVALID_ARGUMENT naming `page_token`, never a silent jump
   * into another listing that would skip or repeat runs.
   *
   * Errors: INVALID_ARGUMENT (bad page token, a page token of other filters,
   * page size or filter).
   *
   * @generated from rpc runjournal.v1.JournalService.ListRuns
   */
  listRuns: {
    methodKind: "unary";
    input: typeof ListRunsRequestSchema;
    output: typeof ListRunsResponseSchema;
  },
  /**
   * Streams a run's stored records from a seq, with their stored bytes, in
   * seq order; every item carries its `seq`.
   *
   * Only acknowledged records are sent. From `last_seq` + 1 the stream is
   * empty (a client that has every record); from further on it is
   * INVALID_ARGUMENT (see "Positions in a run" above).
   *
   * Errors: INVALID_ARGUMENT (also a `from_seq` beyond the run's last seq + 1),
   * RUN_NOT_FOUND, RUN_DELETED, CORRUPT_JOURNAL (nothing is sent for a
   * damaged journal).
   *
   * @generated from rpc runjournal.v1.JournalService.Read
   */
  read: {
    methodKind: "server_streaming";
    input: typeof ReadRequestSchema;
    output: typeof ReadResponseSchema;
  },
  /**
   * Follows a run: sends its stored records after `after_seq` in seq order,
   * then one `caught_up` item with the head seq at that moment, then each
   * record as it is acknowledged, in order, with no gap and no duplicate,
   * until the client cancels. Records written through another server replica
   * (JetStream) are sent too. A slow reader is held by gRPC flow control and
   * read again from the store when it catches up; the server buffers nothing
   * for it beyond one item and one read of the store (as Read: about 256 KiB,
   * or one larger record). After a transport failure a client watches again
   * with `after_seq` = the last `seq` it received; a server that shuts down
   * ends its watch streams at once with UNAVAILABLE and no ErrorInfo, to be
   * resumed the same way through another server. Only acknowledged records
   * are sent (as Read). A JetStream replica hears of the others' records
   * through a consumer of the stream, so they arrive a moment later than
   * records written through the replica watched.
   *
   * Errors: INVALID_ARGUMENT (also an `after_seq` beyond the run's last seq:
   * no client can have received it), RUN_NOT_FOUND, RUN_DELETED (also ends a
   * stream when the run is deleted while watched), CORRUPT_JOURNAL,
   * STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.Watch
   */
  watch: {
    methodKind: "server_streaming";
    input: typeof WatchRequestSchema;
    output: typeof WatchResponseSchema;
  },
  /**
   * Follows the listing: sends the summary of every run that matches the
   * filters (as ListRuns, newest first), then one `caught_up` item, then a
   * summary each time a matching run changes (created, status, waiting for a
   * person, claimed, or any other record) until the client cancels. A run
   * that stops matching, or is deleted, is sent once as `left`. A slow
   * reader may get coalesced summaries of a run (the newest wins), never a
   * stale one: each is read after the change it reports. A change that leaves
   * the summary as it was sent last sends nothing. With token auth on, only
   * runs within the token's prefixes. A server that shuts down ends the
   * stream with UNAVAILABLE and no ErrorInfo; watch again (the stored part
   * then says what changed meanwhile).
   *
   * Errors: INVALID_ARGUMENT (a bad filter).
   *
   * @generated from rpc runjournal.v1.JournalService.WatchRuns
   */
  watchRuns: {
    methodKind: "server_streaming";
    input: typeof WatchRunsRequestSchema;
    output: typeof WatchRunsResponseSchema;
  },
  /**
   * Branches a run: creates `new_run_id` whose meta is the source's with its
   * own run id, a new `created_at`, no task, and `forked_from` naming the
   * source, its seq and the hash of its prefix; its records 2..at_seq are the
   * source's stored bytes. The source is unchanged. A pending batch survives
   * (a person can answer the fork differently). Claims copied from the source
   * do not reach the fork: its claim token is 1 (the forker's) until a claim
   * is written in the fork itself. Created atomically: all of it or nothing.
   *
   * Errors: INVALID_ARGUMENT (`at_seq` beyond the source's last seq),
   * RUN_NOT_FOUND, RUN_DELETED, RUN_EXISTS (for `new_run_id`), RUN_LOCKED,
   * CORRUPT_JOURNAL, STORAGE_FULL, STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.ForkRun
   */
  forkRun: {
    methodKind: "unary";
    input: typeof ForkRunRequestSchema;
    output: typeof ForkRunResponseSchema;
  },
  /**
   * Deletes a run: a durable tombstone is kept, so the run id is never used
   * again (a later Append, Claim, Fold, Read or Watch of it is RUN_DELETED,
   * even a stale retry of its meta), and its journal is removed from the
   * store. File: truncated, unlinked and the directory fsynced before the
   * answer (`erased` true). JetStream: every message is overwritten and
   * deleted in the background after the answer (`erased` false; each
   * message costs a synced write, a few ms), resumed by the next start if
   * the server stops first. Refused unless `expected_last_seq` is the run's
   * last seq, so nothing appended after the caller looked is deleted unseen.
   * Watchers of the run are ended with RUN_DELETED. With token auth on it
   * needs the `operator` scope.
   *
   * A retry is a success: deleting a deleted run again with the same
   * `expected_last_seq` (the run's last seq when it was deleted) answers its
   * tombstone (`deleted` false, idempotent) once its erasure is complete:
   * that call waits for it (or finishes it), and answers `erased` true.
   * With another `expected_last_seq` it is RUN_DELETED (with the `last_seq`
   * it was deleted at), as every other call about a deleted run: it is not
   * a retry of the deletion that happened, and its caller looked at another
   * state of the run than the one deleted (not LAST_SEQ_MISMATCH, whose
   * remedy, to look again and resend, cannot succeed).
   *
   * Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
   * LAST_SEQ_MISMATCH, RUN_LOCKED, STORAGE_FULL, STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.DeleteRun
   */
  deleteRun: {
    methodKind: "unary";
    input: typeof DeleteRunRequestSchema;
    output: typeof DeleteRunResponseSchema;
  },
  /**
   * Delegates a call of a run's pending batch to a new child run. Order:
   * validate (the call is in the parent's open turn with no result and no
   * deferral to anyone else; the parent is of journal format 2; the child's
   * meta passes its schema) before anything is written; then write one
   * `deferral` in the parent naming the child (`child_run_id`), so the call
   * shows WAITING_FOR_CHILD and a second spawn for it can only name the same
   * child; then create the child from `meta` with `spawned_by` set by the
   * server (the parent, the call, the seq of its assistant record and the
   * tree's root). The child's claim token is 1, the spawner's, until a worker
   * claims it. Spawning again for the same call with the same child and meta
   * is a verified duplicate (`duplicate` true; it also finishes a spawn a
   * crash cut short after the deferral); another child id is INVALID_ARGUMENT
   * naming `new_run_id` and the child already spawned. Needs no claim token
   * on the parent; with token auth on it needs the `worker` scope, and both
   * run ids must be within the token's prefixes.
   *
   * When the child stops (a terminal record other than `suspended`), the
   * server writes exactly one `tool_result` for the call in the parent
   * (remote, `answered_by_run_id` the child): the text of the child's last
   * assistant message, or an error result naming the terminal reason and
   * message. It is written once whatever fails in between: a server that died
   * after the child's terminal finishes it at its next start. A call a
   * person answered first keeps that answer; the child's outcome is then
   * recorded as a `note` on the child only.
   *
   * Errors: INVALID_ARGUMENT, RUN_NOT_FOUND (the parent), RUN_DELETED,
   * RUN_EXISTS (`new_run_id` is another run), ALREADY_ANSWERED,
   * CALL_NOT_PENDING, INVALID_RECORD (the child's meta), RUN_LOCKED,
   * CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL, STORAGE_UNAVAILABLE.
   *
   * @generated from rpc runjournal.v1.JournalService.SpawnRun
   */
  spawnRun: {
    methodKind: "unary";
    input: typeof SpawnRunRequestSchema;
    output: typeof SpawnRunResponseSchema;
  },
}> = /*@__PURE__*/
  serviceDesc(file_runjournal_v1_journal_service, 0);


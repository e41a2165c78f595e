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

// Code generated by protoc-gen-go-grpc. DO NOT EDIT.
// versions:
// - protoc-gen-go-grpc v1.6.2
// - protoc             (unknown)
// source: runjournal/v1/journal_service.proto

package runjournalv1

import (
	context "context"
	grpc "google.golang.org/grpc"
	codes "google.golang.org/grpc/codes"
	status "google.golang.org/grpc/status"
)

// This is a compile-time assertion to ensure that this generated file
// is compatible with the grpc package it is being compiled against.
// Requires gRPC-Go v1.64.0 or later.
const _ = grpc.SupportPackageIsVersion9

const (
	JournalService_Append_FullMethodName      = "/runjournal.v1.JournalService/Append"
	JournalService_AppendBatch_FullMethodName = "/runjournal.v1.JournalService/AppendBatch"
	JournalService_Claim_FullMethodName       = "/runjournal.v1.JournalService/Claim"
	JournalService_Fold_FullMethodName        = "/runjournal.v1.JournalService/Fold"
	JournalService_Answer_FullMethodName      = "/runjournal.v1.JournalService/Answer"
	JournalService_Approve_FullMethodName     = "/runjournal.v1.JournalService/Approve"
	JournalService_ListRuns_FullMethodName    = "/runjournal.v1.JournalService/ListRuns"
	JournalService_Read_FullMethodName        = "/runjournal.v1.JournalService/Read"
	JournalService_Watch_FullMethodName       = "/runjournal.v1.JournalService/Watch"
	JournalService_WatchRuns_FullMethodName   = "/runjournal.v1.JournalService/WatchRuns"
	JournalService_ForkRun_FullMethodName     = "/runjournal.v1.JournalService/ForkRun"
	JournalService_DeleteRun_FullMethodName   = "/runjournal.v1.JournalService/DeleteRun"
	JournalService_SpawnRun_FullMethodName    = "/runjournal.v1.JournalService/SpawnRun"
)

// JournalServiceClient is the client API for JournalService service.
//
// For semantics around ctx use and closing/ending streaming RPCs, please refer to https://pkg.go.dev/google.golang.org/grpc/?tab=doc#ClientConn.NewStream.
//
// Keeps the durable journals of agent runs. The server owns sequence checking,
// claiming, folding and journal locks, so every client gets the same semantics.
type JournalServiceClient interface {
	// Appends one record to a run. A run is created by appending its `meta`
	// record at seq 1. The append rule: seq == last_seq + 1 is written;
	// seq <= last_seq is a retry, acknowledged as a duplicate only when the
	// stored record is byte-identical, else SEQ_CONFLICT; seq > last_seq + 1 is
	// SEQ_GAP. The record is validated against its schema and against the run's
	// folded state before anything is written. Acknowledged means durable.
	// RUN_EXISTS is a different `meta` at seq 1 of an existing run; any other
	// record there is SEQ_CONFLICT. An appended `reconfigure` passes the resume
	// gate first (see Reconfigure): a hard or blocking change is RESUME_REFUSED.
	//
	// Errors: INVALID_ARGUMENT, INVALID_RECORD, RECORD_TOO_LARGE, RUN_NOT_FOUND,
	// RUN_EXISTS, SEQ_GAP, SEQ_CONFLICT, RUN_CLAIMED, RUN_LOCKED,
	// RESUME_REFUSED, CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL,
	// STORAGE_UNAVAILABLE.
	Append(ctx context.Context, in *AppendRequest, opts ...grpc.CallOption) (*AppendResponse, error)
	// Appends several consecutive records of one run, all or nothing, with one
	// write and one sync. A batch that repeats already-stored records verifies
	// them like single appends and writes only the new tail. All or nothing
	// holds across a crash too: a batch the server died in the middle of is
	// never read back in part, and a batch that creates a run (meta and more)
	// leaves the whole run or none.
	//
	// Errors: as Append. A refusal about one record of the batch (INVALID_RECORD,
	// RECORD_TOO_LARGE, SEQ_CONFLICT, SEQ_GAP for the first new record,
	// RUN_EXISTS for a different meta, INVALID_ARGUMENT for a record out of
	// sequence) carries `index`, the record's 0-based position in `records`; a
	// refusal about the run (RUN_CLAIMED, CORRUPT_JOURNAL, ...) carries none.
	AppendBatch(ctx context.Context, in *AppendBatchRequest, opts ...grpc.CallOption) (*AppendBatchResponse, error)
	// Takes over a run for a worker. Order: load and gate first (a refusal
	// writes nothing and takes no lock); then append the `claim` record; then a
	// `reconfigure` record when a fingerprint difference was crossed; then read
	// `last_seq`. The claim's seq is the worker's claim token for every later
	// Append; any earlier holder is refused at its next append. The answer
	// carries the folded state; when it would not fit in the server's largest
	// response (`max_send_message_bytes`), the claim is refused with
	// RESPONSE_TOO_LARGE before anything is written: claim again with
	// `conversation_from` and read the conversation with Fold.
	//
	// Errors: INVALID_ARGUMENT, RUN_NOT_FOUND, RESUME_REFUSED, RUN_LOCKED,
	// RESPONSE_TOO_LARGE (with `size` and `limit`), CORRUPT_JOURNAL,
	// VERSION_MISMATCH, STORAGE_FULL, STORAGE_UNAVAILABLE.
	Claim(ctx context.Context, in *ClaimRequest, opts ...grpc.CallOption) (*ClaimResponse, error)
	// Returns the folded state of a run, now or as of a given seq.
	//
	// Errors: INVALID_ARGUMENT (also an `as_of_seq` beyond the run's last seq:
	// "has only N records"), RUN_NOT_FOUND, RUN_DELETED, CORRUPT_JOURNAL,
	// VERSION_MISMATCH, RESPONSE_TOO_LARGE.
	Fold(ctx context.Context, in *FoldRequest, opts ...grpc.CallOption) (*FoldResponse, error)
	// Answers a deferred call of the run's pending batch by writing exactly one
	// ordinary `tool_result` record (remote), so the next resume is an ordinary
	// resume. It validates before taking any lock; a refusal writes nothing.
	// Needs no claim token. With token auth on it needs the `operator` scope
	// and the record's `answered_by` is the token's name.
	//
	// Answer and Approve keep one rule: a person's write is taken only for
	// what the call waits for (PendingCall.waiting_for). Answer takes a call
	// deferred for an answer (WAITING_FOR_ANSWER), or delegated to a child run
	// (WAITING_FOR_CHILD: a person may take it back; the child's outcome then
	// becomes a note). A call already answered is ALREADY_ANSWERED (with
	// `answered_at_seq`); a call not in the pending batch, never deferred (its
	// worker runs it), or deferred for an operator's decision
	// (`needs_approval`, decided or not) is NOT_DEFERRED: answering it would
	// settle it without the decision the worker asked for. To keep such a call
	// from running, deny it with Approve; its worker then answers it with an
	// error result.
	//
	// Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
	// ALREADY_ANSWERED, NOT_DEFERRED, RUN_LOCKED, CORRUPT_JOURNAL,
	// VERSION_MISMATCH, RECORD_TOO_LARGE, STORAGE_FULL, STORAGE_UNAVAILABLE.
	Answer(ctx context.Context, in *AnswerRequest, opts ...grpc.CallOption) (*AnswerResponse, error)
	// Records an operator's decision on a call of the run's pending batch that
	// was deferred for one (a `deferral` with `needs_approval`: the call is
	// WAITING_FOR_DECISION), by writing exactly one `approval` record. It
	// validates before taking any lock: a call already answered is
	// ALREADY_ANSWERED (with `answered_at_seq`), a call already decided is
	// ALREADY_DECIDED (with `decided_at_seq`), a call not in the pending batch
	// is CALL_NOT_PENDING, and a call in it that waits for no decision (never
	// deferred: its worker runs it; or deferred for an answer, or to a child
	// run) is NOT_DEFERRED, by the rule of Answer: a decision nobody asked for
	// would take the call from its worker, or from the person who was to
	// answer it. A refusal writes nothing. Needs no claim token. An approved
	// call is then run by the worker; a denied one is answered by the worker
	// with an error result. With token auth on it needs the `operator` scope
	// and the approver is the token's name (see ApproveRequest.approver).
	//
	// Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
	// ALREADY_ANSWERED, ALREADY_DECIDED, CALL_NOT_PENDING, NOT_DEFERRED,
	// RUN_LOCKED, CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL,
	// STORAGE_UNAVAILABLE.
	Approve(ctx context.Context, in *ApproveRequest, opts ...grpc.CallOption) (*ApproveResponse, error)
	// Lists runs, newest first, with summaries derived by the listing rule (the
	// meta and the last non-inert record; journals are not folded). A run is
	// listed with status CORRUPT when the part the listing reads (its meta and
	// its tail) is damaged, or when this server already found its journal
	// damaged while reading it whole (Fold, Claim, Append, Read); such runs are
	// never hidden. A run the store fails to read (STORAGE_UNAVAILABLE) is
	// listed with status UNAVAILABLE and never fails the page.
	//
	// The order and the filters are answered from a listing index (the runs'
	// places and last known states, checked against the journals at every
	// start and told of every write); every summary returned is read from its
	// journal. A token walks only the runs under its prefixes, so a listing's
	// latency does not tell how many runs other tenants have. Known
	// limitation: while the index is being rebuilt (a missing or damaged
	// index), and always on the JetStream backend (which keeps no index: a
	// replica hears of another's writes a moment late), the listing reads
	// every run instead: slower, and its timing then reveals roughly how many
	// runs the store holds.
	//
	// Pages follow AIP-158: a `page_token` continues only the listing that
	// made it, so the next call sends the same filters (only `page_size` may
	// change); a token sent with other filters, or by a token of other run-id
	// prefixes, is INVALID_ARGUMENT naming `page_token`, never a silent jump
	// into another listing that would skip or repeat runs.
	//
	// Errors: INVALID_ARGUMENT (bad page token, a page token of other filters,
	// page size or filter).
	ListRuns(ctx context.Context, in *ListRunsRequest, opts ...grpc.CallOption) (*ListRunsResponse, error)
	// Streams a run's stored records from a seq, with their stored bytes, in
	// seq order; every item carries its `seq`.
	//
	// Only acknowledged records are sent. From `last_seq` + 1 the stream is
	// empty (a client that has every record); from further on it is
	// INVALID_ARGUMENT (see "Positions in a run" above).
	//
	// Errors: INVALID_ARGUMENT (also a `from_seq` beyond the run's last seq + 1),
	// RUN_NOT_FOUND, RUN_DELETED, CORRUPT_JOURNAL (nothing is sent for a
	// damaged journal).
	Read(ctx context.Context, in *ReadRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ReadResponse], error)
	// Follows a run: sends its stored records after `after_seq` in seq order,
	// then one `caught_up` item with the head seq at that moment, then each
	// record as it is acknowledged, in order, with no gap and no duplicate,
	// until the client cancels. Records written through another server replica
	// (JetStream) are sent too. A slow reader is held by gRPC flow control and
	// read again from the store when it catches up; the server buffers nothing
	// for it beyond one item and one read of the store (as Read: about 256 KiB,
	// or one larger record). After a transport failure a client watches again
	// with `after_seq` = the last `seq` it received; a server that shuts down
	// ends its watch streams at once with UNAVAILABLE and no ErrorInfo, to be
	// resumed the same way through another server. Only acknowledged records
	// are sent (as Read). A JetStream replica hears of the others' records
	// through a consumer of the stream, so they arrive a moment later than
	// records written through the replica watched.
	//
	// Errors: INVALID_ARGUMENT (also an `after_seq` beyond the run's last seq:
	// no client can have received it), RUN_NOT_FOUND, RUN_DELETED (also ends a
	// stream when the run is deleted while watched), CORRUPT_JOURNAL,
	// STORAGE_UNAVAILABLE.
	Watch(ctx context.Context, in *WatchRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[WatchResponse], error)
	// Follows the listing: sends the summary of every run that matches the
	// filters (as ListRuns, newest first), then one `caught_up` item, then a
	// summary each time a matching run changes (created, status, waiting for a
	// person, claimed, or any other record) until the client cancels. A run
	// that stops matching, or is deleted, is sent once as `left`. A slow
	// reader may get coalesced summaries of a run (the newest wins), never a
	// stale one: each is read after the change it reports. A change that leaves
	// the summary as it was sent last sends nothing. With token auth on, only
	// runs within the token's prefixes. A server that shuts down ends the
	// stream with UNAVAILABLE and no ErrorInfo; watch again (the stored part
	// then says what changed meanwhile).
	//
	// Errors: INVALID_ARGUMENT (a bad filter).
	WatchRuns(ctx context.Context, in *WatchRunsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[WatchRunsResponse], error)
	// Branches a run: creates `new_run_id` whose meta is the source's with its
	// own run id, a new `created_at`, no task, and `forked_from` naming the
	// source, its seq and the hash of its prefix; its records 2..at_seq are the
	// source's stored bytes. The source is unchanged. A pending batch survives
	// (a person can answer the fork differently). Claims copied from the source
	// do not reach the fork: its claim token is 1 (the forker's) until a claim
	// is written in the fork itself. Created atomically: all of it or nothing.
	//
	// Errors: INVALID_ARGUMENT (`at_seq` beyond the source's last seq),
	// RUN_NOT_FOUND, RUN_DELETED, RUN_EXISTS (for `new_run_id`), RUN_LOCKED,
	// CORRUPT_JOURNAL, STORAGE_FULL, STORAGE_UNAVAILABLE.
	ForkRun(ctx context.Context, in *ForkRunRequest, opts ...grpc.CallOption) (*ForkRunResponse, error)
	// Deletes a run: a durable tombstone is kept, so the run id is never used
	// again (a later Append, Claim, Fold, Read or Watch of it is RUN_DELETED,
	// even a stale retry of its meta), and its journal is removed from the
	// store. File: truncated, unlinked and the directory fsynced before the
	// answer (`erased` true). JetStream: every message is overwritten and
	// deleted in the background after the answer (`erased` false; each
	// message costs a synced write, a few ms), resumed by the next start if
	// the server stops first. Refused unless `expected_last_seq` is the run's
	// last seq, so nothing appended after the caller looked is deleted unseen.
	// Watchers of the run are ended with RUN_DELETED. With token auth on it
	// needs the `operator` scope.
	//
	// A retry is a success: deleting a deleted run again with the same
	// `expected_last_seq` (the run's last seq when it was deleted) answers its
	// tombstone (`deleted` false, idempotent) once its erasure is complete:
	// that call waits for it (or finishes it), and answers `erased` true.
	// With another `expected_last_seq` it is RUN_DELETED (with the `last_seq`
	// it was deleted at), as every other call about a deleted run: it is not
	// a retry of the deletion that happened, and its caller looked at another
	// state of the run than the one deleted (not LAST_SEQ_MISMATCH, whose
	// remedy, to look again and resend, cannot succeed).
	//
	// Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
	// LAST_SEQ_MISMATCH, RUN_LOCKED, STORAGE_FULL, STORAGE_UNAVAILABLE.
	DeleteRun(ctx context.Context, in *DeleteRunRequest, opts ...grpc.CallOption) (*DeleteRunResponse, error)
	// Delegates a call of a run's pending batch to a new child run. Order:
	// validate (the call is in the parent's open turn with no result and no
	// deferral to anyone else; the parent is of journal format 2; the child's
	// meta passes its schema) before anything is written; then write one
	// `deferral` in the parent naming the child (`child_run_id`), so the call
	// shows WAITING_FOR_CHILD and a second spawn for it can only name the same
	// child; then create the child from `meta` with `spawned_by` set by the
	// server (the parent, the call, the seq of its assistant record and the
	// tree's root). The child's claim token is 1, the spawner's, until a worker
	// claims it. Spawning again for the same call with the same child and meta
	// is a verified duplicate (`duplicate` true; it also finishes a spawn a
	// crash cut short after the deferral); another child id is INVALID_ARGUMENT
	// naming `new_run_id` and the child already spawned. Needs no claim token
	// on the parent; with token auth on it needs the `worker` scope, and both
	// run ids must be within the token's prefixes.
	//
	// When the child stops (a terminal record other than `suspended`), the
	// server writes exactly one `tool_result` for the call in the parent
	// (remote, `answered_by_run_id` the child): the text of the child's last
	// assistant message, or an error result naming the terminal reason and
	// message. It is written once whatever fails in between: a server that died
	// after the child's terminal finishes it at its next start. A call a
	// person answered first keeps that answer; the child's outcome is then
	// recorded as a `note` on the child only.
	//
	// Errors: INVALID_ARGUMENT, RUN_NOT_FOUND (the parent), RUN_DELETED,
	// RUN_EXISTS (`new_run_id` is another run), ALREADY_ANSWERED,
	// CALL_NOT_PENDING, INVALID_RECORD (the child's meta), RUN_LOCKED,
	// CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL, STORAGE_UNAVAILABLE.
	SpawnRun(ctx context.Context, in *SpawnRunRequest, opts ...grpc.CallOption) (*SpawnRunResponse, error)
}

type journalServiceClient struct {
	cc grpc.ClientConnInterface
}

func NewJournalServiceClient(cc grpc.ClientConnInterface) JournalServiceClient {
	return &journalServiceClient{cc}
}

func (c *journalServiceClient) Append(ctx context.Context, in *AppendRequest, opts ...grpc.CallOption) (*AppendResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(AppendResponse)
	err := c.cc.Invoke(ctx, JournalService_Append_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) AppendBatch(ctx context.Context, in *AppendBatchRequest, opts ...grpc.CallOption) (*AppendBatchResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(AppendBatchResponse)
	err := c.cc.Invoke(ctx, JournalService_AppendBatch_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) Claim(ctx context.Context, in *ClaimRequest, opts ...grpc.CallOption) (*ClaimResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ClaimResponse)
	err := c.cc.Invoke(ctx, JournalService_Claim_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) Fold(ctx context.Context, in *FoldRequest, opts ...grpc.CallOption) (*FoldResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(FoldResponse)
	err := c.cc.Invoke(ctx, JournalService_Fold_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) Answer(ctx context.Context, in *AnswerRequest, opts ...grpc.CallOption) (*AnswerResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(AnswerResponse)
	err := c.cc.Invoke(ctx, JournalService_Answer_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) Approve(ctx context.Context, in *ApproveRequest, opts ...grpc.CallOption) (*ApproveResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ApproveResponse)
	err := c.cc.Invoke(ctx, JournalService_Approve_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) ListRuns(ctx context.Context, in *ListRunsRequest, opts ...grpc.CallOption) (*ListRunsResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ListRunsResponse)
	err := c.cc.Invoke(ctx, JournalService_ListRuns_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) Read(ctx context.Context, in *ReadRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ReadResponse], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &JournalService_ServiceDesc.Streams[0], JournalService_Read_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[ReadRequest, ReadResponse]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type JournalService_ReadClient = grpc.ServerStreamingClient[ReadResponse]

func (c *journalServiceClient) Watch(ctx context.Context, in *WatchRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[WatchResponse], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &JournalService_ServiceDesc.Streams[1], JournalService_Watch_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[WatchRequest, WatchResponse]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type JournalService_WatchClient = grpc.ServerStreamingClient[WatchResponse]

func (c *journalServiceClient) WatchRuns(ctx context.Context, in *WatchRunsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[WatchRunsResponse], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &JournalService_ServiceDesc.Streams[2], JournalService_WatchRuns_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[WatchRunsRequest, WatchRunsResponse]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type JournalService_WatchRunsClient = grpc.ServerStreamingClient[WatchRunsResponse]

func (c *journalServiceClient) ForkRun(ctx context.Context, in *ForkRunRequest, opts ...grpc.CallOption) (*ForkRunResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ForkRunResponse)
	err := c.cc.Invoke(ctx, JournalService_ForkRun_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) DeleteRun(ctx context.Context, in *DeleteRunRequest, opts ...grpc.CallOption) (*DeleteRunResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(DeleteRunResponse)
	err := c.cc.Invoke(ctx, JournalService_DeleteRun_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *journalServiceClient) SpawnRun(ctx context.Context, in *SpawnRunRequest, opts ...grpc.CallOption) (*SpawnRunResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(SpawnRunResponse)
	err := c.cc.Invoke(ctx, JournalService_SpawnRun_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// JournalServiceServer is the server API for JournalService service.
// All implementations must embed UnimplementedJournalServiceServer
// for forward compatibility.
//
// Keeps the durable journals of agent runs. The server owns sequence checking,
// claiming, folding and journal locks, so every client gets the same semantics.
type JournalServiceServer interface {
	// Appends one record to a run. A run is created by appending its `meta`
	// record at seq 1. The append rule: seq == last_seq + 1 is written;
	// seq <= last_seq is a retry, acknowledged as a duplicate only when the
	// stored record is byte-identical, else SEQ_CONFLICT; seq > last_seq + 1 is
	// SEQ_GAP. The record is validated against its schema and against the run's
	// folded state before anything is written. Acknowledged means durable.
	// RUN_EXISTS is a different `meta` at seq 1 of an existing run; any other
	// record there is SEQ_CONFLICT. An appended `reconfigure` passes the resume
	// gate first (see Reconfigure): a hard or blocking change is RESUME_REFUSED.
	//
	// Errors: INVALID_ARGUMENT, INVALID_RECORD, RECORD_TOO_LARGE, RUN_NOT_FOUND,
	// RUN_EXISTS, SEQ_GAP, SEQ_CONFLICT, RUN_CLAIMED, RUN_LOCKED,
	// RESUME_REFUSED, CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL,
	// STORAGE_UNAVAILABLE.
	Append(context.Context, *AppendRequest) (*AppendResponse, error)
	// Appends several consecutive records of one run, all or nothing, with one
	// write and one sync. A batch that repeats already-stored records verifies
	// them like single appends and writes only the new tail. All or nothing
	// holds across a crash too: a batch the server died in the middle of is
	// never read back in part, and a batch that creates a run (meta and more)
	// leaves the whole run or none.
	//
	// Errors: as Append. A refusal about one record of the batch (INVALID_RECORD,
	// RECORD_TOO_LARGE, SEQ_CONFLICT, SEQ_GAP for the first new record,
	// RUN_EXISTS for a different meta, INVALID_ARGUMENT for a record out of
	// sequence) carries `index`, the record's 0-based position in `records`; a
	// refusal about the run (RUN_CLAIMED, CORRUPT_JOURNAL, ...) carries none.
	AppendBatch(context.Context, *AppendBatchRequest) (*AppendBatchResponse, error)
	// Takes over a run for a worker. Order: load and gate first (a refusal
	// writes nothing and takes no lock); then append the `claim` record; then a
	// `reconfigure` record when a fingerprint difference was crossed; then read
	// `last_seq`. The claim's seq is the worker's claim token for every later
	// Append; any earlier holder is refused at its next append. The answer
	// carries the folded state; when it would not fit in the server's largest
	// response (`max_send_message_bytes`), the claim is refused with
	// RESPONSE_TOO_LARGE before anything is written: claim again with
	// `conversation_from` and read the conversation with Fold.
	//
	// Errors: INVALID_ARGUMENT, RUN_NOT_FOUND, RESUME_REFUSED, RUN_LOCKED,
	// RESPONSE_TOO_LARGE (with `size` and `limit`), CORRUPT_JOURNAL,
	// VERSION_MISMATCH, STORAGE_FULL, STORAGE_UNAVAILABLE.
	Claim(context.Context, *ClaimRequest) (*ClaimResponse, error)
	// Returns the folded state of a run, now or as of a given seq.
	//
	// Errors: INVALID_ARGUMENT (also an `as_of_seq` beyond the run's last seq:
	// "has only N records"), RUN_NOT_FOUND, RUN_DELETED, CORRUPT_JOURNAL,
	// VERSION_MISMATCH, RESPONSE_TOO_LARGE.
	Fold(context.Context, *FoldRequest) (*FoldResponse, error)
	// Answers a deferred call of the run's pending batch by writing exactly one
	// ordinary `tool_result` record (remote), so the next resume is an ordinary
	// resume. It validates before taking any lock; a refusal writes nothing.
	// Needs no claim token. With token auth on it needs the `operator` scope
	// and the record's `answered_by` is the token's name.
	//
	// Answer and Approve keep one rule: a person's write is taken only for
	// what the call waits for (PendingCall.waiting_for). Answer takes a call
	// deferred for an answer (WAITING_FOR_ANSWER), or delegated to a child run
	// (WAITING_FOR_CHILD: a person may take it back; the child's outcome then
	// becomes a note). A call already answered is ALREADY_ANSWERED (with
	// `answered_at_seq`); a call not in the pending batch, never deferred (its
	// worker runs it), or deferred for an operator's decision
	// (`needs_approval`, decided or not) is NOT_DEFERRED: answering it would
	// settle it without the decision the worker asked for. To keep such a call
	// from running, deny it with Approve; its worker then answers it with an
	// error result.
	//
	// Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
	// ALREADY_ANSWERED, NOT_DEFERRED, RUN_LOCKED, CORRUPT_JOURNAL,
	// VERSION_MISMATCH, RECORD_TOO_LARGE, STORAGE_FULL, STORAGE_UNAVAILABLE.
	Answer(context.Context, *AnswerRequest) (*AnswerResponse, error)
	// Records an operator's decision on a call of the run's pending batch that
	// was deferred for one (a `deferral` with `needs_approval`: the call is
	// WAITING_FOR_DECISION), by writing exactly one `approval` record. It
	// validates before taking any lock: a call already answered is
	// ALREADY_ANSWERED (with `answered_at_seq`), a call already decided is
	// ALREADY_DECIDED (with `decided_at_seq`), a call not in the pending batch
	// is CALL_NOT_PENDING, and a call in it that waits for no decision (never
	// deferred: its worker runs it; or deferred for an answer, or to a child
	// run) is NOT_DEFERRED, by the rule of Answer: a decision nobody asked for
	// would take the call from its worker, or from the person who was to
	// answer it. A refusal writes nothing. Needs no claim token. An approved
	// call is then run by the worker; a denied one is answered by the worker
	// with an error result. With token auth on it needs the `operator` scope
	// and the approver is the token's name (see ApproveRequest.approver).
	//
	// Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
	// ALREADY_ANSWERED, ALREADY_DECIDED, CALL_NOT_PENDING, NOT_DEFERRED,
	// RUN_LOCKED, CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL,
	// STORAGE_UNAVAILABLE.
	Approve(context.Context, *ApproveRequest) (*ApproveResponse, error)
	// Lists runs, newest first, with summaries derived by the listing rule (the
	// meta and the last non-inert record; journals are not folded). A run is
	// listed with status CORRUPT when the part the listing reads (its meta and
	// its tail) is damaged, or when this server already found its journal
	// damaged while reading it whole (Fold, Claim, Append, Read); such runs are
	// never hidden. A run the store fails to read (STORAGE_UNAVAILABLE) is
	// listed with status UNAVAILABLE and never fails the page.
	//
	// The order and the filters are answered from a listing index (the runs'
	// places and last known states, checked against the journals at every
	// start and told of every write); every summary returned is read from its
	// journal. A token walks only the runs under its prefixes, so a listing's
	// latency does not tell how many runs other tenants have. Known
	// limitation: while the index is being rebuilt (a missing or damaged
	// index), and always on the JetStream backend (which keeps no index: a
	// replica hears of another's writes a moment late), the listing reads
	// every run instead: slower, and its timing then reveals roughly how many
	// runs the store holds.
	//
	// Pages follow AIP-158: a `page_token` continues only the listing that
	// made it, so the next call sends the same filters (only `page_size` may
	// change); a token sent with other filters, or by a token of other run-id
	// prefixes, is INVALID_ARGUMENT naming `page_token`, never a silent jump
	// into another listing that would skip or repeat runs.
	//
	// Errors: INVALID_ARGUMENT (bad page token, a page token of other filters,
	// page size or filter).
	ListRuns(context.Context, *ListRunsRequest) (*ListRunsResponse, error)
	// Streams a run's stored records from a seq, with their stored bytes, in
	// seq order; every item carries its `seq`.
	//
	// Only acknowledged records are sent. From `last_seq` + 1 the stream is
	// empty (a client that has every record); from further on it is
	// INVALID_ARGUMENT (see "Positions in a run" above).
	//
	// Errors: INVALID_ARGUMENT (also a `from_seq` beyond the run's last seq + 1),
	// RUN_NOT_FOUND, RUN_DELETED, CORRUPT_JOURNAL (nothing is sent for a
	// damaged journal).
	Read(*ReadRequest, grpc.ServerStreamingServer[ReadResponse]) error
	// Follows a run: sends its stored records after `after_seq` in seq order,
	// then one `caught_up` item with the head seq at that moment, then each
	// record as it is acknowledged, in order, with no gap and no duplicate,
	// until the client cancels. Records written through another server replica
	// (JetStream) are sent too. A slow reader is held by gRPC flow control and
	// read again from the store when it catches up; the server buffers nothing
	// for it beyond one item and one read of the store (as Read: about 256 KiB,
	// or one larger record). After a transport failure a client watches again
	// with `after_seq` = the last `seq` it received; a server that shuts down
	// ends its watch streams at once with UNAVAILABLE and no ErrorInfo, to be
	// resumed the same way through another server. Only acknowledged records
	// are sent (as Read). A JetStream replica hears of the others' records
	// through a consumer of the stream, so they arrive a moment later than
	// records written through the replica watched.
	//
	// Errors: INVALID_ARGUMENT (also an `after_seq` beyond the run's last seq:
	// no client can have received it), RUN_NOT_FOUND, RUN_DELETED (also ends a
	// stream when the run is deleted while watched), CORRUPT_JOURNAL,
	// STORAGE_UNAVAILABLE.
	Watch(*WatchRequest, grpc.ServerStreamingServer[WatchResponse]) error
	// Follows the listing: sends the summary of every run that matches the
	// filters (as ListRuns, newest first), then one `caught_up` item, then a
	// summary each time a matching run changes (created, status, waiting for a
	// person, claimed, or any other record) until the client cancels. A run
	// that stops matching, or is deleted, is sent once as `left`. A slow
	// reader may get coalesced summaries of a run (the newest wins), never a
	// stale one: each is read after the change it reports. A change that leaves
	// the summary as it was sent last sends nothing. With token auth on, only
	// runs within the token's prefixes. A server that shuts down ends the
	// stream with UNAVAILABLE and no ErrorInfo; watch again (the stored part
	// then says what changed meanwhile).
	//
	// Errors: INVALID_ARGUMENT (a bad filter).
	WatchRuns(*WatchRunsRequest, grpc.ServerStreamingServer[WatchRunsResponse]) error
	// Branches a run: creates `new_run_id` whose meta is the source's with its
	// own run id, a new `created_at`, no task, and `forked_from` naming the
	// source, its seq and the hash of its prefix; its records 2..at_seq are the
	// source's stored bytes. The source is unchanged. A pending batch survives
	// (a person can answer the fork differently). Claims copied from the source
	// do not reach the fork: its claim token is 1 (the forker's) until a claim
	// is written in the fork itself. Created atomically: all of it or nothing.
	//
	// Errors: INVALID_ARGUMENT (`at_seq` beyond the source's last seq),
	// RUN_NOT_FOUND, RUN_DELETED, RUN_EXISTS (for `new_run_id`), RUN_LOCKED,
	// CORRUPT_JOURNAL, STORAGE_FULL, STORAGE_UNAVAILABLE.
	ForkRun(context.Context, *ForkRunRequest) (*ForkRunResponse, error)
	// Deletes a run: a durable tombstone is kept, so the run id is never used
	// again (a later Append, Claim, Fold, Read or Watch of it is RUN_DELETED,
	// even a stale retry of its meta), and its journal is removed from the
	// store. File: truncated, unlinked and the directory fsynced before the
	// answer (`erased` true). JetStream: every message is overwritten and
	// deleted in the background after the answer (`erased` false; each
	// message costs a synced write, a few ms), resumed by the next start if
	// the server stops first. Refused unless `expected_last_seq` is the run's
	// last seq, so nothing appended after the caller looked is deleted unseen.
	// Watchers of the run are ended with RUN_DELETED. With token auth on it
	// needs the `operator` scope.
	//
	// A retry is a success: deleting a deleted run again with the same
	// `expected_last_seq` (the run's last seq when it was deleted) answers its
	// tombstone (`deleted` false, idempotent) once its erasure is complete:
	// that call waits for it (or finishes it), and answers `erased` true.
	// With another `expected_last_seq` it is RUN_DELETED (with the `last_seq`
	// it was deleted at), as every other call about a deleted run: it is not
	// a retry of the deletion that happened, and its caller looked at another
	// state of the run than the one deleted (not LAST_SEQ_MISMATCH, whose
	// remedy, to look again and resend, cannot succeed).
	//
	// Errors: INVALID_ARGUMENT, PERMISSION_DENIED, RUN_NOT_FOUND, RUN_DELETED,
	// LAST_SEQ_MISMATCH, RUN_LOCKED, STORAGE_FULL, STORAGE_UNAVAILABLE.
	DeleteRun(context.Context, *DeleteRunRequest) (*DeleteRunResponse, error)
	// Delegates a call of a run's pending batch to a new child run. Order:
	// validate (the call is in the parent's open turn with no result and no
	// deferral to anyone else; the parent is of journal format 2; the child's
	// meta passes its schema) before anything is written; then write one
	// `deferral` in the parent naming the child (`child_run_id`), so the call
	// shows WAITING_FOR_CHILD and a second spawn for it can only name the same
	// child; then create the child from `meta` with `spawned_by` set by the
	// server (the parent, the call, the seq of its assistant record and the
	// tree's root). The child's claim token is 1, the spawner's, until a worker
	// claims it. Spawning again for the same call with the same child and meta
	// is a verified duplicate (`duplicate` true; it also finishes a spawn a
	// crash cut short after the deferral); another child id is INVALID_ARGUMENT
	// naming `new_run_id` and the child already spawned. Needs no claim token
	// on the parent; with token auth on it needs the `worker` scope, and both
	// run ids must be within the token's prefixes.
	//
	// When the child stops (a terminal record other than `suspended`), the
	// server writes exactly one `tool_result` for the call in the parent
	// (remote, `answered_by_run_id` the child): the text of the child's last
	// assistant message, or an error result naming the terminal reason and
	// message. It is written once whatever fails in between: a server that died
	// after the child's terminal finishes it at its next start. A call a
	// person answered first keeps that answer; the child's outcome is then
	// recorded as a `note` on the child only.
	//
	// Errors: INVALID_ARGUMENT, RUN_NOT_FOUND (the parent), RUN_DELETED,
	// RUN_EXISTS (`new_run_id` is another run), ALREADY_ANSWERED,
	// CALL_NOT_PENDING, INVALID_RECORD (the child's meta), RUN_LOCKED,
	// CORRUPT_JOURNAL, VERSION_MISMATCH, STORAGE_FULL, STORAGE_UNAVAILABLE.
	SpawnRun(context.Context, *SpawnRunRequest) (*SpawnRunResponse, error)
	mustEmbedUnimplementedJournalServiceServer()
}

// UnimplementedJournalServiceServer must be embedded to have
// forward compatible implementations.
//
// NOTE: this should be embedded by value instead of pointer to avoid a nil
// pointer dereference when methods are called.
type UnimplementedJournalServiceServer struct{}

func (UnimplementedJournalServiceServer) Append(context.Context, *AppendRequest) (*AppendResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Append not implemented")
}
func (UnimplementedJournalServiceServer) AppendBatch(context.Context, *AppendBatchRequest) (*AppendBatchResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method AppendBatch not implemented")
}
func (UnimplementedJournalServiceServer) Claim(context.Context, *ClaimRequest) (*ClaimResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Claim not implemented")
}
func (UnimplementedJournalServiceServer) Fold(context.Context, *FoldRequest) (*FoldResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Fold not implemented")
}
func (UnimplementedJournalServiceServer) Answer(context.Context, *AnswerRequest) (*AnswerResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Answer not implemented")
}
func (UnimplementedJournalServiceServer) Approve(context.Context, *ApproveRequest) (*ApproveResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Approve not implemented")
}
func (UnimplementedJournalServiceServer) ListRuns(context.Context, *ListRunsRequest) (*ListRunsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method ListRuns not implemented")
}
func (UnimplementedJournalServiceServer) Read(*ReadRequest, grpc.ServerStreamingServer[ReadResponse]) error {
	return status.Error(codes.Unimplemented, "method Read not implemented")
}
func (UnimplementedJournalServiceServer) Watch(*WatchRequest, grpc.ServerStreamingServer[WatchResponse]) error {
	return status.Error(codes.Unimplemented, "method Watch not implemented")
}
func (UnimplementedJournalServiceServer) WatchRuns(*WatchRunsRequest, grpc.ServerStreamingServer[WatchRunsResponse]) error {
	return status.Error(codes.Unimplemented, "method WatchRuns not implemented")
}
func (UnimplementedJournalServiceServer) ForkRun(context.Context, *ForkRunRequest) (*ForkRunResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method ForkRun not implemented")
}
func (UnimplementedJournalServiceServer) DeleteRun(context.Context, *DeleteRunRequest) (*DeleteRunResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method DeleteRun not implemented")
}
func (UnimplementedJournalServiceServer) SpawnRun(context.Context, *SpawnRunRequest) (*SpawnRunResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method SpawnRun not implemented")
}
func (UnimplementedJournalServiceServer) mustEmbedUnimplementedJournalServiceServer() {}
func (UnimplementedJournalServiceServer) testEmbeddedByValue()                        {}

// UnsafeJournalServiceServer may be embedded to opt out of forward compatibility for this service.
// Use of this interface is not recommended, as added methods to JournalServiceServer will
// result in compilation errors.
type UnsafeJournalServiceServer interface {
	mustEmbedUnimplementedJournalServiceServer()
}

func RegisterJournalServiceServer(s grpc.ServiceRegistrar, srv JournalServiceServer) {
	// If the following call panics, it indicates UnimplementedJournalServiceServer was
	// embedded by pointer and is nil.  This will cause panics if an
	// unimplemented method is ever invoked, so we test this at initialization
	// time to prevent it from happening at runtime later due to I/O.
	if t, ok := srv.(interface{ testEmbeddedByValue() }); ok {
		t.testEmbeddedByValue()
	}
	s.RegisterService(&JournalService_ServiceDesc, srv)
}

func _JournalService_Append_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(AppendRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).Append(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_Append_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).Append(ctx, req.(*AppendRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_AppendBatch_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(AppendBatchRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).AppendBatch(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_AppendBatch_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).AppendBatch(ctx, req.(*AppendBatchRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_Claim_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ClaimRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).Claim(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_Claim_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).Claim(ctx, req.(*ClaimRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_Fold_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(FoldRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).Fold(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_Fold_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).Fold(ctx, req.(*FoldRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_Answer_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(AnswerRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).Answer(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_Answer_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).Answer(ctx, req.(*AnswerRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_Approve_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ApproveRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).Approve(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_Approve_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).Approve(ctx, req.(*ApproveRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_ListRuns_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ListRunsRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).ListRuns(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_ListRuns_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).ListRuns(ctx, req.(*ListRunsRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_Read_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(ReadRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(JournalServiceServer).Read(m, &grpc.GenericServerStream[ReadRequest, ReadResponse]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type JournalService_ReadServer = grpc.ServerStreamingServer[ReadResponse]

func _JournalService_Watch_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(WatchRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(JournalServiceServer).Watch(m, &grpc.GenericServerStream[WatchRequest, WatchResponse]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type JournalService_WatchServer = grpc.ServerStreamingServer[WatchResponse]

func _JournalService_WatchRuns_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(WatchRunsRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(JournalServiceServer).WatchRuns(m, &grpc.GenericServerStream[WatchRunsRequest, WatchRunsResponse]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type JournalService_WatchRunsServer = grpc.ServerStreamingServer[WatchRunsResponse]

func _JournalService_ForkRun_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ForkRunRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).ForkRun(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_ForkRun_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).ForkRun(ctx, req.(*ForkRunRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_DeleteRun_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(DeleteRunRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).DeleteRun(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_DeleteRun_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).DeleteRun(ctx, req.(*DeleteRunRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _JournalService_SpawnRun_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(SpawnRunRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(JournalServiceServer).SpawnRun(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: JournalService_SpawnRun_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(JournalServiceServer).SpawnRun(ctx, req.(*SpawnRunRequest))
	}
	return interceptor(ctx, in, info, handler)
}

// JournalService_ServiceDesc is the grpc.ServiceDesc for JournalService service.
// It's only intended for direct use with grpc.RegisterService,
// and not to be introspected or modified (even as a copy)
var JournalService_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "runjournal.v1.JournalService",
	HandlerType: (*JournalServiceServer)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "Append",
			Handler:    _JournalService_Append_Handler,
		},
		{
			MethodName: "AppendBatch",
			Handler:    _JournalService_AppendBatch_Handler,
		},
		{
			MethodName: "Claim",
			Handler:    _JournalService_Claim_Handler,
		},
		{
			MethodName: "Fold",
			Handler:    _JournalService_Fold_Handler,
		},
		{
			MethodName: "Answer",
			Handler:    _JournalService_Answer_Handler,
		},
		{
			MethodName: "Approve",
			Handler:    _JournalService_Approve_Handler,
		},
		{
			MethodName: "ListRuns",
			Handler:    _JournalService_ListRuns_Handler,
		},
		{
			MethodName: "ForkRun",
			Handler:    _JournalService_ForkRun_Handler,
		},
		{
			MethodName: "DeleteRun",
			Handler:    _JournalService_DeleteRun_Handler,
		},
		{
			MethodName: "SpawnRun",
			Handler:    _JournalService_SpawnRun_Handler,
		},
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName:    "Read",
			Handler:       _JournalService_Read_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "Watch",
			Handler:       _JournalService_Watch_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "WatchRuns",
			Handler:       _JournalService_WatchRuns_Handler,
			ServerStreams: true,
		},
	},
	Metadata: "runjournal/v1/journal_service.proto",
}

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

// Code generated by protoc-gen-go. DO NOT EDIT.
// versions:
// 	protoc-gen-go v1.36.12
// 	protoc        (unknown)
// source: runjournal/v1/journal_service.proto

package runjournalv1

import (
	protoreflect "google.golang.org/protobuf/reflect/protoreflect"
	protoimpl "google.golang.org/protobuf/runtime/protoimpl"
	timestamppb "google.golang.org/protobuf/types/known/timestamppb"
	reflect "reflect"
	sync "sync"
	unsafe "unsafe"
)

const (
	// Verify that this generated code is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(20 - protoimpl.MinVersion)
	// Verify that runtime/protoimpl is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(protoimpl.MaxVersion - 20)
)

// Request of JournalService.Append.
type AppendRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id (1-128 characters of [A-Za-z0-9_-], starting with a letter or
	// digit).
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The writer's claim token: the seq of its claim record, or 1 for the
	// worker that created the run and has not been superseded. Ignored for the
	// meta record that creates the run.
	ClaimToken int64 `protobuf:"varint,2,opt,name=claim_token,json=claimToken,proto3" json:"claim_token,omitempty"`
	// The record to append; `record.seq` is the position it must take.
	Record        *JournalRecord `protobuf:"bytes,3,opt,name=record,proto3" json:"record,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AppendRequest) Reset() {
	*x = AppendRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[0]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AppendRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AppendRequest) ProtoMessage() {}

func (x *AppendRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[0]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AppendRequest.ProtoReflect.Descriptor instead.
func (*AppendRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{0}
}

func (x *AppendRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *AppendRequest) GetClaimToken() int64 {
	if x != nil {
		return x.ClaimToken
	}
	return 0
}

func (x *AppendRequest) GetRecord() *JournalRecord {
	if x != nil {
		return x.Record
	}
	return nil
}

// Response of JournalService.Append.
type AppendResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The seq the record has in the journal.
	Seq int64 `protobuf:"varint,1,opt,name=seq,proto3" json:"seq,omitempty"`
	// True when the record was already stored (a retry): nothing was written.
	Duplicate bool `protobuf:"varint,2,opt,name=duplicate,proto3" json:"duplicate,omitempty"`
	// The journal's last seq after the call.
	LastSeq       int64 `protobuf:"varint,3,opt,name=last_seq,json=lastSeq,proto3" json:"last_seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AppendResponse) Reset() {
	*x = AppendResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[1]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AppendResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AppendResponse) ProtoMessage() {}

func (x *AppendResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[1]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AppendResponse.ProtoReflect.Descriptor instead.
func (*AppendResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{1}
}

func (x *AppendResponse) GetSeq() int64 {
	if x != nil {
		return x.Seq
	}
	return 0
}

func (x *AppendResponse) GetDuplicate() bool {
	if x != nil {
		return x.Duplicate
	}
	return false
}

func (x *AppendResponse) GetLastSeq() int64 {
	if x != nil {
		return x.LastSeq
	}
	return 0
}

// Request of JournalService.AppendBatch.
type AppendBatchRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The writer's claim token, as in AppendRequest.
	ClaimToken int64 `protobuf:"varint,2,opt,name=claim_token,json=claimToken,proto3" json:"claim_token,omitempty"`
	// Consecutive records: each seq is the previous one + 1. At most 1,000.
	Records       []*JournalRecord `protobuf:"bytes,3,rep,name=records,proto3" json:"records,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AppendBatchRequest) Reset() {
	*x = AppendBatchRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[2]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AppendBatchRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AppendBatchRequest) ProtoMessage() {}

func (x *AppendBatchRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[2]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AppendBatchRequest.ProtoReflect.Descriptor instead.
func (*AppendBatchRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{2}
}

func (x *AppendBatchRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *AppendBatchRequest) GetClaimToken() int64 {
	if x != nil {
		return x.ClaimToken
	}
	return 0
}

func (x *AppendBatchRequest) GetRecords() []*JournalRecord {
	if x != nil {
		return x.Records
	}
	return nil
}

// Response of JournalService.AppendBatch.
type AppendBatchResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The seq of the first record of the batch.
	FirstSeq int64 `protobuf:"varint,1,opt,name=first_seq,json=firstSeq,proto3" json:"first_seq,omitempty"`
	// How many leading records were already stored (verified duplicates).
	Duplicates int32 `protobuf:"varint,2,opt,name=duplicates,proto3" json:"duplicates,omitempty"`
	// The journal's last seq after the call.
	LastSeq       int64 `protobuf:"varint,3,opt,name=last_seq,json=lastSeq,proto3" json:"last_seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AppendBatchResponse) Reset() {
	*x = AppendBatchResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[3]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AppendBatchResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AppendBatchResponse) ProtoMessage() {}

func (x *AppendBatchResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[3]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AppendBatchResponse.ProtoReflect.Descriptor instead.
func (*AppendBatchResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{3}
}

func (x *AppendBatchResponse) GetFirstSeq() int64 {
	if x != nil {
		return x.FirstSeq
	}
	return 0
}

func (x *AppendBatchResponse) GetDuplicates() int32 {
	if x != nil {
		return x.Duplicates
	}
	return 0
}

func (x *AppendBatchResponse) GetLastSeq() int64 {
	if x != nil {
		return x.LastSeq
	}
	return 0
}

// Request of JournalService.Claim.
type ClaimRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The claiming worker's id (1-256 characters), stored in the claim record.
	WorkerId string `protobuf:"bytes,2,opt,name=worker_id,json=workerId,proto3" json:"worker_id,omitempty"`
	// The worker's host name, for diagnostics.
	Host string `protobuf:"bytes,3,opt,name=host,proto3" json:"host,omitempty"`
	// The worker's process id, for diagnostics.
	Pid int32 `protobuf:"varint,4,opt,name=pid,proto3" json:"pid,omitempty"`
	// Why the run is claimed, for diagnostics.
	Reason string `protobuf:"bytes,5,opt,name=reason,proto3" json:"reason,omitempty"`
	// The configuration the worker will run under, compared by the resume gate.
	Fingerprint *Fingerprint `protobuf:"bytes,6,opt,name=fingerprint,proto3" json:"fingerprint,omitempty"`
	// Accept blocking differences (and tool differences with a pending batch).
	// Hard differences are refused even when forced.
	Force bool `protobuf:"varint,7,opt,name=force,proto3" json:"force,omitempty"`
	// Return the state's conversation from this message index on, as
	// FoldRequest.conversation_from does (0 returns all of it). A worker that
	// resumes a long run asks for what it lacks, so the answer stays small.
	ConversationFrom int32 `protobuf:"varint,8,opt,name=conversation_from,json=conversationFrom,proto3" json:"conversation_from,omitempty"`
	// Return the whole conversation since the prompt, as if no compaction had
	// happened, as FoldRequest.uncompacted does.
	Uncompacted   bool `protobuf:"varint,9,opt,name=uncompacted,proto3" json:"uncompacted,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ClaimRequest) Reset() {
	*x = ClaimRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[4]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ClaimRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ClaimRequest) ProtoMessage() {}

func (x *ClaimRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[4]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ClaimRequest.ProtoReflect.Descriptor instead.
func (*ClaimRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{4}
}

func (x *ClaimRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *ClaimRequest) GetWorkerId() string {
	if x != nil {
		return x.WorkerId
	}
	return ""
}

func (x *ClaimRequest) GetHost() string {
	if x != nil {
		return x.Host
	}
	return ""
}

func (x *ClaimRequest) GetPid() int32 {
	if x != nil {
		return x.Pid
	}
	return 0
}

func (x *ClaimRequest) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

func (x *ClaimRequest) GetFingerprint() *Fingerprint {
	if x != nil {
		return x.Fingerprint
	}
	return nil
}

func (x *ClaimRequest) GetForce() bool {
	if x != nil {
		return x.Force
	}
	return false
}

func (x *ClaimRequest) GetConversationFrom() int32 {
	if x != nil {
		return x.ConversationFrom
	}
	return 0
}

func (x *ClaimRequest) GetUncompacted() bool {
	if x != nil {
		return x.Uncompacted
	}
	return false
}

// Response of JournalService.Claim.
type ClaimResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The claim token: the seq of the claim record. Send it with every Append.
	ClaimToken int64 `protobuf:"varint,1,opt,name=claim_token,json=claimToken,proto3" json:"claim_token,omitempty"`
	// The journal's last seq after the claim (and reconfigure) records: the
	// worker's first record goes at last_seq + 1.
	LastSeq int64 `protobuf:"varint,2,opt,name=last_seq,json=lastSeq,proto3" json:"last_seq,omitempty"`
	// The folded state after the claim.
	State *RunState `protobuf:"bytes,3,opt,name=state,proto3" json:"state,omitempty"`
	// The resume gate's report.
	Gate *GateReport `protobuf:"bytes,4,opt,name=gate,proto3" json:"gate,omitempty"`
	// Text the worker may add to its system prompt to tell the model it was
	// resumed. Never part of any fingerprint.
	ResumeReminder string `protobuf:"bytes,5,opt,name=resume_reminder,json=resumeReminder,proto3" json:"resume_reminder,omitempty"`
	unknownFields  protoimpl.UnknownFields
	sizeCache      protoimpl.SizeCache
}

func (x *ClaimResponse) Reset() {
	*x = ClaimResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[5]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ClaimResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ClaimResponse) ProtoMessage() {}

func (x *ClaimResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[5]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ClaimResponse.ProtoReflect.Descriptor instead.
func (*ClaimResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{5}
}

func (x *ClaimResponse) GetClaimToken() int64 {
	if x != nil {
		return x.ClaimToken
	}
	return 0
}

func (x *ClaimResponse) GetLastSeq() int64 {
	if x != nil {
		return x.LastSeq
	}
	return 0
}

func (x *ClaimResponse) GetState() *RunState {
	if x != nil {
		return x.State
	}
	return nil
}

func (x *ClaimResponse) GetGate() *GateReport {
	if x != nil {
		return x.Gate
	}
	return nil
}

func (x *ClaimResponse) GetResumeReminder() string {
	if x != nil {
		return x.ResumeReminder
	}
	return ""
}

// Request of JournalService.Fold.
type FoldRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// Fold only the records up to this seq; 0 folds them all. Beyond the run's
	// last seq it is INVALID_ARGUMENT ("has only N records").
	AsOfSeq int64 `protobuf:"varint,2,opt,name=as_of_seq,json=asOfSeq,proto3" json:"as_of_seq,omitempty"`
	// Return the conversation from this message index on (0 returns all of
	// it). Every message but the last is final once it has appeared; the last
	// may still grow when a follow-up merges into it. So a worker that keeps
	// the conversation asks from its last known index and replaces that message:
	// on a long run this answers in a fraction of the time of a full fold.
	// RunState.conversation_offset and conversation_size describe the slice.
	ConversationFrom int32 `protobuf:"varint,3,opt,name=conversation_from,json=conversationFrom,proto3" json:"conversation_from,omitempty"`
	// Return the whole conversation since the prompt, as if no compaction had
	// happened (for audit and export); by default a compaction's summary
	// replaces the messages it covers (RunState.compaction_seq).
	Uncompacted   bool `protobuf:"varint,4,opt,name=uncompacted,proto3" json:"uncompacted,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *FoldRequest) Reset() {
	*x = FoldRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[6]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *FoldRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*FoldRequest) ProtoMessage() {}

func (x *FoldRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[6]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use FoldRequest.ProtoReflect.Descriptor instead.
func (*FoldRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{6}
}

func (x *FoldRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *FoldRequest) GetAsOfSeq() int64 {
	if x != nil {
		return x.AsOfSeq
	}
	return 0
}

func (x *FoldRequest) GetConversationFrom() int32 {
	if x != nil {
		return x.ConversationFrom
	}
	return 0
}

func (x *FoldRequest) GetUncompacted() bool {
	if x != nil {
		return x.Uncompacted
	}
	return false
}

// Response of JournalService.Fold.
type FoldResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The folded state.
	State         *RunState `protobuf:"bytes,1,opt,name=state,proto3" json:"state,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *FoldResponse) Reset() {
	*x = FoldResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[7]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *FoldResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*FoldResponse) ProtoMessage() {}

func (x *FoldResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[7]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use FoldResponse.ProtoReflect.Descriptor instead.
func (*FoldResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{7}
}

func (x *FoldResponse) GetState() *RunState {
	if x != nil {
		return x.State
	}
	return nil
}

// Request of JournalService.Answer.
type AnswerRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The deferred call to answer.
	ToolUseId string `protobuf:"bytes,2,opt,name=tool_use_id,json=toolUseId,proto3" json:"tool_use_id,omitempty"`
	// The result: text and opaque blocks.
	Content []*ContentBlock `protobuf:"bytes,3,rep,name=content,proto3" json:"content,omitempty"`
	// True when the answer is a failure.
	IsError       bool `protobuf:"varint,4,opt,name=is_error,json=isError,proto3" json:"is_error,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AnswerRequest) Reset() {
	*x = AnswerRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[8]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AnswerRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AnswerRequest) ProtoMessage() {}

func (x *AnswerRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[8]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AnswerRequest.ProtoReflect.Descriptor instead.
func (*AnswerRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{8}
}

func (x *AnswerRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *AnswerRequest) GetToolUseId() string {
	if x != nil {
		return x.ToolUseId
	}
	return ""
}

func (x *AnswerRequest) GetContent() []*ContentBlock {
	if x != nil {
		return x.Content
	}
	return nil
}

func (x *AnswerRequest) GetIsError() bool {
	if x != nil {
		return x.IsError
	}
	return false
}

// Response of JournalService.Answer.
type AnswerResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The seq of the written tool_result record.
	Seq           int64 `protobuf:"varint,1,opt,name=seq,proto3" json:"seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *AnswerResponse) Reset() {
	*x = AnswerResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[9]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *AnswerResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*AnswerResponse) ProtoMessage() {}

func (x *AnswerResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[9]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use AnswerResponse.ProtoReflect.Descriptor instead.
func (*AnswerResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{9}
}

func (x *AnswerResponse) GetSeq() int64 {
	if x != nil {
		return x.Seq
	}
	return 0
}

// Request of JournalService.Approve.
type ApproveRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The call decided on; it must be in the run's pending batch.
	ToolUseId string `protobuf:"bytes,2,opt,name=tool_use_id,json=toolUseId,proto3" json:"tool_use_id,omitempty"`
	// The decision (approved or denied).
	Decision Decision `protobuf:"varint,3,opt,name=decision,proto3,enum=runjournal.v1.Decision" json:"decision,omitempty"`
	// Who decides (1-256 characters). With token auth on, leave it empty (or
	// send the token's own name): the server records the authenticated token's
	// name, and refuses a different name with PERMISSION_DENIED, so an
	// approval never names someone who did not send it. With auth off it is
	// required and recorded as sent.
	Approver string `protobuf:"bytes,4,opt,name=approver,proto3" json:"approver,omitempty"`
	// Why, for the record.
	Reason        string `protobuf:"bytes,5,opt,name=reason,proto3" json:"reason,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ApproveRequest) Reset() {
	*x = ApproveRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[10]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ApproveRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ApproveRequest) ProtoMessage() {}

func (x *ApproveRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[10]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ApproveRequest.ProtoReflect.Descriptor instead.
func (*ApproveRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{10}
}

func (x *ApproveRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *ApproveRequest) GetToolUseId() string {
	if x != nil {
		return x.ToolUseId
	}
	return ""
}

func (x *ApproveRequest) GetDecision() Decision {
	if x != nil {
		return x.Decision
	}
	return Decision_DECISION_UNSPECIFIED
}

func (x *ApproveRequest) GetApprover() string {
	if x != nil {
		return x.Approver
	}
	return ""
}

func (x *ApproveRequest) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

// Response of JournalService.Approve.
type ApproveResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The seq of the written approval record.
	Seq           int64 `protobuf:"varint,1,opt,name=seq,proto3" json:"seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ApproveResponse) Reset() {
	*x = ApproveResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[11]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ApproveResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ApproveResponse) ProtoMessage() {}

func (x *ApproveResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[11]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ApproveResponse.ProtoReflect.Descriptor instead.
func (*ApproveResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{11}
}

func (x *ApproveResponse) GetSeq() int64 {
	if x != nil {
		return x.Seq
	}
	return 0
}

// Request of JournalService.ListRuns.
type ListRunsRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The maximum number of runs to return, 1-1000; 0 means 100.
	PageSize int32 `protobuf:"varint,1,opt,name=page_size,json=pageSize,proto3" json:"page_size,omitempty"`
	// The `next_page_token` of a previous call with the same filters (any
	// `page_size`), or empty for the first page. With other filters it is
	// INVALID_ARGUMENT: a token continues only the listing that made it.
	PageToken string `protobuf:"bytes,2,opt,name=page_token,json=pageToken,proto3" json:"page_token,omitempty"`
	// Only runs with this status; unspecified matches every status.
	Status RunStatus `protobuf:"varint,3,opt,name=status,proto3,enum=runjournal.v1.RunStatus" json:"status,omitempty"`
	// Only runs whose labels include every one of these key/value pairs.
	Labels map[string]string `protobuf:"bytes,4,rep,name=labels,proto3" json:"labels,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	// Only runs that wait for a person (the human inbox): a deferred call
	// without an answer, or a call awaiting a decision.
	WaitingForPerson bool `protobuf:"varint,5,opt,name=waiting_for_person,json=waitingForPerson,proto3" json:"waiting_for_person,omitempty"`
	// Only runs whose meta names this task; empty matches every run.
	TaskId string `protobuf:"bytes,6,opt,name=task_id,json=taskId,proto3" json:"task_id,omitempty"`
	// Only runs forked from this run (meta.forked_from.run_id); empty matches
	// every run.
	ParentRunId string `protobuf:"bytes,7,opt,name=parent_run_id,json=parentRunId,proto3" json:"parent_run_id,omitempty"`
	// Only stopped runs (a terminal record describes them) whose last record
	// was stored before this time (RunSummary.updated_at): what retention and
	// `runjournal gc` delete. Unset matches every run.
	StoppedBefore *timestamppb.Timestamp `protobuf:"bytes,8,opt,name=stopped_before,json=stoppedBefore,proto3" json:"stopped_before,omitempty"`
	// Only child runs spawned by this run (meta.spawned_by.run_id); empty
	// matches every run.
	SpawnedByRunId string `protobuf:"bytes,9,opt,name=spawned_by_run_id,json=spawnedByRunId,proto3" json:"spawned_by_run_id,omitempty"`
	// Only this run and the runs spawned under it, at any depth
	// (meta.spawned_by.root_run_id); empty matches every run.
	RootRunId     string `protobuf:"bytes,10,opt,name=root_run_id,json=rootRunId,proto3" json:"root_run_id,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ListRunsRequest) Reset() {
	*x = ListRunsRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[12]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ListRunsRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ListRunsRequest) ProtoMessage() {}

func (x *ListRunsRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[12]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ListRunsRequest.ProtoReflect.Descriptor instead.
func (*ListRunsRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{12}
}

func (x *ListRunsRequest) GetPageSize() int32 {
	if x != nil {
		return x.PageSize
	}
	return 0
}

func (x *ListRunsRequest) GetPageToken() string {
	if x != nil {
		return x.PageToken
	}
	return ""
}

func (x *ListRunsRequest) GetStatus() RunStatus {
	if x != nil {
		return x.Status
	}
	return RunStatus_RUN_STATUS_UNSPECIFIED
}

func (x *ListRunsRequest) GetLabels() map[string]string {
	if x != nil {
		return x.Labels
	}
	return nil
}

func (x *ListRunsRequest) GetWaitingForPerson() bool {
	if x != nil {
		return x.WaitingForPerson
	}
	return false
}

func (x *ListRunsRequest) GetTaskId() string {
	if x != nil {
		return x.TaskId
	}
	return ""
}

func (x *ListRunsRequest) GetParentRunId() string {
	if x != nil {
		return x.ParentRunId
	}
	return ""
}

func (x *ListRunsRequest) GetStoppedBefore() *timestamppb.Timestamp {
	if x != nil {
		return x.StoppedBefore
	}
	return nil
}

func (x *ListRunsRequest) GetSpawnedByRunId() string {
	if x != nil {
		return x.SpawnedByRunId
	}
	return ""
}

func (x *ListRunsRequest) GetRootRunId() string {
	if x != nil {
		return x.RootRunId
	}
	return ""
}

// Response of JournalService.ListRuns.
type ListRunsResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The runs of this page, newest first (by created time, then run id).
	Runs []*RunSummary `protobuf:"bytes,1,rep,name=runs,proto3" json:"runs,omitempty"`
	// The token for the next page; empty on the last page.
	NextPageToken string `protobuf:"bytes,2,opt,name=next_page_token,json=nextPageToken,proto3" json:"next_page_token,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ListRunsResponse) Reset() {
	*x = ListRunsResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[13]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ListRunsResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ListRunsResponse) ProtoMessage() {}

func (x *ListRunsResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[13]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ListRunsResponse.ProtoReflect.Descriptor instead.
func (*ListRunsResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{13}
}

func (x *ListRunsResponse) GetRuns() []*RunSummary {
	if x != nil {
		return x.Runs
	}
	return nil
}

func (x *ListRunsResponse) GetNextPageToken() string {
	if x != nil {
		return x.NextPageToken
	}
	return ""
}

// Request of JournalService.Read.
type ReadRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The first seq to send; 0 or 1 sends from the start. At most the run's
	// last seq + 1 (which sends nothing); beyond, INVALID_ARGUMENT.
	FromSeq       int64 `protobuf:"varint,2,opt,name=from_seq,json=fromSeq,proto3" json:"from_seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadRequest) Reset() {
	*x = ReadRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[14]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadRequest) ProtoMessage() {}

func (x *ReadRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[14]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadRequest.ProtoReflect.Descriptor instead.
func (*ReadRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{14}
}

func (x *ReadRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *ReadRequest) GetFromSeq() int64 {
	if x != nil {
		return x.FromSeq
	}
	return 0
}

// One stored record, as streamed by JournalService.Read.
type ReadResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The record. For a record of a protocol id this server does not know (an
	// `optional` record from a newer writer), only `seq` and `optional` are set
	// and no payload is: `stored_line` holds the record whole.
	Record *JournalRecord `protobuf:"bytes,1,opt,name=record,proto3" json:"record,omitempty"`
	// The stored line exactly as kept by the backend (canonical JSON with its
	// checksum), without the trailing newline.
	StoredLine []byte `protobuf:"bytes,2,opt,name=stored_line,json=storedLine,proto3" json:"stored_line,omitempty"`
	// The record's seq, always set, whatever its kind. A client resuming a
	// broken stream asks again with `from_seq` = the last `seq` it received + 1,
	// so no record is repeated or skipped.
	Seq           int64 `protobuf:"varint,3,opt,name=seq,proto3" json:"seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadResponse) Reset() {
	*x = ReadResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[15]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadResponse) ProtoMessage() {}

func (x *ReadResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[15]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadResponse.ProtoReflect.Descriptor instead.
func (*ReadResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{15}
}

func (x *ReadResponse) GetRecord() *JournalRecord {
	if x != nil {
		return x.Record
	}
	return nil
}

func (x *ReadResponse) GetStoredLine() []byte {
	if x != nil {
		return x.StoredLine
	}
	return nil
}

func (x *ReadResponse) GetSeq() int64 {
	if x != nil {
		return x.Seq
	}
	return 0
}

// Request of JournalService.Watch.
type WatchRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// Send the records after this seq; 0 sends from the start. At most the
	// run's last seq (a seq a client can have received); beyond,
	// INVALID_ARGUMENT.
	AfterSeq      int64 `protobuf:"varint,2,opt,name=after_seq,json=afterSeq,proto3" json:"after_seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WatchRequest) Reset() {
	*x = WatchRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[16]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WatchRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WatchRequest) ProtoMessage() {}

func (x *WatchRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[16]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WatchRequest.ProtoReflect.Descriptor instead.
func (*WatchRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{16}
}

func (x *WatchRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *WatchRequest) GetAfterSeq() int64 {
	if x != nil {
		return x.AfterSeq
	}
	return 0
}

// One item of JournalService.Watch.
type WatchResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// What the item is.
	//
	// Types that are valid to be assigned to Event:
	//
	//	*WatchResponse_Record
	//	*WatchResponse_CaughtUp
	Event         isWatchResponse_Event `protobuf_oneof:"event"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WatchResponse) Reset() {
	*x = WatchResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[17]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WatchResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WatchResponse) ProtoMessage() {}

func (x *WatchResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[17]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WatchResponse.ProtoReflect.Descriptor instead.
func (*WatchResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{17}
}

func (x *WatchResponse) GetEvent() isWatchResponse_Event {
	if x != nil {
		return x.Event
	}
	return nil
}

func (x *WatchResponse) GetRecord() *ReadResponse {
	if x != nil {
		if x, ok := x.Event.(*WatchResponse_Record); ok {
			return x.Record
		}
	}
	return nil
}

func (x *WatchResponse) GetCaughtUp() *CaughtUp {
	if x != nil {
		if x, ok := x.Event.(*WatchResponse_CaughtUp); ok {
			return x.CaughtUp
		}
	}
	return nil
}

type isWatchResponse_Event interface {
	isWatchResponse_Event()
}

type WatchResponse_Record struct {
	// A stored record, as Read sends it.
	Record *ReadResponse `protobuf:"bytes,1,opt,name=record,proto3,oneof"`
}

type WatchResponse_CaughtUp struct {
	// Sent once, after the records stored when the watch began.
	CaughtUp *CaughtUp `protobuf:"bytes,2,opt,name=caught_up,json=caughtUp,proto3,oneof"`
}

func (*WatchResponse_Record) isWatchResponse_Event() {}

func (*WatchResponse_CaughtUp) isWatchResponse_Event() {}

// The end of the stored part of a watch: live items follow.
type CaughtUp struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Watch: the run's last seq when the stored part ended (every record up to
	// it has been sent). WatchRuns: 0.
	HeadSeq       int64 `protobuf:"varint,1,opt,name=head_seq,json=headSeq,proto3" json:"head_seq,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CaughtUp) Reset() {
	*x = CaughtUp{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[18]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CaughtUp) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CaughtUp) ProtoMessage() {}

func (x *CaughtUp) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[18]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CaughtUp.ProtoReflect.Descriptor instead.
func (*CaughtUp) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{18}
}

func (x *CaughtUp) GetHeadSeq() int64 {
	if x != nil {
		return x.HeadSeq
	}
	return 0
}

// Request of JournalService.WatchRuns. The filters are those of
// ListRunsRequest.
type WatchRunsRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Only runs with this status; unspecified matches every status.
	Status RunStatus `protobuf:"varint,1,opt,name=status,proto3,enum=runjournal.v1.RunStatus" json:"status,omitempty"`
	// Only runs whose labels include every one of these key/value pairs.
	Labels map[string]string `protobuf:"bytes,2,rep,name=labels,proto3" json:"labels,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	// Only runs that wait for a person.
	WaitingForPerson bool `protobuf:"varint,3,opt,name=waiting_for_person,json=waitingForPerson,proto3" json:"waiting_for_person,omitempty"`
	// Only runs whose meta names this task.
	TaskId string `protobuf:"bytes,4,opt,name=task_id,json=taskId,proto3" json:"task_id,omitempty"`
	// Only runs forked from this run.
	ParentRunId string `protobuf:"bytes,5,opt,name=parent_run_id,json=parentRunId,proto3" json:"parent_run_id,omitempty"`
	// Only child runs spawned by this run.
	SpawnedByRunId string `protobuf:"bytes,6,opt,name=spawned_by_run_id,json=spawnedByRunId,proto3" json:"spawned_by_run_id,omitempty"`
	// Only this run and the runs spawned under it, at any depth.
	RootRunId     string `protobuf:"bytes,7,opt,name=root_run_id,json=rootRunId,proto3" json:"root_run_id,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WatchRunsRequest) Reset() {
	*x = WatchRunsRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[19]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WatchRunsRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WatchRunsRequest) ProtoMessage() {}

func (x *WatchRunsRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[19]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WatchRunsRequest.ProtoReflect.Descriptor instead.
func (*WatchRunsRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{19}
}

func (x *WatchRunsRequest) GetStatus() RunStatus {
	if x != nil {
		return x.Status
	}
	return RunStatus_RUN_STATUS_UNSPECIFIED
}

func (x *WatchRunsRequest) GetLabels() map[string]string {
	if x != nil {
		return x.Labels
	}
	return nil
}

func (x *WatchRunsRequest) GetWaitingForPerson() bool {
	if x != nil {
		return x.WaitingForPerson
	}
	return false
}

func (x *WatchRunsRequest) GetTaskId() string {
	if x != nil {
		return x.TaskId
	}
	return ""
}

func (x *WatchRunsRequest) GetParentRunId() string {
	if x != nil {
		return x.ParentRunId
	}
	return ""
}

func (x *WatchRunsRequest) GetSpawnedByRunId() string {
	if x != nil {
		return x.SpawnedByRunId
	}
	return ""
}

func (x *WatchRunsRequest) GetRootRunId() string {
	if x != nil {
		return x.RootRunId
	}
	return ""
}

// One item of JournalService.WatchRuns.
type WatchRunsResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// What the item is.
	//
	// Types that are valid to be assigned to Event:
	//
	//	*WatchRunsResponse_Run
	//	*WatchRunsResponse_CaughtUp
	//	*WatchRunsResponse_Left
	Event         isWatchRunsResponse_Event `protobuf_oneof:"event"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *WatchRunsResponse) Reset() {
	*x = WatchRunsResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[20]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *WatchRunsResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*WatchRunsResponse) ProtoMessage() {}

func (x *WatchRunsResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[20]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use WatchRunsResponse.ProtoReflect.Descriptor instead.
func (*WatchRunsResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{20}
}

func (x *WatchRunsResponse) GetEvent() isWatchRunsResponse_Event {
	if x != nil {
		return x.Event
	}
	return nil
}

func (x *WatchRunsResponse) GetRun() *RunSummary {
	if x != nil {
		if x, ok := x.Event.(*WatchRunsResponse_Run); ok {
			return x.Run
		}
	}
	return nil
}

func (x *WatchRunsResponse) GetCaughtUp() *CaughtUp {
	if x != nil {
		if x, ok := x.Event.(*WatchRunsResponse_CaughtUp); ok {
			return x.CaughtUp
		}
	}
	return nil
}

func (x *WatchRunsResponse) GetLeft() *RunLeft {
	if x != nil {
		if x, ok := x.Event.(*WatchRunsResponse_Left); ok {
			return x.Left
		}
	}
	return nil
}

type isWatchRunsResponse_Event interface {
	isWatchRunsResponse_Event()
}

type WatchRunsResponse_Run struct {
	// The summary of a matching run, as it is now.
	Run *RunSummary `protobuf:"bytes,1,opt,name=run,proto3,oneof"`
}

type WatchRunsResponse_CaughtUp struct {
	// Sent once, after the summaries of the runs that matched when the watch
	// began.
	CaughtUp *CaughtUp `protobuf:"bytes,2,opt,name=caught_up,json=caughtUp,proto3,oneof"`
}

type WatchRunsResponse_Left struct {
	// A run sent before that no longer matches, or was deleted.
	Left *RunLeft `protobuf:"bytes,3,opt,name=left,proto3,oneof"`
}

func (*WatchRunsResponse_Run) isWatchRunsResponse_Event() {}

func (*WatchRunsResponse_CaughtUp) isWatchRunsResponse_Event() {}

func (*WatchRunsResponse_Left) isWatchRunsResponse_Event() {}

// A run that left a WatchRuns stream.
type RunLeft struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// True when the run was deleted; false when it no longer matches.
	Deleted       bool `protobuf:"varint,2,opt,name=deleted,proto3" json:"deleted,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RunLeft) Reset() {
	*x = RunLeft{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[21]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RunLeft) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RunLeft) ProtoMessage() {}

func (x *RunLeft) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[21]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RunLeft.ProtoReflect.Descriptor instead.
func (*RunLeft) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{21}
}

func (x *RunLeft) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *RunLeft) GetDeleted() bool {
	if x != nil {
		return x.Deleted
	}
	return false
}

// Request of JournalService.ForkRun.
type ForkRunRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The source run.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The source's last record to copy (>= 1); 0 copies every record. Beyond
	// the source's last seq, INVALID_ARGUMENT.
	AtSeq int64 `protobuf:"varint,2,opt,name=at_seq,json=atSeq,proto3" json:"at_seq,omitempty"`
	// The new run's id (same grammar as a run id); it must not exist.
	NewRunId      string `protobuf:"bytes,3,opt,name=new_run_id,json=newRunId,proto3" json:"new_run_id,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ForkRunRequest) Reset() {
	*x = ForkRunRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[22]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ForkRunRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ForkRunRequest) ProtoMessage() {}

func (x *ForkRunRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[22]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ForkRunRequest.ProtoReflect.Descriptor instead.
func (*ForkRunRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{22}
}

func (x *ForkRunRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *ForkRunRequest) GetAtSeq() int64 {
	if x != nil {
		return x.AtSeq
	}
	return 0
}

func (x *ForkRunRequest) GetNewRunId() string {
	if x != nil {
		return x.NewRunId
	}
	return ""
}

// Response of JournalService.ForkRun.
type ForkRunResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The new run's id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The new run's last seq (the source's seq it was forked at).
	LastSeq int64 `protobuf:"varint,2,opt,name=last_seq,json=lastSeq,proto3" json:"last_seq,omitempty"`
	// Where it branched off, as its meta records it.
	ForkedFrom    *ForkOrigin `protobuf:"bytes,3,opt,name=forked_from,json=forkedFrom,proto3" json:"forked_from,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ForkRunResponse) Reset() {
	*x = ForkRunResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[23]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ForkRunResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ForkRunResponse) ProtoMessage() {}

func (x *ForkRunResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[23]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ForkRunResponse.ProtoReflect.Descriptor instead.
func (*ForkRunResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{23}
}

func (x *ForkRunResponse) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *ForkRunResponse) GetLastSeq() int64 {
	if x != nil {
		return x.LastSeq
	}
	return 0
}

func (x *ForkRunResponse) GetForkedFrom() *ForkOrigin {
	if x != nil {
		return x.ForkedFrom
	}
	return nil
}

// Request of JournalService.DeleteRun.
type DeleteRunRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The run's last seq as the caller last saw it (>= 1). For a run deleted
	// already, only its last seq when it was deleted answers (a retry).
	ExpectedLastSeq int64 `protobuf:"varint,2,opt,name=expected_last_seq,json=expectedLastSeq,proto3" json:"expected_last_seq,omitempty"`
	// Also delete every run spawned under this one (its children, theirs, ...),
	// each at its last seq, children before their parents, so a deletion cut
	// short never leaves a child without its parent. Without it, deleting a
	// run that has children is INVALID_ARGUMENT naming them.
	WithChildren  bool `protobuf:"varint,3,opt,name=with_children,json=withChildren,proto3" json:"with_children,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DeleteRunRequest) Reset() {
	*x = DeleteRunRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[24]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DeleteRunRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DeleteRunRequest) ProtoMessage() {}

func (x *DeleteRunRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[24]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DeleteRunRequest.ProtoReflect.Descriptor instead.
func (*DeleteRunRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{24}
}

func (x *DeleteRunRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *DeleteRunRequest) GetExpectedLastSeq() int64 {
	if x != nil {
		return x.ExpectedLastSeq
	}
	return 0
}

func (x *DeleteRunRequest) GetWithChildren() bool {
	if x != nil {
		return x.WithChildren
	}
	return false
}

// Response of JournalService.DeleteRun.
type DeleteRunResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The run's last seq when it was deleted.
	LastSeq int64 `protobuf:"varint,1,opt,name=last_seq,json=lastSeq,proto3" json:"last_seq,omitempty"`
	// False when the run was already deleted (a retry): nothing changed.
	Deleted bool `protobuf:"varint,2,opt,name=deleted,proto3" json:"deleted,omitempty"`
	// True when no byte of the run's records is left in the store; false while
	// they are erased in the background (JetStream). DeleteRun again waits
	// for the erasure and answers true.
	Erased        bool `protobuf:"varint,3,opt,name=erased,proto3" json:"erased,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DeleteRunResponse) Reset() {
	*x = DeleteRunResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[25]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DeleteRunResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DeleteRunResponse) ProtoMessage() {}

func (x *DeleteRunResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[25]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DeleteRunResponse.ProtoReflect.Descriptor instead.
func (*DeleteRunResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{25}
}

func (x *DeleteRunResponse) GetLastSeq() int64 {
	if x != nil {
		return x.LastSeq
	}
	return 0
}

func (x *DeleteRunResponse) GetDeleted() bool {
	if x != nil {
		return x.Deleted
	}
	return false
}

func (x *DeleteRunResponse) GetErased() bool {
	if x != nil {
		return x.Erased
	}
	return false
}

// Request of JournalService.SpawnRun.
type SpawnRunRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The parent run.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The parent's call to delegate; it must be in the parent's pending batch.
	ToolUseId string `protobuf:"bytes,2,opt,name=tool_use_id,json=toolUseId,proto3" json:"tool_use_id,omitempty"`
	// The child run's id (same grammar as a run id). Send the same id on a
	// retry: a spawn is verified by it.
	NewRunId string `protobuf:"bytes,3,opt,name=new_run_id,json=newRunId,proto3" json:"new_run_id,omitempty"`
	// The child's meta, as an Append of its meta would send it: format version
	// 2 or later, fingerprint, prompt, interactive, labels. `run_id` may be
	// empty (it is `new_run_id`); `created_at` is set by the server when unset;
	// `task_id`, `forked_from` and `spawned_by` must be empty (the task is the
	// root's; the server writes `spawned_by`).
	Meta *Meta `protobuf:"bytes,4,opt,name=meta,proto3" json:"meta,omitempty"`
	// Why the call was delegated, for people (the deferral's reason).
	Reason        string `protobuf:"bytes,5,opt,name=reason,proto3" json:"reason,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SpawnRunRequest) Reset() {
	*x = SpawnRunRequest{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[26]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SpawnRunRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SpawnRunRequest) ProtoMessage() {}

func (x *SpawnRunRequest) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[26]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SpawnRunRequest.ProtoReflect.Descriptor instead.
func (*SpawnRunRequest) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{26}
}

func (x *SpawnRunRequest) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *SpawnRunRequest) GetToolUseId() string {
	if x != nil {
		return x.ToolUseId
	}
	return ""
}

func (x *SpawnRunRequest) GetNewRunId() string {
	if x != nil {
		return x.NewRunId
	}
	return ""
}

func (x *SpawnRunRequest) GetMeta() *Meta {
	if x != nil {
		return x.Meta
	}
	return nil
}

func (x *SpawnRunRequest) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

// Response of JournalService.SpawnRun.
type SpawnRunResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The child run's id.
	RunId string `protobuf:"bytes,1,opt,name=run_id,json=runId,proto3" json:"run_id,omitempty"`
	// The child's last seq now (1 right after it was created).
	LastSeq int64 `protobuf:"varint,2,opt,name=last_seq,json=lastSeq,proto3" json:"last_seq,omitempty"`
	// The child's meta link, as stored.
	SpawnedBy *SpawnOrigin `protobuf:"bytes,3,opt,name=spawned_by,json=spawnedBy,proto3" json:"spawned_by,omitempty"`
	// The seq of the parent's deferral naming the child.
	DeferralSeq int64 `protobuf:"varint,4,opt,name=deferral_seq,json=deferralSeq,proto3" json:"deferral_seq,omitempty"`
	// True when the call had been delegated to this child already (a retry):
	// nothing new was written but what a cut-short spawn had left to do.
	Duplicate     bool `protobuf:"varint,5,opt,name=duplicate,proto3" json:"duplicate,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SpawnRunResponse) Reset() {
	*x = SpawnRunResponse{}
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[27]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SpawnRunResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SpawnRunResponse) ProtoMessage() {}

func (x *SpawnRunResponse) ProtoReflect() protoreflect.Message {
	mi := &file_runjournal_v1_journal_service_proto_msgTypes[27]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SpawnRunResponse.ProtoReflect.Descriptor instead.
func (*SpawnRunResponse) Descriptor() ([]byte, []int) {
	return file_runjournal_v1_journal_service_proto_rawDescGZIP(), []int{27}
}

func (x *SpawnRunResponse) GetRunId() string {
	if x != nil {
		return x.RunId
	}
	return ""
}

func (x *SpawnRunResponse) GetLastSeq() int64 {
	if x != nil {
		return x.LastSeq
	}
	return 0
}

func (x *SpawnRunResponse) GetSpawnedBy() *SpawnOrigin {
	if x != nil {
		return x.SpawnedBy
	}
	return nil
}

func (x *SpawnRunResponse) GetDeferralSeq() int64 {
	if x != nil {
		return x.DeferralSeq
	}
	return 0
}

func (x *SpawnRunResponse) GetDuplicate() bool {
	if x != nil {
		return x.Duplicate
	}
	return false
}

var File_runjournal_v1_journal_service_proto protoreflect.FileDescriptor

const file_runjournal_v1_journal_service_proto_rawDesc = "" +
	"\n" +
	"#runjournal/v1/journal_service.proto\x12\rrunjournal.v1\x1a\x1fgoogle/protobuf/timestamp.proto\x1a\x1brunjournal/v1/records.proto\x1a\x19runjournal/v1/state.proto\"}\n" +
	"\rAppendRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1f\n" +
	"\vclaim_token\x18\x02 \x01(\x03R\n" +
	"claimToken\x124\n" +
	"\x06record\x18\x03 \x01(\v2\x1c.runjournal.v1.JournalRecordR\x06record\"[\n" +
	"\x0eAppendResponse\x12\x10\n" +
	"\x03seq\x18\x01 \x01(\x03R\x03seq\x12\x1c\n" +
	"\tduplicate\x18\x02 \x01(\bR\tduplicate\x12\x19\n" +
	"\blast_seq\x18\x03 \x01(\x03R\alastSeq\"\x84\x01\n" +
	"\x12AppendBatchRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1f\n" +
	"\vclaim_token\x18\x02 \x01(\x03R\n" +
	"claimToken\x126\n" +
	"\arecords\x18\x03 \x03(\v2\x1c.runjournal.v1.JournalRecordR\arecords\"m\n" +
	"\x13AppendBatchResponse\x12\x1b\n" +
	"\tfirst_seq\x18\x01 \x01(\x03R\bfirstSeq\x12\x1e\n" +
	"\n" +
	"duplicates\x18\x02 \x01(\x05R\n" +
	"duplicates\x12\x19\n" +
	"\blast_seq\x18\x03 \x01(\x03R\alastSeq\"\xa3\x02\n" +
	"\fClaimRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1b\n" +
	"\tworker_id\x18\x02 \x01(\tR\bworkerId\x12\x12\n" +
	"\x04host\x18\x03 \x01(\tR\x04host\x12\x10\n" +
	"\x03pid\x18\x04 \x01(\x05R\x03pid\x12\x16\n" +
	"\x06reason\x18\x05 \x01(\tR\x06reason\x12<\n" +
	"\vfingerprint\x18\x06 \x01(\v2\x1a.runjournal.v1.FingerprintR\vfingerprint\x12\x14\n" +
	"\x05force\x18\a \x01(\bR\x05force\x12+\n" +
	"\x11conversation_from\x18\b \x01(\x05R\x10conversationFrom\x12 \n" +
	"\vuncompacted\x18\t \x01(\bR\vuncompacted\"\xd2\x01\n" +
	"\rClaimResponse\x12\x1f\n" +
	"\vclaim_token\x18\x01 \x01(\x03R\n" +
	"claimToken\x12\x19\n" +
	"\blast_seq\x18\x02 \x01(\x03R\alastSeq\x12-\n" +
	"\x05state\x18\x03 \x01(\v2\x17.runjournal.v1.RunStateR\x05state\x12-\n" +
	"\x04gate\x18\x04 \x01(\v2\x19.runjournal.v1.GateReportR\x04gate\x12'\n" +
	"\x0fresume_reminder\x18\x05 \x01(\tR\x0eresumeReminder\"\x8f\x01\n" +
	"\vFoldRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1a\n" +
	"\tas_of_seq\x18\x02 \x01(\x03R\aasOfSeq\x12+\n" +
	"\x11conversation_from\x18\x03 \x01(\x05R\x10conversationFrom\x12 \n" +
	"\vuncompacted\x18\x04 \x01(\bR\vuncompacted\"=\n" +
	"\fFoldResponse\x12-\n" +
	"\x05state\x18\x01 \x01(\v2\x17.runjournal.v1.RunStateR\x05state\"\x98\x01\n" +
	"\rAnswerRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1e\n" +
	"\vtool_use_id\x18\x02 \x01(\tR\ttoolUseId\x125\n" +
	"\acontent\x18\x03 \x03(\v2\x1b.runjournal.v1.ContentBlockR\acontent\x12\x19\n" +
	"\bis_error\x18\x04 \x01(\bR\aisError\"\"\n" +
	"\x0eAnswerResponse\x12\x10\n" +
	"\x03seq\x18\x01 \x01(\x03R\x03seq\"\xb0\x01\n" +
	"\x0eApproveRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1e\n" +
	"\vtool_use_id\x18\x02 \x01(\tR\ttoolUseId\x123\n" +
	"\bdecision\x18\x03 \x01(\x0e2\x17.runjournal.v1.DecisionR\bdecision\x12\x1a\n" +
	"\bapprover\x18\x04 \x01(\tR\bapprover\x12\x16\n" +
	"\x06reason\x18\x05 \x01(\tR\x06reason\"#\n" +
	"\x0fApproveResponse\x12\x10\n" +
	"\x03seq\x18\x01 \x01(\x03R\x03seq\"\xf7\x03\n" +
	"\x0fListRunsRequest\x12\x1b\n" +
	"\tpage_size\x18\x01 \x01(\x05R\bpageSize\x12\x1d\n" +
	"\n" +
	"page_token\x18\x02 \x01(\tR\tpageToken\x120\n" +
	"\x06status\x18\x03 \x01(\x0e2\x18.runjournal.v1.RunStatusR\x06status\x12B\n" +
	"\x06labels\x18\x04 \x03(\v2*.runjournal.v1.ListRunsRequest.LabelsEntryR\x06labels\x12,\n" +
	"\x12waiting_for_person\x18\x05 \x01(\bR\x10waitingForPerson\x12\x17\n" +
	"\atask_id\x18\x06 \x01(\tR\x06taskId\x12\"\n" +
	"\rparent_run_id\x18\a \x01(\tR\vparentRunId\x12A\n" +
	"\x0estopped_before\x18\b \x01(\v2\x1a.google.protobuf.TimestampR\rstoppedBefore\x12)\n" +
	"\x11spawned_by_run_id\x18\t \x01(\tR\x0espawnedByRunId\x12\x1e\n" +
	"\vroot_run_id\x18\n" +
	" \x01(\tR\trootRunId\x1a9\n" +
	"\vLabelsEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12\x14\n" +
	"\x05value\x18\x02 \x01(\tR\x05value:\x028\x01\"i\n" +
	"\x10ListRunsResponse\x12-\n" +
	"\x04runs\x18\x01 \x03(\v2\x19.runjournal.v1.RunSummaryR\x04runs\x12&\n" +
	"\x0fnext_page_token\x18\x02 \x01(\tR\rnextPageToken\"?\n" +
	"\vReadRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x19\n" +
	"\bfrom_seq\x18\x02 \x01(\x03R\afromSeq\"w\n" +
	"\fReadResponse\x124\n" +
	"\x06record\x18\x01 \x01(\v2\x1c.runjournal.v1.JournalRecordR\x06record\x12\x1f\n" +
	"\vstored_line\x18\x02 \x01(\fR\n" +
	"storedLine\x12\x10\n" +
	"\x03seq\x18\x03 \x01(\x03R\x03seq\"B\n" +
	"\fWatchRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1b\n" +
	"\tafter_seq\x18\x02 \x01(\x03R\bafterSeq\"\x87\x01\n" +
	"\rWatchResponse\x125\n" +
	"\x06record\x18\x01 \x01(\v2\x1b.runjournal.v1.ReadResponseH\x00R\x06record\x126\n" +
	"\tcaught_up\x18\x02 \x01(\v2\x17.runjournal.v1.CaughtUpH\x00R\bcaughtUpB\a\n" +
	"\x05event\"%\n" +
	"\bCaughtUp\x12\x19\n" +
	"\bhead_seq\x18\x01 \x01(\x03R\aheadSeq\"\xfa\x02\n" +
	"\x10WatchRunsRequest\x120\n" +
	"\x06status\x18\x01 \x01(\x0e2\x18.runjournal.v1.RunStatusR\x06status\x12C\n" +
	"\x06labels\x18\x02 \x03(\v2+.runjournal.v1.WatchRunsRequest.LabelsEntryR\x06labels\x12,\n" +
	"\x12waiting_for_person\x18\x03 \x01(\bR\x10waitingForPerson\x12\x17\n" +
	"\atask_id\x18\x04 \x01(\tR\x06taskId\x12\"\n" +
	"\rparent_run_id\x18\x05 \x01(\tR\vparentRunId\x12)\n" +
	"\x11spawned_by_run_id\x18\x06 \x01(\tR\x0espawnedByRunId\x12\x1e\n" +
	"\vroot_run_id\x18\a \x01(\tR\trootRunId\x1a9\n" +
	"\vLabelsEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12\x14\n" +
	"\x05value\x18\x02 \x01(\tR\x05value:\x028\x01\"\xb1\x01\n" +
	"\x11WatchRunsResponse\x12-\n" +
	"\x03run\x18\x01 \x01(\v2\x19.runjournal.v1.RunSummaryH\x00R\x03run\x126\n" +
	"\tcaught_up\x18\x02 \x01(\v2\x17.runjournal.v1.CaughtUpH\x00R\bcaughtUp\x12,\n" +
	"\x04left\x18\x03 \x01(\v2\x16.runjournal.v1.RunLeftH\x00R\x04leftB\a\n" +
	"\x05event\":\n" +
	"\aRunLeft\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x18\n" +
	"\adeleted\x18\x02 \x01(\bR\adeleted\"\\\n" +
	"\x0eForkRunRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x15\n" +
	"\x06at_seq\x18\x02 \x01(\x03R\x05atSeq\x12\x1c\n" +
	"\n" +
	"new_run_id\x18\x03 \x01(\tR\bnewRunId\"\x7f\n" +
	"\x0fForkRunResponse\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x19\n" +
	"\blast_seq\x18\x02 \x01(\x03R\alastSeq\x12:\n" +
	"\vforked_from\x18\x03 \x01(\v2\x19.runjournal.v1.ForkOriginR\n" +
	"forkedFrom\"z\n" +
	"\x10DeleteRunRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12*\n" +
	"\x11expected_last_seq\x18\x02 \x01(\x03R\x0fexpectedLastSeq\x12#\n" +
	"\rwith_children\x18\x03 \x01(\bR\fwithChildren\"`\n" +
	"\x11DeleteRunResponse\x12\x19\n" +
	"\blast_seq\x18\x01 \x01(\x03R\alastSeq\x12\x18\n" +
	"\adeleted\x18\x02 \x01(\bR\adeleted\x12\x16\n" +
	"\x06erased\x18\x03 \x01(\bR\x06erased\"\xa7\x01\n" +
	"\x0fSpawnRunRequest\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x1e\n" +
	"\vtool_use_id\x18\x02 \x01(\tR\ttoolUseId\x12\x1c\n" +
	"\n" +
	"new_run_id\x18\x03 \x01(\tR\bnewRunId\x12'\n" +
	"\x04meta\x18\x04 \x01(\v2\x13.runjournal.v1.MetaR\x04meta\x12\x16\n" +
	"\x06reason\x18\x05 \x01(\tR\x06reason\"\xc0\x01\n" +
	"\x10SpawnRunResponse\x12\x15\n" +
	"\x06run_id\x18\x01 \x01(\tR\x05runId\x12\x19\n" +
	"\blast_seq\x18\x02 \x01(\x03R\alastSeq\x129\n" +
	"\n" +
	"spawned_by\x18\x03 \x01(\v2\x1a.runjournal.v1.SpawnOriginR\tspawnedBy\x12!\n" +
	"\fdeferral_seq\x18\x04 \x01(\x03R\vdeferralSeq\x12\x1c\n" +
	"\tduplicate\x18\x05 \x01(\bR\tduplicate2\xd2\a\n" +
	"\x0eJournalService\x12E\n" +
	"\x06Append\x12\x1c.runjournal.v1.AppendRequest\x1a\x1d.runjournal.v1.AppendResponse\x12T\n" +
	"\vAppendBatch\x12!.runjournal.v1.AppendBatchRequest\x1a\".runjournal.v1.AppendBatchResponse\x12B\n" +
	"\x05Claim\x12\x1b.runjournal.v1.ClaimRequest\x1a\x1c.runjournal.v1.ClaimResponse\x12?\n" +
	"\x04Fold\x12\x1a.runjournal.v1.FoldRequest\x1a\x1b.runjournal.v1.FoldResponse\x12E\n" +
	"\x06Answer\x12\x1c.runjournal.v1.AnswerRequest\x1a\x1d.runjournal.v1.AnswerResponse\x12H\n" +
	"\aApprove\x12\x1d.runjournal.v1.ApproveRequest\x1a\x1e.runjournal.v1.ApproveResponse\x12K\n" +
	"\bListRuns\x12\x1e.runjournal.v1.ListRunsRequest\x1a\x1f.runjournal.v1.ListRunsResponse\x12A\n" +
	"\x04Read\x12\x1a.runjournal.v1.ReadRequest\x1a\x1b.runjournal.v1.ReadResponse0\x01\x12D\n" +
	"\x05Watch\x12\x1b.runjournal.v1.WatchRequest\x1a\x1c.runjournal.v1.WatchResponse0\x01\x12P\n" +
	"\tWatchRuns\x12\x1f.runjournal.v1.WatchRunsRequest\x1a .runjournal.v1.WatchRunsResponse0\x01\x12H\n" +
	"\aForkRun\x12\x1d.runjournal.v1.ForkRunRequest\x1a\x1e.runjournal.v1.ForkRunResponse\x12N\n" +
	"\tDeleteRun\x12\x1f.runjournal.v1.DeleteRunRequest\x1a .runjournal.v1.DeleteRunResponse\x12K\n" +
	"\bSpawnRun\x12\x1e.runjournal.v1.SpawnRunRequest\x1a\x1f.runjournal.v1.SpawnRunResponseB\xb6\x01\n" +
	"\x11com.runjournal.v1B\x13JournalServiceProtoP\x01Z7runjournal.dev/client/go/gen/runjournal/v1;runjournalv1\xa2\x02\x03RXX\xaa\x02\rRunjournal.V1\xca\x02\rRunjournal\\V1\xe2\x02\x19Runjournal\\V1\\GPBMetadata\xea\x02\x0eRunjournal::V1b\x06proto3"

var (
	file_runjournal_v1_journal_service_proto_rawDescOnce sync.Once
	file_runjournal_v1_journal_service_proto_rawDescData []byte
)

func file_runjournal_v1_journal_service_proto_rawDescGZIP() []byte {
	file_runjournal_v1_journal_service_proto_rawDescOnce.Do(func() {
		file_runjournal_v1_journal_service_proto_rawDescData = protoimpl.X.CompressGZIP(unsafe.Slice(unsafe.StringData(file_runjournal_v1_journal_service_proto_rawDesc), len(file_runjournal_v1_journal_service_proto_rawDesc)))
	})
	return file_runjournal_v1_journal_service_proto_rawDescData
}

var file_runjournal_v1_journal_service_proto_msgTypes = make([]protoimpl.MessageInfo, 30)
var file_runjournal_v1_journal_service_proto_goTypes = []any{
	(*AppendRequest)(nil),         // 0: runjournal.v1.AppendRequest
	(*AppendResponse)(nil),        // 1: runjournal.v1.AppendResponse
	(*AppendBatchRequest)(nil),    // 2: runjournal.v1.AppendBatchRequest
	(*AppendBatchResponse)(nil),   // 3: runjournal.v1.AppendBatchResponse
	(*ClaimRequest)(nil),          // 4: runjournal.v1.ClaimRequest
	(*ClaimResponse)(nil),         // 5: runjournal.v1.ClaimResponse
	(*FoldRequest)(nil),           // 6: runjournal.v1.FoldRequest
	(*FoldResponse)(nil),          // 7: runjournal.v1.FoldResponse
	(*AnswerRequest)(nil),         // 8: runjournal.v1.AnswerRequest
	(*AnswerResponse)(nil),        // 9: runjournal.v1.AnswerResponse
	(*ApproveRequest)(nil),        // 10: runjournal.v1.ApproveRequest
	(*ApproveResponse)(nil),       // 11: runjournal.v1.ApproveResponse
	(*ListRunsRequest)(nil),       // 12: runjournal.v1.ListRunsRequest
	(*ListRunsResponse)(nil),      // 13: runjournal.v1.ListRunsResponse
	(*ReadRequest)(nil),           // 14: runjournal.v1.ReadRequest
	(*ReadResponse)(nil),          // 15: runjournal.v1.ReadResponse
	(*WatchRequest)(nil),          // 16: runjournal.v1.WatchRequest
	(*WatchResponse)(nil),         // 17: runjournal.v1.WatchResponse
	(*CaughtUp)(nil),              // 18: runjournal.v1.CaughtUp
	(*WatchRunsRequest)(nil),      // 19: runjournal.v1.WatchRunsRequest
	(*WatchRunsResponse)(nil),     // 20: runjournal.v1.WatchRunsResponse
	(*RunLeft)(nil),               // 21: runjournal.v1.RunLeft
	(*ForkRunRequest)(nil),        // 22: runjournal.v1.ForkRunRequest
	(*ForkRunResponse)(nil),       // 23: runjournal.v1.ForkRunResponse
	(*DeleteRunRequest)(nil),      // 24: runjournal.v1.DeleteRunRequest
	(*DeleteRunResponse)(nil),     // 25: runjournal.v1.DeleteRunResponse
	(*SpawnRunRequest)(nil),       // 26: runjournal.v1.SpawnRunRequest
	(*SpawnRunResponse)(nil),      // 27: runjournal.v1.SpawnRunResponse
	nil,                           // 28: runjournal.v1.ListRunsRequest.LabelsEntry
	nil,                           // 29: runjournal.v1.WatchRunsRequest.LabelsEntry
	(*JournalRecord)(nil),         // 30: runjournal.v1.JournalRecord
	(*Fingerprint)(nil),           // 31: runjournal.v1.Fingerprint
	(*RunState)(nil),              // 32: runjournal.v1.RunState
	(*GateReport)(nil),            // 33: runjournal.v1.GateReport
	(*ContentBlock)(nil),          // 34: runjournal.v1.ContentBlock
	(Decision)(0),                 // 35: runjournal.v1.Decision
	(RunStatus)(0),                // 36: runjournal.v1.RunStatus
	(*timestamppb.Timestamp)(nil), // 37: google.protobuf.Timestamp
	(*RunSummary)(nil),            // 38: runjournal.v1.RunSummary
	(*ForkOrigin)(nil),            // 39: runjournal.v1.ForkOrigin
	(*Meta)(nil),                  // 40: runjournal.v1.Meta
	(*SpawnOrigin)(nil),           // 41: runjournal.v1.SpawnOrigin
}
var file_runjournal_v1_journal_service_proto_depIdxs = []int32{
	30, // 0: runjournal.v1.AppendRequest.record:type_name -> runjournal.v1.JournalRecord
	30, // 1: runjournal.v1.AppendBatchRequest.records:type_name -> runjournal.v1.JournalRecord
	31, // 2: runjournal.v1.ClaimRequest.fingerprint:type_name -> runjournal.v1.Fingerprint
	32, // 3: runjournal.v1.ClaimResponse.state:type_name -> runjournal.v1.RunState
	33, // 4: runjournal.v1.ClaimResponse.gate:type_name -> runjournal.v1.GateReport
	32, // 5: runjournal.v1.FoldResponse.state:type_name -> runjournal.v1.RunState
	34, // 6: runjournal.v1.AnswerRequest.content:type_name -> runjournal.v1.ContentBlock
	35, // 7: runjournal.v1.ApproveRequest.decision:type_name -> runjournal.v1.Decision
	36, // 8: runjournal.v1.ListRunsRequest.status:type_name -> runjournal.v1.RunStatus
	28, // 9: runjournal.v1.ListRunsRequest.labels:type_name -> runjournal.v1.ListRunsRequest.LabelsEntry
	37, // 10: runjournal.v1.ListRunsRequest.stopped_before:type_name -> google.protobuf.Timestamp
	38, // 11: runjournal.v1.ListRunsResponse.runs:type_name -> runjournal.v1.RunSummary
	30, // 12: runjournal.v1.ReadResponse.record:type_name -> runjournal.v1.JournalRecord
	15, // 13: runjournal.v1.WatchResponse.record:type_name -> runjournal.v1.ReadResponse
	18, // 14: runjournal.v1.WatchResponse.caught_up:type_name -> runjournal.v1.CaughtUp
	36, // 15: runjournal.v1.WatchRunsRequest.status:type_name -> runjournal.v1.RunStatus
	29, // 16: runjournal.v1.WatchRunsRequest.labels:type_name -> runjournal.v1.WatchRunsRequest.LabelsEntry
	38, // 17: runjournal.v1.WatchRunsResponse.run:type_name -> runjournal.v1.RunSummary
	18, // 18: runjournal.v1.WatchRunsResponse.caught_up:type_name -> runjournal.v1.CaughtUp
	21, // 19: runjournal.v1.WatchRunsResponse.left:type_name -> runjournal.v1.RunLeft
	39, // 20: runjournal.v1.ForkRunResponse.forked_from:type_name -> runjournal.v1.ForkOrigin
	40, // 21: runjournal.v1.SpawnRunRequest.meta:type_name -> runjournal.v1.Meta
	41, // 22: runjournal.v1.SpawnRunResponse.spawned_by:type_name -> runjournal.v1.SpawnOrigin
	0,  // 23: runjournal.v1.JournalService.Append:input_type -> runjournal.v1.AppendRequest
	2,  // 24: runjournal.v1.JournalService.AppendBatch:input_type -> runjournal.v1.AppendBatchRequest
	4,  // 25: runjournal.v1.JournalService.Claim:input_type -> runjournal.v1.ClaimRequest
	6,  // 26: runjournal.v1.JournalService.Fold:input_type -> runjournal.v1.FoldRequest
	8,  // 27: runjournal.v1.JournalService.Answer:input_type -> runjournal.v1.AnswerRequest
	10, // 28: runjournal.v1.JournalService.Approve:input_type -> runjournal.v1.ApproveRequest
	12, // 29: runjournal.v1.JournalService.ListRuns:input_type -> runjournal.v1.ListRunsRequest
	14, // 30: runjournal.v1.JournalService.Read:input_type -> runjournal.v1.ReadRequest
	16, // 31: runjournal.v1.JournalService.Watch:input_type -> runjournal.v1.WatchRequest
	19, // 32: runjournal.v1.JournalService.WatchRuns:input_type -> runjournal.v1.WatchRunsRequest
	22, // 33: runjournal.v1.JournalService.ForkRun:input_type -> runjournal.v1.ForkRunRequest
	24, // 34: runjournal.v1.JournalService.DeleteRun:input_type -> runjournal.v1.DeleteRunRequest
	26, // 35: runjournal.v1.JournalService.SpawnRun:input_type -> runjournal.v1.SpawnRunRequest
	1,  // 36: runjournal.v1.JournalService.Append:output_type -> runjournal.v1.AppendResponse
	3,  // 37: runjournal.v1.JournalService.AppendBatch:output_type -> runjournal.v1.AppendBatchResponse
	5,  // 38: runjournal.v1.JournalService.Claim:output_type -> runjournal.v1.ClaimResponse
	7,  // 39: runjournal.v1.JournalService.Fold:output_type -> runjournal.v1.FoldResponse
	9,  // 40: runjournal.v1.JournalService.Answer:output_type -> runjournal.v1.AnswerResponse
	11, // 41: runjournal.v1.JournalService.Approve:output_type -> runjournal.v1.ApproveResponse
	13, // 42: runjournal.v1.JournalService.ListRuns:output_type -> runjournal.v1.ListRunsResponse
	15, // 43: runjournal.v1.JournalService.Read:output_type -> runjournal.v1.ReadResponse
	17, // 44: runjournal.v1.JournalService.Watch:output_type -> runjournal.v1.WatchResponse
	20, // 45: runjournal.v1.JournalService.WatchRuns:output_type -> runjournal.v1.WatchRunsResponse
	23, // 46: runjournal.v1.JournalService.ForkRun:output_type -> runjournal.v1.ForkRunResponse
	25, // 47: runjournal.v1.JournalService.DeleteRun:output_type -> runjournal.v1.DeleteRunResponse
	27, // 48: runjournal.v1.JournalService.SpawnRun:output_type -> runjournal.v1.SpawnRunResponse
	36, // [36:49] is the sub-list for method output_type
	23, // [23:36] is the sub-list for method input_type
	23, // [23:23] is the sub-list for extension type_name
	23, // [23:23] is the sub-list for extension extendee
	0,  // [0:23] is the sub-list for field type_name
}

func init() { file_runjournal_v1_journal_service_proto_init() }
func file_runjournal_v1_journal_service_proto_init() {
	if File_runjournal_v1_journal_service_proto != nil {
		return
	}
	file_runjournal_v1_records_proto_init()
	file_runjournal_v1_state_proto_init()
	file_runjournal_v1_journal_service_proto_msgTypes[17].OneofWrappers = []any{
		(*WatchResponse_Record)(nil),
		(*WatchResponse_CaughtUp)(nil),
	}
	file_runjournal_v1_journal_service_proto_msgTypes[20].OneofWrappers = []any{
		(*WatchRunsResponse_Run)(nil),
		(*WatchRunsResponse_CaughtUp)(nil),
		(*WatchRunsResponse_Left)(nil),
	}
	type x struct{}
	out := protoimpl.TypeBuilder{
		File: protoimpl.DescBuilder{
			GoPackagePath: reflect.TypeOf(x{}).PkgPath(),
			RawDescriptor: unsafe.Slice(unsafe.StringData(file_runjournal_v1_journal_service_proto_rawDesc), len(file_runjournal_v1_journal_service_proto_rawDesc)),
			NumEnums:      0,
			NumMessages:   30,
			NumExtensions: 0,
			NumServices:   1,
		},
		GoTypes:           file_runjournal_v1_journal_service_proto_goTypes,
		DependencyIndexes: file_runjournal_v1_journal_service_proto_depIdxs,
		MessageInfos:      file_runjournal_v1_journal_service_proto_msgTypes,
	}.Build()
	File_runjournal_v1_journal_service_proto = out.File
	file_runjournal_v1_journal_service_proto_goTypes = nil
	file_runjournal_v1_journal_service_proto_depIdxs = nil
}

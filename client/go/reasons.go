// Code written from testdata/error_metadata.json (the server's table);
// reasons_test.go checks every reason has a type here and every key a field
// of the right type.

package runjournal

// AlreadyAnsweredError is the ALREADY_ANSWERED refusal; its fields are the ErrorInfo metadata.
type AlreadyAnsweredError struct {
	StatusError
	AnsweredAtSeq int64  `meta:"answered_at_seq"`
	RunID         string `meta:"run_id"`
	ToolUseID     string `meta:"tool_use_id"`
}

// AlreadyCompletedError is the ALREADY_COMPLETED refusal; its fields are the ErrorInfo metadata.
type AlreadyCompletedError struct {
	StatusError
	TaskID string `meta:"task_id"`
}

// AlreadyDecidedError is the ALREADY_DECIDED refusal; its fields are the ErrorInfo metadata.
type AlreadyDecidedError struct {
	StatusError
	DecidedAtSeq int64  `meta:"decided_at_seq"`
	RunID        string `meta:"run_id"`
	ToolUseID    string `meta:"tool_use_id"`
}

// CallNotPendingError is the CALL_NOT_PENDING refusal; its fields are the ErrorInfo metadata.
type CallNotPendingError struct {
	StatusError
	RunID     string `meta:"run_id"`
	ToolUseID string `meta:"tool_use_id"`
}

// CorruptJournalError is the CORRUPT_JOURNAL refusal; its fields are the ErrorInfo metadata.
type CorruptJournalError struct {
	StatusError
	Line  *int64 `meta:"line"`
	RunID string `meta:"run_id"`
	Seq   *int64 `meta:"seq"`
}

// LastSeqMismatchError is the LAST_SEQ_MISMATCH refusal of DeleteRun: the
// run's last seq (LastSeq) is not the ExpectedLastSeq sent, so nothing was
// deleted; its fields are the ErrorInfo metadata.
type LastSeqMismatchError struct {
	StatusError
	ExpectedLastSeq int64  `meta:"expected_last_seq"`
	LastSeq         int64  `meta:"last_seq"`
	RunID           string `meta:"run_id"`
}

// InvalidArgumentError is the INVALID_ARGUMENT refusal; its fields are the ErrorInfo metadata.
type InvalidArgumentError struct {
	StatusError
	Field string `meta:"field"`
	Index *int64 `meta:"index"`
}

// InvalidRecordError is the INVALID_RECORD refusal; its fields are the ErrorInfo metadata.
type InvalidRecordError struct {
	StatusError
	Field string `meta:"field"`
	Index *int64 `meta:"index"`
	Seq   *int64 `meta:"seq"`
}

// NotDeferredError is the NOT_DEFERRED refusal; its fields are the ErrorInfo metadata.
type NotDeferredError struct {
	StatusError
	RunID     string `meta:"run_id"`
	ToolUseID string `meta:"tool_use_id"`
}

// PermissionDeniedError is the PERMISSION_DENIED refusal; its fields are the ErrorInfo metadata.
type PermissionDeniedError struct {
	StatusError
	Principal string `meta:"principal"`
	RunID     string `meta:"run_id"`
	Scope     string `meta:"scope"`
	TaskID    string `meta:"task_id"`
}

// RecordTooLargeError is the RECORD_TOO_LARGE refusal; its fields are the ErrorInfo metadata.
type RecordTooLargeError struct {
	StatusError
	Index *int64 `meta:"index"`
	Limit int64  `meta:"limit"`
	Seq   *int64 `meta:"seq"`
	Size  int64  `meta:"size"`
}

// ResponseTooLargeError is the RESPONSE_TOO_LARGE refusal; its fields are the ErrorInfo metadata.
type ResponseTooLargeError struct {
	StatusError
	Limit int64  `meta:"limit"`
	RunID string `meta:"run_id"`
	Size  int64  `meta:"size"`
}

// ResumeRefusedError is the RESUME_REFUSED refusal; its fields are the ErrorInfo metadata.
type ResumeRefusedError struct {
	StatusError
	Fields []string `meta:"fields"`
	RunID  string   `meta:"run_id"`
}

// RunClaimedError is the RUN_CLAIMED refusal; its fields are the ErrorInfo metadata.
type RunClaimedError struct {
	StatusError
	ClaimToken int64  `meta:"claim_token"`
	ClaimedBy  string `meta:"claimed_by"`
	RunID      string `meta:"run_id"`
}

// RunDeletedError is the RUN_DELETED refusal: the run was deleted and its id
// is never used again (LastSeq: its last seq then); its fields are the
// ErrorInfo metadata.
type RunDeletedError struct {
	StatusError
	LastSeq int64  `meta:"last_seq"`
	RunID   string `meta:"run_id"`
}

// RunExistsError is the RUN_EXISTS refusal; its fields are the ErrorInfo metadata.
type RunExistsError struct {
	StatusError
	Index *int64 `meta:"index"`
	RunID string `meta:"run_id"`
}

// RunLockedError is the RUN_LOCKED refusal; its fields are the ErrorInfo metadata.
type RunLockedError struct {
	StatusError
	RunID string `meta:"run_id"`
}

// RunNotFoundError is the RUN_NOT_FOUND refusal; its fields are the ErrorInfo metadata.
type RunNotFoundError struct {
	StatusError
	RunID string `meta:"run_id"`
}

// SeqConflictError is the SEQ_CONFLICT refusal; its fields are the ErrorInfo metadata.
type SeqConflictError struct {
	StatusError
	Index   *int64 `meta:"index"`
	LastSeq int64  `meta:"last_seq"`
	RunID   string `meta:"run_id"`
	Seq     int64  `meta:"seq"`
}

// SeqGapError is the SEQ_GAP refusal; its fields are the ErrorInfo metadata.
type SeqGapError struct {
	StatusError
	Index   *int64 `meta:"index"`
	LastSeq int64  `meta:"last_seq"`
	RunID   string `meta:"run_id"`
	Seq     int64  `meta:"seq"`
}

// StorageFullError is the STORAGE_FULL refusal; its fields are the ErrorInfo metadata.
type StorageFullError struct {
	StatusError
	RunID  string `meta:"run_id"`
	TaskID string `meta:"task_id"`
}

// StorageUnavailableError is the STORAGE_UNAVAILABLE refusal; its fields are the ErrorInfo metadata.
type StorageUnavailableError struct {
	StatusError
	RunID  string `meta:"run_id"`
	TaskID string `meta:"task_id"`
}

// TaskConflictError is the TASK_CONFLICT refusal; its fields are the ErrorInfo metadata.
type TaskConflictError struct {
	StatusError
	TaskID string `meta:"task_id"`
}

// TaskDeletedError is the TASK_DELETED refusal: the task was deleted and its
// id is never used again; its fields are the ErrorInfo metadata.
type TaskDeletedError struct {
	StatusError
	TaskID string `meta:"task_id"`
}

// TaskNotFoundError is the TASK_NOT_FOUND refusal; its fields are the ErrorInfo metadata.
type TaskNotFoundError struct {
	StatusError
	TaskID string `meta:"task_id"`
}

// UnauthenticatedError is the UNAUTHENTICATED refusal; its fields are the ErrorInfo metadata.
type UnauthenticatedError struct {
	StatusError
}

// VersionMismatchError is the VERSION_MISMATCH refusal; its fields are the ErrorInfo metadata.
type VersionMismatchError struct {
	StatusError
	ExpectedVersion int64  `meta:"expected_version"`
	FoundVersion    int64  `meta:"found_version"`
	RunID           string `meta:"run_id"`
}

// reasonTypes builds the typed error of each reason.
var reasonTypes = map[string]func(StatusError) error{
	"ALREADY_ANSWERED":    func(s StatusError) error { e := &AlreadyAnsweredError{StatusError: s}; fillMeta(e); return e },
	"ALREADY_COMPLETED":   func(s StatusError) error { e := &AlreadyCompletedError{StatusError: s}; fillMeta(e); return e },
	"ALREADY_DECIDED":     func(s StatusError) error { e := &AlreadyDecidedError{StatusError: s}; fillMeta(e); return e },
	"CALL_NOT_PENDING":    func(s StatusError) error { e := &CallNotPendingError{StatusError: s}; fillMeta(e); return e },
	"CORRUPT_JOURNAL":     func(s StatusError) error { e := &CorruptJournalError{StatusError: s}; fillMeta(e); return e },
	"INVALID_ARGUMENT":    func(s StatusError) error { e := &InvalidArgumentError{StatusError: s}; fillMeta(e); return e },
	"INVALID_RECORD":      func(s StatusError) error { e := &InvalidRecordError{StatusError: s}; fillMeta(e); return e },
	"LAST_SEQ_MISMATCH":   func(s StatusError) error { e := &LastSeqMismatchError{StatusError: s}; fillMeta(e); return e },
	"NOT_DEFERRED":        func(s StatusError) error { e := &NotDeferredError{StatusError: s}; fillMeta(e); return e },
	"PERMISSION_DENIED":   func(s StatusError) error { e := &PermissionDeniedError{StatusError: s}; fillMeta(e); return e },
	"RECORD_TOO_LARGE":    func(s StatusError) error { e := &RecordTooLargeError{StatusError: s}; fillMeta(e); return e },
	"RESPONSE_TOO_LARGE":  func(s StatusError) error { e := &ResponseTooLargeError{StatusError: s}; fillMeta(e); return e },
	"RESUME_REFUSED":      func(s StatusError) error { e := &ResumeRefusedError{StatusError: s}; fillMeta(e); return e },
	"RUN_CLAIMED":         func(s StatusError) error { e := &RunClaimedError{StatusError: s}; fillMeta(e); return e },
	"RUN_DELETED":         func(s StatusError) error { e := &RunDeletedError{StatusError: s}; fillMeta(e); return e },
	"RUN_EXISTS":          func(s StatusError) error { e := &RunExistsError{StatusError: s}; fillMeta(e); return e },
	"RUN_LOCKED":          func(s StatusError) error { e := &RunLockedError{StatusError: s}; fillMeta(e); return e },
	"RUN_NOT_FOUND":       func(s StatusError) error { e := &RunNotFoundError{StatusError: s}; fillMeta(e); return e },
	"SEQ_CONFLICT":        func(s StatusError) error { e := &SeqConflictError{StatusError: s}; fillMeta(e); return e },
	"SEQ_GAP":             func(s StatusError) error { e := &SeqGapError{StatusError: s}; fillMeta(e); return e },
	"STORAGE_FULL":        func(s StatusError) error { e := &StorageFullError{StatusError: s}; fillMeta(e); return e },
	"STORAGE_UNAVAILABLE": func(s StatusError) error { e := &StorageUnavailableError{StatusError: s}; fillMeta(e); return e },
	"TASK_CONFLICT":       func(s StatusError) error { e := &TaskConflictError{StatusError: s}; fillMeta(e); return e },
	"TASK_DELETED":        func(s StatusError) error { e := &TaskDeletedError{StatusError: s}; fillMeta(e); return e },
	"TASK_NOT_FOUND":      func(s StatusError) error { e := &TaskNotFoundError{StatusError: s}; fillMeta(e); return e },
	"UNAUTHENTICATED":     func(s StatusError) error { e := &UnauthenticatedError{StatusError: s}; fillMeta(e); return e },
	"VERSION_MISMATCH":    func(s StatusError) error { e := &VersionMismatchError{StatusError: s}; fillMeta(e); return e },
}

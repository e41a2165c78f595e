package runjournal

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// Run is a writer's handle on one run: its claim token and the next seq. The
// seq advances only when the server acknowledged a record, so after a failed
// call the same call with the same record goes to the same seq, which the
// server verifies as a duplicate if the first attempt did land. A Run is not
// safe for concurrent use.
type Run struct {
	client     *Client
	runID      string
	claimToken int64
	nextSeq    int64
	// State, Gate and ResumeReminder come from the claim (nil/empty after Create).
	State          *pb.RunState
	Gate           *pb.GateReport
	ResumeReminder string
}

// CreateOptions are the optional parts of a run's meta record.
type CreateOptions = MetaOptions

// Create creates runID by appending its meta record at seq 1 (the creator's
// claim token is 1). Pass the same CreatedAt to make a repeated Create a
// verified duplicate instead of RUN_EXISTS.
func Create(ctx context.Context, c *Client, runID string, fp *pb.Fingerprint, prompt []*pb.ContentBlock, o CreateOptions) (*Run, error) {
	resp, err := c.Append(ctx, runID, CreatorClaimToken, MetaRecord(runID, fp, prompt, o))
	if err != nil {
		return nil, err
	}
	return &Run{client: c, runID: runID, claimToken: CreatorClaimToken, nextSeq: resp.GetSeq() + 1}, nil
}

// ClaimOptions are the optional parts of a claim.
type ClaimOptions struct {
	Force            bool
	Reason           string
	Host             string // default: os.Hostname
	Pid              int32  // default: os.Getpid
	ConversationFrom int32
	Uncompacted      bool // State holds the whole conversation, as if no compaction had happened
}

// Claim takes over runID for workerID; State, Gate and ResumeReminder come
// from the server's answer.
func Claim(ctx context.Context, c *Client, runID, workerID string, fp *pb.Fingerprint, o ClaimOptions) (*Run, error) {
	host := o.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	pid := o.Pid
	if pid == 0 {
		pid = int32(os.Getpid())
	}
	resp, err := c.ClaimRaw(ctx, &pb.ClaimRequest{
		RunId: runID, WorkerId: workerID, Host: host, Pid: pid, Reason: o.Reason,
		Fingerprint: fp, Force: o.Force, ConversationFrom: o.ConversationFrom, Uncompacted: o.Uncompacted,
	})
	if err != nil {
		return nil, err
	}
	return &Run{client: c, runID: runID, claimToken: resp.GetClaimToken(), nextSeq: resp.GetLastSeq() + 1,
		State: resp.GetState(), Gate: resp.GetGate(), ResumeReminder: resp.GetResumeReminder()}, nil
}

// RunID is the run's id.
func (r *Run) RunID() string { return r.runID }

// ClaimToken is the token sent with every append.
func (r *Run) ClaimToken() int64 { return r.claimToken }

// NextSeq is the seq the next record goes to.
func (r *Run) NextSeq() int64 { return r.nextSeq }

// LastSeq is the last seq this handle knows to be stored.
func (r *Run) LastSeq() int64 { return r.nextSeq - 1 }

func (r *Run) place(drafts []*pb.JournalRecord) ([]*pb.JournalRecord, error) {
	if len(drafts) == 0 {
		return nil, fmt.Errorf("a batch needs at least one record")
	}
	placed := make([]*pb.JournalRecord, len(drafts))
	for i, d := range drafts {
		seq := r.nextSeq + int64(i)
		if d.GetSeq() != 0 && d.GetSeq() != seq {
			return nil, fmt.Errorf("record already carries seq %d, but the run's next seq is %d; pass drafts (seq 0)", d.GetSeq(), seq)
		}
		rec := proto.Clone(d).(*pb.JournalRecord)
		rec.Seq = seq
		placed[i] = rec
	}
	return placed, nil
}

// Append writes a draft record (seq 0) at the next seq; returns its seq.
func (r *Run) Append(ctx context.Context, draft *pb.JournalRecord) (int64, error) {
	placed, err := r.place([]*pb.JournalRecord{draft})
	if err != nil {
		return 0, err
	}
	resp, err := r.client.Append(ctx, r.runID, r.claimToken, placed[0])
	if err != nil {
		return 0, err
	}
	r.nextSeq = resp.GetSeq() + 1
	return resp.GetSeq(), nil
}

// AppendBatch writes drafts at consecutive seqs, all or nothing; returns the
// seq of the last.
func (r *Run) AppendBatch(ctx context.Context, drafts ...*pb.JournalRecord) (int64, error) {
	placed, err := r.place(drafts)
	if err != nil {
		return 0, err
	}
	resp, err := r.client.AppendBatch(ctx, r.runID, r.claimToken, placed)
	if err != nil {
		return 0, err
	}
	last := resp.GetFirstSeq() + int64(len(placed)) - 1
	r.nextSeq = last + 1
	return last, nil
}

// Assistant appends a model turn.
func (r *Run) Assistant(ctx context.Context, iteration int32, content []*pb.ContentBlock, stop pb.StopReason, usage *pb.Usage) (int64, error) {
	return r.Append(ctx, AssistantRecord(iteration, content, stop, usage))
}

// ToolResult appends a text result of a call.
func (r *Run) ToolResult(ctx context.Context, toolUseID, text string, isError bool) (int64, error) {
	return r.Append(ctx, ToolResultText(toolUseID, text, isError))
}

// ToolResultBlocks appends a result of a call made of content blocks (text,
// opaque provider blocks...), as Python's and TypeScript's tool_result take.
func (r *Run) ToolResultBlocks(ctx context.Context, toolUseID string, content []*pb.ContentBlock, isError bool) (int64, error) {
	return r.Append(ctx, ToolResultRecord(toolUseID, content, isError))
}

// Deferral appends a deferral of a call to a person or an operator.
func (r *Run) Deferral(ctx context.Context, toolUseID, reason, expectedAnswerer string, needsApproval bool) (int64, error) {
	return r.Append(ctx, DeferralRecord(toolUseID, reason, expectedAnswerer, needsApproval))
}

// User appends a follow-up text message.
func (r *Run) User(ctx context.Context, text string) (int64, error) {
	return r.Append(ctx, UserRecord(Text(text)))
}

// Terminal appends why the run stopped.
func (r *Run) Terminal(ctx context.Context, reason pb.TerminalReason, message string) (int64, error) {
	return r.Append(ctx, TerminalRecord(reason, message))
}

// Note appends an optional note; data, at most one value, is stored as
// canonical JSON (none: no data), as in Python's and TypeScript's note.
func (r *Run) Note(ctx context.Context, text string, data ...any) (int64, error) {
	if len(data) > 1 {
		return 0, fmt.Errorf("runjournal: Note takes at most one data value, got %d", len(data))
	}
	var value any
	if len(data) == 1 {
		value = data[0]
	}
	rec, err := NoteRecord(text, value)
	if err != nil {
		return 0, err
	}
	return r.Append(ctx, rec)
}

// Compaction appends a compaction record (CompactionRecord): from now on the
// model is sent summary instead of the messages of records 1..uptoSeq.
func (r *Run) Compaction(ctx context.Context, uptoSeq int64, summary []*pb.ConversationMessage, trigger pb.CompactionTrigger, o CompactionOptions) (int64, error) {
	rec, err := CompactionRecord(uptoSeq, summary, trigger, o)
	if err != nil {
		return 0, err
	}
	return r.Append(ctx, rec)
}

// Fold folds the run now and keeps the result as State.
func (r *Run) Fold(ctx context.Context) (*pb.RunState, error) {
	st, err := r.client.Fold(ctx, r.runID, 0)
	if err != nil {
		return nil, err
	}
	r.State = st
	return st, nil
}

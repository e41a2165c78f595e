package runjournal

import (
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// FormatVersion is the journal format version this client writes in meta.
// Format 2 adds the compaction record; a server that reads only format 1
// refuses such a run whole (VERSION_MISMATCH) rather than fold it wrong.
const FormatVersion = 2

// CreatorClaimToken is the claim token of the worker that created a run.
const CreatorClaimToken = 1

// Text is a text content block.
func Text(text string) *pb.ContentBlock {
	return &pb.ContentBlock{Block: &pb.ContentBlock_Text{Text: &pb.TextBlock{Text: text}}}
}

// Thinking is a thinking block with its provider signature.
func Thinking(thinking, signature string) *pb.ContentBlock {
	return &pb.ContentBlock{Block: &pb.ContentBlock_Thinking{Thinking: &pb.ThinkingBlock{Thinking: thinking, Signature: signature}}}
}

// RedactedThinking is a redacted thinking block, kept as the provider's data.
func RedactedThinking(data string) *pb.ContentBlock {
	return &pb.ContentBlock{Block: &pb.ContentBlock_Thinking{Thinking: &pb.ThinkingBlock{Redacted: true, Data: data}}}
}

// ToolUse is a tool call block; input (a JSON object) is stored as canonical
// JSON, so every language writes the same bytes.
func ToolUse(id, name string, input map[string]any) (*pb.ContentBlock, error) {
	if input == nil {
		input = map[string]any{}
	}
	text, err := CanonicalJSON(input)
	if err != nil {
		return nil, fmt.Errorf("tool_use %s input: %w", id, err)
	}
	return &pb.ContentBlock{Block: &pb.ContentBlock_ToolUse{ToolUse: &pb.ToolUseBlock{Id: id, Name: name, InputJson: text}}}, nil
}

// MustToolUse is ToolUse that panics on an input that is not portable JSON.
func MustToolUse(id, name string, input map[string]any) *pb.ContentBlock {
	b, err := ToolUse(id, name, input)
	if err != nil {
		panic(err)
	}
	return b
}

// Opaque is a provider block kept verbatim, as canonical JSON.
func Opaque(provider, typ string, value any) (*pb.ContentBlock, error) {
	text, err := CanonicalJSON(value)
	if err != nil {
		return nil, err
	}
	return &pb.ContentBlock{Block: &pb.ContentBlock_Opaque{Opaque: &pb.OpaqueBlock{Provider: provider, Type: typ, Json: text}}}, nil
}

// ToolUseText is a tool call whose input is the provider's own text, kept as
// written; providerJSON is the provider's own call block or item, verbatim,
// when it holds more than id, name and input (OpenAI's function_call item),
// or "".
func ToolUseText(id, name, inputJSON, providerJSON string) *pb.ContentBlock {
	return &pb.ContentBlock{Block: &pb.ContentBlock_ToolUse{ToolUse: &pb.ToolUseBlock{Id: id, Name: name, InputJson: inputJSON, ProviderJson: providerJSON}}}
}

// OpaqueText is a provider-specific block whose JSON is the provider's own
// text, kept byte for byte.
func OpaqueText(provider, typ, jsonText string) *pb.ContentBlock {
	return &pb.ContentBlock{Block: &pb.ContentBlock_Opaque{Opaque: &pb.OpaqueBlock{Provider: provider, Type: typ, Json: jsonText}}}
}

// MetaOptions are the optional fields of a meta record.
type MetaOptions struct {
	Labels      map[string]string
	Interactive bool
	TaskID      string
	CreatedAt   time.Time // zero: now
}

// MetaRecord is the record that creates a run, at seq 1.
func MetaRecord(runID string, fp *pb.Fingerprint, prompt []*pb.ContentBlock, o MetaOptions) *pb.JournalRecord {
	at := o.CreatedAt
	if at.IsZero() {
		at = time.Now()
	}
	return &pb.JournalRecord{Seq: 1, Payload: &pb.JournalRecord_Meta{Meta: &pb.Meta{
		FormatVersion: FormatVersion,
		RunId:         runID,
		CreatedAt:     timestamppb.New(at.UTC()),
		Fingerprint:   fp,
		Prompt:        prompt,
		Interactive:   o.Interactive,
		Labels:        o.Labels,
		TaskId:        o.TaskID,
	}}}
}

// AssistantRecord is a model turn. usage may be nil.
func AssistantRecord(iteration int32, content []*pb.ContentBlock, stop pb.StopReason, usage *pb.Usage) *pb.JournalRecord {
	if usage == nil {
		usage = &pb.Usage{}
	}
	return &pb.JournalRecord{Payload: &pb.JournalRecord_Assistant{Assistant: &pb.AssistantTurn{
		Iteration: iteration, Content: content, StopReason: stop, Usage: usage,
	}}}
}

// ToolResultRecord is the result of a call of the open turn.
func ToolResultRecord(toolUseID string, content []*pb.ContentBlock, isError bool) *pb.JournalRecord {
	return &pb.JournalRecord{Payload: &pb.JournalRecord_ToolResult{ToolResult: &pb.ToolResult{
		ToolUseId: toolUseID, Content: content, IsError: isError,
	}}}
}

// ToolResultText is ToolResultRecord with one text block.
func ToolResultText(toolUseID, text string, isError bool) *pb.JournalRecord {
	return ToolResultRecord(toolUseID, []*pb.ContentBlock{Text(text)}, isError)
}

// DeferralRecord hands a call to a person (an answer) or, with
// needsApproval, to an operator's decision.
func DeferralRecord(toolUseID, reason, expectedAnswerer string, needsApproval bool) *pb.JournalRecord {
	return &pb.JournalRecord{Payload: &pb.JournalRecord_Deferral{Deferral: &pb.Deferral{
		ToolUseId: toolUseID, Reason: reason, ExpectedAnswerer: expectedAnswerer, NeedsApproval: needsApproval,
	}}}
}

// UserRecord is a free-standing follow-up message.
func UserRecord(content ...*pb.ContentBlock) *pb.JournalRecord {
	return &pb.JournalRecord{Payload: &pb.JournalRecord_User{User: &pb.UserFollowUp{Content: content}}}
}

// TerminalRecord records why the run stopped.
func TerminalRecord(reason pb.TerminalReason, message string) *pb.JournalRecord {
	return &pb.JournalRecord{Payload: &pb.JournalRecord_Terminal{Terminal: &pb.Terminal{Reason: reason, Message: message}}}
}

// NoteRecord is an optional note; data (nil for none) is stored as canonical JSON.
func NoteRecord(text string, data any) (*pb.JournalRecord, error) {
	dataJSON := ""
	if data != nil {
		var err error
		if dataJSON, err = CanonicalJSON(data); err != nil {
			return nil, err
		}
	}
	return &pb.JournalRecord{Optional: true, Payload: &pb.JournalRecord_Note{Note: &pb.Note{Text: text, DataJson: dataJSON}}}, nil
}

// ApprovalRecord is an operator's decision on a call.
func ApprovalRecord(toolUseID string, decision pb.Decision, approver, reason string) *pb.JournalRecord {
	return &pb.JournalRecord{Payload: &pb.JournalRecord_Approval{Approval: &pb.Approval{
		ToolUseId: toolUseID, Decision: decision, Approver: approver, Reason: reason,
	}}}
}

// SummaryText is a compaction summary as one user message holding text.
func SummaryText(text string) []*pb.ConversationMessage {
	return SummaryBlocks(Text(text))
}

// SummaryBlocks is a compaction summary as one user message of blocks, e.g.
// the provider's compaction block kept verbatim (Opaque). To give the role
// (Anthropic's compaction block is in an assistant message), build the
// messages yourself.
func SummaryBlocks(blocks ...*pb.ContentBlock) []*pb.ConversationMessage {
	return []*pb.ConversationMessage{{Role: pb.Role_ROLE_USER, Content: blocks}}
}

// CompactionOptions are the optional fields of a compaction record.
type CompactionOptions struct {
	Provider     string // the provider whose model wrote the summary; empty for one written by hand
	Model        string
	TokensBefore int32     // the conversation's size in tokens before; 0 when unknown
	Usage        *pb.Usage // of the call that wrote the summary; nil: none
}

// CompactionRecord is a compaction: from now on the model is sent summary
// instead of the messages of records 1..uptoSeq (SummaryText, SummaryBlocks,
// or whole messages). Nothing is removed: Fold with uncompacted still returns
// every message. The server refuses it (INVALID_RECORD) when the point would
// separate a call from its result, or on a run of journal format 1. uptoSeq
// is a seq, but the record holds it as int32: a larger one is an error here
// rather than a truncated point.
func CompactionRecord(uptoSeq int64, summary []*pb.ConversationMessage, trigger pb.CompactionTrigger, o CompactionOptions) (*pb.JournalRecord, error) {
	if int64(int32(uptoSeq)) != uptoSeq {
		return nil, fmt.Errorf("compaction upto_seq %d does not fit the record's int32 (at most %d)", uptoSeq, math.MaxInt32)
	}
	usage := o.Usage
	if usage == nil {
		usage = &pb.Usage{}
	}
	return &pb.JournalRecord{Payload: &pb.JournalRecord_Compaction{Compaction: &pb.Compaction{
		UptoSeq: int32(uptoSeq), Summary: summary, Provider: o.Provider, Model: o.Model,
		Trigger: trigger, TokensBefore: o.TokensBefore, Usage: usage,
	}}}, nil
}

// Package anthropic is runjournal for workers that call Claude with
// github.com/anthropics/anthropic-sdk-go (module
// runjournal.dev/client/go/adapters, apart from the base client, so the base
// client never requires the SDK). The twin of Python's
// runjournal.adapters.anthropic and TypeScript's adapters/anthropic: the
// same conversions, requests equal as JSON (docs/integrations/anthropic.md).
//
//   - AssistantRecord(message, iteration): a Message or BetaMessage (from New,
//     or a stream's accumulated message) -> an assistant record keeping every
//     block as the API sent it (each block's RawJSON), the usage with its
//     cache tokens and the stop reason.
//   - ToolResultRecord(param, remote): the ToolResultBlockParam the loop
//     sends -> a tool_result record; DeferralRecord; UserBlocks / UserRecord
//     for the prompt and follow-ups.
//   - RequestMessages / RequestBetaMessages(state, options): a folded run ->
//     the messages of the next Messages.New, with the API's rules applied.
//   - Fingerprint(params, maxIterations): the run's fingerprint from the very
//     params of Messages.New.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	rj "runjournal.dev/client/go"
	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

var stopReasons = map[string]pb.StopReason{
	"end_turn":                      pb.StopReason_STOP_REASON_END_TURN,
	"tool_use":                      pb.StopReason_STOP_REASON_TOOL_USE,
	"max_tokens":                    pb.StopReason_STOP_REASON_MAX_TOKENS,
	"stop_sequence":                 pb.StopReason_STOP_REASON_STOP_SEQUENCE,
	"pause_turn":                    pb.StopReason_STOP_REASON_PAUSE_TURN,
	"refusal":                       pb.StopReason_STOP_REASON_REFUSAL,
	"compaction":                    pb.StopReason_STOP_REASON_COMPACTION,
	"model_context_window_exceeded": pb.StopReason_STOP_REASON_MODEL_CONTEXT_WINDOW_EXCEEDED,
}

var toolResultKeys = map[string]bool{
	"type": true, "tool_use_id": true, "content": true, "is_error": true, "cache_control": true, "toolset_name": true,
}

// --- what the model answered ---------------------------------------------------

// AssistantRecord is a draft assistant record of one model call: every block
// (its RawJSON, so the provider's text is kept), the usage and the stop
// reason. message is an sdk.Message or sdk.BetaMessage (or a pointer to
// one), e.g. a stream's message after Accumulate of every event.
func AssistantRecord(message any, iteration int32) (*pb.JournalRecord, error) {
	var blocks []string
	var stop string
	var usage *pb.Usage
	switch m := message.(type) {
	case *sdk.Message:
		return AssistantRecord(*m, iteration)
	case *sdk.BetaMessage:
		return AssistantRecord(*m, iteration)
	case sdk.Message:
		for _, block := range m.Content {
			blocks = append(blocks, block.RawJSON())
		}
		stop = string(m.StopReason)
		usage = usageOf(m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens)
	case sdk.BetaMessage:
		for _, block := range m.Content {
			blocks = append(blocks, block.RawJSON())
		}
		stop = string(m.StopReason)
		usage = usageOf(m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens)
	default:
		return nil, fmt.Errorf("expected an anthropic Message or BetaMessage, got %T", message)
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("the message has no content block; an empty answer has no record " +
			"(nor can it be sent back: the API refuses an empty assistant message)")
	}
	content := make([]*pb.ContentBlock, len(blocks))
	for i, raw := range blocks {
		if raw == "" {
			return nil, fmt.Errorf("content block %d has no raw JSON: record a message the SDK decoded from the API", i)
		}
		block, err := ModelBlock([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("content block %d: %w", i, err)
		}
		content[i] = block
	}
	reason, err := StopReason(stop)
	if err != nil {
		return nil, err
	}
	return rj.AssistantRecord(iteration, content, reason, usage), nil
}

// StopReason is the journal's stop reason for the API's stop_reason.
func StopReason(value string) (pb.StopReason, error) {
	if value == "" {
		return 0, fmt.Errorf("the message has no stop_reason: record a finished message (a stream's final message)")
	}
	reason, ok := stopReasons[value]
	if !ok {
		known := make([]string, 0, len(stopReasons))
		for name := range stopReasons {
			known = append(known, name)
		}
		sort.Strings(known)
		return 0, fmt.Errorf("unknown Anthropic stop_reason %q; known: %s", value, strings.Join(known, ", "))
	}
	return reason, nil
}

func usageOf(input, output, cacheRead, cacheWrite int64) *pb.Usage {
	return &pb.Usage{InputTokens: int32(input), OutputTokens: int32(output), CacheReadTokens: int32(cacheRead), CacheWriteTokens: int32(cacheWrite)}
}

// --- what the loop sends --------------------------------------------------------

// ToolResultRecord is a draft tool_result record from the tool-result block
// the loop sends: an sdk.ToolResultBlockParam or sdk.BetaToolResultBlockParam
// (a string content, which those types do not model, as
// param.Override[sdk.BetaToolResultBlockParam](json.RawMessage(...))), or
// its JSON. content (a string, a list of blocks, or none) comes back in the
// same shape, and is_error when true. cache_control of the block itself (a
// breakpoint belongs to one request) and toolset_name (rebuilt from the call
// it answers) are not kept.
func ToolResultRecord(result any, remote bool) (*pb.JournalRecord, error) {
	raw, err := wire.JSONOf(result)
	if err != nil {
		return nil, err
	}
	fields, err := wire.Object(raw)
	if err != nil {
		return nil, err
	}
	kind, _ := wire.String(fields, "type")
	id, okID := wire.String(fields, "tool_use_id")
	if kind != "tool_result" || !okID {
		return nil, fmt.Errorf(`expected a tool_result block: {"type": "tool_result", "tool_use_id": ..., ...}`)
	}
	var unknown []string
	for _, key := range wire.Keys(fields) {
		if !toolResultKeys[key] {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("a tool_result block with keys the journal cannot keep: %v", unknown)
	}
	var content []*pb.ContentBlock
	if !wire.IsNull(fields, "content") {
		if content, err = userBlocksJSON(fields["content"]); err != nil {
			return nil, err
		}
	}
	isError := string(fields["is_error"]) == "true"
	record := rj.ToolResultRecord(id, content, isError)
	record.GetToolResult().Remote = remote
	return record, nil
}

// ToolResultContent is a tool result's content (a string or blocks) as
// journal blocks, e.g. for Client.Answer of a deferred call.
func ToolResultContent(content any) ([]*pb.ContentBlock, error) {
	if content == nil {
		return nil, nil
	}
	return UserBlocks(content)
}

// DeferralRecord is a draft deferral record for a tool_use block of the
// model's answer (by its id).
func DeferralRecord(toolUseID, reason, expectedAnswerer string, needsApproval bool) *pb.JournalRecord {
	return rj.DeferralRecord(toolUseID, reason, expectedAnswerer, needsApproval)
}

// UserRecord is a draft user follow-up from a user message's content (a
// string or blocks).
func UserRecord(content any) (*pb.JournalRecord, error) {
	blocks, err := UserBlocks(content)
	if err != nil {
		return nil, err
	}
	return rj.UserRecord(blocks...), nil
}

// --- the next request -----------------------------------------------------------

// RequestOptions are what RequestMessages needs besides the state.
type RequestOptions struct {
	// System is the system prompt the caller sends (a string, or the SDK's
	// text blocks); it must hash to the run's fingerprint. nil: none.
	System any
	// Records are the run's records (ReadRecords), which say which model
	// wrote each turn.
	Records []*pb.JournalRecord
	// Model is the model called now; "" means the fingerprint's.
	Model string
}

// RequestMessagesJSON is the messages of the next Messages.New from a folded
// run, each as the JSON the SDK sends. state is a RunState from Claim or
// Fold (the default compacted conversation, from message 0) without
// unanswered calls.
func RequestMessagesJSON(state *pb.RunState, o RequestOptions) ([]json.RawMessage, error) {
	if err := checkState(state); err != nil {
		return nil, err
	}
	if err := checkSystem(state, o.System); err != nil {
		return nil, err
	}
	conversation := state.GetConversation()
	models, err := assistantModels(o.Records, state)
	if err != nil {
		return nil, err
	}
	if index, position, ok := newestCompaction(conversation); ok {
		conversation, models = fromCompaction(conversation, models, index, position)
	}
	now := o.Model
	if now == "" {
		now = state.GetEffectiveFingerprint().GetModel()
	}
	params, err := messageParams(conversation)
	if err != nil {
		return nil, err
	}
	if params, err = stripForeignThinking(params, conversation, models, now); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(params))
	for i, message := range params {
		if out[i], err = wire.Marshal(message); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RequestMessages is RequestMessagesJSON as the SDK's MessageParams, each
// sent as its JSON (param.Override), so no block passes through a type that
// could drop a field.
func RequestMessages(state *pb.RunState, o RequestOptions) ([]sdk.MessageParam, error) {
	return overridden[sdk.MessageParam](state, o)
}

// RequestBetaMessages is RequestMessages for client.Beta.Messages.
func RequestBetaMessages(state *pb.RunState, o RequestOptions) ([]sdk.BetaMessageParam, error) {
	return overridden[sdk.BetaMessageParam](state, o)
}

func overridden[T param.ParamStruct, PT param.InferPtr[T]](state *pb.RunState, o RequestOptions) ([]T, error) {
	messages, err := RequestMessagesJSON(state, o)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(messages))
	for i, message := range messages {
		out[i] = param.Override[T, PT](message)
	}
	return out, nil
}

// ReadRecords is every record of a run, for RequestOptions.Records.
func ReadRecords(ctx context.Context, client *rj.Client, runID string) ([]*pb.JournalRecord, error) {
	var records []*pb.JournalRecord
	for item, err := range client.Read(ctx, runID, 1) {
		if err != nil {
			return nil, err
		}
		records = append(records, item.GetRecord())
	}
	return records, nil
}

func checkState(state *pb.RunState) error {
	if state.GetConversationOffset() != 0 {
		return fmt.Errorf("the state holds the conversation from a later message; fold it from message 0")
	}
	if state.GetUncompacted() {
		return fmt.Errorf("an uncompacted state is for reading; fold without uncompacted to call the model")
	}
	if state.GetPending() != nil {
		var open []string
		for _, call := range state.GetPending().GetCalls() {
			if !call.GetAnswered() {
				open = append(open, call.GetToolUse().GetId())
			}
		}
		return fmt.Errorf("calls %v have no result yet: record their results, then fold again", open)
	}
	return nil
}

func checkSystem(state *pb.RunState, system any) error {
	recorded := state.GetEffectiveFingerprint().GetSystemPromptSha256()
	if recorded == "" {
		return nil
	}
	text, err := SystemText(system)
	if err != nil {
		return err
	}
	if rj.SystemPromptSHA256(text) != recorded {
		return fmt.Errorf("the system prompt differs from the run's (its SHA-256 is not the fingerprint's " +
			"system_prompt_sha256): pass the system the run was written with, or claim with force")
	}
	return nil
}

// --- the fingerprint ------------------------------------------------------------

// Fingerprint is the run's fingerprint from the params of Messages.New (an
// sdk.MessageNewParams, sdk.BetaMessageNewParams, or anything that marshals
// to the request body, e.g. a map): model, max_tokens, the SHA-256 of
// system, the hash of tools and thinking's type as the thinking mode; the
// rest is ignored. maxIterations is the worker's own.
func Fingerprint(params any, maxIterations int32) (*pb.Fingerprint, error) {
	body, model, err := wire.Params(params)
	if err != nil {
		return nil, err
	}
	var maxTokens int32
	if !wire.IsNull(body, "max_tokens") {
		if err := json.Unmarshal(body["max_tokens"], &maxTokens); err != nil {
			return nil, fmt.Errorf("max_tokens: %w", err)
		}
	}
	system := ""
	if !wire.IsNull(body, "system") {
		if system, err = systemTextJSON(body["system"]); err != nil {
			return nil, err
		}
	}
	var tools []any
	if !wire.IsNull(body, "tools") {
		decoded, err := wire.Decode(body["tools"])
		if err != nil {
			return nil, err
		}
		list, ok := decoded.([]any)
		if !ok {
			return nil, fmt.Errorf("tools must be a list")
		}
		tools = list
	}
	mode := "off"
	if !wire.IsNull(body, "thinking") {
		if mode, err = ThinkingMode(body["thinking"]); err != nil {
			return nil, err
		}
	}
	return rj.MakeFingerprint(rj.FingerprintConfig{
		Provider: Provider, Model: model, SystemPrompt: system, ThinkingMode: mode,
		Tools: tools, MaxTokens: maxTokens, MaxIterations: maxIterations,
	})
}

// SystemText is the text whose SHA-256 is the fingerprint's: a string as is,
// a list of blocks as canonical JSON, nil as "".
func SystemText(system any) (string, error) {
	switch s := system.(type) {
	case nil:
		return "", nil
	case string:
		return s, nil
	}
	raw, err := wire.JSONOf(system)
	if err != nil {
		return "", err
	}
	return systemTextJSON(raw)
}

func systemTextJSON(raw []byte) (string, error) {
	value, err := wire.Decode(raw)
	if err != nil {
		return "", err
	}
	switch v := value.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any:
		return rj.CanonicalJSON(v)
	default:
		return "", fmt.Errorf("system must be a string or a list of blocks, got %.200s", raw)
	}
}

// ThinkingMode is thinking's type ("enabled", "adaptive", ...) from its JSON,
// or "off" when disabled.
func ThinkingMode(thinking json.RawMessage) (string, error) {
	object, err := wire.Object(thinking)
	if err != nil {
		return "", fmt.Errorf("thinking: %w", err)
	}
	kind, err := blockType(object, thinking)
	if err != nil {
		return "", err
	}
	if kind == "disabled" {
		return "off", nil
	}
	return kind, nil
}

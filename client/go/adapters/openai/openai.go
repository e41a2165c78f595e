// Package openai is runjournal for workers that call the OpenAI Responses
// API with github.com/openai/openai-go (module
// runjournal.dev/client/go/adapters, apart from the base client). The twin
// of Python's runjournal.adapters.openai and TypeScript's adapters/openai:
// the same conversions, requests equal as JSON (docs/integrations/openai.md).
//
// A worker's loop: fold the run; answer the calls PendingCalls lists with
// ToolResultRecord; else call Responses.New with RequestInput(state,
// instructions) as its input, and append AssistantRecord(response,
// state.NextIteration).
package openai

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	rj "runjournal.dev/client/go"
	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// DefaultThinkingMode is the fingerprint's thinking mode when the call sets
// no reasoning.effort (the model's own default).
const DefaultThinkingMode = "default"

// Fingerprint is the run's fingerprint from the params of Responses.New (a
// responses.ResponseNewParams, or anything that marshals to the request
// body, e.g. a map): model, instructions (the system prompt, hashed),
// reasoning.effort as the thinking mode ("default" when unset), tools (a
// tool without a name, a built-in such as web_search, hashed under its type,
// or type:server_label for an MCP server) and max_output_tokens; the rest is
// ignored. maxIterations is the worker's own.
func Fingerprint(params any, maxIterations int32) (*pb.Fingerprint, error) {
	body, model, err := wire.Params(params)
	if err != nil {
		return nil, err
	}
	instructions := ""
	if !wire.IsNull(body, "instructions") {
		var ok bool
		if instructions, ok = wire.String(body, "instructions"); !ok {
			return nil, fmt.Errorf("instructions must be a string")
		}
	}
	mode := DefaultThinkingMode
	if !wire.IsNull(body, "reasoning") {
		reasoning, err := wire.Object(body["reasoning"])
		if err != nil {
			return nil, fmt.Errorf("reasoning: %w", err)
		}
		if effort, ok := wire.String(reasoning, "effort"); ok && effort != "" {
			mode = effort
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
		for _, tool := range list {
			tools = append(tools, namedTool(tool))
		}
	}
	var maxTokens int32
	if !wire.IsNull(body, "max_output_tokens") {
		if err := json.Unmarshal(body["max_output_tokens"], &maxTokens); err != nil {
			return nil, fmt.Errorf("max_output_tokens: %w", err)
		}
	}
	return rj.MakeFingerprint(rj.FingerprintConfig{
		Provider: Provider, Model: model, SystemPrompt: instructions, ThinkingMode: mode,
		Tools: tools, MaxTokens: maxTokens, MaxIterations: maxIterations,
	})
}

func namedTool(tool any) any {
	object, ok := tool.(map[string]any)
	if !ok {
		return tool
	}
	if name, _ := object["name"].(string); name != "" {
		return object
	}
	named := make(map[string]any, len(object)+1)
	for key, value := range object {
		named[key] = value
	}
	kind := fmt.Sprint(object["type"])
	if label, _ := object["server_label"].(string); label != "" {
		named["name"] = kind + ":" + label
	} else {
		named["name"] = kind
	}
	return named
}

// UserBlocks is a user's message for the prompt or a follow-up: a string, or
// content parts (input_text with only type and text becomes a text block;
// input_image, input_file, input_audio opaque blocks kept as given).
func UserBlocks(content any) ([]*pb.ContentBlock, error) {
	if s, ok := content.(string); ok {
		return []*pb.ContentBlock{rj.Text(s)}, nil
	}
	raw, err := wire.JSONOf(content)
	if err != nil {
		return nil, err
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("user content must be a string or a list of content parts: %w", err)
	}
	blocks := make([]*pb.ContentBlock, len(parts))
	for i, part := range parts {
		object, err := wire.Object(part)
		if err != nil {
			return nil, err
		}
		kind, _ := wire.String(object, "type")
		text, isText := wire.String(object, "text")
		switch {
		case kind == "input_text" && isText && len(object) == 2:
			blocks[i] = rj.Text(text)
		case contentParts[kind]:
			compact, err := wire.Compact(part)
			if err != nil {
				return nil, err
			}
			blocks[i] = rj.OpaqueText(Provider, kind, compact)
		default:
			return nil, fmt.Errorf("%q is not a content part of a user message (input_text, input_image, input_file, input_audio)", kind)
		}
	}
	return blocks, nil
}

// AssistantRecord is a draft assistant record of one Responses.New (or a
// stream's response.completed response): every output item in order, as
// the API sent it (each item's RawJSON), usage with cache tokens, the stop
// reason.
func AssistantRecord(response any, iteration int32) (*pb.JournalRecord, error) {
	var r responses.Response
	switch v := response.(type) {
	case responses.Response:
		r = v
	case *responses.Response:
		r = *v
	default:
		return nil, fmt.Errorf("expected a responses.Response, got %T", response)
	}
	items := make([]string, len(r.Output))
	for i, item := range r.Output {
		items[i] = item.RawJSON()
	}
	blocks, err := outputBlocks(r.ID, string(r.Status), items)
	if err != nil {
		return nil, err
	}
	stop, err := stopReason(r.ID, string(r.Status), r.IncompleteDetails.Reason, items)
	if err != nil {
		return nil, err
	}
	u := r.Usage
	usage := usageOf(u.InputTokens, u.OutputTokens, u.InputTokensDetails.CachedTokens, u.InputTokensDetails.CacheWriteTokens)
	return rj.AssistantRecord(iteration, blocks, stop, usage), nil
}

// ToolResultRecord is a draft tool_result record of a function_call_output
// input item (a responses.ResponseInputItemFunctionCallOutputParam, or its
// JSON), kept whole as an opaque block so it goes back to the API as it is.
func ToolResultRecord(output any, isError, remote bool) (*pb.JournalRecord, error) {
	raw, err := wire.JSONOf(output)
	if err != nil {
		return nil, err
	}
	item, err := wire.Object(raw)
	if err != nil {
		return nil, err
	}
	kind, _ := wire.String(item, "type")
	callID, ok := wire.String(item, "call_id")
	if kind != "function_call_output" || !ok {
		return nil, fmt.Errorf("expected a function_call_output item with a call_id, got %.200s", raw)
	}
	text, err := wire.Compact(raw)
	if err != nil {
		return nil, err
	}
	record := rj.ToolResultRecord(callID, []*pb.ContentBlock{rj.OpaqueText(Provider, "function_call_output", text)}, isError)
	record.GetToolResult().Remote = remote
	return record, nil
}

// DeferralRecord is a draft deferral record for a function call (by its
// call_id) that waits for a person (or, with needsApproval, for an
// operator's decision).
func DeferralRecord(callID, reason, expectedAnswerer string, needsApproval bool) *pb.JournalRecord {
	return rj.DeferralRecord(callID, reason, expectedAnswerer, needsApproval)
}

// CompactionRecord is a draft journal compaction record of a
// Responses.Compact answer: its output items (the user messages it kept and
// its compaction item), verbatim, replace records 1..uptoSeq.
func CompactionRecord(compacted responses.CompactedResponse, uptoSeq int64, model string, tokensBefore int32) (*pb.JournalRecord, error) {
	blocks := make([]*pb.ContentBlock, len(compacted.Output))
	for i, item := range compacted.Output {
		text, err := wire.Compact([]byte(item.RawJSON()))
		if err != nil {
			return nil, fmt.Errorf("compacted output item %d: %w", i, err)
		}
		blocks[i] = rj.OpaqueText(Provider, itemType(text), text)
	}
	u := compacted.Usage
	summary := []*pb.ConversationMessage{{Role: pb.Role_ROLE_USER, Content: blocks}}
	return rj.CompactionRecord(uptoSeq, summary, pb.CompactionTrigger_COMPACTION_TRIGGER_PROVIDER, rj.CompactionOptions{
		Provider: Provider, Model: model, TokensBefore: tokensBefore,
		Usage: usageOf(u.InputTokens, u.OutputTokens, u.InputTokensDetails.CachedTokens, u.InputTokensDetails.CacheWriteTokens),
	})
}

// PendingFunctionCall is a call of the pending batch the worker must act
// on: run it, or, when Denied by an operator, answer it with an error result.
type PendingFunctionCall struct {
	Call   responses.ResponseFunctionToolCall
	Denied bool
}

// PendingCalls is the pending batch's calls that wait for the worker
// (unanswered, not deferred to a person), as the SDK's own
// ResponseFunctionToolCall, in the order the model made them.
func PendingCalls(state *pb.RunState) ([]PendingFunctionCall, error) {
	var out []PendingFunctionCall
	for _, pending := range state.GetPending().GetCalls() {
		if pending.GetAnswered() || pending.GetWaitingFor() != pb.WaitingFor_WAITING_FOR_WORKER {
			continue
		}
		use := pending.GetToolUse()
		item := use.GetProviderJson()
		if item == "" {
			item = dumps(map[string]string{"type": "function_call", "call_id": use.GetId(), "name": use.GetName(), "arguments": use.GetInputJson()})
		}
		var call responses.ResponseFunctionToolCall
		if err := json.Unmarshal([]byte(item), &call); err != nil {
			return nil, fmt.Errorf("call %s: %w", use.GetId(), err)
		}
		out = append(out, PendingFunctionCall{Call: call, Denied: pending.GetDecision() == pb.Decision_DECISION_DENIED})
	}
	return out, nil
}

// RequestInputJSON is the input items of the next Responses.New for a folded
// run, each as the JSON text it goes as. Refused while calls of the last
// turn have no result (the API needs every call's output), and when
// instructions is not the text the run's fingerprint hashed.
func RequestInputJSON(state *pb.RunState, instructions string) ([]json.RawMessage, error) {
	if state.GetPending() != nil {
		var waiting []string
		for _, call := range state.GetPending().GetCalls() {
			if !call.GetAnswered() {
				waiting = append(waiting, call.GetToolUse().GetId())
			}
		}
		return nil, fmt.Errorf("calls %v of the last turn have no result yet: answer them before the next request", waiting)
	}
	if want := state.GetEffectiveFingerprint().GetSystemPromptSha256(); want != "" && rj.SystemPromptSHA256(instructions) != want {
		return nil, fmt.Errorf("these instructions are not the ones the run's fingerprint hashed (system_prompt_sha256 "+
			"%.12s…); pass the instructions the run was created or reconfigured with", want)
	}
	texts, err := InputItemTexts(state.GetConversation())
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, len(texts))
	for i, text := range texts {
		items[i] = json.RawMessage(text)
	}
	return items, nil
}

// RequestInput is RequestInputJSON as the SDK's input param, each item sent
// as its JSON (param.Override), so no item passes through a type that could
// drop a field: set it as ResponseNewParams.Input.
func RequestInput(state *pb.RunState, instructions string) (responses.ResponseNewParamsInputUnion, error) {
	items, err := RequestInputJSON(state, instructions)
	if err != nil {
		return responses.ResponseNewParamsInputUnion{}, err
	}
	list := make(responses.ResponseInputParam, len(items))
	for i, item := range items {
		list[i] = param.Override[responses.ResponseInputItemUnionParam](item)
	}
	return responses.ResponseNewParamsInputUnion{OfInputItemList: list}, nil
}

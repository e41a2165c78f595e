package openai

// A Responses API Response as journal content: its output items as blocks,
// its usage, its stop reason (the twin of Python's _openai_output).
//
// Every item keeps the JSON the API sent (the SDK's RawJSON of the item,
// compacted). A function_call becomes the one typed tool_use block the
// journal tracks (id = call_id, input_json = arguments as the model wrote
// them, provider_json = the whole item); every other item is an opaque block.

import (
	"encoding/json"
	"fmt"

	rj "runjournal.dev/client/go"
	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// Provider is the fingerprint's provider and the opaque blocks' provider.
const Provider = "openai"

// clientRunCalls are calls the client must answer that a typed tool_use
// cannot hold (their input is not a JSON object, or they have no name):
// kept opaque they would open no call, and the next request would fail for
// want of their output, so they are refused here.
var clientRunCalls = map[string]bool{
	"custom_tool_call": true, "computer_call": true, "local_shell_call": true, "shell_call": true,
	"apply_patch_call": true, "mcp_approval_request": true,
}

var incompleteStops = map[string]pb.StopReason{
	"max_output_tokens": pb.StopReason_STOP_REASON_MAX_TOKENS,
	"content_filter":    pb.StopReason_STOP_REASON_REFUSAL,
	"max_messages":      pb.StopReason_STOP_REASON_PAUSE_TURN,
	"steered":           pb.StopReason_STOP_REASON_PAUSE_TURN,
}

// ItemBlock is one output item (its JSON, e.g. the item's RawJSON()) as a
// content block: a function call as a typed tool_use, anything else opaque.
func ItemBlock(raw []byte) (*pb.ContentBlock, error) {
	text, err := wire.Compact(raw)
	if err != nil {
		return nil, fmt.Errorf("an output item: %w", err)
	}
	item, err := wire.Object(raw)
	if err != nil {
		return nil, err
	}
	kind, ok := wire.String(item, "type")
	if !ok || kind == "" {
		return nil, fmt.Errorf("an output item needs a string 'type', got %.200s", raw)
	}
	if clientRunCalls[kind] {
		return nil, fmt.Errorf("a %s item is a call the worker must answer, but only function calls (JSON arguments, "+
			"a name) can be tracked as journal calls; use function tools", kind)
	}
	if kind != "function_call" {
		return rj.OpaqueText(Provider, kind, text), nil
	}
	callID, _ := wire.String(item, "call_id")
	name, _ := wire.String(item, "name")
	arguments, ok := wire.String(item, "arguments")
	if !ok || !isJSONObject(arguments) {
		status, _ := wire.String(item, "status")
		return nil, fmt.Errorf("function call %q has arguments that are not a JSON object (status %q): the output "+
			"was cut short; ask again with more max_output_tokens", callID, status)
	}
	return rj.ToolUseText(callID, name, arguments, text), nil
}

func isJSONObject(text string) bool {
	_, err := wire.Object([]byte(text))
	return err == nil
}

// outputBlocks is the output items in order, as blocks. A trailing reasoning
// item (a response cut short while reasoning) is left out: the API refuses a
// reasoning item sent back without the item it produced. An output with
// nothing else is refused.
func outputBlocks(id, status string, items []string) ([]*pb.ContentBlock, error) {
	for len(items) > 0 && itemType(items[len(items)-1]) == "reasoning" {
		items = items[:len(items)-1]
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("response %q (%s) has no output item but reasoning: nothing to record; ask again "+
			"(with more max_output_tokens if it was cut short)", id, status)
	}
	blocks := make([]*pb.ContentBlock, len(items))
	for i, raw := range items {
		if raw == "" {
			return nil, fmt.Errorf("output item %d has no raw JSON: record a response the SDK decoded from the API", i)
		}
		block, err := ItemBlock([]byte(raw))
		if err != nil {
			return nil, err
		}
		blocks[i] = block
	}
	return blocks, nil
}

func itemType(raw string) string {
	item, err := wire.Object([]byte(raw))
	if err != nil {
		return ""
	}
	kind, _ := wire.String(item, "type")
	return kind
}

// usageOf is token usage as the journal counts it: input_tokens uncached,
// cache reads and writes apart (OpenAI's input_tokens include both).
func usageOf(input, output, cached, written int64) *pb.Usage {
	return &pb.Usage{
		InputTokens:      int32(max(input-cached-written, 0)),
		OutputTokens:     int32(output),
		CacheReadTokens:  int32(cached),
		CacheWriteTokens: int32(written),
	}
}

// stopReason is the journal's stop reason for a response: completed with a
// function call is TOOL_USE, else a refusal in the last message is REFUSAL,
// else END_TURN; incomplete goes by incomplete_details.reason. Any other
// status is not a finished turn and is refused.
func stopReason(id, status, incompleteReason string, items []string) (pb.StopReason, error) {
	if status == "incomplete" {
		return incompleteStops[incompleteReason], nil
	}
	if status != "" && status != "completed" {
		return 0, fmt.Errorf("response %q is %s, not a finished turn: nothing to record", id, status)
	}
	var lastMessage map[string]json.RawMessage
	for _, raw := range items {
		item, err := wire.Object([]byte(raw))
		if err != nil {
			return 0, err
		}
		switch kind, _ := wire.String(item, "type"); kind {
		case "function_call":
			return pb.StopReason_STOP_REASON_TOOL_USE, nil
		case "message":
			lastMessage = item
		}
	}
	if lastMessage != nil && !wire.IsNull(lastMessage, "content") {
		var parts []map[string]json.RawMessage
		if err := json.Unmarshal(lastMessage["content"], &parts); err == nil {
			for _, part := range parts {
				if kind, _ := wire.String(part, "type"); kind == "refusal" {
					return pb.StopReason_STOP_REASON_REFUSAL, nil
				}
			}
		}
	}
	return pb.StopReason_STOP_REASON_END_TURN, nil
}

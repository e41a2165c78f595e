package anthropic

// Anthropic Messages API content blocks <-> journal content blocks, exactly.
//
// A block the model sent becomes a typed journal block only when the typed
// block rebuilds it exactly: text with no key but type and text, thinking
// with thinking and signature only, redacted_thinking with data only,
// tool_use (its other keys, such as caller, kept in provider_json). Every
// other block, and any of those carrying one more key (a text with
// citations, even "citations":null), is an opaque block holding the block's
// JSON text as the API sent it (the SDK's RawJSON, compacted).
//
// On the user side the SDK takes a string or a list of blocks, and the two
// are different requests: a string is one typed text block, and a list
// holding exactly one plain text block keeps that block opaque, so each
// converts back to the shape it came in.

import (
	"encoding/json"
	"fmt"
	"slices"

	rj "runjournal.dev/client/go"
	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// Provider is the fingerprint's provider and the opaque blocks' provider.
const Provider = "anthropic"

var typedKeys = map[string][]string{
	"text":              {"text", "type"},
	"thinking":          {"signature", "thinking", "type"},
	"redacted_thinking": {"data", "type"},
}

var toolUseKeys = []string{"id", "input", "name", "type"}

// modelOnlyTypes are block types user-side content cannot carry: the model's
// own blocks, and results (their own record).
var modelOnlyTypes = map[string]bool{"thinking": true, "redacted_thinking": true, "tool_use": true, "tool_result": true}

func blockType(block map[string]json.RawMessage, raw []byte) (string, error) {
	kind, ok := wire.String(block, "type")
	if !ok || kind == "" {
		return "", fmt.Errorf("an Anthropic content block needs a string 'type', got %.200s", raw)
	}
	return kind, nil
}

func allStrings(block map[string]json.RawMessage) bool {
	for key := range block {
		if _, ok := wire.String(block, key); !ok {
			return false
		}
	}
	return true
}

// ModelBlock is one block of a model's answer (its JSON, e.g. a content
// block's RawJSON()) as a journal block.
func ModelBlock(raw []byte) (*pb.ContentBlock, error) {
	text, err := wire.Compact(raw)
	if err != nil {
		return nil, fmt.Errorf("an Anthropic content block: %w", err)
	}
	block, err := wire.Object(raw)
	if err != nil {
		return nil, err
	}
	kind, err := blockType(block, raw)
	if err != nil {
		return nil, err
	}
	keys := wire.Keys(block)
	if kind == "tool_use" {
		id, okID := wire.String(block, "id")
		name, okName := wire.String(block, "name")
		input, okInput := block["input"]
		if !okID || !okName || !okInput {
			return nil, fmt.Errorf("a tool_use block needs id, name and input, got keys %v", keys)
		}
		inputText, err := wire.Compact(input)
		if err != nil {
			return nil, err
		}
		extra := ""
		if !slices.Equal(keys, toolUseKeys) {
			extra = text
		}
		return rj.ToolUseText(id, name, inputText, extra), nil
	}
	if slices.Equal(keys, typedKeys[kind]) && allStrings(block) {
		switch kind {
		case "text":
			s, _ := wire.String(block, "text")
			return rj.Text(s), nil
		case "thinking":
			thinking, _ := wire.String(block, "thinking")
			signature, _ := wire.String(block, "signature")
			return rj.Thinking(thinking, signature), nil
		default:
			data, _ := wire.String(block, "data")
			return rj.RedactedThinking(data), nil
		}
	}
	return rj.OpaqueText(Provider, kind, text), nil
}

// UserBlocks is user-side content as journal blocks that convert back to the
// same shape: a string is one typed text block; anything else is marshalled
// to JSON (the SDK's []ContentBlockParamUnion, []BetaContentBlockParamUnion,
// []json.RawMessage, ...) and must be a list of blocks.
func UserBlocks(content any) ([]*pb.ContentBlock, error) {
	if s, ok := content.(string); ok {
		return []*pb.ContentBlock{rj.Text(s)}, nil
	}
	raw, err := wire.Marshal(content)
	if err != nil {
		return nil, err
	}
	return userBlocksJSON(raw)
}

func userBlocksJSON(raw []byte) ([]*pb.ContentBlock, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []*pb.ContentBlock{rj.Text(s)}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("user content must be a string or a list of blocks: %w", err)
	}
	blocks := make([]map[string]json.RawMessage, len(items))
	kinds := make([]string, len(items))
	for i, item := range items {
		block, err := wire.Object(item)
		if err != nil {
			return nil, err
		}
		kind, err := blockType(block, item)
		if err != nil {
			return nil, err
		}
		if modelOnlyTypes[kind] {
			return nil, fmt.Errorf("a %s block cannot be user content here: tool results are tool_result records "+
				"(ToolResultRecord), and thinking and tool_use are the model's (AssistantRecord)", kind)
		}
		blocks[i], kinds[i] = block, kind
	}
	out := make([]*pb.ContentBlock, len(items))
	for i, item := range items {
		text, err := wire.Compact(item)
		if err != nil {
			return nil, err
		}
		// A one-block list is not the string it would fold to as a typed text.
		plain := kinds[i] == "text" && slices.Equal(wire.Keys(blocks[i]), typedKeys["text"]) && allStrings(blocks[i])
		if plain && len(items) > 1 {
			s, _ := wire.String(blocks[i], "text")
			out[i] = rj.Text(s)
		} else {
			out[i] = rj.OpaqueText(Provider, kinds[i], text)
		}
	}
	return out, nil
}

// userContent is journal blocks back to user-side content: one typed text is
// the string; none is nil.
func userContent(blocks []*pb.ContentBlock) (any, error) {
	if len(blocks) == 0 {
		return nil, nil
	}
	if len(blocks) == 1 && blocks[0].GetText() != nil {
		return blocks[0].GetText().GetText(), nil
	}
	params := make([]json.RawMessage, len(blocks))
	for i, block := range blocks {
		param, err := blockParam(block)
		if err != nil {
			return nil, err
		}
		params[i] = param
	}
	return params, nil
}

// blockParam is one journal block as the request block the SDK sends (tool
// results are built with their message).
func blockParam(block *pb.ContentBlock) (json.RawMessage, error) {
	switch b := block.GetBlock().(type) {
	case *pb.ContentBlock_Text:
		return wire.Marshal(map[string]string{"type": "text", "text": b.Text.GetText()})
	case *pb.ContentBlock_Thinking:
		if b.Thinking.GetRedacted() {
			return wire.Marshal(map[string]string{"type": "redacted_thinking", "data": b.Thinking.GetData()})
		}
		return wire.Marshal(map[string]string{"type": "thinking", "thinking": b.Thinking.GetThinking(), "signature": b.Thinking.GetSignature()})
	case *pb.ContentBlock_ToolUse:
		use := b.ToolUse
		if use.GetProviderJson() != "" {
			return checkedObject(use.GetProviderJson(), "tool_use")
		}
		input, err := checkedJSON(use.GetInputJson(), "tool_use input")
		if err != nil {
			return nil, err
		}
		return wire.Marshal(map[string]any{"type": "tool_use", "id": use.GetId(), "name": use.GetName(), "input": input})
	case *pb.ContentBlock_Opaque:
		if b.Opaque.GetProvider() != Provider {
			return nil, fmt.Errorf("an opaque %q block (%s) cannot be sent to Anthropic; a run keeps one provider",
				b.Opaque.GetProvider(), b.Opaque.GetType())
		}
		return checkedObject(b.Opaque.GetJson(), "opaque Anthropic "+b.Opaque.GetType())
	default:
		return nil, fmt.Errorf("no Anthropic request block for a %T block here", block.GetBlock())
	}
}

func checkedJSON(text, what string) (json.RawMessage, error) {
	if !json.Valid([]byte(text)) {
		return nil, fmt.Errorf("the %s block holds no valid JSON", what)
	}
	return json.RawMessage(text), nil
}

func checkedObject(text, what string) (json.RawMessage, error) {
	if _, err := wire.Object([]byte(text)); err != nil {
		return nil, fmt.Errorf("an %s block must be a JSON object: %w", what, err)
	}
	return json.RawMessage(text), nil
}

// isThinking is thinking the model signed: typed thinking, or an opaque
// thinking block that carried more keys.
func isThinking(block *pb.ContentBlock) bool {
	if block.GetThinking() != nil {
		return true
	}
	o := block.GetOpaque()
	return o != nil && o.GetProvider() == Provider && (o.GetType() == "thinking" || o.GetType() == "redacted_thinking")
}

// summarisingCompaction is an Anthropic compaction block with content: the
// conversation restarts at it. One whose content is null failed and is a
// no-op for the API, which accepts it sent back anywhere.
func summarisingCompaction(block *pb.ContentBlock) bool {
	o := block.GetOpaque()
	if o == nil || o.GetProvider() != Provider || o.GetType() != "compaction" {
		return false
	}
	object, err := wire.Object([]byte(o.GetJson()))
	return err == nil && !wire.IsNull(object, "content")
}

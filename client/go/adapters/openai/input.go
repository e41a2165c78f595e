package openai

// A folded conversation back as the input items of the next Responses.New,
// each as JSON text (the twin of Python's _openai_input).
//
// Every item the model sent goes back as the text the journal holds,
// untouched: an opaque item's json, a function call's provider_json. Items
// keep their order, so each reasoning item stays right before the function
// call or message it produced. What the journal built itself becomes the
// smallest item the API takes: user text and content parts in a row are one
// user message item; a tool result holding its function_call_output item is
// that item, any other result a function_call_output of its text; a typed
// call without provider_json a function_call of its fields; typed assistant
// text an assistant message item. The request starts at the newest
// compaction item the model returned in a turn.

import (
	"fmt"
	"strings"

	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// contentParts are opaque user blocks that are parts of a message's content
// rather than items of their own.
var contentParts = map[string]bool{"input_text": true, "input_image": true, "input_file": true, "input_audio": true}

// InputItemTexts is the request's input items as JSON text, from the newest
// compaction item the model returned on.
func InputItemTexts(conversation []*pb.ConversationMessage) ([]string, error) {
	var items []string
	start := 0
	for _, message := range conversation {
		if message.GetRole() != pb.Role_ROLE_ASSISTANT {
			user, err := userItems(message.GetContent())
			if err != nil {
				return nil, err
			}
			items = append(items, user...)
			continue
		}
		for _, block := range message.GetContent() {
			text, kind, err := assistantItem(block)
			if err != nil {
				return nil, err
			}
			if kind == "compaction" {
				start = len(items)
			}
			items = append(items, text)
		}
	}
	return items[start:], nil
}

func dumps(value any) string {
	raw, err := wire.Marshal(value)
	if err != nil {
		panic(err) // only maps of strings are written here
	}
	return string(raw)
}

func assistantItem(block *pb.ContentBlock) (text, kind string, err error) {
	switch b := block.GetBlock().(type) {
	case *pb.ContentBlock_Opaque:
		text, err := ownOpaque(b.Opaque)
		return text, b.Opaque.GetType(), err
	case *pb.ContentBlock_ToolUse:
		use := b.ToolUse
		if use.GetProviderJson() != "" {
			return use.GetProviderJson(), "function_call", nil
		}
		return dumps(map[string]string{"type": "function_call", "call_id": use.GetId(), "name": use.GetName(),
			"arguments": use.GetInputJson()}), "function_call", nil
	case *pb.ContentBlock_Text:
		return dumps(map[string]string{"type": "message", "role": "assistant", "content": b.Text.GetText()}), "message", nil
	default:
		return "", "", fmt.Errorf("an assistant %T block has no Responses API form (is this run an OpenAI one?)", block.GetBlock())
	}
}

func userItems(blocks []*pb.ContentBlock) ([]string, error) {
	var items, parts []string
	for _, block := range blocks {
		if text := block.GetText(); text != nil {
			parts = append(parts, dumps(map[string]string{"type": "input_text", "text": text.GetText()}))
			continue
		}
		if o := block.GetOpaque(); o != nil && contentParts[o.GetType()] {
			text, err := ownOpaque(o)
			if err != nil {
				return nil, err
			}
			parts = append(parts, text)
			continue
		}
		items = append(items, userMessage(parts)...)
		parts = nil
		switch b := block.GetBlock().(type) {
		case *pb.ContentBlock_ToolResult:
			text, err := functionCallOutput(b.ToolResult)
			if err != nil {
				return nil, err
			}
			items = append(items, text)
		case *pb.ContentBlock_Opaque:
			text, err := ownOpaque(b.Opaque)
			if err != nil {
				return nil, err
			}
			items = append(items, text)
		default:
			return nil, fmt.Errorf("a user %T block has no Responses API form", block.GetBlock())
		}
	}
	return append(items, userMessage(parts)...), nil
}

func userMessage(parts []string) []string {
	if len(parts) == 0 {
		return nil
	}
	return []string{`{"type":"message","role":"user","content":[` + strings.Join(parts, ",") + "]}"}
}

func functionCallOutput(result *pb.ToolResultBlock) (string, error) {
	content := result.GetContent()
	if len(content) == 1 {
		if o := content[0].GetOpaque(); o != nil && o.GetProvider() == Provider && o.GetType() == "function_call_output" {
			return o.GetJson(), nil
		}
	}
	// A result the journal wrote (an answer from a person, a denial): its text, or its parts.
	var output string
	if len(content) == 1 && content[0].GetText() != nil {
		output = dumps(content[0].GetText().GetText())
	} else {
		parts := make([]string, len(content))
		for i, block := range content {
			part, err := outputPart(block)
			if err != nil {
				return "", err
			}
			parts[i] = part
		}
		output = "[" + strings.Join(parts, ",") + "]"
	}
	return `{"type":"function_call_output","call_id":` + dumps(result.GetToolUseId()) + `,"output":` + output + "}", nil
}

func outputPart(block *pb.ContentBlock) (string, error) {
	if text := block.GetText(); text != nil {
		return dumps(map[string]string{"type": "input_text", "text": text.GetText()}), nil
	}
	if o := block.GetOpaque(); o != nil && contentParts[o.GetType()] {
		return ownOpaque(o)
	}
	return "", fmt.Errorf("a tool result's %T block has no function_call_output form", block.GetBlock())
}

func ownOpaque(o *pb.OpaqueBlock) (string, error) {
	if o.GetProvider() != Provider {
		return "", fmt.Errorf("an opaque %s %s block cannot go to the OpenAI API", o.GetProvider(), o.GetType())
	}
	return o.GetJson(), nil
}

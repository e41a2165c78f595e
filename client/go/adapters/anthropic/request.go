package anthropic

// A folded run -> the messages of the next Messages API call, with the rules
// the API enforces (the twin of Python's _anthropic_request):
//
//   - Each conversation message becomes one request message, block for block.
//     Fold keeps every assistant record as its own message and merges
//     consecutive user messages.
//   - Tool results come first in their user message, and carry the
//     toolset_name of the call they answer.
//   - Anthropic's own compaction block: the API takes the conversation from
//     the newest compaction block with content, which must be the first block
//     sent, so everything before it is left out.
//   - Thinking is sent back unmodified. Only when the run's model changed (a
//     reconfigure record) are the thinking blocks of turns written under
//     another model than the one called now left out, never those of the
//     latest assistant turn.

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"
	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// messageParam is one request message: content is a string or a list of
// blocks, each the JSON text the SDK sends.
type messageParam struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// messageParams is each message as a MessageParam, block for block (no API
// rule applied).
func messageParams(conversation []*pb.ConversationMessage) ([]messageParam, error) {
	calls := map[string]map[string]json.RawMessage{}
	params := make([]messageParam, 0, len(conversation))
	for _, message := range conversation {
		if message.GetRole() == pb.Role_ROLE_ASSISTANT {
			content := make([]json.RawMessage, len(message.GetContent()))
			for i, block := range message.GetContent() {
				param, err := blockParam(block)
				if err != nil {
					return nil, err
				}
				content[i] = param
				if object, err := wire.Object(param); err == nil {
					if kind, _ := wire.String(object, "type"); kind == "tool_use" {
						id, _ := wire.String(object, "id")
						calls[id] = object
					}
				}
			}
			params = append(params, messageParam{Role: "assistant", Content: content})
			continue
		}
		content, err := userMessageContent(message.GetContent(), calls)
		if err != nil {
			return nil, err
		}
		params = append(params, messageParam{Role: "user", Content: content})
	}
	return params, nil
}

func userMessageContent(blocks []*pb.ContentBlock, calls map[string]map[string]json.RawMessage) (any, error) {
	var results []json.RawMessage
	var others []*pb.ContentBlock
	for _, block := range blocks {
		if result := block.GetToolResult(); result != nil {
			param, err := resultParam(result, calls)
			if err != nil {
				return nil, err
			}
			results = append(results, param)
		} else {
			others = append(others, block)
		}
	}
	rest, err := userContent(others)
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return rest, nil
	}
	tail, err := asList(rest)
	if err != nil {
		return nil, err
	}
	return append(results, tail...), nil
}

func resultParam(result *pb.ToolResultBlock, calls map[string]map[string]json.RawMessage) (json.RawMessage, error) {
	param := map[string]any{"type": "tool_result", "tool_use_id": result.GetToolUseId()}
	content, err := userContent(result.GetContent())
	if err != nil {
		return nil, err
	}
	if content != nil {
		param["content"] = content
	}
	if result.GetIsError() {
		param["is_error"] = true
	}
	if toolset, ok := wire.String(calls[result.GetToolUseId()], "toolset_name"); ok {
		param["toolset_name"] = toolset
	}
	return wire.Marshal(param)
}

func asList(content any) ([]json.RawMessage, error) {
	switch c := content.(type) {
	case nil:
		return nil, nil
	case string:
		text, err := wire.Marshal(map[string]string{"type": "text", "text": c})
		return []json.RawMessage{text}, err
	case []json.RawMessage:
		return c, nil
	default:
		return nil, fmt.Errorf("unexpected user content %T", content)
	}
}

// newestCompaction is (message, block) of the newest Anthropic compaction
// block with content, or ok false.
func newestCompaction(conversation []*pb.ConversationMessage) (index, position int, ok bool) {
	for index := len(conversation) - 1; index >= 0; index-- {
		blocks := conversation[index].GetContent()
		for position := len(blocks) - 1; position >= 0; position-- {
			if summarisingCompaction(blocks[position]) {
				return index, position, true
			}
		}
	}
	return 0, 0, false
}

// fromCompaction is the conversation from block position of message index
// on, and the models of its assistant messages.
func fromCompaction(conversation []*pb.ConversationMessage, models []string, index, position int) ([]*pb.ConversationMessage, []string) {
	first := proto.Clone(conversation[index]).(*pb.ConversationMessage)
	first.Content = first.Content[position:]
	before := 0
	for _, message := range conversation[:index] {
		if message.GetRole() == pb.Role_ROLE_ASSISTANT {
			before++
		}
	}
	return append([]*pb.ConversationMessage{first}, conversation[index+1:]...), models[before:]
}

// assistantModels is the model that wrote each assistant message of
// state.Conversation, in order, read from the run's records: meta's model,
// replaced by each reconfigure, in force at each assistant record's seq.
// Fold turns every assistant record into one message, so the messages after
// the compaction in force are those of the assistant records after its
// upto_seq (the pending turn is not among them), and the summary's assistant
// messages are the compaction's, under the model in force when it was
// recorded.
func assistantModels(records []*pb.JournalRecord, state *pb.RunState) ([]string, error) {
	type written struct {
		seq   int64
		model string
	}
	model := ""
	expected := int64(1)
	var turns []written
	summaryModel, summaryAssistants := "", 0
	for _, record := range records {
		if record.GetSeq() > state.GetLastSeq() {
			break
		}
		if record.GetSeq() != expected {
			return nil, fmt.Errorf("records must be the run's, from seq 1 without a gap; got seq %d", record.GetSeq())
		}
		expected++
		switch payload := record.GetPayload().(type) {
		case *pb.JournalRecord_Meta:
			if payload.Meta.GetRunId() != state.GetRunId() {
				return nil, fmt.Errorf("records of run %q given for run %q", payload.Meta.GetRunId(), state.GetRunId())
			}
			model = payload.Meta.GetFingerprint().GetModel()
		case *pb.JournalRecord_Reconfigure:
			model = payload.Reconfigure.GetFingerprint().GetModel()
		case *pb.JournalRecord_Assistant:
			turns = append(turns, written{record.GetSeq(), model})
		case *pb.JournalRecord_Compaction:
			if record.GetSeq() == state.GetCompactionSeq() {
				summaryModel, summaryAssistants = model, countAssistants(payload.Compaction.GetSummary())
			}
		}
	}
	if expected <= state.GetLastSeq() {
		return nil, fmt.Errorf("records end at seq %d, before the state's last seq %d", expected-1, state.GetLastSeq())
	}
	pending := state.GetPending().GetAssistantSeq()
	var models []string
	for range summaryAssistants {
		models = append(models, summaryModel)
	}
	for _, turn := range turns {
		if turn.seq > state.GetCompactedUptoSeq() && turn.seq != pending {
			models = append(models, turn.model)
		}
	}
	if count := countAssistants(state.GetConversation()); count != len(models) {
		return nil, fmt.Errorf("the state holds %d assistant messages but the records %d", count, len(models))
	}
	return models, nil
}

func countAssistants(conversation []*pb.ConversationMessage) int {
	count := 0
	for _, message := range conversation {
		if message.GetRole() == pb.Role_ROLE_ASSISTANT {
			count++
		}
	}
	return count
}

// stripForeignThinking leaves out the thinking of assistant messages written
// under another model, but the latest turn's. params and conversation are
// parallel. The latest assistant turn is the run of assistant messages after
// the last user message. A message left with no block is left out, and the
// user messages around it are joined.
func stripForeignThinking(params []messageParam, conversation []*pb.ConversationMessage, models []string, model string) ([]messageParam, error) {
	writer := map[int]string{}
	next := 0
	for i, message := range conversation {
		if message.GetRole() == pb.Role_ROLE_ASSISTANT {
			writer[i] = models[next]
			next++
		}
	}
	latest := latestTurn(conversation)
	var out []messageParam
	for index, param := range params {
		if by, ok := writer[index]; ok && !latest[index] && by != model {
			sent := param.Content.([]json.RawMessage)
			var kept []json.RawMessage
			for i, block := range conversation[index].GetContent() {
				if !isThinking(block) {
					kept = append(kept, sent[i])
				}
			}
			if len(kept) == 0 {
				continue
			}
			param = messageParam{Role: "assistant", Content: kept}
		}
		if len(out) > 0 && out[len(out)-1].Role == "user" && param.Role == "user" {
			before, err := asList(out[len(out)-1].Content)
			if err != nil {
				return nil, err
			}
			after, err := asList(param.Content)
			if err != nil {
				return nil, err
			}
			out[len(out)-1] = messageParam{Role: "user", Content: append(append([]json.RawMessage{}, before...), after...)}
			continue
		}
		out = append(out, param)
	}
	return out, nil
}

func latestTurn(conversation []*pb.ConversationMessage) map[int]bool {
	latest := map[int]bool{}
	for index := len(conversation) - 1; index >= 0; index-- {
		if conversation[index].GetRole() == pb.Role_ROLE_ASSISTANT {
			latest[index] = true
		} else if len(latest) > 0 {
			break
		}
	}
	return latest
}

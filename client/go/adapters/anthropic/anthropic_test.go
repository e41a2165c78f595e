package anthropic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	rj "runjournal.dev/client/go"
	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

const model = "claude-fake-4-5"

func fixture(t *testing.T, name string) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "provider_content", "anthropic", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	compact, err := wire.Compact(raw)
	if err != nil {
		t.Fatal(err)
	}
	return json.RawMessage(compact)
}

// message decodes a response body through the SDK, as Messages.New does.
func message(t *testing.T, stop string, blocks ...json.RawMessage) sdk.BetaMessage {
	t.Helper()
	body, err := wire.Marshal(map[string]any{ // as the API writes it: '<' as itself
		"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": blocks,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 1200, "output_tokens": 310, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 800},
	})
	if err != nil {
		t.Fatal(err)
	}
	var m sdk.BetaMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func equalJSON(t *testing.T, got, want any) {
	t.Helper()
	var a, b any
	ga, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if err := json.Unmarshal(ga, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wb, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("not equal as JSON:\n got %s\nwant %s", ga, wb)
	}
}

func TestEveryBlockKeepsItsJSONAndTypedBlocksOnlyWhenExact(t *testing.T) {
	names := []string{"thinking", "thinking_omitted", "redacted_thinking", "server_tool_use", "web_search_tool_result",
		"web_search_tool_result_error", "text_citations_web", "text_citations_document", "tool_use", "tool_use_chart", "compaction"}
	var blocks []json.RawMessage
	for _, name := range names {
		blocks = append(blocks, fixture(t, name))
	}
	blocks = append(blocks, json.RawMessage(`{"type":"text","text":"plain <b> & é"}`))
	record, err := AssistantRecord(message(t, "tool_use", blocks...), 3)
	if err != nil {
		t.Fatal(err)
	}
	turn := record.GetAssistant()
	if turn.GetIteration() != 3 || turn.GetStopReason() != pb.StopReason_STOP_REASON_TOOL_USE {
		t.Fatalf("iteration/stop: %v", turn)
	}
	if u := turn.GetUsage(); u.GetInputTokens() != 1200 || u.GetCacheReadTokens() != 2000 || u.GetCacheWriteTokens() != 800 || u.GetOutputTokens() != 310 {
		t.Fatalf("usage: %v", u)
	}
	for i, block := range turn.GetContent() {
		sent, err := blockParam(block)
		if err != nil {
			t.Fatal(err)
		}
		equalJSON(t, sent, blocks[i]) // every block goes back as it came
		if o := block.GetOpaque(); o != nil && o.GetJson() != string(blocks[i]) {
			t.Errorf("%s: opaque text not byte-equal:\n%s\n%s", o.GetType(), o.GetJson(), blocks[i])
		}
	}
	kinds := map[string]string{}
	for i, block := range turn.GetContent() {
		kind := "opaque"
		switch {
		case block.GetText() != nil:
			kind = "text"
		case block.GetThinking() != nil:
			kind = "thinking"
		case block.GetToolUse() != nil:
			kind = "tool_use"
		}
		if i < len(names) {
			kinds[names[i]] = kind
		}
	}
	want := map[string]string{"thinking": "thinking", "thinking_omitted": "thinking", "redacted_thinking": "thinking",
		"server_tool_use": "opaque", "web_search_tool_result": "opaque", "web_search_tool_result_error": "opaque",
		"text_citations_web": "opaque", "text_citations_document": "opaque", "tool_use": "tool_use", "tool_use_chart": "tool_use", "compaction": "opaque"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if last := turn.GetContent()[len(blocks)-1]; last.GetText().GetText() != "plain <b> & é" {
		t.Fatalf("plain text is typed: %v", last)
	}
}

func TestStopReasonsAndRefusals(t *testing.T) {
	for name, want := range stopReasons {
		if got, err := StopReason(name); err != nil || got != want {
			t.Errorf("%s: %v %v", name, got, err)
		}
	}
	if _, err := StopReason(""); err == nil {
		t.Error("an unfinished message was recorded")
	}
	if _, err := StopReason("sleepy"); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("unknown stop reason: %v", err)
	}
	if _, err := AssistantRecord(message(t, "end_turn"), 1); err == nil {
		t.Error("an empty answer was recorded")
	}
}

func TestToolResultsKeepTheirShape(t *testing.T) {
	text := param.Override[sdk.BetaToolResultBlockParam](json.RawMessage(`{"type":"tool_result","tool_use_id":"toolu_1","content":"1.08"}`))
	list := sdk.BetaToolResultBlockParam{ToolUseID: "toolu_2", IsError: param.NewOpt(true), Content: []sdk.BetaToolResultBlockParamContentUnion{
		{OfText: &sdk.BetaTextBlockParam{Text: "failed"}},
	}}
	for _, c := range []struct {
		result any
		want   string
	}{
		{text, `{"type":"tool_result","tool_use_id":"toolu_1","content":"1.08"}`},
		{list, `{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"failed"}],"is_error":true}`},
	} {
		record, err := ToolResultRecord(c.result, false)
		if err != nil {
			t.Fatal(err)
		}
		r := record.GetToolResult()
		got, err := resultParam(&pb.ToolResultBlock{ToolUseId: r.GetToolUseId(), Content: r.GetContent(), IsError: r.GetIsError()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		equalJSON(t, got, json.RawMessage(c.want))
	}
	if _, err := ToolResultRecord(json.RawMessage(`{"type":"tool_result","tool_use_id":"x","extra":1}`), false); err == nil {
		t.Error("a key the journal cannot keep was dropped silently")
	}
	if _, err := UserBlocks([]json.RawMessage{fixture(t, "thinking")}); err == nil {
		t.Error("thinking taken as user content")
	}
}

func fingerprint(t *testing.T, system any) *pb.Fingerprint {
	t.Helper()
	fp, err := Fingerprint(map[string]any{"model": model, "max_tokens": 4096, "system": system,
		"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func TestFingerprintFromTheParams(t *testing.T) {
	fp := fingerprint(t, "be brief")
	if fp.GetModel() != model || fp.GetMaxTokens() != 4096 || fp.GetThinkingMode() != "enabled" || fp.GetMaxIterations() != 10 ||
		fp.GetSystemPromptSha256() != rj.SystemPromptSHA256("be brief") || fp.GetProvider() != Provider {
		t.Fatalf("fingerprint %v", fp)
	}
	typed := sdk.BetaMessageNewParams{Model: model, MaxTokens: 4096, System: []sdk.BetaTextBlockParam{{Text: "be brief"}}}
	fromTyped, err := Fingerprint(typed, 0)
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := rj.CanonicalJSON([]any{map[string]any{"type": "text", "text": "be brief"}})
	if fromTyped.GetSystemPromptSha256() != rj.SystemPromptSHA256(blocks) || fromTyped.GetThinkingMode() != "off" {
		t.Fatalf("a list system hashes as its canonical JSON: %v", fromTyped)
	}
}

// run is a conversation as Fold gives it, and the records that wrote it.
func run(t *testing.T, turns ...[]*pb.ContentBlock) (*pb.RunState, []*pb.JournalRecord) {
	t.Helper()
	fp := fingerprint(t, "be brief")
	records := []*pb.JournalRecord{rj.MetaRecord("r1", fp, []*pb.ContentBlock{rj.Text("hi")}, rj.MetaOptions{})}
	conversation := []*pb.ConversationMessage{{Role: pb.Role_ROLE_USER, Content: []*pb.ContentBlock{rj.Text("hi")}}}
	for i, blocks := range turns {
		role := pb.Role_ROLE_ASSISTANT
		if i%2 == 1 {
			role = pb.Role_ROLE_USER
		}
		conversation = append(conversation, &pb.ConversationMessage{Role: role, Content: blocks})
		if role == pb.Role_ROLE_ASSISTANT {
			records = append(records, rj.AssistantRecord(int32(i/2+1), blocks, pb.StopReason_STOP_REASON_TOOL_USE, nil))
		} else {
			records = append(records, rj.UserRecord(blocks...))
		}
	}
	for i, record := range records {
		record.Seq = int64(i + 1)
	}
	return &pb.RunState{RunId: "r1", Conversation: conversation, EffectiveFingerprint: fp, LastSeq: int64(len(records))}, records
}

func modelBlocks(t *testing.T, names ...string) []*pb.ContentBlock {
	t.Helper()
	var out []*pb.ContentBlock
	for _, name := range names {
		block, err := ModelBlock(fixture(t, name))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, block)
	}
	return out
}

func TestTheNextRequestPutsResultsFirstAndStartsAtTheCompaction(t *testing.T) {
	calls := modelBlocks(t, "thinking", "tool_use")
	result := &pb.ContentBlock{Block: &pb.ContentBlock_ToolResult{ToolResult: &pb.ToolResultBlock{ToolUseId: calls[1].GetToolUse().GetId(), Content: []*pb.ContentBlock{rj.Text("1.08")}}}}
	state, records := run(t, calls, []*pb.ContentBlock{rj.Text("and?"), result})
	messages, err := RequestMessagesJSON(state, RequestOptions{System: "be brief", Records: records})
	if err != nil {
		t.Fatal(err)
	}
	equalJSON(t, messages, []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": []json.RawMessage{fixture(t, "thinking"), fixture(t, "tool_use")}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": calls[1].GetToolUse().GetId(), "content": "1.08"},
			map[string]any{"type": "text", "text": "and?"},
		}},
	})

	compacted, records := run(t, calls, []*pb.ContentBlock{result}, modelBlocks(t, "thinking", "compaction"))
	messages, err = RequestMessagesJSON(compacted, RequestOptions{System: "be brief", Records: records})
	if err != nil {
		t.Fatal(err)
	}
	equalJSON(t, messages, []any{map[string]any{"role": "assistant", "content": []json.RawMessage{fixture(t, "compaction")}}})
}

func TestThinkingOfAnotherModelsEarlierTurnIsLeftOutButTheLatestTurnsKept(t *testing.T) {
	first := modelBlocks(t, "thinking", "text_citations_web")
	latest := modelBlocks(t, "redacted_thinking", "tool_use")
	state, records := run(t, first, []*pb.ContentBlock{rj.Text("go on")}, latest)
	messages, err := RequestMessagesJSON(state, RequestOptions{System: "be brief", Records: records, Model: "claude-other"})
	if err != nil {
		t.Fatal(err)
	}
	equalJSON(t, messages, []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": []json.RawMessage{fixture(t, "text_citations_web")}},
		map[string]any{"role": "user", "content": "go on"},
		map[string]any{"role": "assistant", "content": []json.RawMessage{fixture(t, "redacted_thinking"), fixture(t, "tool_use")}},
	})
}

func TestTheRequestIsRefusedForOpenCallsAnotherSystemOrShortRecords(t *testing.T) {
	state, records := run(t, modelBlocks(t, "tool_use"))
	if _, err := RequestMessagesJSON(state, RequestOptions{System: "be long", Records: records}); err == nil || !strings.Contains(err.Error(), "system prompt") {
		t.Errorf("another system: %v", err)
	}
	if _, err := RequestMessagesJSON(state, RequestOptions{System: "be brief", Records: records[:1]}); err == nil {
		t.Error("records that stop short were taken")
	}
	state.Pending = &pb.PendingBatch{Calls: []*pb.PendingCall{{ToolUse: &pb.ToolUseBlock{Id: "toolu_1"}}}}
	if _, err := RequestBetaMessages(state, RequestOptions{System: "be brief", Records: records}); err == nil || !strings.Contains(err.Error(), "toolu_1") {
		t.Errorf("an open call: %v", err)
	}
}

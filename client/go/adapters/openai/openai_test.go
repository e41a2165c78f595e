package openai

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	rj "runjournal.dev/client/go"
	"runjournal.dev/client/go/adapters/internal/wire"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

func fixture(t *testing.T, name string) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "provider_content", "openai", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	compact, err := wire.Compact(raw)
	if err != nil {
		t.Fatal(err)
	}
	return json.RawMessage(compact)
}

// response decodes a response body through the SDK, as Responses.New does.
func response(t *testing.T, status, incomplete string, items ...json.RawMessage) responses.Response {
	t.Helper()
	body := map[string]any{
		"id": "resp_1", "object": "response", "status": status, "model": "gpt-5.2", "output": items,
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050,
			"input_tokens_details": map[string]int{"cached_tokens": 600, "cache_write_tokens": 100}},
	}
	if incomplete != "" {
		body["incomplete_details"] = map[string]string{"reason": incomplete}
	}
	raw, err := wire.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOutputItemsKeepTheirJSONAndAFunctionCallIsACall(t *testing.T) {
	items := []json.RawMessage{fixture(t, "reasoning"), fixture(t, "message_commentary"), fixture(t, "function_call"), fixture(t, "web_search_call")}
	record, err := AssistantRecord(response(t, "completed", "", append(items, fixture(t, "reasoning_final"))...), 1)
	if err != nil {
		t.Fatal(err)
	}
	turn := record.GetAssistant()
	if len(turn.GetContent()) != len(items) { // the trailing reasoning item is left out
		t.Fatalf("%d blocks", len(turn.GetContent()))
	}
	if turn.GetStopReason() != pb.StopReason_STOP_REASON_TOOL_USE {
		t.Fatalf("stop %v", turn.GetStopReason())
	}
	if u := turn.GetUsage(); u.GetInputTokens() != 300 || u.GetCacheReadTokens() != 600 || u.GetCacheWriteTokens() != 100 || u.GetOutputTokens() != 50 {
		t.Fatalf("usage %v", u)
	}
	use := turn.GetContent()[2].GetToolUse()
	if use.GetId() != "call_Qk7bV2nX9mR4tY8wZ1pL3sD6" || use.GetName() != "get_weather" || use.GetProviderJson() != string(items[2]) ||
		use.GetInputJson() != `{"location":"Paris, France","unit":"celsius"}` {
		t.Fatalf("call %v", use)
	}
	texts, err := InputItemTexts([]*pb.ConversationMessage{{Role: pb.Role_ROLE_ASSISTANT, Content: turn.GetContent()}})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if text != string(items[i]) {
			t.Errorf("item %d not byte-equal:\n%s\n%s", i, text, items[i])
		}
	}
}

func TestStopReasons(t *testing.T) {
	message := fixture(t, "message_final_answer")
	cases := []struct {
		status, incomplete string
		want               pb.StopReason
	}{
		{"completed", "", pb.StopReason_STOP_REASON_END_TURN},
		{"incomplete", "max_output_tokens", pb.StopReason_STOP_REASON_MAX_TOKENS},
		{"incomplete", "content_filter", pb.StopReason_STOP_REASON_REFUSAL},
		{"incomplete", "max_messages", pb.StopReason_STOP_REASON_PAUSE_TURN},
	}
	for _, c := range cases {
		record, err := AssistantRecord(response(t, c.status, c.incomplete, message), 1)
		if err != nil || record.GetAssistant().GetStopReason() != c.want {
			t.Errorf("%s/%s: %v %v", c.status, c.incomplete, record, err)
		}
	}
	refusal := json.RawMessage(`{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"refusal","refusal":"no"}]}`)
	if record, err := AssistantRecord(response(t, "completed", "", refusal), 1); err != nil || record.GetAssistant().GetStopReason() != pb.StopReason_STOP_REASON_REFUSAL {
		t.Errorf("refusal: %v %v", record, err)
	}
	if _, err := AssistantRecord(response(t, "in_progress", "", message), 1); err == nil {
		t.Error("an unfinished response was recorded")
	}
	if _, err := AssistantRecord(response(t, "completed", "", fixture(t, "reasoning")), 1); err == nil {
		t.Error("a response of reasoning only was recorded")
	}
}

func TestTheNextInputPairsResultsAndStartsAtTheCompaction(t *testing.T) {
	call, err := ItemBlock(fixture(t, "function_call"))
	if err != nil {
		t.Fatal(err)
	}
	result, err := ToolResultRecord(fixture(t, "function_call_output"), false, false)
	if err != nil {
		t.Fatal(err)
	}
	reasoning, _ := ItemBlock(fixture(t, "reasoning"))
	prompt, err := UserBlocks("Weather in Paris?")
	if err != nil {
		t.Fatal(err)
	}
	fp, err := Fingerprint(map[string]any{"model": "gpt-5.2", "instructions": "be brief", "tools": []any{map[string]any{"type": "web_search"}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	resultBlock := &pb.ContentBlock{Block: &pb.ContentBlock_ToolResult{ToolResult: &pb.ToolResultBlock{
		ToolUseId: result.GetToolResult().GetToolUseId(), Content: result.GetToolResult().GetContent()}}}
	state := &pb.RunState{EffectiveFingerprint: fp, Conversation: []*pb.ConversationMessage{
		{Role: pb.Role_ROLE_USER, Content: prompt},
		{Role: pb.Role_ROLE_ASSISTANT, Content: []*pb.ContentBlock{reasoning, call}},
		{Role: pb.Role_ROLE_USER, Content: []*pb.ContentBlock{resultBlock, rj.Text("Thanks!")}},
	}}
	items, err := RequestInputJSON(state, "be brief")
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Weather in Paris?"}}},
		fixture(t, "reasoning"), fixture(t, "function_call"), fixture(t, "function_call_output"),
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Thanks!"}}},
	}
	equalJSON(t, items, want)
	if string(items[3]) != string(fixture(t, "function_call_output")) {
		t.Errorf("the output item is not byte-equal: %s", items[3])
	}
	if _, err := RequestInputJSON(state, "be long"); err == nil {
		t.Error("other instructions were taken")
	}

	compaction, _ := ItemBlock(fixture(t, "compaction"))
	after, _ := ItemBlock(fixture(t, "message_after_compaction"))
	state.Conversation = append(state.Conversation, &pb.ConversationMessage{Role: pb.Role_ROLE_ASSISTANT, Content: []*pb.ContentBlock{compaction, after}})
	items, err = RequestInputJSON(state, "be brief")
	if err != nil {
		t.Fatal(err)
	}
	equalJSON(t, items, []any{fixture(t, "compaction"), fixture(t, "message_after_compaction")})
}

func TestPendingCallsAndTheFingerprintsToolNames(t *testing.T) {
	call, _ := ItemBlock(fixture(t, "function_call"))
	state := &pb.RunState{Pending: &pb.PendingBatch{Calls: []*pb.PendingCall{
		{ToolUse: call.GetToolUse(), WaitingFor: pb.WaitingFor_WAITING_FOR_WORKER, Decision: pb.Decision_DECISION_DENIED},
		{ToolUse: &pb.ToolUseBlock{Id: "call_2", Name: "ask", InputJson: "{}"}, WaitingFor: pb.WaitingFor_WAITING_FOR_ANSWER},
	}}}
	calls, err := PendingCalls(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Call.CallID != "call_Qk7bV2nX9mR4tY8wZ1pL3sD6" || calls[0].Call.Name != "get_weather" || !calls[0].Denied {
		t.Fatalf("pending %+v", calls)
	}
	if _, err := RequestInputJSON(state, ""); err == nil || !strings.Contains(err.Error(), "call_2") {
		t.Errorf("open calls: %v", err)
	}
	fp, err := Fingerprint(responses.ResponseNewParams{Model: "gpt-5.2", Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: "web_search"}}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	named, _ := rj.ToolsSHA256([]any{map[string]any{"type": "web_search", "name": "web_search"}})
	if fp.GetToolsSha256() != named || fp.GetThinkingMode() != DefaultThinkingMode {
		t.Fatalf("fingerprint %v", fp)
	}
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

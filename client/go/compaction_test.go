package runjournal_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

func TestMetaRecordWritesFormatTwo(t *testing.T) {
	meta := rj.MetaRecord("r1", fp, []*pb.ContentBlock{rj.Text("hi")}, rj.MetaOptions{})
	if rj.FormatVersion != 2 || meta.GetMeta().GetFormatVersion() != 2 {
		t.Fatalf("format %d, meta %v", rj.FormatVersion, meta.GetMeta().GetFormatVersion())
	}
}

func TestCompactionRecordHoldsEveryField(t *testing.T) {
	usage := &pb.Usage{InputTokens: 900, OutputTokens: 80}
	rec, err := rj.CompactionRecord(4, rj.SummaryText("so far"), pb.CompactionTrigger_COMPACTION_TRIGGER_AUTO,
		rj.CompactionOptions{Provider: "anthropic", Model: "claude-x", TokensBefore: 150000, Usage: usage})
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.JournalRecord{Payload: &pb.JournalRecord_Compaction{Compaction: &pb.Compaction{
		UptoSeq:  4,
		Summary:  []*pb.ConversationMessage{{Role: pb.Role_ROLE_USER, Content: []*pb.ContentBlock{rj.Text("so far")}}},
		Provider: "anthropic", Model: "claude-x", Trigger: pb.CompactionTrigger_COMPACTION_TRIGGER_AUTO,
		TokensBefore: 150000, Usage: usage,
	}}}
	if !proto.Equal(rec, want) || rec.GetSeq() != 0 || rec.GetOptional() {
		t.Fatalf("record %v\nwant %v", rec, want)
	}
}

func TestCompactionSummaryAsBlocksOrMessagesKeepsThemAndTheirRole(t *testing.T) {
	block, err := rj.Opaque("anthropic", "compaction", map[string]any{"type": "compaction", "content": "S"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rj.CompactionRecord(7, rj.SummaryBlocks(block, rj.Text("t")), pb.CompactionTrigger_COMPACTION_TRIGGER_PROVIDER, rj.CompactionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	summary := rec.GetCompaction().GetSummary()
	if len(summary) != 1 || summary[0].GetRole() != pb.Role_ROLE_USER || len(summary[0].GetContent()) != 2 ||
		summary[0].GetContent()[0].GetOpaque().GetJson() != `{"content":"S","type":"compaction"}` {
		t.Fatalf("summary of blocks %v", summary)
	}
	assistant := []*pb.ConversationMessage{{Role: pb.Role_ROLE_ASSISTANT, Content: []*pb.ContentBlock{block}}}
	rec, err = rj.CompactionRecord(7, assistant, pb.CompactionTrigger_COMPACTION_TRIGGER_MANUAL, rj.CompactionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.GetCompaction(); got.GetSummary()[0].GetRole() != pb.Role_ROLE_ASSISTANT ||
		got.GetTrigger() != pb.CompactionTrigger_COMPACTION_TRIGGER_MANUAL || got.GetUsage() == nil {
		t.Fatalf("summary of messages %v", got)
	}
}

func TestCompactionRecordRefusesASeqTheRecordCannotHold(t *testing.T) {
	_, err := rj.CompactionRecord(math.MaxInt32+1, rj.SummaryText("s"), pb.CompactionTrigger_COMPACTION_TRIGGER_AUTO, rj.CompactionOptions{})
	if err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("err %v", err)
	}
}

func TestCompactionAgainstAServer(t *testing.T) {
	ctx, c := dialLive(t, 60*time.Second, rj.WithTimeout(10*time.Second))
	id := runID(t)
	run, err := rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("hello")}, rj.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Assistant(ctx, 1, []*pb.ContentBlock{rj.MustToolUse("c1", "search", nil)}, pb.StopReason_STOP_REASON_TOOL_USE, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := run.ToolResult(ctx, "c1", "found", false); err != nil {
		t.Fatal(err)
	}

	// Between the call (seq 2) and its result (seq 3): refused, naming the call, and the seq stays.
	_, err = run.Compaction(ctx, 2, rj.SummaryText("half"), pb.CompactionTrigger_COMPACTION_TRIGGER_MANUAL, rj.CompactionOptions{})
	var invalid *rj.InvalidRecordError
	if !errors.As(err, &invalid) || !strings.Contains(invalid.Error(), "c1") || run.NextSeq() != 4 {
		t.Fatalf("split: %v, next seq %d", err, run.NextSeq())
	}
	seq, err := run.Compaction(ctx, 3, rj.SummaryText("so far"), pb.CompactionTrigger_COMPACTION_TRIGGER_AUTO,
		rj.CompactionOptions{Provider: "anthropic", Model: "claude-x", TokensBefore: 1000})
	if err != nil || seq != 4 {
		t.Fatalf("compaction %d %v", seq, err)
	}
	if _, err := run.User(ctx, "and now?"); err != nil {
		t.Fatal(err)
	}

	state, err := run.Fold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The follow-up merges into the summary's user message.
	if got := texts(state); state.GetCompactionSeq() != 4 || state.GetCompactedUptoSeq() != 3 || got != "so far and now?" {
		t.Fatalf("compacted: seq %d upto %d conversation %q", state.GetCompactionSeq(), state.GetCompactedUptoSeq(), got)
	}
	whole, err := c.FoldWith(ctx, id, rj.FoldOptions{Uncompacted: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(whole); !whole.GetUncompacted() || got != "hello|tool_use|found and now?" {
		t.Fatalf("uncompacted: %q", got)
	}
	claimed, err := rj.Claim(ctx, c, id, "worker-b", fp, rj.ClaimOptions{Uncompacted: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(claimed.State); !claimed.State.GetUncompacted() || got != "hello|tool_use|found and now?" {
		t.Fatalf("claim uncompacted: %q", got)
	}
}

// texts is the conversation in short: messages split by "|", blocks by " ",
// a block as its text (a tool call as "tool_use", a result as its text).
func texts(state *pb.RunState) string {
	var messages []string
	for _, m := range state.GetConversation() {
		var blocks []string
		for _, b := range m.GetContent() {
			switch {
			case b.GetToolUse() != nil:
				blocks = append(blocks, "tool_use")
			case b.GetToolResult() != nil:
				blocks = append(blocks, b.GetToolResult().GetContent()[0].GetText().GetText())
			default:
				blocks = append(blocks, b.GetText().GetText())
			}
		}
		messages = append(messages, strings.Join(blocks, " "))
	}
	return strings.Join(messages, "|")
}

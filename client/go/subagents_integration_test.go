package runjournal_test

import (
	"errors"
	"testing"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// TestSubAgent: a parent's call is delegated to a child run (a retry is a
// duplicate), the child's final answer becomes the call's result exactly
// once, and the parent is deleted only with its whole tree, against a real
// server.
func TestSubAgent(t *testing.T) {
	ctx, c := dialLive(t, 60*time.Second, rj.WithTimeout(10*time.Second))
	parentID, childID := runID(t), runID(t)+"-child"
	parent, err := rj.Create(ctx, c, parentID, fp, []*pb.ContentBlock{rj.Text("delegate")}, rj.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call, err := rj.ToolUse("c1", "research", map[string]any{"q": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parent.Assistant(ctx, 1, []*pb.ContentBlock{call}, pb.StopReason_STOP_REASON_TOOL_USE, nil); err != nil {
		t.Fatal(err)
	}
	meta := rj.MetaRecord("", fp, []*pb.ContentBlock{rj.Text("look up a")}, rj.MetaOptions{}).GetMeta()
	meta.CreatedAt = nil
	for _, wantDuplicate := range []bool{false, true} {
		spawned, err := c.SpawnRun(ctx, parentID, "c1", childID, meta, "sub-agent")
		if err != nil || spawned.GetDuplicate() != wantDuplicate || spawned.GetSpawnedBy().GetRootRunId() != parentID {
			t.Fatalf("spawn: %v %v", spawned, err)
		}
	}
	child, err := rj.Claim(ctx, c, childID, "sub-worker", fp, rj.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := child.Assistant(ctx, 1, []*pb.ContentBlock{rj.Text("a is 1")}, pb.StopReason_STOP_REASON_END_TURN, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := child.Terminal(ctx, pb.TerminalReason_TERMINAL_REASON_COMPLETED, "ok"); err != nil {
		t.Fatal(err)
	}
	result, err := c.WaitForChild(ctx, parentID, "c1")
	if err != nil || result.GetAnsweredByRunId() != childID || result.GetContent()[0].GetText().GetText() != "a is 1" {
		t.Fatalf("result: %v %v", result, err)
	}
	state, err := c.Fold(ctx, parentID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var invalid *rj.InvalidArgumentError
	if _, err := c.DeleteRun(ctx, parentID, state.GetLastSeq()); !errors.As(err, &invalid) || invalid.Field != "with_children" {
		t.Fatalf("delete without children: %v", err)
	}
	if deleted, err := c.DeleteRunTree(ctx, parentID, state.GetLastSeq()); err != nil || !deleted.GetDeleted() {
		t.Fatalf("delete tree: %v %v", deleted, err)
	}
	var gone *rj.RunDeletedError
	if _, err := c.Fold(ctx, childID, 0); !errors.As(err, &gone) {
		t.Fatalf("child after the tree delete: %v", err)
	}
}

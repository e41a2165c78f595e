package runjournal_test

import (
	"context"
	"testing"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// TestCallerStopEndsStreamsWithNoError: cancelling the context of Watch,
// WatchRuns or Read ends the loop as breaking out of it does, with no error
// item (docs/clients.md, "One API"); Note's data is optional and a tool
// result takes blocks.
func TestCallerStopEndsStreamsWithNoError(t *testing.T) {
	ctx, c := dialLive(t, 60*time.Second)
	id := runID(t)
	run, err := rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("hello")}, rj.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Note(ctx, "no data"); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Note(ctx, "data", map[string]any{"step": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Note(ctx, "two values", 1, 2); err == nil {
		t.Fatal("Note with two data values was accepted")
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var items []string
	for item, err := range c.Watch(watchCtx, id, 0) {
		if err != nil {
			t.Fatalf("the caller's stop ended the watch with an error: %v", err)
		}
		if item.GetCaughtUp() != nil {
			items = append(items, "caught_up")
			stopWatch() // the loop goes on until the stream notices, then ends cleanly
			continue
		}
		items = append(items, "record")
	}
	if len(items) != 4 || items[3] != "caught_up" {
		t.Fatalf("watch items %v", items)
	}

	runsCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	for item, err := range c.WatchRuns(runsCtx, &pb.WatchRunsRequest{}) {
		if err != nil {
			t.Fatalf("the caller's stop ended WatchRuns with an error: %v", err)
		}
		if item.GetCaughtUp() != nil {
			stopRuns()
		}
	}

	readCtx, stopRead := context.WithCancel(ctx)
	stopRead()
	for _, err := range c.Read(readCtx, id, 0) {
		if err != nil {
			t.Fatalf("a cancelled Read yielded an error: %v", err)
		}
	}
}

package runjournal_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// TestLifecycle: Watch follows a run live, ForkRun branches it, DeleteRun
// refuses a moved run and then ends its watchers, DeleteTask keeps a
// tombstone, against a real server.
func TestLifecycle(t *testing.T) {
	ctx, c := dialLive(t, 60*time.Second, rj.WithTimeout(10*time.Second))
	id := runID(t)
	run, err := rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("hello")}, rj.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	note := func(text string) int64 {
		t.Helper()
		record, err := rj.NoteRecord(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := run.Append(ctx, record)
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	note("two")

	next, stop := iterPull(c.Watch(ctx, id, 0))
	defer stop()
	want := []string{"record 1", "record 2", "caught_up 2"}
	for _, w := range want {
		if got := next(t); got != w {
			t.Fatalf("got %s, want %s", got, w)
		}
	}
	last := note("three, while watched")
	if got := next(t); got != "record 3" {
		t.Fatalf("live record: %s", got)
	}

	fork, err := c.ForkRun(ctx, id, 2, id+"-fork")
	if err != nil || fork.GetLastSeq() != 2 || fork.GetForkedFrom().GetRunId() != id {
		t.Fatalf("fork %v %v", fork, err)
	}
	forks, err := c.ListRuns(ctx, &pb.ListRunsRequest{ParentRunId: id})
	if err != nil || len(forks.GetRuns()) != 1 || forks.GetRuns()[0].GetRunId() != id+"-fork" {
		t.Fatalf("forks %v %v", forks, err)
	}

	_, err = c.DeleteRun(ctx, id, last-1)
	var moved *rj.LastSeqMismatchError
	if !errors.As(err, &moved) || moved.LastSeq != last || moved.ExpectedLastSeq != last-1 {
		t.Fatalf("delete at a stale seq: %v", err)
	}
	if resp, err := c.DeleteRun(ctx, id, last); err != nil || !resp.GetDeleted() {
		t.Fatalf("delete %v %v", resp, err)
	}
	if got := next(t); got != "error RUN_DELETED" {
		t.Fatalf("the watch after the deletion: %s", got)
	}
	var deleted *rj.RunDeletedError
	if _, err := c.Fold(ctx, id, 0); !errors.As(err, &deleted) || deleted.LastSeq != last {
		t.Fatalf("fold of a deleted run: %v", err)
	}

	task := id + "-task"
	if _, _, err := c.SubmitTask(ctx, task, `{}`, nil); err != nil {
		t.Fatal(err)
	}
	if gone, err := c.DeleteTask(ctx, task); err != nil || !gone {
		t.Fatalf("delete task %v %v", gone, err)
	}
	var taskGone *rj.TaskDeletedError
	if _, err := c.GetTask(ctx, task); !errors.As(err, &taskGone) {
		t.Fatalf("get of a deleted task: %v", err)
	}
}

// iterPull reads a Watch one item at a time, as a string.
func iterPull(seq func(func(*pb.WatchResponse, error) bool)) (func(*testing.T) string, func()) {
	items := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(items)
		for item, err := range seq {
			text := ""
			switch {
			case err != nil:
				text = "error " + rj.ReasonOf(err)
			case item.GetCaughtUp() != nil:
				text = "caught_up " + itoa(item.GetCaughtUp().GetHeadSeq())
			default:
				text = "record " + itoa(item.GetRecord().GetSeq())
			}
			select {
			case items <- text:
			case <-done:
				return
			}
		}
	}()
	next := func(t *testing.T) string {
		t.Helper()
		// The test's context bounds the wait: when it runs out the watch ends.
		text, ok := <-items
		if !ok {
			t.Fatal("the watch ended")
		}
		return text
	}
	return next, func() { close(done) }
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

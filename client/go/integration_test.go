package runjournal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
	"runjournal.dev/client/go/internal/testserver"
)

var fp = &pb.Fingerprint{Provider: "anthropic", Model: "m", SystemPromptSha256: rj.SystemPromptSHA256("sys"), ThinkingMode: "off", ToolsSha256: rj.SystemPromptSHA256("[]")}

func runID(t *testing.T) string { return fmt.Sprintf("go-%d", time.Now().UnixNano()) }

// dialLive starts a real server for the test and dials it; the context ends
// after within, and the client and the context end with the test.
func dialLive(t *testing.T, within time.Duration, opts ...rj.Option) (context.Context, *rj.Client) {
	t.Helper()
	addr := testserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	c, err := rj.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return ctx, c
}

func TestIntegration(t *testing.T) {
	ctx, c := dialLive(t, 60*time.Second, rj.WithTimeout(10*time.Second))

	t.Run("create append claim and stale writer", func(t *testing.T) {
		id := runID(t)
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		run, err := rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("hello")}, rj.CreateOptions{CreatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if run.ClaimToken() != 1 || run.NextSeq() != 2 {
			t.Fatalf("token %d next %d", run.ClaimToken(), run.NextSeq())
		}
		// A repeated create with the same created_at is a verified duplicate.
		if _, err := rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("hello")}, rj.CreateOptions{CreatedAt: at}); err != nil {
			t.Fatalf("repeated create: %v", err)
		}
		_, err = rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("other")}, rj.CreateOptions{CreatedAt: at})
		var exists *rj.RunExistsError
		if !errors.As(err, &exists) || exists.RunID != id {
			t.Fatalf("different meta: %v", err)
		}
		seq, err := run.Assistant(ctx, 1, []*pb.ContentBlock{rj.Text("t"), rj.MustToolUse("c1", "w", map[string]any{"a": 1}), rj.MustToolUse("c2", "w", nil)}, pb.StopReason_STOP_REASON_TOOL_USE, &pb.Usage{InputTokens: 3})
		if err != nil || seq != 2 {
			t.Fatalf("assistant %d %v", seq, err)
		}
		if last, err := run.AppendBatch(ctx, rj.ToolResultText("c1", "r1", false)); err != nil || last != 3 || run.NextSeq() != 4 {
			t.Fatalf("batch %d %v", last, err)
		}
		// The same record resent at its seq is a duplicate; a different one a conflict.
		dup := rj.ToolResultText("c1", "r1", false)
		dup.Seq = 3
		if resp, err := c.Append(ctx, id, 1, dup); err != nil || !resp.GetDuplicate() {
			t.Fatalf("duplicate %v %v", resp, err)
		}
		conflict := rj.ToolResultText("c1", "different", false)
		conflict.Seq = 3
		_, err = c.Append(ctx, id, 1, conflict)
		var sc *rj.SeqConflictError
		if !errors.As(err, &sc) || sc.Seq != 3 || sc.LastSeq != 3 {
			t.Fatalf("conflict %v", err)
		}
		gap := rj.ToolResultText("c2", "x", false)
		gap.Seq = 9
		_, err = c.Append(ctx, id, 1, gap)
		var sg *rj.SeqGapError
		if !errors.As(err, &sg) || sg.Seq != 9 || sg.LastSeq != 3 {
			t.Fatalf("gap %v", err)
		}

		b, err := rj.Claim(ctx, c, id, "worker-b", fp, rj.ClaimOptions{Reason: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if b.ClaimToken() != 4 || b.NextSeq() != 5 || !b.Gate.GetAllowed() || len(b.State.GetPending().GetCalls()) != 2 {
			t.Fatalf("claim %d %d %v", b.ClaimToken(), b.NextSeq(), b.State)
		}
		_, err = run.ToolResult(ctx, "c2", "stale", false)
		var claimed *rj.RunClaimedError
		if !errors.As(err, &claimed) || claimed.ClaimToken != 4 || claimed.ClaimedBy != "worker-b" {
			t.Fatalf("stale writer: %v", err)
		}
		if run.NextSeq() != 4 {
			t.Fatalf("a refused append moved the seq: %d", run.NextSeq())
		}
		if _, err := b.ToolResult(ctx, "c2", "r2", false); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Terminal(ctx, pb.TerminalReason_TERMINAL_REASON_COMPLETED, "done"); err != nil {
			t.Fatal(err)
		}
		st, err := b.Fold(ctx)
		if err != nil || st.GetStatus() != pb.RunStatus_RUN_STATUS_COMPLETED || st.GetLastSeq() != 6 {
			t.Fatalf("fold %v %v", st, err)
		}

		var seqs []int64
		for item, err := range c.Read(ctx, id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, item.GetSeq())
			if len(item.GetStoredLine()) == 0 {
				t.Fatal("no stored line")
			}
		}
		if fmt.Sprint(seqs) != "[1 2 3 4 5 6]" {
			t.Fatalf("read %v", seqs)
		}
		seqs = nil
		for item, err := range c.Read(ctx, id, 5) {
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, item.GetSeq())
		}
		if fmt.Sprint(seqs) != "[5 6]" {
			t.Fatalf("read from 5: %v", seqs)
		}
	})

	t.Run("errors of answer approve and missing runs", func(t *testing.T) {
		_, err := c.Fold(ctx, "no-such-run-"+runID(t), 0)
		var nf *rj.RunNotFoundError
		if !errors.As(err, &nf) {
			t.Fatalf("%v", err)
		}
		for _, err := range c.Read(ctx, "no-such-run-"+runID(t), 0) {
			if !errors.As(err, &nf) {
				t.Fatalf("read: %v", err)
			}
		}
		_, err = c.Fold(ctx, "bad.id", 0)
		var ia *rj.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field == "" {
			t.Fatalf("%v", err)
		}
		id := runID(t)
		run, err := rj.Create(ctx, c, id, fp, []*pb.ContentBlock{rj.Text("q")}, rj.CreateOptions{Labels: map[string]string{"go": id}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.AppendBatch(ctx,
			rj.AssistantRecord(1, []*pb.ContentBlock{rj.MustToolUse("ask", "ask", nil), rj.MustToolUse("dep", "deploy", nil)}, pb.StopReason_STOP_REASON_TOOL_USE, nil),
			rj.DeferralRecord("ask", "person", "pm", false),
			rj.DeferralRecord("dep", "sign-off", "ops", true),
		); err != nil {
			t.Fatal(err)
		}
		n := 0
		for s, err := range c.Inbox(ctx, map[string]string{"go": id}) {
			if err != nil || s.GetRunId() != id || len(s.GetWaitingCalls()) != 2 {
				t.Fatalf("inbox %v %v", s, err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("inbox has %d runs", n)
		}
		seq, err := c.Answer(ctx, id, "ask", []*pb.ContentBlock{rj.Text("everyone")}, false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Answer(ctx, id, "ask", []*pb.ContentBlock{rj.Text("again")}, false)
		var aa *rj.AlreadyAnsweredError
		if !errors.As(err, &aa) || aa.AnsweredAtSeq != seq || aa.ToolUseID != "ask" {
			t.Fatalf("%v", err)
		}
		aseq, err := c.Approve(ctx, id, "dep", pb.Decision_DECISION_APPROVED, "ops", "ok")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Approve(ctx, id, "dep", pb.Decision_DECISION_DENIED, "x", "")
		var ad *rj.AlreadyDecidedError
		if !errors.As(err, &ad) || ad.DecidedAtSeq != aseq {
			t.Fatalf("%v", err)
		}
		_, err = c.Approve(ctx, id, "nope", pb.Decision_DECISION_APPROVED, "x", "")
		var np *rj.CallNotPendingError
		if !errors.As(err, &np) || np.ToolUseID != "nope" {
			t.Fatalf("%v", err)
		}
		fp2 := &pb.Fingerprint{Provider: "other", Model: "m2", SystemPromptSha256: fp.SystemPromptSha256, ThinkingMode: "off", ToolsSha256: fp.ToolsSha256}
		_, err = rj.Claim(ctx, c, id, "w", fp2, rj.ClaimOptions{})
		var rr *rj.ResumeRefusedError
		if !errors.As(err, &rr) || len(rr.Fields) == 0 {
			t.Fatalf("resume with another provider: %v", err)
		}
	})

	t.Run("transport failure is retried then reported", func(t *testing.T) {
		dead, err := rj.Dial("127.0.0.1:1", rj.WithTimeout(time.Second), rj.WithRetry(rj.RetryPolicy{Budget: time.Minute, MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Multiplier: 1}))
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		_, err = dead.Fold(ctx, "x", 0)
		if !rj.Retryable(err) {
			t.Fatalf("%v", err)
		}
	})
}

func TestTasks(t *testing.T) {
	ctx, c := dialLive(t, 30*time.Second)
	id := "task-" + runID(t)
	task, created, err := c.SubmitTask(ctx, id, `{"q":1}`, map[string]string{"k": "v"})
	if err != nil || !created || task.GetState() != pb.TaskState_TASK_STATE_SUBMITTED {
		t.Fatalf("%v %v %v", task, created, err)
	}
	if _, created, err := c.SubmitTask(ctx, id, `{"q":1}`, map[string]string{"k": "v"}); err != nil || created {
		t.Fatalf("resubmission: %v %v", created, err)
	}
	_, _, err = c.SubmitTask(ctx, id, `{"q":2}`, nil)
	var conflict *rj.TaskConflictError
	if !errors.As(err, &conflict) || conflict.TaskID != id {
		t.Fatalf("different request: %v", err)
	}
	done, err := c.SucceedTask(ctx, id, `{"answer":42}`)
	if err != nil || done.GetState() != pb.TaskState_TASK_STATE_SUCCEEDED || done.GetOutcome().GetResultJson() != `{"answer":42}` {
		t.Fatalf("%v %v", done, err)
	}
	_, err = c.FailTask(ctx, id, "E", "late")
	var completed *rj.AlreadyCompletedError
	if !errors.As(err, &completed) {
		t.Fatalf("completing twice: %v", err)
	}
	got, err := c.GetTask(ctx, id)
	if err != nil || got.GetTaskId() != id {
		t.Fatalf("%v %v", got, err)
	}
	_, err = c.GetTask(ctx, "task-missing-"+runID(t))
	var nf *rj.TaskNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("%v", err)
	}
	page, err := c.ListTasks(ctx, &pb.ListTasksRequest{Labels: map[string]string{"k": "v"}})
	if err != nil || len(page.GetTasks()) == 0 {
		t.Fatalf("%v %v", page, err)
	}
}

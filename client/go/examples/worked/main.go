// Command worked is the worked example of the Go client, doing what
// examples/worked_example.py does: a run that crashes, is resumed, waits for
// people, and finishes.
//
//	go run ./examples/worked --address 127.0.0.1:50051
//
// Three workers take turns on one run, each with its own client as if they
// were separate processes:
//  1. worker-a creates the run, records a model turn asking for two tool
//     calls and the result of the first one, then crashes.
//  2. worker-b claims the run, sees the pending batch, is protected from the
//     stale worker-a, finishes the batch and records the next turn, which asks
//     a person a question and wants to deploy: it defers the question to a
//     person and the deploy to an operator's decision, and suspends.
//  3. People read the inbox, answer the question and approve the deploy.
//  4. worker-c claims the run, runs the approved deploy and finishes.
//
// Every step checks what the server reports; the program exits 1 on anything
// unexpected. Each execution uses a new run id.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

const systemPrompt = "You are a release assistant. Check the weather and the news, then ask before deploying."

var tools = []any{
	map[string]any{"name": "weather", "description": "Weather for a city", "input_schema": map[string]any{"type": "object"}},
	map[string]any{"name": "news", "description": "Headlines for a topic", "input_schema": map[string]any{"type": "object"}},
	map[string]any{"name": "deploy", "description": "Deploy a release", "input_schema": map[string]any{"type": "object"}},
	map[string]any{"name": "ask_person", "description": "Ask a person a question", "input_schema": map[string]any{"type": "object"}},
}

var labels = map[string]string{"example": "worked"}

type unexpected struct{ what string }

func (u unexpected) Error() string { return u.what }

func expect(cond bool, what string) {
	if !cond {
		panic(unexpected{what})
	}
	fmt.Printf("   ok: %s\n", what)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func step(title string) { fmt.Printf("\n== %s\n", title) }

func lower(name, prefix string) string { return strings.ToLower(strings.TrimPrefix(name, prefix)) }

// forAPerson says what a call waiting for a person waits for.
var forAPerson = map[pb.WaitingFor]string{
	pb.WaitingFor_WAITING_FOR_ANSWER:   "an answer",
	pb.WaitingFor_WAITING_FOR_DECISION: "a decision",
}

func showPending(st *pb.RunState) {
	p := st.GetPending()
	fmt.Printf("   pending batch of iteration %d (assistant at seq %d):\n", p.GetIteration(), p.GetAssistantSeq())
	for _, call := range p.GetCalls() {
		// What the call waits for is the server's word (PendingCall.WaitingFor), not worked out here.
		var where string
		switch what := call.GetWaitingFor(); {
		case what == pb.WaitingFor_WAITING_FOR_NOTHING:
			where = fmt.Sprintf("answered at seq %d", call.GetResultSeq())
		case forAPerson[what] != "":
			where = fmt.Sprintf("deferred at seq %d: waits for %s from %q", call.GetDeferralSeq(), forAPerson[what], call.GetDeferral().GetExpectedAnswerer())
		case call.GetDecision() != pb.Decision_DECISION_UNSPECIFIED:
			where = fmt.Sprintf("%s by %q at seq %d, not run yet", lower(call.GetDecision().String(), "DECISION_"), call.GetApproval().GetApprover(), call.GetApprovalSeq())
		default:
			where = "NOT answered yet"
		}
		fmt.Printf("     - %s %s(%s): %s\n", call.GetToolUse().GetId(), call.GetToolUse().GetName(), call.GetToolUse().GetInputJson(), where)
	}
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("worked-example-%s-%s", time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(b))
}

func dial(address string) *rj.Client { return must(rj.Dial(address, rj.WithTimeout(10*time.Second))) }

func workerACrashes(ctx context.Context, address, runID string, fp *pb.Fingerprint) {
	step("1. worker-a creates run " + runID)
	c := dial(address)
	defer c.Close()
	run := must(rj.Create(ctx, c, runID, fp, []*pb.ContentBlock{rj.Text("Is it a good day to ship release 2.4?")}, rj.CreateOptions{Labels: labels}))
	fmt.Printf("   seq 1 meta written; claim token %d, next seq %d\n", run.ClaimToken(), run.NextSeq())
	seq := must(run.Assistant(ctx, 1, []*pb.ContentBlock{
		rj.Text("Let me check the weather and the news first."),
		rj.MustToolUse("call_weather", "weather", map[string]any{"city": "Lisbon"}),
		rj.MustToolUse("call_news", "news", map[string]any{"topic": "outages"}),
	}, pb.StopReason_STOP_REASON_TOOL_USE, &pb.Usage{InputTokens: 812, OutputTokens: 64}))
	fmt.Printf("   seq %d assistant turn 1 asks for call_weather and call_news\n", seq)
	seq = must(run.ToolResult(ctx, "call_weather", "Sunny, 24°C", false))
	fmt.Printf("   seq %d tool_result for call_weather\n", seq)
	expect(run.NextSeq() == 4, "worker-a's next record would be seq 4")
	fmt.Println("   worker-a crashes before running call_news (its client is gone)")
}

func workerBResumesAndSuspends(ctx context.Context, address, runID string, fp *pb.Fingerprint) {
	step("2. worker-b claims the run")
	c := dial(address)
	defer c.Close()
	run := must(rj.Claim(ctx, c, runID, "worker-b", fp, rj.ClaimOptions{}))
	fmt.Printf("   claim token %d, next seq %d\n", run.ClaimToken(), run.NextSeq())
	expect(run.Gate.GetAllowed() && len(run.Gate.GetDifferences()) == 0, "the resume gate allows the same configuration")
	expect(run.State.GetPending() != nil, "the claim reports a pending batch")
	showPending(run.State)
	calls := run.State.GetPending().GetCalls()
	expect(len(calls) == 2 && calls[0].GetAnswered() && !calls[1].GetAnswered(), "one of the two calls is answered")
	fmt.Printf("   resume reminder: %q\n", run.ResumeReminder)

	step("2b. worker-a comes back and tries to write with its old token")
	stale := rj.ToolResultText("call_news", "stale", false)
	stale.Seq = run.NextSeq()
	_, err := c.Append(ctx, runID, 1, stale)
	var claimed *rj.RunClaimedError
	if !errors.As(err, &claimed) {
		panic(unexpected{fmt.Sprintf("a stale worker was not refused with RUN_CLAIMED: %v", err)})
	}
	fmt.Printf("   refused: %s (claimed by %q at token %d)\n", claimed.Reason, claimed.ClaimedBy, claimed.ClaimToken)
	expect(claimed.ClaimToken == run.ClaimToken(), "the refusal names worker-b's claim")

	step("2c. worker-b finishes the batch; the model asks a question and wants to deploy")
	seq := must(run.ToolResult(ctx, "call_news", "No outages reported today.", false))
	fmt.Printf("   seq %d tool_result for call_news (batch complete)\n", seq)
	seq = must(run.Assistant(ctx, 2, []*pb.ContentBlock{
		rj.Text("All clear. I need the release notes' audience, and deploying needs a sign-off."),
		rj.MustToolUse("call_ask", "ask_person", map[string]any{"question": "Who gets the release notes?"}),
		rj.MustToolUse("call_deploy", "deploy", map[string]any{"release": "2.4"}),
	}, pb.StopReason_STOP_REASON_TOOL_USE, &pb.Usage{InputTokens: 901, OutputTokens: 41}))
	fmt.Printf("   seq %d assistant turn 2 asks for call_ask and call_deploy\n", seq)
	seq = must(run.Deferral(ctx, "call_ask", "only a person knows the audience", "release-manager", false))
	fmt.Printf("   seq %d deferral of call_ask to release-manager (awaits an answer)\n", seq)
	seq = must(run.Deferral(ctx, "call_deploy", "production deploys need an on-call sign-off", "on-call", true))
	fmt.Printf("   seq %d deferral of call_deploy to on-call (awaits a decision)\n", seq)
	seq = must(run.Terminal(ctx, pb.TerminalReason_TERMINAL_REASON_SUSPENDED, "waiting for people"))
	fmt.Printf("   seq %d terminal: suspended\n", seq)
	st := must(c.Fold(ctx, runID, 0))
	expect(st.GetStatus() == pb.RunStatus_RUN_STATUS_SUSPENDED, "the run is suspended")
	showPending(st)
}

func inbox(ctx context.Context, c *rj.Client) map[string]*pb.RunSummary {
	out := map[string]*pb.RunSummary{}
	for s, err := range c.Inbox(ctx, labels) {
		if err != nil {
			panic(err)
		}
		out[s.GetRunId()] = s
	}
	return out
}

func peopleAnswerAndApprove(ctx context.Context, address, runID string) {
	step("3. people read the inbox")
	c := dial(address)
	defer c.Close()
	box := inbox(ctx, c)
	expect(box[runID] != nil, "the run is in the inbox")
	var waiting []string
	for _, call := range box[runID].GetWaitingCalls() {
		fmt.Printf("     - %s %s: %s from %q: %s\n", call.GetToolUseId(), call.GetToolName(), lower(call.GetWaitingFor().String(), "WAITING_FOR_"), call.GetExpectedAnswerer(), call.GetReason())
		waiting = append(waiting, call.GetToolUseId()+"/"+call.GetWaitingFor().String())
	}
	expect(strings.Join(waiting, " ") == "call_ask/WAITING_FOR_ANSWER call_deploy/WAITING_FOR_DECISION", "call_ask waits for an answer, call_deploy for a decision")

	step("3b. the release manager answers call_ask")
	seq := must(c.Answer(ctx, runID, "call_ask", []*pb.ContentBlock{rj.Text("The whole company, plus the two customers who asked for 2.4.")}, false))
	fmt.Printf("   seq %d tool_result for call_ask (remote), written by the server\n", seq)
	_, err := c.Answer(ctx, runID, "call_ask", []*pb.ContentBlock{rj.Text("answering twice")}, false)
	var answered *rj.AlreadyAnsweredError
	if !errors.As(err, &answered) {
		panic(unexpected{fmt.Sprintf("a second answer was not refused with ALREADY_ANSWERED: %v", err)})
	}
	fmt.Printf("   a second answer is refused: %s at seq %d\n", answered.Reason, answered.AnsweredAtSeq)
	expect(answered.AnsweredAtSeq == seq, "the refusal points at the first answer")

	step("3c. on-call approves call_deploy")
	seq = must(c.Approve(ctx, runID, "call_deploy", pb.Decision_DECISION_APPROVED, "on-call", "change window open"))
	fmt.Printf("   seq %d approval of call_deploy, written by the server\n", seq)
	_, err = c.Approve(ctx, runID, "call_deploy", pb.Decision_DECISION_DENIED, "someone-else", "")
	var decided *rj.AlreadyDecidedError
	if !errors.As(err, &decided) {
		panic(unexpected{fmt.Sprintf("a second decision was not refused with ALREADY_DECIDED: %v", err)})
	}
	fmt.Printf("   a second decision is refused: %s at seq %d\n", decided.Reason, decided.DecidedAtSeq)
	expect(decided.DecidedAtSeq == seq, "the refusal points at the first decision")
	expect(inbox(ctx, c)[runID] == nil, "nothing of the run waits for a person any more")
	st := must(c.Fold(ctx, runID, 0))
	expect(st.GetStatus() == pb.RunStatus_RUN_STATUS_OPEN, "the run is open again")
}

func workerCFinishes(ctx context.Context, address, runID string, fp *pb.Fingerprint) {
	step("4. worker-c claims the run, runs the approved deploy and finishes")
	c := dial(address)
	defer c.Close()
	run := must(rj.Claim(ctx, c, runID, "worker-c", fp, rj.ClaimOptions{}))
	showPending(run.State)
	var left []string
	for _, call := range run.State.GetPending().GetCalls() {
		if !call.GetAnswered() {
			left = append(left, call.GetToolUse().GetId()+"/"+call.GetDecision().String())
		}
	}
	expect(strings.Join(left, " ") == "call_deploy/DECISION_APPROVED", "only the approved call_deploy is left to run")
	expect(run.State.GetNextIteration() == 3, "the run resumes at iteration 3")
	fmt.Printf("   claim token %d, next seq %d\n", run.ClaimToken(), run.NextSeq())
	seq := must(run.ToolResult(ctx, "call_deploy", "Release 2.4 deployed to production.", false))
	fmt.Printf("   seq %d tool_result for call_deploy: worker-c ran the approved call\n", seq)
	seq = must(run.Assistant(ctx, 3, []*pb.ContentBlock{rj.Text("Release 2.4 is deployed.")}, pb.StopReason_STOP_REASON_END_TURN, &pb.Usage{OutputTokens: 9}))
	fmt.Printf("   seq %d assistant turn 3 (end_turn)\n", seq)
	seq = must(run.Terminal(ctx, pb.TerminalReason_TERMINAL_REASON_COMPLETED, "release 2.4 shipped"))
	fmt.Printf("   seq %d terminal: completed\n", seq)
	st := must(run.Fold(ctx))
	expect(st.GetStatus() == pb.RunStatus_RUN_STATUS_COMPLETED, "the run is completed")
	k := st.GetCounters()
	fmt.Printf("   %d messages; %d model calls, %d tool results (%d remote), %d deferrals; last seq %d\n",
		len(st.GetConversation()), k.GetLlmCalls(), k.GetToolCalls(), k.GetRemoteToolCalls(), k.GetDeferrals(), st.GetLastSeq())
	expect(k.GetLlmCalls() == 3 && k.GetToolCalls() == 4 && k.GetRemoteToolCalls() == 1 && k.GetDeferrals() == 2,
		"3 model calls, 4 tool results (one of them remote) and 2 deferrals")

	step("5. the journal, as stored")
	var kinds []string
	for item, err := range c.Read(ctx, runID, 0) {
		if err != nil {
			panic(err)
		}
		kind := "unknown"
		if p := item.GetRecord().ProtoReflect().WhichOneof(item.GetRecord().ProtoReflect().Descriptor().Oneofs().ByName("payload")); p != nil {
			kind = string(p.Name())
		}
		kinds = append(kinds, kind)
		fmt.Printf("   seq %2d %-12s %4d bytes\n", item.GetSeq(), kind, len(item.GetStoredLine()))
	}
	expect(strings.Join(kinds, " ") == "meta assistant tool_result claim tool_result assistant deferral deferral terminal tool_result approval claim tool_result assistant terminal",
		"the journal holds exactly the records above")
	page := must(c.ListRuns(ctx, &pb.ListRunsRequest{Labels: labels, PageSize: 1000}))
	var listed *pb.RunSummary
	for _, s := range page.GetRuns() {
		if s.GetRunId() == runID {
			listed = s
		}
	}
	expect(listed != nil, "the run is listed under its label")
	fmt.Printf("   listed as %s\n", lower(listed.GetStatus().String(), "RUN_STATUS_"))
}

// Run runs the whole example against address; it returns the run id.
func Run(address string) (runID string, err error) {
	fp, err := rj.MakeFingerprint(rj.FingerprintConfig{Provider: "anthropic", Model: "claude-sonnet-4-5", SystemPrompt: systemPrompt,
		ThinkingMode: "off", Tools: tools, MaxTokens: 4096, MaxIterations: 10})
	if err != nil {
		return "", err
	}
	runID = newRunID()
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	workerACrashes(ctx, address, runID, fp)
	workerBResumesAndSuspends(ctx, address, runID, fp)
	peopleAnswerAndApprove(ctx, address, runID)
	workerCFinishes(ctx, address, runID, fp)
	return runID, nil
}

func main() {
	address := flag.String("address", "127.0.0.1:50051", "the server")
	flag.Parse()
	runID, err := Run(*address)
	if err != nil {
		var u unexpected
		if errors.As(err, &u) {
			fmt.Fprintf(os.Stderr, "\nUNEXPECTED: %v\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "\nUNEXPECTED server error: %v\n", err)
		}
		os.Exit(1)
	}
	fmt.Printf("\nrun %s completed\n", runID)
}

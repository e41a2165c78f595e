// The newcomer flow with the Go module from dist/goproxy: go run . ADDRESS RUN_ID
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

func main() {
	address, runID := os.Args[1], os.Args[2]
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	fp, err := rj.MakeFingerprint(rj.FingerprintConfig{Provider: "anthropic", Model: "m", SystemPrompt: "s", ThinkingMode: "off", Tools: []any{}})
	must(err)
	first, err := rj.Dial(address)
	must(err)
	second, err := rj.Dial(address)
	must(err)
	run, err := rj.Create(ctx, first, runID, fp, []*pb.ContentBlock{rj.Text("hello")}, rj.CreateOptions{})
	must(err)
	_, err = run.Assistant(ctx, 1, []*pb.ContentBlock{rj.MustToolUse("call_1", "lookup", map[string]any{"q": "x"})}, pb.StopReason_STOP_REASON_TOOL_USE, nil)
	must(err)
	taken, err := rj.Claim(ctx, second, runID, "worker-2", fp, rj.ClaimOptions{})
	must(err)
	var pending []string
	for _, c := range taken.State.GetPending().GetCalls() {
		pending = append(pending, fmt.Sprintf("%s:%t", c.GetToolUse().GetId(), c.GetAnswered()))
	}
	_, err = taken.Deferral(ctx, "call_1", "needs a person", "alice", false)
	must(err)
	_, err = taken.Note(ctx, "waiting") // data is optional
	must(err)
	answerSeq, err := first.Answer(ctx, runID, "call_1", []*pb.ContentBlock{rj.Text("42")}, false)
	must(err)
	var kinds []string
	watchCtx, stop := context.WithCancel(ctx)
	for item, err := range first.Watch(watchCtx, runID, 0) { // cancelling is the caller's own stop: no error
		must(err)
		if item.GetCaughtUp() != nil {
			stop()
			continue
		}
		m := item.GetRecord().GetRecord().ProtoReflect()
		kinds = append(kinds, string(m.WhichOneof(m.Descriptor().Oneofs().ByName("payload")).Name()))
	}
	fork, err := first.ForkRun(ctx, runID, 2, runID+"-fork")
	must(err)
	fmt.Printf("pending=%s kinds=%s answer_seq=%d fork=%d/%d\n", strings.Join(pending, ","), strings.Join(kinds, ","),
		answerSeq, fork.GetLastSeq(), fork.GetForkedFrom().GetSeq())
}

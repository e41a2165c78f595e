package runjournal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// The README's ten lines (compiled, not run: it needs a server).
func Example() {
	ctx := context.Background()
	system, tools := "You are a release assistant.", []any{map[string]any{"name": "weather"}}
	err := func() error {
		c, err := runjournal.Dial("127.0.0.1:50051", runjournal.WithToken(os.Getenv("RUNJOURNAL_TOKEN")))
		if err != nil {
			return err
		}
		defer c.Close()
		fp, _ := runjournal.MakeFingerprint(runjournal.FingerprintConfig{Provider: "anthropic", Model: "claude-sonnet-4-5",
			SystemPrompt: system, ThinkingMode: "off", Tools: tools, MaxTokens: 4096, MaxIterations: 10})
		run, err := runjournal.Create(ctx, c, "run-42", fp, []*pb.ContentBlock{runjournal.Text("Ship 2.4?")}, runjournal.CreateOptions{})
		if err != nil {
			return err
		}
		if _, err := run.Assistant(ctx, 1, []*pb.ContentBlock{runjournal.MustToolUse("call_1", "weather", map[string]any{"city": "Lisbon"})},
			pb.StopReason_STOP_REASON_TOOL_USE, &pb.Usage{InputTokens: 812, OutputTokens: 64}); err != nil {
			return err
		}
		_, err = run.ToolResult(ctx, "call_1", "Sunny, 24°C", false)
		var claimed *runjournal.RunClaimedError
		var conflict *runjournal.SeqConflictError
		switch {
		case errors.As(err, &claimed):
			log.Printf("claimed by %s at token %d", claimed.ClaimedBy, claimed.ClaimToken)
		case errors.As(err, &conflict):
			log.Printf("seq %d already holds another record (last %d)", conflict.Seq, conflict.LastSeq)
		case runjournal.Retryable(err):
		case err != nil:
			log.Printf("%s: %v", runjournal.ReasonOf(err), err)
		}
		for item, err := range c.Read(ctx, "run-42", 0) {
			if err != nil {
				return err
			}
			fmt.Println(item.GetSeq(), len(item.GetStoredLine()))
		}
		return nil
	}()
	_ = err
}

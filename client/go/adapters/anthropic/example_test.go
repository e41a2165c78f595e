package anthropic_test

import (
	"context"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	rj "runjournal.dev/client/go"
	rja "runjournal.dev/client/go/adapters/anthropic"
)

// runTool runs a tool_use block and answers it (the worker's own).
func runTool(block sdk.ContentBlockUnion) sdk.ToolResultBlockParam {
	return *sdk.NewToolResultBlock(block.ID, "42", false).OfToolResult
}

// A worker that resumes a run: it claims it, rebuilds the messages from the
// fold and goes on (docs/integrations/anthropic.md, "Go"). The calls a crash
// left unanswered are answered first (rja.ToolResultRecord), as below.
func Example() {
	ctx, claude := context.Background(), sdk.NewClient()
	journal, _ := rj.Dial("127.0.0.1:50051")
	params := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 4096, System: []sdk.TextBlockParam{{Text: "Be brief."}}}
	fp, _ := rja.Fingerprint(params, 20)
	run, _ := rj.Claim(ctx, journal, "run-42", "worker-2", fp, rj.ClaimOptions{})
	state, _ := run.Fold(ctx)
	records, _ := rja.ReadRecords(ctx, journal, "run-42")
	params.Messages, _ = rja.RequestMessages(state, rja.RequestOptions{System: params.System, Records: records})
	for iteration := state.GetNextIteration(); iteration <= 20; iteration++ {
		message, err := claude.Messages.New(ctx, params)
		if err != nil {
			return
		}
		record, _ := rja.AssistantRecord(message, iteration)
		_, _ = run.Append(ctx, record)
		params.Messages = append(params.Messages, message.ToParam())
		var results []sdk.ContentBlockParamUnion
		for _, block := range message.Content {
			if block.Type == "tool_use" {
				result := runTool(block)
				record, _ := rja.ToolResultRecord(result, false)
				_, _ = run.Append(ctx, record)
				results = append(results, sdk.ContentBlockParamUnion{OfToolResult: &result})
			}
		}
		if len(results) > 0 {
			params.Messages = append(params.Messages, sdk.NewUserMessage(results...))
		}
		if message.StopReason == "end_turn" {
			break
		}
	}
}

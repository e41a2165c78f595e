package openai_test

import (
	"context"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	rj "runjournal.dev/client/go"
	rjo "runjournal.dev/client/go/adapters/openai"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// runTool runs a function call (the worker's own).
func runTool(call responses.ResponseFunctionToolCall) string { return `{"temperature_c":14}` }

// work runs a run from wherever the journal says it is, a new run or one a
// crashed worker left (docs/integrations/openai.md, "Go").
func work(ctx context.Context, run *rj.Run, model openai.Client, params responses.ResponseNewParams) error {
	for {
		state, err := run.Fold(ctx)
		if err != nil {
			return err
		}
		calls, _ := rjo.PendingCalls(state)
		for _, pending := range calls {
			output := responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(pending.Call.CallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(runTool(pending.Call))}}
			record, _ := rjo.ToolResultRecord(output, false, false)
			if _, err := run.Append(ctx, record); err != nil {
				return err
			}
		}
		if state.GetPending() != nil {
			continue
		}
		if c := state.GetConversation(); c[len(c)-1].GetRole() == pb.Role_ROLE_ASSISTANT {
			return nil
		}
		if params.Input, err = rjo.RequestInput(state, params.Instructions.Value); err != nil {
			return err
		}
		response, err := model.Responses.New(ctx, params)
		if err != nil {
			return err
		}
		record, _ := rjo.AssistantRecord(response, state.GetNextIteration())
		if _, err := run.Append(ctx, record); err != nil {
			return err
		}
	}
}

func Example() {
	ctx := context.Background()
	journal, _ := rj.Dial("127.0.0.1:50051")
	params := responses.ResponseNewParams{Model: "gpt-5.2", Instructions: openai.String("Be brief."), Store: openai.Bool(false),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}}
	fp, _ := rjo.Fingerprint(params, 0)
	prompt, _ := rjo.UserBlocks("What's the weather in Paris?")
	run, _ := rj.Create(ctx, journal, "run-42", fp, prompt, rj.CreateOptions{})
	_ = work(ctx, run, openai.NewClient(), params)
}

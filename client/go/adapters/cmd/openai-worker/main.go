// Command openai-worker is the Go agent worker of the OpenAI hand-off: the
// loop of tests/adapters/workers/openai_agent.json through openai-go (the
// twin of tests/adapters/workers/openai_worker.py and
// client/ts/test/workers/openai-worker.ts; same arguments).
//
//	openai-worker --journal HOST:PORT --model-url URL --agent PATH --run RUN_ID
//	    (--create | --claim WORKER_ID) [--stream] [--die-after-results N]
//
// Every step is decided from the folded run alone: calls of the pending batch
// first (each answered with the agent's canned tool output), then a model
// call built by RequestInput, a follow-up after the turns the agent lists, or
// the terminal record. --die-after-results N SIGKILLs the process right
// after the N-th tool result it appended. x-runjournal-run on each model
// request lets the test pick the run's requests out of the fake's.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"syscall"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	rj "runjournal.dev/client/go"
	adapter "runjournal.dev/client/go/adapters/openai"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// createParams are the agent's fields that are arguments of Responses.New.
var createParams = []string{"model", "instructions", "tools", "reasoning", "max_output_tokens", "store", "include"}

type agent struct {
	fields      map[string]json.RawMessage
	model       string
	instruction string
	question    string
	followUps   map[string]string
	toolOutputs map[string]string
}

func loadAgent(path string) (*agent, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a := &agent{}
	if err := json.Unmarshal(raw, &a.fields); err != nil {
		return nil, err
	}
	for key, into := range map[string]any{
		"model": &a.model, "instructions": &a.instruction, "question": &a.question,
		"follow_ups": &a.followUps, "tool_outputs": &a.toolOutputs,
	} {
		if err := json.Unmarshal(a.fields[key], into); err != nil {
			return nil, fmt.Errorf("agent %s: %w", key, err)
		}
	}
	return a, nil
}

// params are the create arguments as the body holds them.
func (a *agent) params() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, name := range createParams {
		out[name] = a.fields[name]
	}
	return out
}

type args struct {
	journal, modelURL, agentPath, run, claim string
	create, stream                           bool
	dieAfter                                 int
}

func main() {
	var a args
	flag.StringVar(&a.journal, "journal", "", "the journal server's HOST:PORT")
	flag.StringVar(&a.modelURL, "model-url", "", "the fake model's base URL")
	flag.StringVar(&a.agentPath, "agent", "", "the agent's JSON")
	flag.StringVar(&a.run, "run", "", "the run id")
	flag.BoolVar(&a.create, "create", false, "create the run")
	flag.StringVar(&a.claim, "claim", "", "claim the run as this worker")
	flag.BoolVar(&a.stream, "stream", false, "stream each call")
	flag.IntVar(&a.dieAfter, "die-after-results", 0, "SIGKILL itself after the N-th tool result it appended")
	flag.Parse()
	if a.journal == "" || a.modelURL == "" || a.agentPath == "" || a.run == "" || a.create == (a.claim != "") {
		fmt.Fprintln(os.Stderr, "usage: --journal ADDR --model-url URL --agent PATH --run RUN (--create | --claim WORKER) [--stream] [--die-after-results N]")
		os.Exit(2)
	}
	if err := work(context.Background(), a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func work(ctx context.Context, a args) error {
	ag, err := loadAgent(a.agentPath)
	if err != nil {
		return err
	}
	model := sdk.NewClient(option.WithBaseURL(a.modelURL+"/v1/"), option.WithAPIKey("sk-fake"),
		option.WithMaxRetries(0), option.WithHeader("x-runjournal-run", a.run))
	journal, err := rj.Dial(a.journal)
	if err != nil {
		return err
	}
	defer journal.Close()
	fp, err := adapter.Fingerprint(ag.params(), 0)
	if err != nil {
		return err
	}
	var run *rj.Run
	if a.create {
		prompt, err := adapter.UserBlocks(ag.question)
		if err != nil {
			return err
		}
		run, err = rj.Create(ctx, journal, a.run, fp, prompt, rj.CreateOptions{})
		if err != nil {
			return err
		}
	} else if run, err = rj.Claim(ctx, journal, a.run, a.claim, fp, rj.ClaimOptions{Reason: "hand-off"}); err != nil {
		return err
	}
	return loop(ctx, run, model, ag, a)
}

func loop(ctx context.Context, run *rj.Run, model sdk.Client, ag *agent, a args) error {
	written := 0
	for {
		state, err := run.Fold(ctx)
		if err != nil {
			return err
		}
		if state.GetPending() != nil {
			calls, err := adapter.PendingCalls(state)
			if err != nil {
				return err
			}
			if len(calls) == 0 {
				return nil // only calls waiting for a person: nothing for a worker to do
			}
			for _, pending := range calls {
				output := responses.ResponseInputItemFunctionCallOutputParam{
					CallID: sdk.String(pending.Call.CallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: sdk.String(ag.toolOutputs[pending.Call.Name])},
				}
				record, err := adapter.ToolResultRecord(output, false, false)
				if err != nil {
					return err
				}
				if _, err := run.Append(ctx, record); err != nil {
					return err
				}
				written++
				if written == a.dieAfter {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			}
			continue
		}
		if conversation := state.GetConversation(); len(conversation) > 0 && conversation[len(conversation)-1].GetRole() == pb.Role_ROLE_ASSISTANT {
			followUp, ok := ag.followUps[strconv.FormatInt(state.GetCounters().GetLlmCalls(), 10)]
			if !ok {
				_, err := run.Terminal(ctx, pb.TerminalReason_TERMINAL_REASON_COMPLETED, "")
				return err
			}
			blocks, err := adapter.UserBlocks(followUp)
			if err != nil {
				return err
			}
			if _, err := run.Append(ctx, rj.UserRecord(blocks...)); err != nil {
				return err
			}
			continue
		}
		input, err := adapter.RequestInput(state, ag.instruction)
		if err != nil {
			return err
		}
		response, err := call(ctx, model, ag, input, a.stream)
		if err != nil {
			return err
		}
		record, err := adapter.AssistantRecord(response, state.GetNextIteration())
		if err != nil {
			return err
		}
		if _, err := run.Append(ctx, record); err != nil {
			return err
		}
	}
}

// call sends the agent's create arguments as they are in its JSON (each set
// on the body as given) with the input the adapter built.
func call(ctx context.Context, model sdk.Client, ag *agent, input responses.ResponseNewParamsInputUnion, stream bool) (*responses.Response, error) {
	params := responses.ResponseNewParams{Model: ag.model, Input: input}
	var opts []option.RequestOption
	for name, value := range ag.params() {
		if name != "model" {
			opts = append(opts, option.WithJSONSet(name, value))
		}
	}
	if !stream {
		return model.Responses.New(ctx, params, opts...)
	}
	events := model.Responses.NewStreaming(ctx, params, opts...)
	defer events.Close()
	var final *responses.Response
	for events.Next() {
		if event := events.Current(); event.Type == "response.completed" {
			response := event.Response
			final = &response
		}
	}
	if err := events.Err(); err != nil {
		return nil, err
	}
	if final == nil {
		return nil, errors.New("the stream ended without response.completed")
	}
	return final, nil
}

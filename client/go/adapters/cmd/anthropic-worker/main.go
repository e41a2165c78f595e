// Command anthropic-worker is the Go worker of the Anthropic hand-off: the
// tool loop of tests/fake_model/anthropic_loop.py through anthropic-sdk-go
// (the twin of tests/adapters/workers/anthropic_worker.py and
// client/ts/test/workers/anthropic-worker.ts; same arguments, same tools).
//
//	anthropic-worker --journal HOST:PORT --model-url URL --run RUN_ID
//	    (--create [--die-after-results N] | --resume WORKER_ID)
//
// --create creates the run and runs the loop as any SDK loop does (the
// conversation in memory, every call and result recorded through the
// adapter); with --die-after-results N it SIGKILLs itself right after the
// N-th tool result of a turn is stored. --resume claims the run, runs the
// unanswered calls and rebuilds the conversation from the fold with
// RequestBetaMessages. Every request carries x-runjournal-run. Run from the
// repository root (the fixtures are read from testdata/). Exits 0 when the
// run completed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	rj "runjournal.dev/client/go"
	adapter "runjournal.dev/client/go/adapters/anthropic"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// The same call as tests/fake_model/anthropic_loop.py and the other workers.
const (
	model     = "claude-fake-4-5"
	maxTokens = 4096
	system    = "You compare revenue figures with exchange rates. Quote figures exactly and name their source."
	question  = "Compare Q3 revenue in the report with today's EUR/USD rate and the latest news."
	rateText  = "1 EUR = 1.0842 USD (ECB reference rate, 2025-10-01)"
	caption   = "Q3 revenue by month, EUR"
	beta      = "compact-2026-01-12"
	// streamedIteration is the call that is streamed (its accumulated message recorded).
	streamedIteration = 2
)

var (
	tools = json.RawMessage(`[
	 {"name": "get_exchange_rate", "description": "The reference rate between two currencies on a date",
	  "input_schema": {"type": "object", "properties": {"base": {"type": "string"}, "quote": {"type": "string"}, "date": {"type": "string"}},
	   "required": ["base", "quote"]}},
	 {"name": "render_revenue_chart", "description": "A chart of revenue by month",
	  "input_schema": {"type": "object", "properties": {"quarter": {"type": "string"},
	   "months": {"type": "array", "items": {"type": "string"}}, "currency": {"type": "string"}}}},
	 {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}]`)
	thinking          = json.RawMessage(`{"type": "enabled", "budget_tokens": 2048}`)
	contextManagement = json.RawMessage(`{"edits": [{"type": "compact_20260112", "pause_after_compaction": true}]}`)
)

// call is the body fields besides messages, as the Python worker passes them
// (the Go params type a system only as blocks, and the run's fingerprint
// hashes the string).
func call() map[string]any {
	return map[string]any{
		"model": model, "max_tokens": maxTokens, "system": system,
		"tools": tools, "thinking": thinking, "context_management": contextManagement,
	}
}

func fixture(name string) json.RawMessage {
	raw, err := os.ReadFile(filepath.Join("testdata", "provider_content", "anthropic", name+".json"))
	if err != nil {
		panic(err)
	}
	return raw
}

func textBlock(text string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return raw
}

func prompt() []json.RawMessage {
	return []json.RawMessage{fixture("document"), fixture("text_cache_control"), textBlock(question)}
}

// toolResult is the tool_result block the loop sends: a string content goes
// as raw JSON, which the SDK's typed param does not model.
func toolResult(id, name string) sdk.BetaToolResultBlockParam {
	var content any
	switch name {
	case "get_exchange_rate":
		content = rateText
	case "render_revenue_chart":
		content = []json.RawMessage{fixture("image"), textBlock(caption)}
	default:
		panic("no tool " + name)
	}
	raw, err := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": id, "content": content})
	if err != nil {
		panic(err)
	}
	return param.Override[sdk.BetaToolResultBlockParam](json.RawMessage(raw))
}

func rawMessage(role string, content any) sdk.BetaMessageParam {
	raw, err := json.Marshal(map[string]any{"role": role, "content": content})
	if err != nil {
		panic(err)
	}
	return param.Override[sdk.BetaMessageParam](json.RawMessage(raw))
}

// blocks are an answer's blocks as sent back: each block's own JSON.
func blocks(content []sdk.BetaContentBlockUnion) []json.RawMessage {
	out := make([]json.RawMessage, len(content))
	for i, block := range content {
		out[i] = json.RawMessage(block.RawJSON())
	}
	return out
}

type args struct {
	journal, modelURL, run, resume string
	create                         bool
	dieAfter                       int
}

func start(ctx context.Context, journal *rj.Client, a args) (*rj.Run, []sdk.BetaMessageParam, int32, error) {
	fp, err := adapter.Fingerprint(call(), 10)
	if err != nil {
		return nil, nil, 0, err
	}
	if a.create {
		promptBlocks, err := adapter.UserBlocks(prompt())
		if err != nil {
			return nil, nil, 0, err
		}
		run, err := rj.Create(ctx, journal, a.run, fp, promptBlocks, rj.CreateOptions{})
		return run, []sdk.BetaMessageParam{rawMessage("user", prompt())}, 1, err
	}
	run, err := rj.Claim(ctx, journal, a.run, a.resume, fp, rj.ClaimOptions{Reason: "resume after a crash"})
	if err != nil {
		return nil, nil, 0, err
	}
	state := run.State
	if state.GetPending() != nil {
		for _, pending := range state.GetPending().GetCalls() {
			if pending.GetAnswered() {
				continue
			}
			record, err := adapter.ToolResultRecord(toolResult(pending.GetToolUse().GetId(), pending.GetToolUse().GetName()), false)
			if err != nil {
				return nil, nil, 0, err
			}
			if _, err := run.Append(ctx, record); err != nil {
				return nil, nil, 0, err
			}
		}
		if state, err = run.Fold(ctx); err != nil {
			return nil, nil, 0, err
		}
	}
	records, err := adapter.ReadRecords(ctx, journal, a.run)
	if err != nil {
		return nil, nil, 0, err
	}
	messages, err := adapter.RequestBetaMessages(state, adapter.RequestOptions{System: system, Records: records})
	return run, messages, state.GetNextIteration(), err
}

func send(ctx context.Context, client sdk.Client, messages []sdk.BetaMessageParam, streamed bool) (*sdk.BetaMessage, error) {
	params := sdk.BetaMessageNewParams{Model: model, MaxTokens: maxTokens, Messages: messages, Betas: []sdk.AnthropicBeta{beta}}
	var opts []option.RequestOption
	for key, value := range call() {
		if key != "model" && key != "max_tokens" {
			opts = append(opts, option.WithJSONSet(key, value))
		}
	}
	if !streamed {
		return client.Beta.Messages.New(ctx, params, opts...)
	}
	stream := client.Beta.Messages.NewStreaming(ctx, params, opts...)
	defer stream.Close()
	message := sdk.BetaMessage{}
	for stream.Next() {
		if err := message.Accumulate(stream.Current()); err != nil {
			return nil, err
		}
	}
	return &message, stream.Err()
}

func work(ctx context.Context, journal *rj.Client, client sdk.Client, a args) error {
	run, messages, iteration, err := start(ctx, journal, a)
	if err != nil {
		return err
	}
	for {
		message, err := send(ctx, client, messages, iteration == streamedIteration)
		if err != nil {
			return err
		}
		record, err := adapter.AssistantRecord(message, iteration)
		if err != nil {
			return err
		}
		if _, err := run.Append(ctx, record); err != nil {
			return err
		}
		iteration++
		switch message.StopReason {
		case "tool_use":
			var results []sdk.BetaToolResultBlockParam
			for _, block := range message.Content {
				if block.Type != "tool_use" {
					continue
				}
				result := toolResult(block.ID, block.Name)
				record, err := adapter.ToolResultRecord(result, false)
				if err != nil {
					return err
				}
				if _, err := run.Append(ctx, record); err != nil {
					return err
				}
				results = append(results, result)
				if len(results) == a.dieAfter {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}
			}
			messages = append(messages, rawMessage("assistant", blocks(message.Content)), rawMessage("user", results))
		case "pause_turn":
			messages = append(messages, rawMessage("assistant", blocks(message.Content)))
		case "compaction":
			// The API takes the conversation from the compaction block on.
			first := 0
			for first < len(message.Content) && message.Content[first].Type != "compaction" {
				first++
			}
			messages = []sdk.BetaMessageParam{rawMessage("assistant", blocks(message.Content[first:]))}
		case "end_turn":
			_, err := run.Terminal(ctx, pb.TerminalReason_TERMINAL_REASON_COMPLETED, "")
			return err
		default:
			return fmt.Errorf("unexpected stop_reason %q: %s", message.StopReason, message.RawJSON())
		}
	}
}

func main() {
	var a args
	flag.StringVar(&a.journal, "journal", "", "the journal server's HOST:PORT")
	flag.StringVar(&a.modelURL, "model-url", "", "the fake model's base URL")
	flag.StringVar(&a.run, "run", "", "the run id")
	flag.BoolVar(&a.create, "create", false, "create the run")
	flag.StringVar(&a.resume, "resume", "", "claim the run as this worker")
	flag.IntVar(&a.dieAfter, "die-after-results", 0, "SIGKILL itself after the N-th tool result of a turn")
	flag.Parse()
	if a.journal == "" || a.modelURL == "" || a.run == "" || a.create == (a.resume != "") {
		fmt.Fprintln(os.Stderr, "usage: --journal ADDR --model-url URL --run RUN (--create [--die-after-results N] | --resume WORKER)")
		os.Exit(2)
	}
	client := sdk.NewClient(option.WithAPIKey("fake-key"), option.WithBaseURL(a.modelURL),
		option.WithHeader("x-runjournal-run", a.run), option.WithMaxRetries(0))
	journal, err := rj.Dial(a.journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer journal.Close()
	if err := work(context.Background(), journal, client, a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Package plan reads the hand-off plan of conformance/handoff/plan.json and
// turns its steps into journal records with the client's builders.
package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// Plan is the hand-off plan.
type Plan struct {
	Run struct {
		CreatedAt   string            `json:"created_at"`
		Prompt      string            `json:"prompt"`
		Labels      map[string]string `json:"labels"`
		Interactive bool              `json:"interactive"`
		TaskID      string            `json:"task_id"`
		Config      struct {
			Provider      string `json:"provider"`
			Model         string `json:"model"`
			SystemPrompt  string `json:"system_prompt"`
			ThinkingMode  string `json:"thinking_mode"`
			Tools         []any  `json:"tools"`
			MaxTokens     int32  `json:"max_tokens"`
			MaxIterations int32  `json:"max_iterations"`
		} `json:"config"`
	} `json:"run"`
	Steps   []map[string]any `json:"steps"`
	Workers []struct {
		Language string `json:"language"`
		WorkerID string `json:"worker_id"`
		FromStep int    `json:"from_step"`
		ToStep   int    `json:"to_step"`
	} `json:"workers"`
}

// Load reads a plan, keeping numbers exact.
func Load(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}

// WorkerID is the worker id of the plan's workers entry whose from_step is
// from; without one, that of language's entry, else "<language>-worker".
func (p *Plan) WorkerID(language string, from int) string {
	for _, w := range p.Workers {
		if w.FromStep == from {
			return w.WorkerID
		}
	}
	for _, w := range p.Workers {
		if w.Language == language {
			return w.WorkerID
		}
	}
	return language + "-worker"
}

// Fingerprint hashes the run's configuration.
func (p *Plan) Fingerprint() (*pb.Fingerprint, error) {
	c := p.Run.Config
	tools := c.Tools
	if tools == nil {
		tools = []any{}
	}
	return rj.MakeFingerprint(rj.FingerprintConfig{Provider: c.Provider, Model: c.Model, SystemPrompt: c.SystemPrompt,
		ThinkingMode: c.ThinkingMode, Tools: tools, MaxTokens: c.MaxTokens, MaxIterations: c.MaxIterations})
}

// IsMeta reports whether step i is the meta step.
func (p *Plan) IsMeta(i int) bool {
	_, ok := p.Steps[i]["meta"]
	return ok
}

// MetaParts are what Create needs.
type MetaParts struct {
	Prompt  []*pb.ContentBlock
	Options rj.CreateOptions
}

// Meta is the run's meta record parts.
func (p *Plan) Meta(runID string) (*MetaParts, error) {
	at, err := time.Parse(time.RFC3339Nano, p.Run.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("run.created_at: %w", err)
	}
	return &MetaParts{Prompt: []*pb.ContentBlock{rj.Text(p.Run.Prompt)},
		Options: rj.CreateOptions{Labels: p.Run.Labels, Interactive: p.Run.Interactive, TaskID: p.Run.TaskID, CreatedAt: at}}, nil
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
func boolean(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}
func i32(m map[string]any, k string) int32 {
	n, _ := m[k].(json.Number)
	v, _ := n.Int64()
	return int32(v)
}
func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func enum(values map[string]int32, prefix, name string) (int32, error) {
	v, ok := values[prefix+strings.ToUpper(name)]
	if !ok {
		return 0, fmt.Errorf("unknown %s%s", prefix, strings.ToUpper(name))
	}
	return v, nil
}

func content(v any) ([]*pb.ContentBlock, error) {
	list, _ := v.([]any)
	out := make([]*pb.ContentBlock, 0, len(list))
	for i, item := range list {
		b := obj(item)
		switch {
		case b["text"] != nil:
			out = append(out, rj.Text(str(b, "text")))
		case b["thinking"] != nil:
			t := obj(b["thinking"])
			if boolean(t, "redacted") {
				out = append(out, rj.RedactedThinking(str(t, "data")))
			} else {
				out = append(out, rj.Thinking(str(t, "thinking"), str(t, "signature")))
			}
		case b["tool_use"] != nil:
			t := obj(b["tool_use"])
			block, err := rj.ToolUse(str(t, "id"), str(t, "name"), obj(t["input"]))
			if err != nil {
				return nil, err
			}
			out = append(out, block)
		case b["opaque"] != nil:
			t := obj(b["opaque"])
			block, err := rj.Opaque(str(t, "provider"), str(t, "type"), t["value"])
			if err != nil {
				return nil, err
			}
			out = append(out, block)
		default:
			return nil, fmt.Errorf("content[%d]: unknown block %v", i, b)
		}
	}
	return out, nil
}

// Record is step i (not the meta step) as a draft record.
func (p *Plan) Record(i int) (*pb.JournalRecord, error) {
	s := p.Steps[i]
	wrap := func(err error) error { return fmt.Errorf("plan step %d: %w", i, err) }
	switch {
	case s["assistant"] != nil:
		a := obj(s["assistant"])
		blocks, err := content(a["content"])
		if err != nil {
			return nil, wrap(err)
		}
		stop, err := enum(pb.StopReason_value, "STOP_REASON_", str(a, "stop_reason"))
		if err != nil {
			return nil, wrap(err)
		}
		u := obj(a["usage"])
		usage := &pb.Usage{InputTokens: i32(u, "input_tokens"), OutputTokens: i32(u, "output_tokens"),
			CacheReadTokens: i32(u, "cache_read_tokens"), CacheWriteTokens: i32(u, "cache_write_tokens")}
		return rj.AssistantRecord(i32(a, "iteration"), blocks, pb.StopReason(stop), usage), nil
	case s["tool_result"] != nil:
		t := obj(s["tool_result"])
		blocks, err := content(t["content"])
		if err != nil {
			return nil, wrap(err)
		}
		return rj.ToolResultRecord(str(t, "tool_use_id"), blocks, boolean(t, "is_error")), nil
	case s["user"] != nil:
		blocks, err := content(obj(s["user"])["content"])
		if err != nil {
			return nil, wrap(err)
		}
		return rj.UserRecord(blocks...), nil
	case s["deferral"] != nil:
		d := obj(s["deferral"])
		return rj.DeferralRecord(str(d, "tool_use_id"), str(d, "reason"), str(d, "expected_answerer"), boolean(d, "needs_approval")), nil
	case s["terminal"] != nil:
		t := obj(s["terminal"])
		reason, err := enum(pb.TerminalReason_value, "TERMINAL_REASON_", str(t, "reason"))
		if err != nil {
			return nil, wrap(err)
		}
		return rj.TerminalRecord(pb.TerminalReason(reason), str(t, "message")), nil
	case s["note"] != nil:
		n := obj(s["note"])
		rec, err := rj.NoteRecord(str(n, "text"), n["data"])
		if err != nil {
			return nil, wrap(err)
		}
		return rec, nil
	case s["meta"] != nil:
		return nil, wrap(fmt.Errorf("the meta step only starts a run"))
	}
	return nil, wrap(fmt.Errorf("unknown step %v", s))
}

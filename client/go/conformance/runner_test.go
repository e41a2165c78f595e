package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

func config(t *testing.T) *Config {
	t.Helper()
	path := os.Getenv("RUNJOURNAL_CONFORMANCE")
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("RUNJOURNAL_CONFORMANCE is not set under CI: run through `python conformance/servers.py -- go test ./conformance/...`")
		}
		t.Skip("RUNJOURNAL_CONFORMANCE is not set (run through conformance/servers.py)")
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) == 0 {
		t.Fatal("no servers in the conformance file")
	}
	return c
}

func scenarios(t *testing.T, dir string) []*Scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s (%v)", dir, err)
	}
	sort.Strings(files)
	var out []*Scenario
	for _, f := range files {
		s, err := LoadScenario(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".json"); s.Name != want {
			t.Fatalf("%s: name %q", f, s.Name)
		}
		out = append(out, s)
	}
	return out
}

// TestScenarios replays every scenario against every server it applies to:
// one subtest per (scenario, backend, auth).
func TestScenarios(t *testing.T) {
	c := config(t)
	all := scenarios(t, c.ScenariosDir)
	var mu sync.Mutex
	passed := map[string]int{}
	ran := map[string]int{}
	t.Cleanup(func() {
		names := make([]string, 0, len(ran))
		for n := range ran {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t.Logf("conformance %s: %d/%d scenarios passed", n, passed[n], ran[n])
		}
	})
	for _, srv := range c.Servers {
		t.Run(srv.Name, func(t *testing.T) {
			t.Parallel()
			r, err := NewReplayer(srv, c.Tokens)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			for _, s := range all {
				if !s.Applies(srv) {
					continue
				}
				t.Run(s.Name, func(t *testing.T) {
					mu.Lock()
					ran[srv.Name]++
					mu.Unlock()
					if err := r.Replay(s); err != nil {
						t.Fatal(err)
					}
					mu.Lock()
					passed[srv.Name]++
					mu.Unlock()
				})
			}
		})
	}
}

// TestSelfTestWrongExpectationFails checks the runner: the deliberately
// wrong scenario must fail, naming the scenario, the step, the path, the
// expected and the actual value.
func TestSelfTestWrongExpectationFails(t *testing.T) {
	c := config(t)
	s, err := LoadScenario(filepath.Join("..", "..", "..", "conformance", "selftest", "wrong_expectation.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range c.Servers {
		if !s.Applies(srv) {
			continue
		}
		err := replayOnce(t, srv, c.Tokens, s)
		if err == nil {
			t.Fatalf("%s: the wrong expectation passed", srv.Name)
		}
		msg := err.Error()
		for _, want := range []string{"wrong_expectation", "step 1", "lastSeq", "expected 7", `actual "2"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the failure %q does not name %q", srv.Name, msg, want)
			}
		}
		t.Logf("%s: failed as expected: %s", srv.Name, msg)
	}
}

// TestSelfTestShortTakeFails checks stream.take: a stream that ends before
// sending the messages to take fails the replay, in the words FORMAT.md gives.
func TestSelfTestShortTakeFails(t *testing.T) {
	c := config(t)
	s, err := LoadScenario(filepath.Join("..", "..", "..", "conformance", "selftest", "short_take.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range c.Servers {
		if !s.Applies(srv) {
			continue
		}
		err := replayOnce(t, srv, c.Tokens, s)
		if err == nil {
			t.Fatalf("%s: the short take passed", srv.Name)
		}
		msg := err.Error()
		for _, want := range []string{"short_take", "step 1", "expected 3 stream messages before cancelling, the stream ended after 1"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the failure %q does not name %q", srv.Name, msg, want)
			}
		}
		t.Logf("%s: failed as expected: %s", srv.Name, msg)
	}
}

// TestDuringFailureWording checks the words FORMAT.md pins for a failing
// step of during: "step N (Watch), during step I (Fold)".
func TestDuringFailureWording(t *testing.T) {
	c := config(t)
	s, err := LoadScenario(filepath.Join("..", "..", "..", "conformance", "selftest", "short_take.json"))
	if err != nil {
		t.Fatal(err)
	}
	wrongFold := Step{RPC: "Fold", Request: map[string]any{"runId": "${run}"},
		Expect: map[string]any{"error": map[string]any{"code": "NOT_FOUND", "reason": "RUN_NOT_FOUND"}}}
	s.Steps[1] = Step{RPC: "Watch", Request: map[string]any{"runId": "${run}"},
		Expect: map[string]any{"stream": map[string]any{"items": []any{}, "take": json.Number("3")}},
		During: &During{After: 2, Steps: []Step{wrongFold}}}
	for _, srv := range c.Servers {
		if !s.Applies(srv) {
			continue
		}
		err := replayOnce(t, srv, c.Tokens, s)
		if err == nil || !strings.Contains(err.Error(), "step 1 (Watch), during step 0 (Fold): ") {
			t.Fatalf("%s: a failing during step gave %v", srv.Name, err)
		}
		return
	}
	t.Fatal("no server fits")
}

// replayOnce replays one scenario on one server with a replayer of its own,
// for the self-tests that expect a failure.
func replayOnce(t *testing.T, srv Server, tokens map[string]string, s *Scenario) error {
	t.Helper()
	r, err := NewReplayer(srv, tokens)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	return r.Replay(s)
}

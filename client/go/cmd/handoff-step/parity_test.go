package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
	"runjournal.dev/client/go/internal/testserver"
)

func records(t *testing.T, c *rj.Client, id string) ([]*pb.JournalRecord, []string) {
	var out []*pb.JournalRecord
	var lines []string
	for item, err := range c.Read(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		rec := item.GetRecord()
		if m := rec.GetMeta(); m != nil {
			m.RunId = "RUN"
		}
		if cl := rec.GetClaim(); cl != nil {
			cl.Host, cl.Pid = "", 0
		}
		out = append(out, rec)
		line := ""
		if rec.GetMeta() == nil && rec.GetClaim() == nil {
			line = string(item.GetStoredLine())
		}
		lines = append(lines, line)
	}
	return out, lines
}

// Go writing steps 3..6 after a Python worker wrote 0..2 stores the same
// records as the Python reference worker writing every part (claims compared
// on worker id only).
func TestGoStepsEqualPythonReference(t *testing.T) {
	addr := testserver.Start(t)
	root, _ := filepath.Abs("../../../..")
	plan := filepath.Join(root, "conformance/handoff/plan.json")
	python := func(id string, from, to int) {
		cmd := exec.Command(testserver.Python(), "-m", "tests.conformance.handoff", "--address", addr, "--run", id,
			"--plan", plan, "--from-step", strconv.Itoa(from), "--to-step", strconv.Itoa(to))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PYTHONPATH="+root)
		if out, err := cmd.CombinedOutput(); err != nil {
			if os.Getenv("CI") != "true" {
				t.Skipf("python reference worker unavailable: %v\n%s", err, out)
			}
			t.Fatalf("python worker: %v\n%s", err, out)
		}
	}
	stamp := time.Now().UnixNano()
	ref, mixed := fmt.Sprintf("parity-py-%d", stamp), fmt.Sprintf("parity-go-%d", stamp)
	python(ref, 0, 2)
	python(ref, 3, 3)
	python(ref, 4, 6)
	python(mixed, 0, 2)
	for _, part := range [][2]int{{3, 3}, {4, 6}} {
		if err := run(addr, mixed, plan, part[0], part[1], "", ""); err != nil {
			t.Fatal(err)
		}
	}
	c, err := rj.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, wantLines := records(t, c, ref)
	got, gotLines := records(t, c, mixed)
	if len(want) != len(got) || len(want) != 9 {
		t.Fatalf("%d records, reference %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(want[i], got[i]) {
			t.Errorf("seq %d differs:\n go     %v\n python %v", i+1, got[i], want[i])
		}
		if gotLines[i] != wantLines[i] {
			t.Errorf("seq %d stored line differs:\n go     %s\n python %s", i+1, gotLines[i], wantLines[i])
		}
	}
}

// Command handoff-step is the Go worker of the cross-language hand-off test
// (conformance/handoff): it claims a run (or creates it, when --from-step is
// the plan's meta step) and writes the plan's steps from..to with the Go
// client.
//
//	handoff-step --address 127.0.0.1:50051 --run RUN --plan conformance/handoff/plan.json --from-step 3 --to-step 3
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	rj "runjournal.dev/client/go"
	"runjournal.dev/client/go/internal/plan"
)

func main() {
	address := flag.String("address", "127.0.0.1:50051", "server address host:port")
	runID := flag.String("run", "", "run id")
	planPath := flag.String("plan", "", "plan file (conformance/handoff/plan.json)")
	from := flag.Int("from-step", -1, "first step to write (0-based)")
	to := flag.Int("to-step", -1, "last step to write (inclusive)")
	workerID := flag.String("worker-id", "", "worker id of the claim (default: the plan's Go worker, else go-worker)")
	token := flag.String("token", os.Getenv("RUNJOURNAL_TOKEN"), "bearer token (default $RUNJOURNAL_TOKEN)")
	flag.Parse()
	if err := run(*address, *runID, *planPath, *from, *to, *workerID, *token); err != nil {
		fmt.Fprintln(os.Stderr, "handoff-step:", err)
		os.Exit(1)
	}
}

func run(address, runID, planPath string, from, to int, workerID, token string) error {
	if runID == "" || planPath == "" {
		return fmt.Errorf("--run and --plan are required")
	}
	p, err := plan.Load(planPath)
	if err != nil {
		return err
	}
	if from < 0 || to < from || to >= len(p.Steps) {
		return fmt.Errorf("steps %d..%d out of the plan's 0..%d", from, to, len(p.Steps)-1)
	}
	if workerID == "" {
		workerID = p.WorkerID("go", from)
	}
	fp, err := p.Fingerprint()
	if err != nil {
		return err
	}
	opts := []rj.Option{rj.WithTimeout(10 * time.Second)}
	if token != "" {
		opts = append(opts, rj.WithToken(token))
	}
	c, err := rj.Dial(address, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var r *rj.Run
	first := from
	if p.IsMeta(from) {
		meta, err := p.Meta(runID)
		if err != nil {
			return err
		}
		if r, err = rj.Create(ctx, c, runID, fp, meta.Prompt, meta.Options); err != nil {
			return fmt.Errorf("create: %w", err)
		}
		first = from + 1
	} else if r, err = rj.Claim(ctx, c, runID, workerID, fp, rj.ClaimOptions{Reason: "handoff"}); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	for i := first; i <= to; i++ {
		rec, err := p.Record(i)
		if err != nil {
			return err
		}
		seq, err := r.Append(ctx, rec)
		if err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		fmt.Printf("step %d -> seq %d\n", i, seq)
	}
	out, _ := json.Marshal(map[string]any{"run": runID, "worker_id": workerID, "claim_token": r.ClaimToken(), "last_seq": r.LastSeq()})
	fmt.Println(string(out))
	return nil
}

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	rj "runjournal.dev/client/go"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
	"runjournal.dev/client/go/internal/testserver"
)

// The plan written in three hand-offs (all by this program) completes the run.
func TestHandoffPlanInThreeParts(t *testing.T) {
	addr := testserver.Start(t)
	plan := "../../../../conformance/handoff/plan.json"
	id := fmt.Sprintf("handoff-go-%d", time.Now().UnixNano())
	for _, part := range [][2]int{{0, 2}, {3, 3}, {4, 6}} {
		if err := run(addr, id, plan, part[0], part[1], "", ""); err != nil {
			t.Fatalf("steps %v: %v", part, err)
		}
	}
	c, err := rj.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Fold(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 7 plan records + 2 claims.
	if st.GetStatus() != pb.RunStatus_RUN_STATUS_COMPLETED || st.GetLastSeq() != 9 || st.GetClaimedBy() != "ts-worker" {
		t.Fatalf("status %v last %d by %q", st.GetStatus(), st.GetLastSeq(), st.GetClaimedBy())
	}
	if err := run(addr, id, plan, 5, 99, "", ""); err == nil {
		t.Fatal("steps beyond the plan accepted")
	}
}

package runjournal

import (
	"context"

	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// SpawnRun delegates call toolUseID of run runID's pending batch to a new
// child run newRunID, created from meta (format 2 or later; leave RunId,
// CreatedAt, TaskId and SpawnedBy empty: the server sets them). The parent's
// call then waits for the child (WAITING_FOR_CHILD); the child's meta names
// the parent and its claim token is 1, the spawner's. When the child stops
// (any terminal but suspended) the server answers the call exactly once
// with the child's final answer, or an error naming how it stopped (see
// WaitForChild). Spawning again with the same child id and meta is a
// verified duplicate (Duplicate true), so a retry is safe; another child id
// for the same call is *InvalidArgumentError.
func (c *Client) SpawnRun(ctx context.Context, runID, toolUseID, newRunID string, meta *pb.Meta, reason string) (*pb.SpawnRunResponse, error) {
	req := &pb.SpawnRunRequest{RunId: runID, ToolUseId: toolUseID, NewRunId: newRunID, Meta: meta, Reason: reason}
	return unary(ctx, c, req, c.journal.SpawnRun)
}

// WaitForChild watches run runID until call toolUseID has its result and
// returns it: the child's outcome (AnsweredByRunId names the child), or the
// answer a person gave first. It returns at once when the result is stored
// already; ctx bounds the wait.
func (c *Client) WaitForChild(ctx context.Context, runID, toolUseID string) (*pb.ToolResult, error) {
	for item, err := range c.Watch(ctx, runID, 0) {
		if err != nil {
			return nil, err
		}
		result := item.GetRecord().GetRecord().GetToolResult()
		if result != nil && result.GetToolUseId() == toolUseID {
			return result, nil
		}
	}
	return nil, ctx.Err()
}

// DeleteRunTree deletes run runID and every run spawned under it, children
// before their parents, if runID's last seq is still expectedLastSeq.
// (DeleteRun refuses a run with children with *InvalidArgumentError naming
// with_children.)
func (c *Client) DeleteRunTree(ctx context.Context, runID string, expectedLastSeq int64) (*pb.DeleteRunResponse, error) {
	req := &pb.DeleteRunRequest{RunId: runID, ExpectedLastSeq: expectedLastSeq, WithChildren: true}
	return unary(ctx, c, req, c.journal.DeleteRun)
}

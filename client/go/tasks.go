package runjournal

import (
	"context"

	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// SubmitTask submits a task (requestJSON is stored as sent; a resubmission
// of the same request is not a new task: created is false).
func (c *Client) SubmitTask(ctx context.Context, taskID, requestJSON string, labels map[string]string) (task *pb.Task, created bool, err error) {
	resp, err := unary(ctx, c, &pb.SubmitTaskRequest{TaskId: taskID, RequestJson: requestJSON, Labels: labels}, c.tasks.SubmitTask)
	if err != nil {
		return nil, false, err
	}
	return resp.GetTask(), resp.GetCreated(), nil
}

// SucceedTask completes a task with its result (JSON text).
func (c *Client) SucceedTask(ctx context.Context, taskID, resultJSON string) (*pb.Task, error) {
	return c.completeTask(ctx, taskID, &pb.TaskOutcome{Kind: &pb.TaskOutcome_ResultJson{ResultJson: resultJSON}})
}

// FailTask completes a task with a failure.
func (c *Client) FailTask(ctx context.Context, taskID, code, message string) (*pb.Task, error) {
	return c.completeTask(ctx, taskID, &pb.TaskOutcome{Kind: &pb.TaskOutcome_Failure{Failure: &pb.TaskFailure{Code: code, Message: message}}})
}

// CompleteTask completes a task with an outcome (its completed_at is set
// by the server).
func (c *Client) CompleteTask(ctx context.Context, taskID string, outcome *pb.TaskOutcome) (*pb.Task, error) {
	return c.completeTask(ctx, taskID, outcome)
}

func (c *Client) completeTask(ctx context.Context, taskID string, outcome *pb.TaskOutcome) (*pb.Task, error) {
	resp, err := unary(ctx, c, &pb.CompleteTaskRequest{TaskId: taskID, Outcome: outcome}, c.tasks.CompleteTask)
	if err != nil {
		return nil, err
	}
	return resp.GetTask(), nil
}

// GetTask returns one task.
func (c *Client) GetTask(ctx context.Context, taskID string) (*pb.Task, error) {
	resp, err := unary(ctx, c, &pb.GetTaskRequest{TaskId: taskID}, c.tasks.GetTask)
	if err != nil {
		return nil, err
	}
	return resp.GetTask(), nil
}

// ListTasks returns one page of tasks.
func (c *Client) ListTasks(ctx context.Context, req *pb.ListTasksRequest) (*pb.ListTasksResponse, error) {
	return unary(ctx, c, req, c.tasks.ListTasks)
}

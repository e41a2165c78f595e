package runjournal

import (
	"context"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// errStreamEnded stands for a watch stream that the server ended OK: a watch
// never ends by itself, so it is a server going away (or a proxy closing an
// idle stream), resumed like a transport failure.
var errStreamEnded = status.Error(codes.Unavailable, "the server ended a watch stream")

// resumer decides, after each failure of a stream meant to last, whether to
// open it again and after how long. Its attempts start over whenever the
// stream delivered an item, so a watch survives any number of disconnects
// that are not back to back.
type resumer struct {
	policy   RetryPolicy
	failures int
	since    time.Time // the first failure since the stream last delivered an item
}

func (r *resumer) progressed() { r.failures = 0 }

// errCallerStopped ends an iteration whose context the caller cancelled (or
// whose deadline passed): the loop ends as if the caller had broken out of
// it, with no error item (docs/clients.md, "One API").
var errCallerStopped = errors.New("runjournal: the caller stopped the stream")

// again waits before the next stream, or returns the error that ends the
// iteration (a refusal, spent attempts, or errCallerStopped).
func (r *resumer) again(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errCallerStopped
	}
	if errors.Is(err, io.EOF) {
		err = errStreamEnded
	}
	r.failures++
	if r.failures == 1 {
		r.since = time.Now()
	}
	wait, ok := r.policy.next(err, r.failures, r.since, rand.Float64())
	if !ok || ctx.Err() != nil {
		return FromError(err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return errCallerStopped
	case <-timer.C:
		return nil
	}
}

// end yields the error that ends an iteration, unless the caller stopped it.
func end[T any](yield func(T, error) bool, err error) {
	if !errors.Is(err, errCallerStopped) {
		var zero T
		yield(zero, err)
	}
}

// Watch follows a run: its stored records after afterSeq in seq order, one
// item with CaughtUp set (every record stored when the watch began has been
// yielded; live records follow), then each record as it is acknowledged,
// with no gap and no duplicate. It never ends by itself: stop the iteration
// or cancel ctx (either ends the loop with no error). The stream has no deadline (the client's timeout is for
// unary calls).
//
// After a transport failure (UNAVAILABLE or DEADLINE_EXCEEDED without a
// reason, or a stream the server ended) it watches again from the last seq
// yielded, within the retry policy counted since the last item; CaughtUp is
// yielded once. A refusal ends the iteration with its error, never resumed:
// *RunDeletedError also when the run is deleted while watched.
func (c *Client) Watch(ctx context.Context, runID string, afterSeq int64) iter.Seq2[*pb.WatchResponse, error] {
	return func(yield func(*pb.WatchResponse, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resume := resumer{policy: c.retry}
		last, caughtUp := afterSeq, false
		for {
			stream, err := c.journal.Watch(ctx, &pb.WatchRequest{RunId: runID, AfterSeq: last})
			for err == nil {
				var item *pb.WatchResponse
				if item, err = stream.Recv(); err != nil {
					break
				}
				resume.progressed()
				switch {
				case item.GetRecord() != nil:
					last = item.GetRecord().GetSeq()
				case item.GetCaughtUp() != nil && !caughtUp:
					caughtUp = true
				default:
					continue // a resumed stream's catch-up (told once), or a kind this client does not know
				}
				if !yield(item, nil) {
					return
				}
			}
			if err := resume.again(ctx, err); err != nil {
				end(yield, err)
				return
			}
		}
	}
}

// WatchRuns follows the listing: the summary of every run matching req's
// filters (those of ListRuns), one item with CaughtUp set, then a summary
// each time a matching run changes (the newest state; a slow reader may
// miss intermediate ones, never get a stale one), and a Left item for a run
// that stops matching or is deleted. It never ends by itself: stop the
// iteration or cancel ctx (either ends the loop with no error).
//
// After a transport failure it watches again, within the retry policy
// counted since the last item: a summary equal to the one last yielded is
// not repeated, and a run yielded before that the new stream does not send
// is yielded as Left with Deleted false (a resumed stream cannot tell a
// deleted run from one that stopped matching). CaughtUp is yielded once.
func (c *Client) WatchRuns(ctx context.Context, req *pb.WatchRunsRequest) iter.Seq2[*pb.WatchRunsResponse, error] {
	return func(yield func(*pb.WatchRunsResponse, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resume := resumer{policy: c.retry}
		shown := runsShown{runs: map[string]*pb.RunSummary{}}
		for {
			stream, err := c.journal.WatchRuns(ctx, req)
			for err == nil {
				var item *pb.WatchRunsResponse
				if item, err = stream.Recv(); err != nil {
					break
				}
				resume.progressed()
				for _, out := range shown.items(item) {
					if !yield(out, nil) {
						return
					}
				}
			}
			if err := resume.again(ctx, err); err != nil {
				end(yield, err)
				return
			}
			shown.resuming()
		}
	}
}

// runsShown is what a WatchRuns iteration has yielded, so that a resumed
// stream yields only what changed.
type runsShown struct {
	runs     map[string]*pb.RunSummary
	resent   map[string]bool // nil unless a resumed stream is before its catch-up
	caughtUp bool
}

func (s *runsShown) resuming() { s.resent = map[string]bool{} }

func (s *runsShown) items(item *pb.WatchRunsResponse) []*pb.WatchRunsResponse {
	switch {
	case item.GetRun() != nil:
		run := item.GetRun()
		if s.resent != nil {
			s.resent[run.GetRunId()] = true
		}
		if old, ok := s.runs[run.GetRunId()]; ok && proto.Equal(old, run) {
			return nil
		}
		s.runs[run.GetRunId()] = run
		return []*pb.WatchRunsResponse{item}
	case item.GetLeft() != nil:
		delete(s.runs, item.GetLeft().GetRunId())
		return []*pb.WatchRunsResponse{item}
	case item.GetCaughtUp() != nil:
		var out []*pb.WatchRunsResponse
		if s.resent != nil {
			var gone []string
			for id := range s.runs {
				if !s.resent[id] {
					gone = append(gone, id)
				}
			}
			sort.Strings(gone)
			for _, id := range gone {
				delete(s.runs, id)
				out = append(out, &pb.WatchRunsResponse{Event: &pb.WatchRunsResponse_Left{Left: &pb.RunLeft{RunId: id}}})
			}
			s.resent = nil
		}
		if !s.caughtUp {
			s.caughtUp = true
			out = append(out, item)
		}
		return out
	}
	return nil // a kind this client does not know (a newer server)
}

// ForkRun branches runID at atSeq (0: its last record) into the new run
// newRunID: its records 2..atSeq are the source's, its meta's forked_from
// names the source, the seq and the hash of the copied prefix; the source
// is unchanged. When a transport failure hid the reply of an attempt that
// created the fork, the resent request is refused RUN_EXISTS; if the new
// run's meta says it is this fork, that answer is returned instead.
func (c *Client) ForkRun(ctx context.Context, runID string, atSeq int64, newRunID string) (*pb.ForkRunResponse, error) {
	req := &pb.ForkRunRequest{RunId: runID, AtSeq: atSeq, NewRunId: newRunID}
	attempts := 0
	resp, err := unary(ctx, c, req, func(ctx context.Context, r *pb.ForkRunRequest, _ ...grpc.CallOption) (*pb.ForkRunResponse, error) {
		attempts++
		return c.journal.ForkRun(ctx, r)
	})
	var exists *RunExistsError
	if err == nil || attempts == 1 || !errors.As(err, &exists) || exists.RunID != newRunID {
		return resp, err
	}
	for item, readErr := range c.Read(ctx, newRunID, 1) {
		if readErr != nil {
			return nil, err
		}
		origin := item.GetRecord().GetMeta().GetForkedFrom()
		if origin.GetRunId() != runID || (atSeq != 0 && int64(origin.GetSeq()) != atSeq) {
			return nil, err
		}
		return &pb.ForkRunResponse{RunId: newRunID, LastSeq: int64(origin.GetSeq()), ForkedFrom: origin}, nil
	}
	return nil, err
}

// DeleteRun deletes the run if its last seq is still expectedLastSeq
// (*LastSeqMismatchError if not, and nothing is deleted). The run id is
// never used again (*RunDeletedError for every later call). Deleting a
// deleted run answers Deleted false with its last seq, so a transport retry
// is safe; after one, Deleted may be false although this call's lost first
// attempt deleted it. Erased says whether the run's bytes are gone already
// (JetStream erases them in the background after the answer; deleting again
// waits for that). With token auth on it needs the operator scope.
func (c *Client) DeleteRun(ctx context.Context, runID string, expectedLastSeq int64) (*pb.DeleteRunResponse, error) {
	return unary(ctx, c, &pb.DeleteRunRequest{RunId: runID, ExpectedLastSeq: expectedLastSeq}, c.journal.DeleteRun)
}

// DeleteTask deletes a task's request and outcome; deleted is true when this
// call deleted it (false for a task deleted already, so a retry is safe).
// The id is never used again (*TaskDeletedError); runs naming the task are
// kept. With token auth on it needs the operator scope.
func (c *Client) DeleteTask(ctx context.Context, taskID string) (deleted bool, err error) {
	resp, err := unary(ctx, c, &pb.DeleteTaskRequest{TaskId: taskID}, c.tasks.DeleteTask)
	if err != nil {
		return false, err
	}
	return resp.GetDeleted(), nil
}

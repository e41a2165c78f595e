package runjournal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// fakeWatcher plays a run with 3 stored records and live ones up to 12;
// each Watch stream breaks (UNAVAILABLE, no ErrorInfo) before the seqs in
// breaks (each once), and ends RUN_DELETED after deletedAfter when set.
type fakeWatcher struct {
	pb.UnimplementedJournalServiceServer
	mu           sync.Mutex
	breaks       map[int64]bool
	deletedAfter int64
	afterSeqs    []int64
	runsStreams  [][]*pb.WatchRunsResponse
	runsCalls    int
	forkCalls    int
	forkMeta     *pb.JournalRecord
}

const watchStored, watchLast = 3, 12

func refusal(c codes.Code, reason string, md map[string]string) error {
	st, _ := status.New(c, reason).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: md})
	return st.Err()
}

func (f *fakeWatcher) Watch(req *pb.WatchRequest, stream grpc.ServerStreamingServer[pb.WatchResponse]) error {
	f.mu.Lock()
	f.afterSeqs = append(f.afterSeqs, req.GetAfterSeq())
	f.mu.Unlock()
	head := max(req.GetAfterSeq(), watchStored)
	for seq := req.GetAfterSeq() + 1; seq <= watchLast; seq++ {
		if seq == head+1 {
			if err := stream.Send(&pb.WatchResponse{Event: &pb.WatchResponse_CaughtUp{CaughtUp: &pb.CaughtUp{HeadSeq: head}}}); err != nil {
				return err
			}
		}
		f.mu.Lock()
		broken := f.breaks[seq]
		delete(f.breaks, seq)
		f.mu.Unlock()
		if broken {
			return status.Error(codes.Unavailable, "connection reset")
		}
		item := &pb.ReadResponse{Seq: seq, Record: &pb.JournalRecord{Seq: seq}}
		if err := stream.Send(&pb.WatchResponse{Event: &pb.WatchResponse_Record{Record: item}}); err != nil {
			return err
		}
		if seq == f.deletedAfter {
			return refusal(codes.NotFound, "RUN_DELETED", map[string]string{"run_id": req.GetRunId(), "last_seq": fmt.Sprint(seq)})
		}
	}
	<-stream.Context().Done() // a watch stays open until the client cancels
	return nil
}

func (f *fakeWatcher) WatchRuns(req *pb.WatchRunsRequest, stream grpc.ServerStreamingServer[pb.WatchRunsResponse]) error {
	f.mu.Lock()
	index := f.runsCalls
	f.runsCalls++
	f.mu.Unlock()
	for _, item := range f.runsStreams[index] {
		if err := stream.Send(item); err != nil {
			return err
		}
	}
	if index+1 < len(f.runsStreams) {
		return status.Error(codes.Unavailable, "connection reset")
	}
	<-stream.Context().Done()
	return nil
}

func (f *fakeWatcher) ForkRun(ctx context.Context, req *pb.ForkRunRequest) (*pb.ForkRunResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forkCalls++
	if f.forkCalls == 1 {
		return nil, status.Error(codes.Unavailable, "reply lost")
	}
	return nil, refusal(codes.AlreadyExists, "RUN_EXISTS", map[string]string{"run_id": req.GetNewRunId()})
}

func (f *fakeWatcher) Read(req *pb.ReadRequest, stream grpc.ServerStreamingServer[pb.ReadResponse]) error {
	return stream.Send(&pb.ReadResponse{Seq: 1, Record: f.forkMeta})
}

func watcherServer(t *testing.T, f *fakeWatcher) *Client {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterJournalServiceServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	c, err := Dial(lis.Addr().String(), WithRetry(RetryPolicy{Budget: 60_000_000_000, MaxAttempts: 3, InitialBackoff: 1000, MaxBackoff: 2000, Multiplier: 2}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func shape(item *pb.WatchResponse) string {
	if item.GetCaughtUp() != nil {
		return fmt.Sprintf("caught_up@%d", item.GetCaughtUp().GetHeadSeq())
	}
	return fmt.Sprint(item.GetRecord().GetSeq())
}

// More breaks than the policy's attempts, each after progress: the watch
// resumes from the last seq every time, without a gap or a repeat.
func TestWatchResumesFromTheLastSeqAfterEveryBreak(t *testing.T) {
	f := &fakeWatcher{breaks: map[int64]bool{2: true, 5: true, 7: true, 9: true, 11: true}}
	c := watcherServer(t, f)
	var got []string
	for item, err := range c.Watch(context.Background(), "r1", 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, shape(item))
		if item.GetRecord().GetSeq() == watchLast {
			break
		}
	}
	if want := "[1 2 3 caught_up@3 4 5 6 7 8 9 10 11 12]"; fmt.Sprint(got) != want {
		t.Fatalf("items %v, want %s", got, want)
	}
	if fmt.Sprint(f.afterSeqs) != "[0 1 4 6 8 10]" {
		t.Fatalf("watched after %v", f.afterSeqs)
	}
}

func TestWatchOfARunDeletedWhileWatchedEndsWithoutResuming(t *testing.T) {
	f := &fakeWatcher{deletedAfter: 5}
	c := watcherServer(t, f)
	var last error
	n := 0
	for _, err := range c.Watch(context.Background(), "r1", 0) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	var deleted *RunDeletedError
	if !errors.As(last, &deleted) || deleted.LastSeq != 5 || deleted.RunID != "r1" {
		t.Fatalf("ended with %v", last)
	}
	if n != 6 || len(f.afterSeqs) != 1 {
		t.Fatalf("%d items, watched %v", n, f.afterSeqs)
	}
}

func runItem(id string, last int64) *pb.WatchRunsResponse {
	return &pb.WatchRunsResponse{Event: &pb.WatchRunsResponse_Run{Run: &pb.RunSummary{RunId: id, LastSeq: last}}}
}

func TestWatchRunsResumesWithoutRepeatsAndReportsRunsGoneMeanwhile(t *testing.T) {
	caught := &pb.WatchRunsResponse{Event: &pb.WatchRunsResponse_CaughtUp{CaughtUp: &pb.CaughtUp{}}}
	f := &fakeWatcher{runsStreams: [][]*pb.WatchRunsResponse{
		{runItem("a", 1), runItem("b", 1), caught, runItem("a", 2)},
		{runItem("a", 2), runItem("c", 1), caught, runItem("a", 3)},
	}}
	c := watcherServer(t, f)
	var got []string
	for item, err := range c.WatchRuns(context.Background(), &pb.WatchRunsRequest{}) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case item.GetRun() != nil:
			got = append(got, fmt.Sprintf("%s@%d", item.GetRun().GetRunId(), item.GetRun().GetLastSeq()))
		case item.GetLeft() != nil:
			got = append(got, fmt.Sprintf("left:%s:%v", item.GetLeft().GetRunId(), item.GetLeft().GetDeleted()))
		default:
			got = append(got, "caught_up")
		}
		if len(got) == 7 {
			break
		}
	}
	if want := "[a@1 b@1 caught_up a@2 c@1 left:b:false a@3]"; fmt.Sprint(got) != want {
		t.Fatalf("items %v, want %s", got, want)
	}
}

func TestForkRunResentAfterALostReplyReturnsItsOwnFork(t *testing.T) {
	origin := &pb.ForkOrigin{RunId: "r1", Seq: 4, PrefixSha256: "cd"}
	f := &fakeWatcher{forkMeta: &pb.JournalRecord{Seq: 1, Payload: &pb.JournalRecord_Meta{Meta: &pb.Meta{RunId: "r1-b", ForkedFrom: origin}}}}
	c := watcherServer(t, f)
	resp, err := c.ForkRun(context.Background(), "r1", 4, "r1-b")
	if err != nil || resp.GetLastSeq() != 4 || resp.GetForkedFrom().GetPrefixSha256() != "cd" || f.forkCalls != 2 {
		t.Fatalf("%v %v after %d calls", resp, err, f.forkCalls)
	}
	// Another source's fork under that id is RUN_EXISTS.
	f.forkCalls = 0
	_, err = c.ForkRun(context.Background(), "r2", 4, "r1-b")
	var exists *RunExistsError
	if !errors.As(err, &exists) {
		t.Fatalf("got %v", err)
	}
}

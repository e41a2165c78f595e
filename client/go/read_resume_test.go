package runjournal

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// fakeJournal serves Read from 6 records, breaking the stream with a
// transport-like UNAVAILABLE (no ErrorInfo) after every 2 records, and
// Fold failing `foldFailures` times before answering.
type fakeJournal struct {
	pb.UnimplementedJournalServiceServer
	mu           sync.Mutex
	fromSeqs     []int64
	foldCalls    int
	foldFailures int
	foldSlow     int // the first foldSlow calls take 300ms
	auth         []string
	downUntil    time.Time // until then, Read and Fold fail with downWith (an outage)
	downWith     error
	downCalls    int
}

// down reports the outage's error while it lasts, counting the calls it failed.
func (f *fakeJournal) down() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Now().Before(f.downUntil) {
		f.downCalls++
		return f.downWith
	}
	return nil
}

func (f *fakeJournal) Read(req *pb.ReadRequest, stream grpc.ServerStreamingServer[pb.ReadResponse]) error {
	if err := f.down(); err != nil {
		return err
	}
	f.mu.Lock()
	f.fromSeqs = append(f.fromSeqs, req.GetFromSeq())
	f.mu.Unlock()
	seq := max(req.GetFromSeq(), 1)
	for sent := 0; seq <= 6; seq++ {
		if sent == 2 {
			return status.Error(codes.Unavailable, "connection reset")
		}
		if err := stream.Send(&pb.ReadResponse{Seq: seq, Record: &pb.JournalRecord{Seq: seq}}); err != nil {
			return err
		}
		sent++
	}
	return nil
}

func (f *fakeJournal) Fold(ctx context.Context, req *pb.FoldRequest) (*pb.FoldResponse, error) {
	if err := f.down(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth = append(f.auth, md.Get("authorization")...)
	f.foldCalls++
	if f.foldCalls <= f.foldSlow {
		f.mu.Unlock()
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
		f.mu.Lock()
		return nil, ctx.Err()
	}
	if f.foldCalls <= f.foldFailures {
		return nil, status.Error(codes.Unavailable, "down")
	}
	return &pb.FoldResponse{State: &pb.RunState{RunId: req.GetRunId(), LastSeq: 6}}, nil
}

func fakeServer(t *testing.T, f *fakeJournal) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterJournalServiceServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// dialFake dials f's server (fakeServer) with opts; the client is closed when the test ends.
func dialFake(t *testing.T, f *fakeJournal, opts ...Option) *Client {
	t.Helper()
	c, err := Dial(fakeServer(t, f), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var quick = RetryPolicy{Budget: time.Minute, MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Multiplier: 2}

func TestReadResumesAfterTransportFailure(t *testing.T) {
	f := &fakeJournal{}
	c := dialFake(t, f, WithRetry(quick))
	var seqs []int64
	for item, err := range c.Read(context.Background(), "r", 0) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, item.GetSeq())
	}
	if fmt.Sprint(seqs) != "[1 2 3 4 5 6]" {
		t.Fatalf("records %v", seqs)
	}
	if fmt.Sprint(f.fromSeqs) != "[0 3 5]" {
		t.Fatalf("reopened at %v", f.fromSeqs)
	}
	// Stopping the iteration early is fine.
	n := 0
	for range c.Read(context.Background(), "r", 4) {
		n++
		break
	}
	if n != 1 {
		t.Fatal(n)
	}
}

func TestUnaryRetryAndBearerToken(t *testing.T) {
	f := &fakeJournal{foldFailures: 2}
	c := dialFake(t, f, WithRetry(quick), WithToken("s3cret"))
	st, err := c.Fold(context.Background(), "r", 0)
	if err != nil || st.GetLastSeq() != 6 || f.foldCalls != 3 {
		t.Fatalf("%v %v after %d calls", st, err, f.foldCalls)
	}
	if len(f.auth) != 3 || f.auth[0] != "Bearer s3cret" {
		t.Fatalf("authorization %v", f.auth)
	}
	f.foldCalls, f.foldFailures = 0, 10
	_, err = c.Fold(context.Background(), "r", 0)
	if !Retryable(err) || f.foldCalls != 4 {
		t.Fatalf("%v after %d calls", err, f.foldCalls)
	}
}

// Each attempt gets the client's timeout; an attempt that runs out is a
// transport failure and is resent.
func TestPerAttemptDeadlineIsRetried(t *testing.T) {
	f := &fakeJournal{foldSlow: 1}
	c := dialFake(t, f, WithRetry(quick), WithTimeout(50*time.Millisecond))
	st, err := c.Fold(context.Background(), "r", 0)
	if err != nil || st.GetLastSeq() != 6 || f.foldCalls != 2 {
		t.Fatalf("%v %v after %d calls", st, err, f.foldCalls)
	}
	// A deadline on the caller's context bounds every attempt.
	f.foldCalls, f.foldSlow = 0, 100
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Fold(ctx, "r", 0)
	if status.Code(err) != codes.DeadlineExceeded || time.Since(start) > time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
}

// Package runjournal is a thin Go client of the runjournal journal server.
//
// It is a layer over the generated stubs in gen/runjournal/v1: a Client with
// dial options (plaintext or TLS, a bearer token, a per-attempt deadline),
// record builders, a Run handle that carries the claim token and the next
// seq, retries of transport failures only (the same request is resent: safe,
// because the server verifies duplicates), one error type per server reason
// with its metadata parsed into typed fields, a Read iterator that resumes
// after a transport failure, and fingerprint hashing.
package runjournal

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	pb "runjournal.dev/client/go/gen/runjournal/v1"
)

// Option configures Dial.
type Option func(*options)

type options struct {
	tlsConfig *tls.Config
	token     string
	timeout   time.Duration
	retry     RetryPolicy
	extra     []grpc.DialOption
}

// WithTLS dials with TLS (nil: the system roots). The default is plaintext.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) {
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		o.tlsConfig = cfg
	}
}

// WithToken sends `authorization: Bearer <token>` with every call.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// DefaultTimeout is the deadline of each attempt of a unary call, the same
// in the three clients (docs/clients.md, "One API"): long enough for a
// durable write under load on either backend, short enough that a retry
// after a lost connection still happens while the caller waits.
const DefaultTimeout = 10 * time.Second

// WithTimeout sets the deadline of each attempt of a unary call (default
// DefaultTimeout; 0 for none). A deadline on the caller's context bounds all attempts.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithRetry sets the retry policy (default DefaultRetryPolicy).
func WithRetry(p RetryPolicy) Option { return func(o *options) { o.retry = p } }

// WithDialOptions adds grpc dial options.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.extra = append(o.extra, opts...) }
}

// Client talks to one runjournal server. It is safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	journal pb.JournalServiceClient
	tasks   pb.TaskServiceClient
	timeout time.Duration
	retry   RetryPolicy
}

type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false so a token also works over plaintext to
// a local server; use WithTLS across a network.
func (b bearer) RequireTransportSecurity() bool { return false }

// Dial connects to address ("host:port"). The connection is made lazily.
func Dial(address string, opts ...Option) (*Client, error) {
	o := options{timeout: DefaultTimeout, retry: DefaultRetryPolicy}
	for _, opt := range opts {
		opt(&o)
	}
	dial := []grpc.DialOption{}
	if o.tlsConfig != nil {
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(o.tlsConfig)))
	} else {
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if o.token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{token: o.token}))
	}
	dial = append(dial, o.extra...)
	conn, err := grpc.NewClient(address, dial...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, journal: pb.NewJournalServiceClient(conn), tasks: pb.NewTaskServiceClient(conn), timeout: o.timeout, retry: o.retry}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Journal is the generated JournalService stub on this connection (token
// included, no retries, raw status errors: convert them with FromError).
func (c *Client) Journal() pb.JournalServiceClient { return c.journal }

// Tasks is the generated TaskService stub on this connection.
func (c *Client) Tasks() pb.TaskServiceClient { return c.tasks }

// unary runs one unary call with the retry policy, each attempt under the
// client's timeout.
func unary[Req any, Resp any](ctx context.Context, c *Client, req Req, call func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	var resp Resp
	err := c.retry.do(ctx, func(ctx context.Context) error {
		if c.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
		r, err := call(ctx, req)
		if err == nil {
			resp = r
		}
		return err
	})
	return resp, err
}

// Append appends one record (record.Seq is its position) with claimToken.
func (c *Client) Append(ctx context.Context, runID string, claimToken int64, record *pb.JournalRecord) (*pb.AppendResponse, error) {
	return unary(ctx, c, &pb.AppendRequest{RunId: runID, ClaimToken: claimToken, Record: record}, c.journal.Append)
}

// AppendBatch appends consecutive records, all or nothing.
func (c *Client) AppendBatch(ctx context.Context, runID string, claimToken int64, records []*pb.JournalRecord) (*pb.AppendBatchResponse, error) {
	return unary(ctx, c, &pb.AppendBatchRequest{RunId: runID, ClaimToken: claimToken, Records: records}, c.journal.AppendBatch)
}

// ClaimRaw sends a Claim request as is (Run's Claim is the usual way). A
// resent Claim writes a new claim record: Claim is retried like the others
// because a lost first claim is superseded by the second.
func (c *Client) ClaimRaw(ctx context.Context, req *pb.ClaimRequest) (*pb.ClaimResponse, error) {
	return unary(ctx, c, req, c.journal.Claim)
}

// Fold returns the folded state now (asOfSeq 0) or as of a seq.
func (c *Client) Fold(ctx context.Context, runID string, asOfSeq int64) (*pb.RunState, error) {
	resp, err := unary(ctx, c, &pb.FoldRequest{RunId: runID, AsOfSeq: asOfSeq}, c.journal.Fold)
	if err != nil {
		return nil, err
	}
	return resp.GetState(), nil
}

// FoldOptions are Fold's optional arguments, as Python's and TypeScript's keyword options.
type FoldOptions struct {
	AsOfSeq          int64 // fold as of this seq; 0 = now
	ConversationFrom int32 // skip the conversation's first messages (their count stays in the state)
	Uncompacted      bool  // the whole conversation, as if no compaction had happened
}

// FoldWith returns the folded state with options (see FoldOptions).
func (c *Client) FoldWith(ctx context.Context, runID string, o FoldOptions) (*pb.RunState, error) {
	req := &pb.FoldRequest{RunId: runID, AsOfSeq: o.AsOfSeq, ConversationFrom: o.ConversationFrom, Uncompacted: o.Uncompacted}
	resp, err := unary(ctx, c, req, c.journal.Fold)
	if err != nil {
		return nil, err
	}
	return resp.GetState(), nil
}

// FoldRaw sends a Fold request as is.
func (c *Client) FoldRaw(ctx context.Context, req *pb.FoldRequest) (*pb.FoldResponse, error) {
	return unary(ctx, c, req, c.journal.Fold)
}

// Answer answers a deferred call with a remote tool_result; returns its seq.
func (c *Client) Answer(ctx context.Context, runID, toolUseID string, content []*pb.ContentBlock, isError bool) (int64, error) {
	resp, err := unary(ctx, c, &pb.AnswerRequest{RunId: runID, ToolUseId: toolUseID, Content: content, IsError: isError}, c.journal.Answer)
	if err != nil {
		return 0, err
	}
	return resp.GetSeq(), nil
}

// Approve records an operator's decision on a pending call; returns its seq.
func (c *Client) Approve(ctx context.Context, runID, toolUseID string, decision pb.Decision, approver, reason string) (int64, error) {
	resp, err := unary(ctx, c, &pb.ApproveRequest{RunId: runID, ToolUseId: toolUseID, Decision: decision, Approver: approver, Reason: reason}, c.journal.Approve)
	if err != nil {
		return 0, err
	}
	return resp.GetSeq(), nil
}

// ListRuns returns one page of runs.
func (c *Client) ListRuns(ctx context.Context, req *pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
	return unary(ctx, c, req, c.journal.ListRuns)
}

// Inbox iterates over every run that waits for a person, across pages.
func (c *Client) Inbox(ctx context.Context, labels map[string]string) iter.Seq2[*pb.RunSummary, error] {
	return func(yield func(*pb.RunSummary, error) bool) {
		token := ""
		for {
			page, err := c.ListRuns(ctx, &pb.ListRunsRequest{WaitingForPerson: true, Labels: labels, PageToken: token})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, s := range page.GetRuns() {
				if !yield(s, nil) {
					return
				}
			}
			if token = page.GetNextPageToken(); token == "" {
				return
			}
		}
	}
}

// Read iterates over a run's stored records from fromSeq (0 or 1: from the
// start). After a transport failure it reopens the stream at the last seq
// received + 1, so no record is repeated or skipped; the retry policy bounds
// the reopenings (its budget counted from the first failure since the last
// record received). Any other error
// ends the iteration with that error. Cancelling ctx (or its deadline
// passing) ends the loop with no error, like breaking out of it: check
// ctx.Err() to tell such a stop from the end of the run.
func (c *Client) Read(ctx context.Context, runID string, fromSeq int64) iter.Seq2[*pb.ReadResponse, error] {
	return func(yield func(*pb.ReadResponse, error) bool) {
		next := fromSeq
		failures := 0
		var since time.Time // the first failure since the last record received
		for {
			stopped, err := c.readOnce(ctx, runID, &next, &failures, yield)
			if stopped || errors.Is(err, io.EOF) {
				return
			}
			if ctx.Err() != nil {
				return // the caller stopped it (docs/clients.md, "One API")
			}
			failures++
			if failures == 1 {
				since = time.Now()
			}
			wait, ok := c.retry.next(err, failures, since, rand.Float64())
			if !ok {
				yield(nil, FromError(err))
				return
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
	}
}

// readOnce is one attempt of Read, its whole stream bounded by the client's
// timeout (as in Python and TypeScript): stopped when the caller broke out
// of the loop, else the error that ended the stream (io.EOF at its end).
func (c *Client) readOnce(ctx context.Context, runID string, next *int64, failures *int, yield func(*pb.ReadResponse, error) bool) (stopped bool, err error) {
	var cancel context.CancelFunc
	if c.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel() // ends the stream when the caller stops early
	stream, err := c.journal.Read(ctx, &pb.ReadRequest{RunId: runID, FromSeq: *next})
	for err == nil {
		var item *pb.ReadResponse
		if item, err = stream.Recv(); err == nil {
			*failures = 0
			*next = item.GetSeq() + 1
			if !yield(item, nil) {
				return true, nil
			}
		}
	}
	return false, err
}

package runjournal

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy is capped exponential backoff with jitter over a bounded number
// of attempts. Transport failures (see Retryable) and STORAGE_UNAVAILABLE are
// retried (see resent), and the very same request is resent. Whether the first attempt was stored is
// unknown, so each call is safe to resend: Append and AppendBatch name their
// seqs, and the server acknowledges a resent record as a duplicate only when
// the stored one is byte-identical; SubmitTask accepts the same request again,
// and DeleteRun, DeleteTask and reads change nothing when repeated; ForkRun,
// Answer, Approve and CompleteTask settle a resend's refusal that names their
// own first write as the success it is; a resent Claim writes a second claim
// record whose token is the run's latest (the first is spent unused).
//
// Retry n (1 for the first) waits a random time in [cap/2, cap] where
// cap = min(MaxBackoff, InitialBackoff * Multiplier^(n-1)).
type RetryPolicy struct {
	MaxAttempts    int // attempts in total, the first included; 1 disables retries
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
}

// DefaultRetryPolicy matches the Python client's.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second, Multiplier: 2}

// NoRetry sends every request exactly once.
var NoRetry = RetryPolicy{MaxAttempts: 1}

// Backoff is the wait before retry number n (1 for the first retry); r in
// [0,1) picks the point in [cap/2, cap].
func (p RetryPolicy) Backoff(n int, r float64) time.Duration {
	mult := p.Multiplier
	if mult < 1 {
		mult = 1
	}
	capped := math.Min(float64(p.MaxBackoff), float64(p.InitialBackoff)*math.Pow(mult, float64(n-1)))
	return time.Duration(capped/2 + r*capped/2)
}

// do runs call until it succeeds, fails with an error that is not
// retryable, or the attempts are spent; the returned error is converted by
// FromError.
func (p RetryPolicy) do(ctx context.Context, call func(context.Context) error) error {
	attempts := p.MaxAttempts
	if attempts < 1 {
		attempts = 1
	}
	for made := 1; ; made++ {
		err := call(ctx)
		if err == nil {
			return nil
		}
		if !resent(err) || made >= attempts || ctx.Err() != nil {
			return FromError(err)
		}
		timer := time.NewTimer(p.Backoff(made, rand.Float64()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return FromError(err)
		case <-timer.C:
		}
	}
}

// resentReasons are the answers resent like a transport failure.
// STORAGE_UNAVAILABLE is given only when the store acknowledged nothing
// ("nothing was acknowledged, retry the same request": a NATS leader change,
// a hung or cut-off NATS node), which is a transport failure with less doubt,
// so the same resend is safe for every call; a worker whose call would have
// gone through a moment later gets its answer instead of an error. Every
// other reason (RUN_LOCKED included) is an answer the caller decides on.
var resentReasons = map[string]bool{"STORAGE_UNAVAILABLE": true}

// resent reports whether a call that failed with err is sent again: a
// transport failure (Retryable), or a reason in resentReasons.
func resent(err error) bool {
	return Retryable(err) || resentReasons[ReasonOf(FromError(err))]
}

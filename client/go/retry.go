package runjournal

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy is capped exponential backoff with jitter over a bounded number
// of attempts. Only transport failures are retried (see Retryable), and the
// very same request is resent. Whether the first attempt was stored is
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
		if !Retryable(err) || made >= attempts || ctx.Err() != nil {
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

package runjournal

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy is capped exponential backoff with jitter for as long as a time
// budget lasts. Transport failures (see Retryable) and STORAGE_UNAVAILABLE are
// retried (see resent), and the very same request is resent. Whether the first attempt was stored is
// unknown, so each call is safe to resend: Append and AppendBatch name their
// seqs, and the server acknowledges a resent record as a duplicate only when
// the stored one is byte-identical; SubmitTask accepts the same request again,
// and DeleteRun, DeleteTask and reads change nothing when repeated; ForkRun,
// Answer, Approve and CompleteTask settle a resend's refusal that names their
// own first write as the success it is; a resent Claim writes a second claim
// record whose token is the run's latest (the first is spent unused).
//
// Resends continue while they would start within Budget of the call's first
// failure (for a Read or Watch stream: its first failure since it last
// delivered an item), so the budget, not a count, decides how long a call
// rides out an outage: 20 s covers a JetStream leader change (about 6 s, up
// to 10 s for a leader cut off) and a hung NATS node. Each attempt gets the
// call's full deadline (WithTimeout), so a call lasts at most Budget plus two
// deadlines; a deadline on the caller's context bounds them all. MaxAttempts
// optionally caps the count as well.
//
// Retry n (1 for the first) waits a random time in [cap/2, cap] where
// cap = min(MaxBackoff, InitialBackoff * Multiplier^(n-1)).
type RetryPolicy struct {
	Budget         time.Duration // how long after the first failure a resend may still start; 0 disables retries
	MaxAttempts    int           // attempts in total, the first included (1 disables retries); 0: the budget alone decides
	InitialBackoff time.Duration
	MaxBackoff     time.Duration // short, so that a recovered server is noticed within a second
	Multiplier     float64
}

// DefaultRetryPolicy matches the Python and TypeScript clients' (docs/clients.md).
var DefaultRetryPolicy = RetryPolicy{Budget: 20 * time.Second, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2}

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

// next is the wait before resending after attempt number made failed with
// err, the first failure having come at start; ok is false when the call
// is over (err is not resent, the count is spent, or the resend would start
// after the budget).
func (p RetryPolicy) next(err error, made int, start time.Time, r float64) (wait time.Duration, ok bool) {
	if !resent(err) || (p.MaxAttempts > 0 && made >= p.MaxAttempts) {
		return 0, false
	}
	wait = p.Backoff(made, r)
	if time.Since(start)+wait > p.Budget {
		return 0, false
	}
	return wait, true
}

// do runs call until it succeeds, fails with an error that is not
// retryable, or the budget is spent; the returned error is converted by
// FromError.
func (p RetryPolicy) do(ctx context.Context, call func(context.Context) error) error {
	var start time.Time // the first failure
	for made := 1; ; made++ {
		err := call(ctx)
		if err == nil {
			return nil
		}
		if made == 1 {
			start = time.Now()
		}
		wait, ok := p.next(err, made, start, rand.Float64())
		if !ok || ctx.Err() != nil {
			return FromError(err)
		}
		timer := time.NewTimer(wait)
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

package runjournal

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// outage is longer than five attempts' backoff (at most 1.5 s, the policy
// before issue 23) and shorter than the default budget (20 s).
const outage = 3 * time.Second

func storageUnavailable() error {
	return withInfo(codes.Unavailable, "STORAGE_UNAVAILABLE", map[string]string{"run_id": "r"})
}

func TestDefaultPolicyRidesThroughSecondsOfStorageUnavailable(t *testing.T) {
	// A JetStream leader change answers STORAGE_UNAVAILABLE for seconds; a worker's call is only slow.
	f := &fakeJournal{downUntil: time.Now().Add(outage), downWith: storageUnavailable()}
	c := dialFake(t, f)
	st, err := c.Fold(context.Background(), "r", 0)
	if err != nil || st.GetLastSeq() != 6 {
		t.Fatalf("Fold through an outage: %v %v", st, err)
	}
	if f.downCalls <= 5 {
		t.Fatalf("only %d failed attempts: the outage was not ridden through by resends", f.downCalls)
	}
}

func TestReadResumesThroughSecondsOfStorageUnavailable(t *testing.T) {
	f := &fakeJournal{downUntil: time.Now().Add(outage), downWith: storageUnavailable()}
	c := dialFake(t, f)
	var seqs []int64
	for item, err := range c.Read(context.Background(), "r", 1) {
		if err != nil {
			t.Fatalf("Read through an outage: %v after %v", err, seqs)
		}
		seqs = append(seqs, item.GetSeq())
	}
	if len(seqs) != 6 || seqs[5] != 6 {
		t.Fatalf("seqs %v", seqs)
	}
}

func TestABudgetShorterThanTheOutageSurfacesStorageUnavailable(t *testing.T) {
	f := &fakeJournal{downUntil: time.Now().Add(time.Minute), downWith: storageUnavailable()}
	short := RetryPolicy{Budget: 300 * time.Millisecond, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Multiplier: 2}
	c := dialFake(t, f, WithRetry(short))
	_, err := c.Fold(context.Background(), "r", 0)
	var su *StorageUnavailableError
	if !errors.As(err, &su) || f.downCalls < 2 {
		t.Fatalf("want StorageUnavailableError after resends, got %v after %d calls", err, f.downCalls)
	}
}

func TestAnAnswerIsNeverResentByTheDefaultPolicy(t *testing.T) {
	for _, answer := range []error{
		withInfo(codes.FailedPrecondition, "SEQ_GAP", map[string]string{"run_id": "r"}),
		withInfo(codes.Unavailable, "RUN_LOCKED", map[string]string{"run_id": "r"}),
	} {
		f := &fakeJournal{downUntil: time.Now().Add(time.Minute), downWith: answer}
		c := dialFake(t, f)
		_, err := c.Fold(context.Background(), "r", 0)
		if err == nil || f.downCalls != 1 {
			t.Fatalf("%v: %d calls, %v", answer, f.downCalls, err)
		}
	}
}

func TestTheBudgetNotACountEndsTheResends(t *testing.T) {
	p := DefaultRetryPolicy
	err := storageUnavailable()
	start := time.Now()
	for made := 1; made <= 50; made++ { // fifty quick failures: all resent
		if _, ok := p.next(err, made, start, 0.5); !ok {
			t.Fatalf("attempt %d not resent within the budget", made)
		}
	}
	if _, ok := p.next(err, 51, start.Add(-18500*time.Millisecond), 0); !ok {
		t.Fatal("a resend starting before 20 s was refused")
	}
	if _, ok := p.next(err, 52, start.Add(-20*time.Second), 0); ok {
		t.Fatal("a resend starting after 20 s was made")
	}
	capped := RetryPolicy{Budget: time.Minute, MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Multiplier: 1}
	if _, ok := capped.next(err, 3, start, 0); ok {
		t.Fatal("MaxAttempts did not cap the count")
	}
}

func TestDefaultPolicyCoversALeaderChangeAndNoticesRecoveryWithinASecond(t *testing.T) {
	want := RetryPolicy{Budget: 20 * time.Second, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2}
	if DefaultRetryPolicy != want {
		t.Fatalf("DefaultRetryPolicy %+v", DefaultRetryPolicy)
	}
}

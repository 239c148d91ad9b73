package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

type review3AfterErr struct{ d time.Duration }

func (e review3AfterErr) Error() string             { return "throttled" }
func (e review3AfterErr) RetryAfter() time.Duration { return e.d }

// TestReview3DelayFuncShorterRetryAfterEndsRetries: MaxRetryAfter exists so
// that a caller is not held longer than it allows ("a wait the backoff itself
// might make is always honoured"). With a DelayFunc that asks for 30s, the
// call waits 30s and retries when the error says nothing; but when the error
// asks for less, 20s, which changes nothing to the wait, the retries end at
// once with MaxRetryAfterExceeded. An error that asks for a shorter wait
// than the one the Policy makes anyway must not end the call.
func TestReview3DelayFuncShorterRetryAfterEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{
			MaxAttempts: 2,
			DelayFunc:   func(int, error) time.Duration { return 30 * time.Second },
		}
		run := func(first error) (int, error) {
			calls := 0
			err := p.Execute(context.Background(), func(context.Context) error {
				calls++
				if calls == 1 {
					return first
				}
				return nil
			})
			return calls, err
		}
		// Without a floor: waits the DelayFunc's 30s, and the retry succeeds.
		calls, err := run(errors.New("plain"))
		if err != nil || calls != 2 {
			t.Fatalf("plain error: calls %d, err %v; want 2, nil", calls, err)
		}
		// A floor of 20s, below the 30s the call waits anyway.
		calls, err = run(review3AfterErr{20 * time.Second})
		if err != nil || calls != 2 {
			t.Fatalf("error asking for 20s, under the DelayFunc's 30s: calls %d, err %v; want 2, nil", calls, err)
		}
	})
}

package retry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// s3SlowFirst is a service whose first request hangs until its ctx ends,
// and whose later ones answer 200 at once.
type s3SlowFirst struct{ calls atomic.Int64 }

func (s *s3SlowFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.calls.Add(1) == 1 {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
}

// The README's stack with hedging: retry.Transport with a Hedge, then
// ratelimit.Transport counted by a Tally, then breaker.Transport, then
// adaptive.Transport. The first request hangs; the hedge copy wins, and the
// first is cancelled. The loser must count as no failure in the breaker nor
// in the adaptive limiter, hold no slot of it, and each request that went
// through the rate limit must be counted once.
func TestReviewS3_HedgeLoserThroughTheStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &s3SlowFirst{}
		lim := adaptive.New(adaptive.Config{InitialLimit: 4, MinLimit: 1, MaxLimit: 4})
		br := &breaker.Transport{Base: &adaptive.Transport{Base: svc, Limiter: lim},
			Settings: breaker.Settings{FailureThreshold: 1}}
		var tally ratelimit.Tally
		rl := &ratelimit.Transport{Base: br, Limiter: tally.Wrap(ratelimit.NewTokenBucket(100, 10))}
		rt := &retry.Transport{Base: rl, Policy: retry.Policy{MaxAttempts: 1},
			Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, Budget: retry.NewBudget(1, 10)}}
		req, _ := http.NewRequest("GET", "http://svc.example/x", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip = %v, want the hedge copy's 200", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		synctest.Wait() // the loser's goroutine finishes

		if n := svc.calls.Load(); n != 2 {
			t.Fatalf("service saw %d requests, want 2 (first, and one hedge copy)", n)
		}
		b := br.Breaker("svc.example")
		if b == nil {
			t.Fatal("no breaker for svc.example")
		}
		if c := b.Counts(); c.Failures != 0 || c.Successes != 1 || b.State() != breaker.Closed {
			t.Errorf("breaker Counts = %+v, State %v; want 1 success, no failure (the loser was cancelled), closed", c, b.State())
		}
		if n := lim.InFlight(); n != 0 {
			t.Errorf("adaptive InFlight = %d once both requests ended, want 0", n)
		}
		if c := tally.Counts(); c.Waited != 2 || c.WaitFailed != 0 {
			t.Errorf("Tally = %+v, want Waited 2 (each request counted once), WaitFailed 0", c)
		}
	})
}

// retry.Do around breaker.Do, as the resource-manager example does: once
// the breaker opens, its refusal (an *OpenError with a RetryAfter) must end
// the retries within MaxAttempts, not be waited out for ever; and a retry
// whose ctx ends during a half-open trial gives the trial slot back, so the
// breaker can close again.
func TestReviewS3_RetryOverBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New(breaker.Settings{FailureThreshold: 2, OpenTimeout: time.Second, HalfOpenMaxCalls: 1})
		fail := errors.New("down")
		var calls atomic.Int64
		p := retry.Policy{MaxAttempts: 5, NoDelay: true}
		_, err := retry.Do(context.Background(), p, func(ctx context.Context) (int, error) {
			return breaker.Do(ctx, b, func(context.Context) (int, error) { calls.Add(1); return 0, fail })
		})
		if err == nil {
			t.Fatal("retry.Do over a failing breaker = nil")
		}
		// The refusal's RetryAfter (the OpenTimeout) is waited for, and a
		// trial made then: at most MaxAttempts calls in all.
		if n := calls.Load(); n < 2 || n > int64(p.MaxAttempts) {
			t.Errorf("the dependency was called %d times, want 2 to %d", n, p.MaxAttempts)
		}
		if b.State() != breaker.Open {
			t.Fatalf("State = %v, want Open", b.State())
		}

		// Half-open: a trial that the caller's ctx cancels during a retry.
		for i := 0; b.State() != breaker.HalfOpen; i++ {
			if i == 1000 {
				t.Fatal("the breaker never became half-open")
			}
			time.Sleep(time.Second)
		}
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		go func() {
			_, _ = retry.Do(ctx, p, func(ctx context.Context) (int, error) {
				return breaker.Do(ctx, b, func(ctx context.Context) (int, error) {
					close(started)
					<-ctx.Done()
					return 0, ctx.Err()
				})
			})
		}()
		<-started
		cancel()
		synctest.Wait()
		if _, err := breaker.Do(context.Background(), b, func(context.Context) (int, error) { return 1, nil }); err != nil {
			t.Fatalf("a trial after the cancelled one = %v, want it admitted (the cancelled trial gave its slot back)", err)
		}
		if b.State() != breaker.Closed {
			t.Errorf("State after a successful trial = %v, want Closed", b.State())
		}
	})
}

// A hedge copy that waits for a token of ratelimit.Transport when the first
// attempt answers is cancelled: it takes no token (the next one is there for
// the next request when it comes), and the Tally counts it once, as a wait
// that failed.
func TestReviewS3_HedgeCopyWaitingForATokenTakesNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		svc := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			time.Sleep(100 * time.Millisecond) // virtual: past the hedge delay
			return &http.Response{StatusCode: 200, Status: "200 OK", Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
		})
		var tally ratelimit.Tally
		bucket := ratelimit.NewTokenBucket(1, 1)
		rl := &ratelimit.Transport{Base: svc, Limiter: tally.Wrap(bucket)}
		rt := &retry.Transport{Base: rl, Policy: retry.Policy{MaxAttempts: 1},
			Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, Budget: retry.NewBudget(1, 10)}}
		req, _ := http.NewRequest("GET", "http://svc.example/x", nil)
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("service saw %d requests, want 1 (the copy waited for a token)", n)
		}
		if c := tally.Counts(); c.Waited != 1 || c.WaitFailed != 1 {
			t.Errorf("Tally = %+v, want Waited 1, WaitFailed 1 (the copy, cancelled while it waited)", c)
		}
		time.Sleep(time.Second - time.Since(start))
		if !bucket.Allow() {
			t.Error("the token that came a second after the first was taken: the cancelled copy kept it")
		}
	})
}

package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// tallyTransports returns, for a Tally, Transports whose limiter it counts:
// global, per host through a Keyed, and global through a Keyed's handle.
func tallyTransports(tally *Tally, rate float64, burst int, base http.RoundTripper) map[string]*Transport {
	return map[string]*Transport{
		"global": {Base: base, Limiter: tally.Wrap(NewTokenBucket(rate, burst))},
		"perHost": {Base: base, PerHost: NewKeyed(func(string) Taker {
			return tally.Wrap(NewTokenBucket(rate, burst))
		}, KeyedConfig{})},
		"handle": {Base: base, Limiter: NewKeyed(func(string) Taker {
			return tally.Wrap(NewTokenBucket(rate, burst))
		}, KeyedConfig{}).Limiter("all")},
	}
}

// TestReviewTallyCancelledWhileWaiting: a request whose ctx ends while it
// waits is one failed wait, its body closed once, nothing else counted.
func TestReviewTallyCancelledWhileWaiting(t *testing.T) {
	for _, name := range []string{"global", "perHost", "handle"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var tally Tally
				base := newSentLog()
				tr := tallyTransports(&tally, 1, 1, base)[name]
				_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				type result struct {
					body *trackedBody
					err  error
				}
				done := make(chan result)
				go func() {
					_, body, err := roundTrip(t, tr, ctx, "http://a.test/")
					done <- result{body, err}
				}()
				synctest.Wait()
				cancel()
				r := <-done
				require.Equal(t, context.Canceled, r.err)
				require.EqualValues(t, 1, r.body.closed.Load())
				require.Equal(t, TallyCounts{Waited: 1, WaitFailed: 1}, tally.Counts())
				// The event it did not take is the next request's, a second on.
				_, _, err = roundTrip(t, tr, context.Background(), "http://a.test/")
				require.NoError(t, err)
				require.Equal(t, []time.Duration{0, time.Second}, base.sent())
				require.Equal(t, TallyCounts{Waited: 2, WaitFailed: 1}, tally.Counts())
			})
		})
	}
}

// TestReviewTallyExceedsBurstAndFree: a request that costs more than the
// burst is one failed wait; a free one (Cost 0) is no decision at all.
func TestReviewTallyExceedsBurstAndFree(t *testing.T) {
	for _, name := range []string{"global", "perHost", "handle"} {
		t.Run(name, func(t *testing.T) {
			var tally Tally
			tr := tallyTransports(&tally, 1, 2, newSentLog())[name]
			tr.Cost = func(r *http.Request) int { return len(r.URL.Path) - 1 }
			_, body, err := roundTrip(t, tr, context.Background(), "http://a.test/xxx")
			require.ErrorIs(t, err, ErrExceedsBurst)
			require.EqualValues(t, 1, body.closed.Load())
			require.Equal(t, TallyCounts{WaitFailed: 1}, tally.Counts())
			_, _, err = roundTrip(t, tr, context.Background(), "http://a.test/")
			require.NoError(t, err)
			require.Equal(t, TallyCounts{WaitFailed: 1}, tally.Counts(), "a free request is no decision")
		})
	}
}

// TestReviewTallyNestedTransports: a global Transport around a per-host one,
// each with a Tally: a request refused for its deadline by the inner limiter
// is one wait of each, the outer's taken, the inner's failed.
func TestReviewTallyNestedTransports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var outer, inner Tally
		base := newSentLog()
		in := &Transport{Base: base, PerHost: NewKeyed(func(string) Taker {
			return inner.Wrap(NewTokenBucket(1, 1))
		}, KeyedConfig{})}
		out := &Transport{Base: in, Limiter: outer.Wrap(NewTokenBucket(100, 10))}
		_, _, err := roundTrip(t, out, context.Background(), "http://a.test/")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, body, err := roundTrip(t, out, ctx, "http://a.test/")
		var de *DeadlineError
		require.ErrorAs(t, err, &de)
		require.Equal(t, "a.test", de.Key)
		require.EqualValues(t, 1, body.closed.Load())
		require.Equal(t, TallyCounts{Waited: 2}, outer.Counts())
		require.Equal(t, TallyCounts{Waited: 1, WaitFailed: 1}, inner.Counts())
	})
}

// TestReviewTallyManyRequestsCountedOnce: requests to a few hosts at once,
// some with deadlines too close, some cancelled while they wait: each that
// reached the limiter is counted once, as a wait, and no AllowN or Take
// shows as a decision of its own.
func TestReviewTallyManyRequestsCountedOnce(t *testing.T) {
	for _, name := range []string{"global", "perHost", "handle"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var tally Tally
				tr := tallyTransports(&tally, 10, 3, newSentLog())[name]
				var wg sync.WaitGroup
				var mu sync.Mutex
				ok, failed := 0, 0
				for i := range 60 {
					wg.Go(func() {
						ctx := context.Background()
						var cancel context.CancelFunc = func() {}
						switch i % 3 {
						case 1:
							ctx, cancel = context.WithTimeout(ctx, time.Duration(i)*10*time.Millisecond)
						case 2:
							ctx, cancel = context.WithCancel(ctx)
							time.AfterFunc(time.Duration(i)*time.Millisecond, cancel)
						}
						defer cancel()
						_, body, err := roundTrip(t, tr, ctx, fmt.Sprintf("http://h%d.test/", i%4))
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							ok++
							return
						}
						failed++
						if body.closed.Load() != 1 {
							t.Errorf("request %d failed with %v, its body closed %d times", i, err, body.closed.Load())
						}
						if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("request %d: %v", i, err)
						}
					})
				}
				wg.Wait()
				require.Equal(t, TallyCounts{Waited: int64(ok), WaitFailed: int64(failed)}, tally.Counts())
			})
		})
	}
}

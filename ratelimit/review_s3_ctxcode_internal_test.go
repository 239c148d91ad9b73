package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// runMultiCase makes the wait of kind (a Keyed's, a Combined's, a
// Transport's request) wait for an event under a testutil.ProbeCtx, ends its
// ctx, and checks that a new wait is served when the next event comes. It
// returns the ctx's calls; locks seen held are reported if report is set.
func runMultiCase(t *testing.T, kind string, panicAt int32, report bool) int32 {
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		var wait func(context.Context) error
		var locks []testutil.TryLocker
		switch kind {
		case "Keyed":
			b := NewTokenBucket(1, 1)
			k := NewKeyed(func(string) *TokenBucket { return b }, KeyedConfig{})
			wait = func(ctx context.Context) error { return k.WaitN(ctx, "a", 1) }
			for i := range k.shards {
				locks = append(locks, &k.shards[i].mu)
			}
			locks = append(locks, &b.w.q.Mutex)
		case "Combined":
			b1, b2 := NewTokenBucket(1, 1), NewTokenBucket(1, 1)
			c := All(b1, b2)
			wait = c.Wait
			locks = []testutil.TryLocker{&c.w.q.Mutex, &b1.w.q.Mutex, &b2.w.q.Mutex}
		default: // Transport
			b := NewTokenBucket(1, 1)
			tr := &Transport{Limiter: b, Base: okTransport{}}
			wait = func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://x.example/", nil)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				return err
			}
			locks = []testutil.TryLocker{&b.w.q.Mutex}
		}
		if err := wait(bg); err != nil {
			t.Fatal(err)
		}
		probed := locks
		if !report {
			probed = nil // the locks are looked at below, once the wait has returned
		}
		calls = testutil.ProbeCall(t, probed, panicAt, func(ctx context.Context) { _ = wait(ctx) })
		for i, l := range locks {
			if !l.TryLock() {
				t.Fatalf("internal lock %d left held", i)
			}
			l.Unlock()
		}
		if err := wait(bg); err != nil {
			t.Fatal(err)
		}
	})
	return calls
}

type okTransport struct{}

func (okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
}

// The waits that ratelimit's probe test missed: a Keyed's (through its
// shard and its key's limiter), a Combined's (its queue and its members'),
// and a Transport's request. No method of the caller's ctx may run under an
// internal lock, and one that panics must leave the limiter whole.
func TestReviewS3_KeyedCombinedTransportCallerCtx(t *testing.T) {
	for _, kind := range []string{"Keyed", "Combined", "Transport"} {
		t.Run(kind, func(t *testing.T) {
			if runMultiCase(t, kind, 0, true) == 0 {
				t.Fatal("the wait never looked at its ctx: the probe tested nothing")
			}
		})
		t.Run(kind+"/panics", func(t *testing.T) {
			n := runMultiCase(t, kind, 0, false)
			for at := int32(1); at <= n; at++ {
				t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
					runMultiCase(t, kind, at, false)
				})
			}
		})
	}
}

package adaptive_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/group"
)

// TestReviewSeams9_TransportGroupCancelIsIgnored pins a defect of
// adaptive.Transport under a group (or any ctx cancelled with a cause): the
// group's first failure cancels its ctx with that failure as the cause, and
// net/http fails each request in flight with context.Cause(ctx), not
// context.Canceled. Transport finished their Tickets as overload failures,
// so the limit fell (AIMD halves it for each) though the service had
// answered nothing: the caller gave up. A request whose ctx was cancelled,
// whatever its cause, is finished as by Ignore, and leaves the limit alone.
func TestReviewSeams9_TransportGroupCancelIsIgnored(t *testing.T) {
	const slow = 20 // a window of the estimator: 20 samples
	arrived := make(chan struct{}, slow)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // answers only when the client gives up
	}))
	defer srv.Close()
	conns := &http.Transport{}
	defer conns.CloseIdleConnections()
	// Each reading of the clock is 10 ms after the last, so that the
	// window of the 20 requests' ends lasts its 100 ms and closes.
	var now atomic.Int64
	l := adaptive.New(adaptive.Config{
		Algorithm: adaptive.AIMD, InitialLimit: 32, MinLimit: 1, MaxLimit: 32,
		Clock: func() time.Duration { return time.Duration(now.Add(int64(10 * time.Millisecond))) },
	})
	client := &http.Client{Transport: &adaptive.Transport{Base: conns, Limiter: l}}

	errBad := errors.New("a task failed")
	g, _ := group.New(context.Background(), group.Options{})
	for range slow {
		_ = g.Go(func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return nil
		})
	}
	_ = g.Go(func(context.Context) error {
		for range slow {
			<-arrived // every request is in flight
		}
		return errBad
	})
	if err := g.Wait(); !errors.Is(err, errBad) {
		t.Fatalf("Wait() = %v, want %v", err, errBad)
	}
	if got := l.InFlight(); got != 0 {
		t.Fatalf("InFlight() = %d after every request returned, want 0", got)
	}
	if got := l.Limit(); got != 32 {
		t.Fatalf("Limit() = %d after the group gave up on its requests, want 32: a cancelled request is no overload", got)
	}
}

package retry_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

// hedgeBody counts its Closes, and notes a read after one.
type hedgeBody struct {
	io.Reader
	closes   atomic.Int32
	lateRead atomic.Bool
}

func (b *hedgeBody) Read(p []byte) (int, error) {
	if b.closes.Load() > 0 {
		b.lateRead.Store(true)
	}
	return b.Reader.Read(p)
}

func (b *hedgeBody) Close() error { b.closes.Add(1); return nil }

// TestHedgedBodiesClosedOnce: with hedges a nanosecond apart, the copies of
// an attempt race to send: the first copy to start sends the request's own
// body, the others bodies of their own (GetBody), and the attempt ends with
// the first response, perhaps before the copy with the request's body has
// reached Base. Every body is closed exactly once, by Base or, unsent, by
// whoever holds it, and none is closed under a copy that goes on to send it.
// (Coverage of the rule, as much as a hammer can: the order in which the
// race was lost, a copy taking the request's body just as its attempt ended,
// cannot be forced from outside.)
func TestHedgedBodiesClosedOnce(t *testing.T) {
	rounds := testutil.HammerRounds(2000)
	hedgedRounds := 0
	for range rounds {
		var mu sync.Mutex
		var bodies []*hedgeBody
		newBody := func() *hedgeBody {
			b := &hedgeBody{Reader: strings.NewReader("x")}
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			return b
		}
		base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			time.Sleep(20 * time.Microsecond) // long enough for copies to start
			_, _ = io.Copy(io.Discard, r.Body)
			_ = r.Body.Close()
			return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: http.NoBody, Request: r}, nil
		})
		tr := &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: time.Nanosecond, MaxHedges: 2, Budget: retry.NewBudget(1, 1e9)}}
		first := newBody()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, "http://a.test/", first)
		if err != nil {
			t.Fatal(err)
		}
		req.GetBody = func() (io.ReadCloser, error) { return newBody(), nil }
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		// The copies that lost may still be on their way: each ends
		// with its body closed, by Base or unsent.
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			open := 0
			for _, b := range bodies {
				if b.closes.Load() == 0 {
					open++
				}
			}
			mu.Unlock()
			if open == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d bodies never closed", open)
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		if len(bodies) > 1 {
			hedgedRounds++
		}
		for i, b := range bodies {
			if n := b.closes.Load(); n != 1 {
				t.Errorf("body %d closed %d times, want 1", i, n)
			}
			if b.lateRead.Load() {
				t.Errorf("body %d read after it was closed", i)
			}
		}
		mu.Unlock()
		if t.Failed() {
			return
		}
	}
	t.Logf("%d of %d rounds sent copies", hedgedRounds, rounds)
}

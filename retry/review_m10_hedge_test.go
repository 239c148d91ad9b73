package retry_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// TestReviewM10HedgedThreeFailuresCloseEachBodyOnce: the first attempt and
// two copies all answer a status Transport retries, finishing in every
// order (and variants where the last to finish succeeds, or the second
// fails with an error no retry cures): each body is closed exactly once, the
// returned one by the caller.
func TestReviewM10HedgedThreeFailuresCloseEachBodyOnce(t *testing.T) {
	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, order := range orders {
		for _, mode := range []string{"all503", "lastOK", "midPermanent"} {
			t.Run(fmt.Sprint(order, mode), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					// Attempt i starts at i*10ms; it ends at the rank
					// order gives it: 100ms + rank*10ms.
					rank := map[int]int{}
					for r, i := range order {
						rank[i] = r
					}
					var mu sync.Mutex
					var bodies []*seams9Body
					var calls atomic.Int32
					base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
						i := int(calls.Add(1)) - 1
						select {
						case <-time.After(time.Duration(100+rank[i]*10-i*10) * time.Millisecond):
						case <-r.Context().Done():
							return nil, r.Context().Err() // a copy the call no longer needs
						}
						if mode == "midPermanent" && rank[i] == 1 {
							// An error no retry can cure: it ends the call.
							return nil, ratelimit.ErrExceedsBurst
						}
						b := &seams9Body{Reader: strings.NewReader("x")}
						mu.Lock()
						bodies = append(bodies, b)
						mu.Unlock()
						code := 503
						if mode == "lastOK" && rank[i] == 2 {
							code = 200
						}
						return &http.Response{StatusCode: code, Status: fmt.Sprint(code), Header: http.Header{}, Body: b, Request: r}, nil
					})
					rt := &retry.Transport{Base: base, Policy: retry.Policy{MaxAttempts: 1},
						Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, MaxHedges: 2, Budget: retry.NewBudget(1, 10)}}
					req, _ := http.NewRequest(http.MethodGet, "http://svc.example/x", nil)
					resp, err := rt.RoundTrip(req)
					if mode == "midPermanent" {
						if !errors.Is(err, ratelimit.ErrExceedsBurst) {
							t.Fatalf("RoundTrip = %v, %v; want the Permanent error", resp, err)
						}
					} else if err != nil {
						t.Fatalf("RoundTrip = %v", err)
					} else {
						_ = resp.Body.Close()
					}
					synctest.Wait()
					if n := calls.Load(); n != 3 && mode != "midPermanent" {
						t.Fatalf("%d attempts, want 3", n)
					}
					mu.Lock()
					defer mu.Unlock()
					for i, b := range bodies {
						if n := b.closed.Load(); n != 1 {
							t.Errorf("body %d closed %d times, want 1", i, n)
						}
					}
				})
			})
		}
	}
}

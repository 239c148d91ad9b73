package retry_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

// TestReviewM10HedgedThreeFailuresCloseEachBodyOnce: the first attempt and
// two copies all answer a status Transport retries, finishing in every
// order (and one variant where the last to finish succeeds): each body is
// closed exactly once, the returned one by the caller.
func TestReviewM10HedgedThreeFailuresCloseEachBodyOnce(t *testing.T) {
	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, order := range orders {
		for _, lastOK := range []bool{false, true} {
			t.Run(fmt.Sprint(order, lastOK), func(t *testing.T) {
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
						time.Sleep(time.Duration(100+rank[i]*10-i*10) * time.Millisecond)
						b := &seams9Body{Reader: strings.NewReader("x")}
						mu.Lock()
						bodies = append(bodies, b)
						mu.Unlock()
						code := 503
						if lastOK && rank[i] == 2 {
							code = 200
						}
						return &http.Response{StatusCode: code, Status: fmt.Sprint(code), Header: http.Header{}, Body: b, Request: r}, nil
					})
					rt := &retry.Transport{Base: base, Policy: retry.Policy{MaxAttempts: 1},
						Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, MaxHedges: 2, Budget: retry.NewBudget(1, 10)}}
					req, _ := http.NewRequest(http.MethodGet, "http://svc.example/x", nil)
					resp, err := rt.RoundTrip(req)
					if err != nil {
						t.Fatalf("RoundTrip = %v", err)
					}
					_ = resp.Body.Close()
					synctest.Wait()
					if n := calls.Load(); n != 3 {
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

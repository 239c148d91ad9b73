package retry_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

// seams9Body is a response body that counts its Closes.
type seams9Body struct {
	io.Reader
	closed atomic.Int32
}

func (b *seams9Body) Close() error { b.closed.Add(1); return nil }

// TestReviewSeams9_HedgedFailuresCloseEachBodyOnce pins a defect of
// retry.Transport with a Hedge: when the first attempt answered a status
// that Transport retries (a 503) while a copy was in flight, and the copy
// then failed too, the first attempt's response was discarded twice: once
// when the copy's failure took its place as the last failure, and again
// when the call was settled. Its body was closed twice (and read after its
// Close); a Base whose bodies go back to a pool on Close would hand one out
// twice. Each response that is not returned is discarded once.
func TestReviewSeams9_HedgedFailuresCloseEachBodyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var bodies []*seams9Body
		var calls atomic.Int32
		base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			// The first attempt answers at 20ms, the copy (sent at
			// 10ms) at 30ms: both 503.
			calls.Add(1)
			time.Sleep(20 * time.Millisecond)
			b := &seams9Body{Reader: strings.NewReader("down")}
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{}, Body: b, Request: r}, nil
		})
		rt := &retry.Transport{Base: base, Policy: retry.Policy{MaxAttempts: 1},
			Hedge: &retry.Hedge{Delay: 10 * time.Millisecond, Budget: retry.NewBudget(1, 10)}}
		req, _ := http.NewRequest(http.MethodGet, "http://svc.example/x", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("RoundTrip = %v, %v; want the last 503", resp, err)
		}
		_ = resp.Body.Close()
		synctest.Wait()
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d attempts, want 2 (the first and one copy)", n)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, b := range bodies {
			if n := b.closed.Load(); n != 1 {
				t.Errorf("body of attempt %d closed %d times, want 1", i, n)
			}
		}
	})
}

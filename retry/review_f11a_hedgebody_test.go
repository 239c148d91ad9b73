package retry_test

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

// f11aBody is a request body that counts its Closes.
type f11aBody struct {
	io.Reader
	closed atomic.Int32
}

func (b *f11aBody) Close() error { b.closed.Add(1); return nil }

// TestReviewF11a_HedgeCopyCtxPanicClosesItsBody: e36a326 made retry.Transport
// close the body of an attempt that the request's ctx panicked before base
// had it; a hedged copy's body, which the copy takes from GetBody, was left
// out. When the ctx panics as the copy's AttemptTimeout is made from it (the
// caller's code, in the copy's goroutine), the panic reaches the caller and
// the copy's body, never sent, is never closed: http.RoundTripper requires
// every body it was given to be closed, and GetBody's is the Transport's.
// Right: the copy closes the body it took until base has it, as the
// attempt does.
func TestReviewF11a_HedgeCopyCtxPanicClosesItsBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := &testutil.ArmedCtx{Context: t.Context()}
		first := &f11aBody{Reader: http.NoBody}
		var mu sync.Mutex
		var copies []*f11aBody
		var reached atomic.Int32
		base := rtFuncF11a(func(r *http.Request) (*http.Response, error) {
			if reached.Add(1) == 1 {
				ctx.Arm() // the next look at the caller's ctx, the copy's, panics
				<-r.Context().Done()
			}
			if r.Body != nil {
				_ = r.Body.Close()
			}
			return nil, errors.New("gave up")
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://a.test/", first)
		if err != nil {
			t.Fatal(err)
		}
		req.GetBody = func() (io.ReadCloser, error) {
			b := &f11aBody{Reader: http.NoBody}
			mu.Lock()
			copies = append(copies, b)
			mu.Unlock()
			return b, nil
		}
		tr := &retry.Transport{
			Base:   base,
			Policy: retry.Policy{MaxAttempts: 1, AttemptTimeout: time.Hour},
			Hedge:  &retry.Hedge{Delay: time.Second, Budget: retry.NewBudget(0.1, 10)},
		}
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			if resp, err := tr.RoundTrip(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		synctest.Wait()
		if panicked != testutil.ErrCtxPanic {
			t.Fatalf("RoundTrip panicked with %v, want the ctx's panic (the test's premise)", panicked)
		}
		if n := first.closed.Load(); n != 1 {
			t.Errorf("the first attempt's body, sent, was closed %d times, want 1", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(copies) == 0 {
			t.Fatal("no copy was sent (the test's premise)")
		}
		for i, b := range copies {
			if n := b.closed.Load(); n != 1 {
				t.Errorf("copy %d's body from GetBody, never sent, was closed %d times, want 1", i, n)
			}
		}
	})
}

type rtFuncF11a func(*http.Request) (*http.Response, error)

func (f rtFuncF11a) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

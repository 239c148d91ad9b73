package breaker

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Regression: a time-based window shorter, in nanoseconds, than its number
// of buckets was made of buckets of 1ns each, one per WindowBuckets: a
// WindowDuration of 1ns with the default 10 buckets looked at the calls of
// the last 10ns, and with 1<<16 buckets at those of the last 65µs, where
// Settings promises "the calls of the last WindowDuration". The failures
// below, long out of such a window, still counted, and opened the breaker.
// Right: the window holds no call older than WindowDuration (fewer
// buckets, of 1ns each, when it is that short).
func TestReviewPB11_TinyTimeWindowHoldsWindowDuration(t *testing.T) {
	for _, buckets := range []int{0, 1 << 16} {
		for _, d := range []time.Duration{1, 3} {
			synctest.Test(t, func(t *testing.T) {
				b := New(Settings{
					FailureRateThreshold: 50, MinimumCalls: 2,
					WindowDuration: d, WindowBuckets: buckets,
				})
				ctx := t.Context()
				require.Error(t, b.Execute(ctx, fail))
				time.Sleep(d + 1) // that failure has left the window
				require.Equal(t, 0, b.Metrics().WindowCalls,
					"WindowDuration %v, WindowBuckets %d: a call older than the window is in it", d, buckets)
				require.Error(t, b.Execute(ctx, fail))
				require.Equal(t, Closed, b.State(),
					"WindowDuration %v, WindowBuckets %d: opened on a failure out of the window", d, buckets)
			})
		}
	}
}

// Regression: Transport.RoundTrip looked at its request's ctx (ctx.Err, the
// caller's code) before it set up the close of the body of a request not
// sent, so a ctx whose Err panics there reached the caller with the body
// left open, where a RoundTripper must close the body of every request it
// does not send; a panic at the ctx's next look, inside the breaker, did
// close it. Right: the body is closed, once, whichever look panics, and the
// host's breaker counts nothing.
func TestReviewPB11_TransportCtxPanicClosesBody(t *testing.T) {
	base := rtFunc(func(*http.Request) (*http.Response, error) { panic("sent") })
	for at := int32(1); at <= 2; at++ {
		tr := &Transport{Base: base}
		body := &trackedBody{Reader: strings.NewReader("x")}
		ctx := &testutil.OnceCtx{Context: context.Background(), PanicAt: at}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://a.test/", body)
		require.NoError(t, err)
		func() {
			defer func() {
				require.Equal(t, testutil.ErrCtxPanic, recover(), "panic at the ctx's call %d", at)
			}()
			_, _ = tr.RoundTrip(req)
		}()
		require.Equal(t, int32(1), body.closed.Load(),
			"the ctx panicked at its call %d: times the body of a request not sent was closed", at)
		if b := tr.Breaker("a.test"); b != nil {
			require.Equal(t, Counts{}, b.Counts())
		}
	}
}

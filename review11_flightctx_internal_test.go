package ctxsync

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReview11_FlightCtxErrNilAfterDoneClosed pins a breach of the
// context.Context contract by the ctx that a Flight's fn (and a Lazy's init)
// runs under: "If Done is not yet closed, Err returns nil. If Done is closed,
// Err returns a non-nil error". flightCtx.cancel closes the Done channel and
// only then sets the flag that Err reads, so a goroutine that sees Done
// closed and asks Err in between gets nil. An fn written the usual way,
// `<-ctx.Done(); return zero, ctx.Err()`, then returns a nil error: a Flight
// hands its callers a zero value as a success, and a Lazy keeps it for good.
// (Seen first as "context: internal error: missing cancel error", the
// context package's panic, from a context.WithCancel made under a Lazy's
// init.) Right: cancel sets the flag before it closes the channel, and Err
// that finds the flag set returns an error only once the channel is closed
// (as the context package's cancelCtx.Err does), so each implies the other.
func TestReview11_FlightCtxErrNilAfterDoneClosed(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors: the reader runs while cancel does")
	}
	rounds := testutil.HammerRounds(20_000)
	var nilErr atomic.Int64
	for range rounds {
		c := &flightCtx{parent: context.Background()}
		d := c.Done()
		ready := make(chan struct{})
		seen := make(chan struct{})
		go func() {
			defer close(seen)
			close(ready)
			// Spins, to ask Err the moment Done is seen closed.
			closed := func() bool {
				select {
				case <-d:
					return true
				default:
					return false
				}
			}
			for !closed() {
			}
			if c.Err() == nil {
				nilErr.Add(1)
			}
		}()
		<-ready
		c.cancel()
		<-seen
	}
	if n := nilErr.Load(); n != 0 {
		t.Fatalf("in %d of %d rounds, Err() was nil with Done closed", n, rounds)
	}
}

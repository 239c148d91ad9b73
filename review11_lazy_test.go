package ctxsync_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// TestReview11_LazyInitGetsItsOwnLazy pins a hang of a Lazy whose init calls
// Get on the same Lazy with its ctx (directly, or through another Lazy's init,
// which carries its values). That Get joined the run in flight, which is its
// own, and counted as one of its Gets, so init's ctx never ended: init waited
// for itself for good, its goroutine leaked, and every later Get joined the
// stuck run and failed only when its own ctx ended. The Lazy was dead for the
// life of the process, and no doc says so (sync.Once at least documents its
// deadlock). Right: a Get under its own init's ctx panics at once with a
// message naming the package, so the run fails as a panicking init does: the
// outer Get panics with a *PanicError, nothing is kept, and the Lazy still
// works.
func TestReview11_LazyInitGetsItsOwnLazy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l *ctxsync.Lazy[int]
		var other *ctxsync.Lazy[int]
		releases := make(chan context.CancelFunc, 4)
		reenter, viaOther := true, false
		l = ctxsync.NewLazy(func(ctx context.Context) (int, error) {
			if !reenter {
				return 7, nil
			}
			// A ctx of init's own that the test can end, so that the hang
			// on main ends with the test.
			ctx, release := context.WithCancel(ctx)
			releases <- release
			if viaOther {
				return other.Get(ctx)
			}
			return l.Get(ctx)
		})
		other = ctxsync.NewLazy(func(ctx context.Context) (int, error) { return l.Get(ctx) })

		for _, via := range []bool{false, true} {
			viaOther = via
			res := make(chan any, 1)
			go func() {
				var out any
				defer func() {
					if p := recover(); p != nil {
						out = p
					}
					res <- out
				}()
				_, out = l.Get(t.Context())
			}()
			synctest.Wait()
			if len(res) == 0 {
				(<-releases)()
				<-res
				t.Fatalf("viaOther=%v: a Get from init under init's ctx waits for itself for good", via)
			}
			got := <-res
			p, ok := got.(*ctxsync.PanicError)
			require.True(t, ok, "viaOther=%v: the outer Get panics with a *PanicError, got %v", via, got)
			v := p.Value
			for inner, ok := v.(*ctxsync.PanicError); ok; inner, ok = v.(*ctxsync.PanicError) {
				v = inner.Value // through other's init
			}
			msg, _ := v.(string)
			require.True(t, strings.HasPrefix(msg, "ctxsync: "), "viaOther=%v: panic value %v names the package", via, v)
			(<-releases)()
		}
		reenter = false
		v, err := l.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, 7, v, "nothing was kept: the next Get runs init again")
	})
}

// TestReview11_LazyCtxKeptFromInitGetsLater: the mark that tells a Get from
// init apart lasts as long as the run: a ctx kept from a failed run (without
// its cancellation) may Get the Lazy later, which runs init again.
func TestReview11_LazyCtxKeptFromInitGetsLater(t *testing.T) {
	var kept context.Context
	runs := 0
	l := ctxsync.NewLazy(func(ctx context.Context) (int, error) {
		if runs++; runs == 1 {
			kept = context.WithoutCancel(ctx)
			return 0, errors.New("first run fails")
		}
		return 9, nil
	})
	_, err := l.Get(context.Background())
	require.EqualError(t, err, "first run fails")
	v, err := l.Get(kept)
	require.NoError(t, err)
	require.Equal(t, 9, v)
}

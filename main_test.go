package ctxsync_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// expired returns a context whose deadline has already passed.
func expired(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	t.Cleanup(cancel)
	return ctx
}

// randomCtx returns a context that, at random, never ends, ends after a short
// random delay, or is cancelled after one. It is what the hammer tests wait with.
func randomCtx(r *rand.Rand) (context.Context, context.CancelFunc) {
	switch r.IntN(3) {
	case 0:
		return context.WithCancel(context.Background())
	case 1:
		return context.WithTimeout(context.Background(), time.Duration(r.IntN(200))*time.Microsecond)
	default:
		ctx, cancel := context.WithCancel(context.Background())
		t := time.AfterFunc(time.Duration(r.IntN(200))*time.Microsecond, cancel)
		return ctx, func() { t.Stop(); cancel() }
	}
}

// endingCtx is randomCtx without the context that never ends, for waits that
// nothing else is sure to release.
func endingCtx(r *rand.Rand) (context.Context, context.CancelFunc) {
	delay := time.Duration(r.IntN(200)) * time.Microsecond
	if r.IntN(2) == 0 {
		return context.WithTimeout(context.Background(), delay)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := time.AfterFunc(delay, cancel)
	return ctx, func() { t.Stop(); cancel() }
}

// tryOrWait is how a hammer test's goroutine takes what it needs: one time in
// eight with try, as a caller that cannot wait would, and otherwise with wait.
// A failed try reads as context.Canceled.
func tryOrWait(ctx context.Context, r *rand.Rand, try func() bool, wait func(context.Context) error) error {
	if r.IntN(8) != 0 {
		return wait(ctx)
	}
	if !try() {
		return context.Canceled
	}
	return nil
}

// doneCtxCases are the ways a context can already be over.
func doneCtxCases(t *testing.T) []struct {
	name string
	ctx  context.Context
	want error
} {
	return []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"canceled", testutil.Cancelled(), context.Canceled},
		{"deadline", expired(t), context.DeadlineExceeded},
	}
}

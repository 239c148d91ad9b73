package ctxsync_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// TestFlightCtxAsParent: fn's ctx is a parent like any other. A ctx derived
// from it in fn ends when the call's ctx is cancelled (every caller left);
// context.AfterFunc runs once then, and its stop works before; Cause reports
// nothing while the call goes on, and context.Canceled after, never the
// cause the first caller was cancelled with.
func TestFlightCtxAsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		type seen struct {
			ctx, child context.Context
			after      chan struct{}
			stopped    bool
		}
		got := make(chan seen, 1)
		fn := func(ctx context.Context) (int, error) {
			child, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			after := make(chan struct{})
			context.AfterFunc(ctx, func() { close(after) })
			stop := context.AfterFunc(ctx, func() { panic("stopped AfterFunc ran") })
			got <- seen{ctx, child, after, stop()}
			<-ctx.Done()
			return 0, ctx.Err()
		}
		ctxA, cancelA := context.WithCancelCause(t.Context())
		errA := errors.New("caller A's cause")
		ctxB, cancelB := context.WithCancel(t.Context())
		a := goDo(ctxA, &f, "k", fn)
		s := <-got
		require.True(t, s.stopped, "stop before the end reports that it stopped f")
		b := goDo(ctxB, &f, "k", fn)
		synctest.Wait()

		cancelA(errA)
		require.Equal(t, context.Canceled, (<-a).err)
		require.NoError(t, s.ctx.Err())
		require.NoError(t, context.Cause(s.ctx), "the first caller's cancellation is not the call's")
		require.NoError(t, s.child.Err())

		cancelB()
		require.Equal(t, context.Canceled, (<-b).err)
		<-s.after
		require.Equal(t, context.Canceled, s.child.Err(), "a ctx derived in fn ends with the call's")
		require.Equal(t, context.Canceled, context.Cause(s.ctx), "the first caller's cause is not the call's")
		require.Equal(t, context.Canceled, context.Cause(s.child))
		synctest.Wait() // fn returns
	})
}

// TestFlightCtxAfterEnd: once the call's ctx is cancelled (fn returned), a
// ctx derived from it is done at once, AfterFunc runs f in a goroutine of
// its own and its stop reports false, and Done, asked for the first time, is
// closed.
func TestFlightCtxAfterEnd(t *testing.T) {
	var f ctxsync.Flight[string, int]
	var kept context.Context
	_, err, _ := f.Do(context.Background(), "k", func(ctx context.Context) (int, error) {
		kept = ctx
		return 1, nil
	})
	require.NoError(t, err)
	require.Equal(t, context.Canceled, kept.Err(), "fn returned: its ctx is cancelled")
	select {
	case <-kept.Done():
	default:
		t.Fatal("Done of a cancelled ctx is not closed")
	}
	child, cancel := context.WithCancel(kept)
	defer cancel()
	require.Equal(t, context.Canceled, child.Err())
	ran := make(chan struct{})
	stop := context.AfterFunc(kept, func() { close(ran) })
	<-ran
	require.False(t, stop())
	_, has := kept.Deadline()
	require.False(t, has)
}

// flightIntKey is a user's key of type *int, the type of the context
// package's own key that fn's ctx hides (see flightCtx.Value).
var flightIntKey = new(int)

// TestFlightCtxValueIntKey: a value under a key of type *int reaches fn like
// any other.
func TestFlightCtxValueIntKey(t *testing.T) {
	var f ctxsync.Flight[string, int]
	ctx := context.WithValue(context.Background(), flightIntKey, "mine")
	_, _, _ = f.Do(ctx, "k", func(ctx context.Context) (int, error) {
		require.Equal(t, "mine", ctx.Value(flightIntKey))
		require.Nil(t, ctx.Value(new(int)))
		return 0, nil
	})
}

// TestFlightCtxString: fn's ctx prints as a name, not as its fields (which
// other goroutines change: printing them would race).
func TestFlightCtxString(t *testing.T) {
	var f ctxsync.Flight[string, int]
	_, _, _ = f.Do(context.Background(), "k", func(ctx context.Context) (int, error) {
		require.Equal(t, "ctxsync.Flight call context", fmt.Sprint(ctx))
		return 0, nil
	})
}

// TestFlightCtxChildNoGoroutine: a ctx derived from fn's ctx costs no
// goroutine of the context package's (which it would if fn's ctx had no
// AfterFunc method): with many derived ctxs alive, the goroutine count stays
// where it was.
func TestFlightCtxChildNoGoroutine(t *testing.T) {
	var f ctxsync.Flight[string, int]
	_, _, _ = f.Do(context.Background(), "k", func(ctx context.Context) (int, error) {
		before := runtime.NumGoroutine()
		var cancels []context.CancelFunc
		for range 100 {
			_, cancel := context.WithCancel(ctx)
			cancels = append(cancels, cancel)
		}
		require.Less(t, runtime.NumGoroutine(), before+50, "a goroutine per derived ctx")
		for _, c := range cancels {
			c()
		}
		return 0, nil
	})
}

// TestFlightCtxKeptAfterCall: fn may keep its ctx after it returns. The
// next call (which reuses the finished call's struct, see flightCall) does
// not bring that ctx back to life, nor change its values.
func TestFlightCtxKeptAfterCall(t *testing.T) {
	var f ctxsync.Flight[string, int]
	var kept context.Context
	ctx1 := context.WithValue(context.Background(), flightCtxKey{}, "one")
	_, _, _ = f.Do(ctx1, "k", func(ctx context.Context) (int, error) {
		kept = ctx
		return 1, nil
	})
	ctx2 := context.WithValue(context.Background(), flightCtxKey{}, "two")
	for range 3 {
		v, err, _ := f.Do(ctx2, "k", func(ctx context.Context) (int, error) {
			require.NotSame(t, kept, ctx)
			require.NoError(t, ctx.Err())
			require.Equal(t, "two", ctx.Value(flightCtxKey{}))
			require.Equal(t, context.Canceled, kept.Err(), "a finished call's ctx stays cancelled")
			require.Equal(t, "one", kept.Value(flightCtxKey{}))
			return 2, nil
		})
		require.NoError(t, err)
		require.Equal(t, 2, v)
	}
}

// lagErrCtx is a caller's ctx whose Done channel the test closes while its
// Err still returns nil (a Context may close its channel a moment before it
// stores its error).
type lagErrCtx struct {
	context.Context
	done chan struct{}
}

func (c lagErrCtx) Done() <-chan struct{} { return c.done }
func (lagErrCtx) Err() error              { return nil }

// TestFlightNotGrantedLagErr: a caller whose Done channel closed before the
// result came is left out of it (finish saw the channel closed); its Do must
// fail with an error even though Err says nil at that moment, never return
// a zero result as fn's.
func TestFlightNotGrantedLagErr(t *testing.T) {
	var f ctxsync.Flight[string, int]
	ctx := lagErrCtx{context.Background(), make(chan struct{})}
	v, err, shared := f.Do(ctx, "k", func(context.Context) (int, error) {
		close(ctx.done) // before fn returns: the caller gave up first
		return 1, nil
	})
	require.Equal(t, context.Canceled, err, "Do = (%d, %v, %v)", v, err, shared)
	require.Equal(t, 0, f.Len())
}

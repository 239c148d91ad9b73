package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestCancelledAcquireNotHandedResource pins the rule that a waiter whose ctx
// has ended is never granted anything: an Acquire waiting for a full pool
// whose ctx is cancelled, and only then given a released resource, fails, and
// the resource goes back to the pool.
func TestCancelledAcquireNotHandedResource(t *testing.T) {
	for round := range testutil.HammerRounds(1000) {
		p := mustNew(t, Config[int]{
			New:     func(context.Context) (int, error) { return 1, nil },
			MaxSize: 1,
		})
		held, err := p.Acquire(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		freed := make(chan struct{})
		go func() {
			defer close(freed)
			for range round % 3 {
				runtime.Gosched()
			}
			cancel()
			held.Release()
		}()
		r, err := p.Acquire(ctx)
		<-freed
		require.Equal(t, context.Canceled, err, "round %d: handed a resource released after its ctx ended", round)
		require.Nil(t, r)
		r, ok := p.TryAcquire()
		require.True(t, ok, "round %d: the resource is idle again", round)
		r.Release()
		require.NoError(t, p.Close(context.Background()))
	}
}

// TestCtxEndsDuringPassingCheckNotHandedResource: a caller whose ctx ends
// while its resource's health check runs, a check that passes anyway (it does
// not look at ctx), is not handed the resource: Acquire returns ctx.Err() and
// the healthy resource goes back to the pool.
func TestCtxEndsDuringPassingCheckNotHandedResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cancel context.CancelFunc
		p := mustNew(t, Config[int]{
			New: func(context.Context) (int, error) { return 1, nil },
			HealthCheck: func(context.Context, int) error {
				if cancel != nil {
					cancel() // the caller gives up while its resource is checked
				}
				return nil
			},
			HealthCheckSkip: NoHealthCheckSkip,
			MaxSize:         1,
		})
		// The pool's goroutine sweeps once as it starts: let it, so that
		// its check does not take the resource from the Acquire below.
		synctest.Wait()
		r, err := p.Acquire(context.Background())
		require.NoError(t, err)
		r.Release()
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		r, err = p.Acquire(ctx)
		require.Error(t, ctx.Err(), "ctx ended during the check")
		require.Equal(t, context.Canceled, err, "a resource handed to an Acquire whose ctx had ended")
		require.Nil(t, r)
		s := p.Stats()
		require.Equal(t, 1, s.Idle, "the checked resource is back in the pool: %+v", s)
		require.Equal(t, int64(1), s.AcquireCount, "%+v", s)
		require.Equal(t, int64(1), s.CanceledAcquires, "%+v", s)
		require.NoError(t, p.Close(context.Background()))
	})
}

// TestCtxEndsDuringPauseCounted: an Acquire that finds the pool full pauses
// before it queues (waitq.Pause); one whose ctx ends then is counted in
// CanceledAcquires like one whose ctx ends in the queue.
//
// The cancel must land in the pause, which the scheduler decides: the
// Acquire may go on into the queue before the test's goroutine runs again
// (one round in 15 under the race detector on a loaded machine). Such a
// round is counted all the same, and checked, and the test tries again
// until a round has ended in the pause.
func TestCtxEndsDuringPauseCounted(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for round := 1; ; round++ {
		var queued bool
		synctest.Test(t, func(t *testing.T) {
			p := mustNew(t, Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
			r, err := p.Acquire(t.Context())
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { _, err := p.Acquire(ctx); errc <- err }()
			// It counts itself empty-handed, then pauses (yielding the one
			// P): cancel once it has counted, not before it has even
			// looked. (The first Acquire counted once already, and waited
			// for New.)
			for p.Stats().EmptyAcquires < 2 {
				runtime.Gosched()
			}
			cancel()
			require.Equal(t, context.Canceled, <-errc)
			s := p.Stats()
			require.Equal(t, int64(2), s.EmptyAcquires, "%+v", s)
			require.Equal(t, int64(1), s.CanceledAcquires, "an Acquire that ended with its ctx, uncounted: %+v", s)
			// The first Acquire waited for New; the second, if it
			// queued, once more.
			require.Contains(t, []int64{1, 2}, s.WaitCount, "%+v", s)
			queued = s.WaitCount == 2
			r.Release()
			require.NoError(t, p.Close(t.Context()))
		})
		if !queued || t.Failed() {
			return
		}
		if round == 200 {
			t.Fatal("in 200 rounds, the cancel never landed in the pause before the queue")
		}
	}
}

// endingCtx is a context that ends by itself once its Err has been asked a
// given number of times: an Acquire's ctx that ends at a random point of the
// call, outside a bubble and with no timer, and never before the call's
// first look at it, so that every Acquire that returns its error is one
// CanceledAcquires counts. A waiter parked in the queue does not ask, and
// waits for a grant.
type endingCtx struct {
	context.Context
	mu   sync.Mutex
	left int
	err  error
	done chan struct{}
}

func newEndingCtx(asks int) *endingCtx {
	return &endingCtx{Context: context.Background(), left: asks, done: make(chan struct{})}
}

func (c *endingCtx) Done() <-chan struct{} { return c.done }

// endingCtxKey makes an endingCtx give itself as a value: a HealthCheck, which
// has a ctx derived from it, may make it end.
type endingCtxKey struct{}

func (c *endingCtx) Value(key any) any {
	if key == (endingCtxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// ended tells whether c has ended, without asking Err.
func (c *endingCtx) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

func (c *endingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		if c.left == 0 {
			c.err = context.Canceled
			close(c.done)
		}
		c.left--
	}
	return c.err
}

// TestHammerCanceledAcquiresCounted: Acquires whose ctx ends at random
// points (in the pause before queueing, during a health check that passes or
// fails, between two looks at the idle resources) and the counters: every
// Acquire that returned a resource is in AcquireCount, every one that returned
// ctx.Err() in CanceledAcquires, and every resource made is closed once,
// under one of the Closed counters.
func TestHammerCanceledAcquiresCounted(t *testing.T) {
	for round := range testutil.HammerRounds(20) {
		var made, closed atomic.Int64
		p := mustNew(t, Config[int]{
			New:   func(context.Context) (int, error) { return int(made.Add(1)), nil },
			Close: func(int) error { closed.Add(1); return nil },
			HealthCheck: func(ctx context.Context, v int) error {
				// The caller's ctx may end during the check, which
				// passes all the same but for one value in seven. (The
				// pool's own checks, in the background, have no caller.)
				if c, ok := ctx.Value(endingCtxKey{}).(*endingCtx); ok {
					c.Err()
				}
				if v%7 == 0 {
					return errors.New("stale")
				}
				return nil
			},
			HealthCheckSkip: NoHealthCheckSkip,
			MaxSize:         3,
		})
		var acquired, canceled atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for range 200 {
					ctx := newEndingCtx(1 + r.IntN(4))
					res, err := p.Acquire(ctx)
					switch {
					case err == nil:
						acquired.Add(1)
						if ctx.ended() {
							t.Errorf("a resource handed to an Acquire whose ctx had ended")
						}
						for range r.IntN(3) {
							runtime.Gosched()
						}
						if r.IntN(6) == 0 {
							res.Destroy()
						} else {
							res.Release()
						}
					case err == context.Canceled:
						canceled.Add(1)
					default:
						t.Errorf("Acquire: %v", err)
					}
				}
			})
		}
		wg.Wait()
		require.NoError(t, p.Close(context.Background()))
		s := p.Stats()
		require.Equal(t, acquired.Load(), s.AcquireCount, "round %d: AcquireCount: %+v", round, s)
		require.Equal(t, canceled.Load(), s.CanceledAcquires, "round %d: CanceledAcquires: %+v", round, s)
		require.Equal(t, s.Created, s.ClosedIdle+s.ClosedLifetime+s.ClosedHealth+s.ClosedDestroy+s.ClosedPool, "round %d: %+v", round, s)
		require.Equal(t, made.Load(), closed.Load(), "round %d: every resource closed once", round)
	}
}

package ctxsync

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// root15Ctx returns a ctx that ends after a short random delay, or one that
// never does (one time in four, only where never is allowed).
func root15Ctx(r *rand.Rand, never bool) (context.Context, context.CancelFunc) {
	if never && r.IntN(4) == 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), time.Duration(r.IntN(200))*time.Microsecond)
}

// TestHammerConditionLockQueue: a Condition-guarded buffer on a shared Lock,
// two Conditions on it (notEmpty, notFull), goroutines that take the Lock
// itself with ctxs that end, and a Queue the consumers forward the items to,
// taking an item back into the buffer when their Put fails. Every item
// arrives once; at the end nobody waits on the Lock or either Condition, no
// place is left held for a notified waiter, every notified ticket's place is
// settled, and the Lock is free.
func TestHammerConditionLockQueue(t *testing.T) {
	const capacity, producers, consumers, lockers = 3, 3, 3, 3
	perProducer := testutil.HammerRounds(200)
	total := producers * perProducer
	l := NewLock()
	notEmpty, notFull := NewCondition(l), NewCondition(l)
	out := NewQueue[int](2)
	var buf []int // guarded by l
	var holders atomic.Int32
	enter := func() {
		if n := holders.Add(1); n != 1 {
			t.Errorf("%d goroutines hold the Lock", n)
		}
	}
	leave := func() { holders.Add(-1) }

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 15))
			for i := 0; i < perProducer; {
				ctx, cancel := root15Ctx(r, false)
				if l.Lock(ctx) != nil {
					cancel()
					continue
				}
				enter()
				leave()
				err := notFull.WaitFor(ctx, func() bool { return len(buf) < capacity })
				enter()
				if err == nil {
					buf = append(buf, p*perProducer+i)
					i++
					notEmpty.Notify(1)
				}
				leave()
				l.Unlock()
				cancel()
			}
		})
	}
	var delivered atomic.Int64
	stop := make(chan struct{})
	for c := range consumers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 16))
			for delivered.Load() < int64(total) {
				ctx, cancel := root15Ctx(r, false)
				_ = l.Lock(context.Background())
				enter()
				leave()
				err := notEmpty.WaitFor(ctx, func() bool { return len(buf) > 0 })
				enter()
				if err != nil {
					leave()
					l.Unlock()
					cancel()
					continue
				}
				v := buf[0]
				buf = buf[1:]
				notFull.Notify(1)
				leave()
				l.Unlock()
				if out.Put(ctx, v) != nil {
					// Back into the buffer, for someone else.
					_ = l.Lock(context.Background())
					enter()
					buf = append(buf, v)
					notEmpty.Notify(1)
					leave()
					l.Unlock()
				}
				cancel()
			}
		})
	}
	for g := range lockers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 17))
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := root15Ctx(r, true)
				if l.Lock(ctx) == nil {
					enter()
					if r.IntN(2) == 0 {
						notEmpty.NotifyAll()
					}
					leave()
					l.Unlock()
				}
				cancel()
			}
		})
	}
	seen := make(map[int]bool)
	r := rand.New(rand.NewPCG(0, 18))
	for len(seen) < total {
		ctx, cancel := root15Ctx(r, false)
		v, err := out.Get(ctx)
		cancel()
		if err != nil {
			continue
		}
		require.False(t, seen[v], "item %d delivered twice", v)
		seen[v] = true
		delivered.Add(1)
	}
	close(stop)
	wg.Wait() // a consumer still in WaitFor leaves as its ctx ends
	require.Zero(t, out.Len())
	require.Zero(t, l.Waiting())
	require.Zero(t, notEmpty.Waiting())
	require.Zero(t, notFull.Waiting())
	for _, c := range []*Condition{notEmpty, notFull} {
		c.q.Lock()
		require.Zero(t, c.places.n, "places left held")
		require.Equal(t, c.tickets, c.turn.Load(), "tickets not settled")
		c.q.Unlock()
	}
	require.False(t, l.Locked())
	require.True(t, l.TryLock())
	l.Unlock()
}

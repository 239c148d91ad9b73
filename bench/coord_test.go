package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// BenchmarkRWLockRead: RLock then RUnlock on every core at once.
func BenchmarkRWLockRead(b *testing.B) {
	ctxKinds(b, func(b *testing.B, newCtx func() context.Context) {
		b.Run("impl=ctxsync", func(b *testing.B) {
			b.ReportAllocs()
			var rw ctxsync.RWLock
			b.RunParallel(func(pb *testing.PB) {
				ctx := newCtx()
				for pb.Next() {
					must(rw.RLock(ctx))
					rw.RUnlock()
				}
			})
		})
		b.Run("impl=sync.RWMutex", func(b *testing.B) {
			b.ReportAllocs()
			var rw sync.RWMutex
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rw.RLock()
					//lint:ignore SA2001 the empty section is what is measured
					rw.RUnlock()
				}
			})
		})
	})
}

// BenchmarkRWLockWrite: Lock then Unlock, one goroutine.
func BenchmarkRWLockWrite(b *testing.B) {
	ctxKinds(b, func(b *testing.B, newCtx func() context.Context) {
		ctx := newCtx()
		b.Run("impl=ctxsync", func(b *testing.B) {
			b.ReportAllocs()
			var rw ctxsync.RWLock
			for b.Loop() {
				must(rw.Lock(ctx))
				rw.Unlock()
			}
		})
		b.Run("impl=sync.RWMutex", func(b *testing.B) {
			b.ReportAllocs()
			var rw sync.RWMutex
			for b.Loop() {
				rw.Lock()
				//lint:ignore SA2001 the empty section is what is measured
				rw.Unlock()
			}
		})
	})
}

// broadcaster is an event that waiters wait for and a setter raises, then
// lowers again for the next round.
type broadcaster interface {
	wait(ctx context.Context)
	set()
	clear()
}

type ctxsyncEvent struct{ ctxsync.Event }

func (e *ctxsyncEvent) wait(ctx context.Context) { must(e.Wait(ctx)) }
func (e *ctxsyncEvent) set()                     { e.Set() }
func (e *ctxsyncEvent) clear()                   { e.Clear() }

// chanEvent is what a user writes without ctxsync: close a channel to
// broadcast, make a new one to re-arm. The channel is published by the
// happens-before of the close that follows its creation.
type chanEvent struct{ ch chan struct{} }

func (e *chanEvent) wait(ctx context.Context) {
	select {
	case <-e.ch:
	case <-ctx.Done():
		panic(ctx.Err())
	}
}
func (e *chanEvent) set()   { close(e.ch) }
func (e *chanEvent) clear() { e.ch = make(chan struct{}) }

// broadcastRounds runs b.N rounds in which one goroutine wakes waiters others.
// Two events alternate, so that the one a round raises was re-armed while every
// waiter was blocked on the other.
func broadcastRounds(b *testing.B, waiters int, evs [2]broadcaster) {
	b.ReportAllocs()
	evs[1].set() // round 0 clears it before raising evs[0]
	var acks sync.WaitGroup
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range waiters {
		ctx := benchCtx(b)
		wg.Go(func() {
			for round := 0; ; round++ {
				evs[round%2].wait(ctx)
				if stop.Load() {
					return
				}
				acks.Done()
			}
		})
	}
	b.ResetTimer()
	round := 0
	for ; round < b.N; round++ {
		acks.Add(waiters)
		evs[(round+1)%2].clear()
		evs[round%2].set()
		acks.Wait()
	}
	b.StopTimer()
	stop.Store(true)
	evs[(round+1)%2].clear()
	evs[round%2].set()
	wg.Wait()
}

// BenchmarkEventBroadcast: one Set wakes 16 waiters, then Clear re-arms.
func BenchmarkEventBroadcast(b *testing.B) {
	b.Run("waiters=16/impl=ctxsync", func(b *testing.B) {
		broadcastRounds(b, 16, [2]broadcaster{new(ctxsyncEvent), new(ctxsyncEvent)})
	})
	b.Run("waiters=16/impl=close-chan", func(b *testing.B) {
		broadcastRounds(b, 16, [2]broadcaster{
			&chanEvent{make(chan struct{})}, &chanEvent{make(chan struct{})},
		})
	})
}

// BenchmarkEventIsSet: reading the flag.
func BenchmarkEventIsSet(b *testing.B) {
	b.Run("impl=ctxsync", func(b *testing.B) {
		var e ctxsync.Event
		n := 0
		for b.Loop() {
			if e.IsSet() {
				n++
			}
		}
		sink = n
	})
	b.Run("impl=atomic.Bool", func(b *testing.B) {
		var e atomic.Bool
		n := 0
		for b.Loop() {
			if e.Load() {
				n++
			}
		}
		sink = n
	})
}

// BenchmarkConditionPingPong: two goroutines take turns, each waiting for the
// other to hand it the turn. One op is one hand-over.
func BenchmarkConditionPingPong(b *testing.B) {
	b.Run("impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		c := ctxsync.NewCondition(nil)
		turn := 0
		play := func(ctx context.Context, me, n int) {
			for range n {
				must(c.Lock(ctx))
				for turn != me {
					must(c.Wait(ctx))
				}
				turn = 1 - me
				c.Notify(1)
				c.Unlock()
			}
		}
		pingPong(b, play)
	})
	b.Run("impl=sync.Cond", func(b *testing.B) {
		b.ReportAllocs()
		var mu sync.Mutex
		c := sync.NewCond(&mu)
		turn := 0
		play := func(_ context.Context, me, n int) {
			for range n {
				mu.Lock()
				for turn != me {
					c.Wait()
				}
				turn = 1 - me
				c.Signal()
				mu.Unlock()
			}
		}
		pingPong(b, play)
	})
}

func pingPong(b *testing.B, play func(ctx context.Context, me, n int)) {
	ctx := benchCtx(b)
	var wg sync.WaitGroup
	b.ResetTimer()
	wg.Go(func() { play(ctx, 0, (b.N+1)/2) })
	wg.Go(func() { play(ctx, 1, b.N/2) })
	wg.Wait()
}

// condBroadcaster adapts a condition variable to broadcaster: a generation
// number guarded by the lock, raised by set.
type ctxsyncCond struct {
	c   *ctxsync.Condition
	gen int
}

func (c *ctxsyncCond) wait(ctx context.Context) {
	must(c.c.Lock(ctx))
	seen := c.gen
	for c.gen == seen {
		must(c.c.Wait(ctx))
	}
	c.c.Unlock()
}

// BenchmarkConditionBroadcast: NotifyAll wakes 16 waiters.
func BenchmarkConditionBroadcast(b *testing.B) {
	const waiters = 16
	b.Run("waiters=16/impl=ctxsync", func(b *testing.B) {
		c := &ctxsyncCond{c: ctxsync.NewCondition(nil)}
		condRounds(b, waiters, func() int {
			must(c.c.Lock(context.Background()))
			defer c.c.Unlock()
			return c.c.Waiting()
		}, func() {
			must(c.c.Lock(context.Background()))
			c.gen++
			c.c.NotifyAll()
			c.c.Unlock()
		}, c.wait)
	})
	b.Run("waiters=16/impl=sync.Cond", func(b *testing.B) {
		var mu sync.Mutex
		c := sync.NewCond(&mu)
		gen, waiting := 0, 0
		condRounds(b, waiters, func() int {
			mu.Lock()
			defer mu.Unlock()
			return waiting
		}, func() {
			mu.Lock()
			gen++
			c.Broadcast()
			mu.Unlock()
		}, func(context.Context) {
			mu.Lock()
			seen := gen
			for gen == seen {
				waiting++
				c.Wait()
				waiting--
			}
			mu.Unlock()
		})
	})
}

// condRounds runs b.N rounds: once all waiters wait (waiting reports how many
// do), notify wakes them, and the round ends when each has seen it.
func condRounds(b *testing.B, waiters int, waiting func() int, notify func(), wait func(context.Context)) {
	b.ReportAllocs()
	var acks sync.WaitGroup
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range waiters {
		ctx := benchCtx(b)
		wg.Go(func() {
			for {
				wait(ctx)
				if stop.Load() {
					return
				}
				acks.Done()
			}
		})
	}
	b.ResetTimer()
	for range b.N {
		for waiting() < waiters {
			// The waiters are on their way back: let them queue.
			spinYield()
		}
		acks.Add(waiters)
		notify()
		acks.Wait()
	}
	b.StopTimer()
	stop.Store(true)
	for waiting() < waiters {
		spinYield()
	}
	notify()
	wg.Wait()
}

// BenchmarkBarrierRound: 8 goroutines meet at a barrier, round after round.
// One op is one round.
func BenchmarkBarrierRound(b *testing.B) {
	const parties = 8
	b.Run("parties=8/impl=ctxsync", func(b *testing.B) {
		bar := ctxsync.NewBarrier(parties, nil)
		rounds(b, parties, func(ctx context.Context) {
			_, err := bar.Wait(ctx)
			must(err)
		})
	})
	b.Run("parties=8/impl=mutex+chan", func(b *testing.B) {
		bar := newChanBarrier(parties)
		rounds(b, parties, bar.wait)
	})
	b.Run("parties=8/impl=waitgroup+chan", func(b *testing.B) {
		b.ReportAllocs()
		// A coordinator waits for the round's WaitGroup and closes the
		// round's channel; parties report, then wait for the channel.
		type round struct {
			wg      sync.WaitGroup
			release chan struct{}
		}
		newRound := func() *round {
			r := &round{release: make(chan struct{})}
			r.wg.Add(parties)
			return r
		}
		rs := make(chan *round, parties) // each party's next round
		var parts sync.WaitGroup
		ctxs := make([]context.Context, parties)
		for i := range ctxs {
			ctxs[i] = benchCtx(b)
		}
		cur := newRound()
		b.ResetTimer()
		for p := range parties {
			parts.Go(func() {
				r := cur
				for range b.N {
					r.wg.Done()
					select {
					case <-r.release:
					case <-ctxs[p].Done():
						panic(ctxs[p].Err())
					}
					r = <-rs
				}
			})
		}
		for range b.N {
			cur.wg.Wait()
			next := newRound()
			for range parties {
				rs <- next
			}
			close(cur.release)
			cur = next
		}
		parts.Wait()
	})
}

// chanBarrier is the barrier users write by hand: a mutex, a count and a
// channel per generation.
type chanBarrier struct {
	mu      sync.Mutex
	parties int
	count   int
	ch      chan struct{}
}

func newChanBarrier(parties int) *chanBarrier {
	return &chanBarrier{parties: parties, ch: make(chan struct{})}
}

func (b *chanBarrier) wait(ctx context.Context) {
	b.mu.Lock()
	b.count++
	if b.count == b.parties {
		close(b.ch)
		b.ch = make(chan struct{})
		b.count = 0
		b.mu.Unlock()
		return
	}
	ch := b.ch
	b.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		panic(ctx.Err())
	}
}

// rounds runs b.N rounds of parties goroutines, each calling wait once a round.
func rounds(b *testing.B, parties int, wait func(ctx context.Context)) {
	b.ReportAllocs()
	ctxs := make([]context.Context, parties)
	for i := range ctxs {
		ctxs[i] = benchCtx(b)
	}
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, ctx := range ctxs {
		wg.Go(func() {
			for range b.N {
				wait(ctx)
			}
		})
	}
	wg.Wait()
}

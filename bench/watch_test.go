package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// watchConfig is the value the Watch benchmarks publish: a pointer-free
// struct of a few words, as a small configuration or a leader's term is.
type watchConfig struct {
	term, leader int
}

// BenchmarkWatchLoad: reading the current value, one goroutine and all
// processors at once, beside an atomic.Pointer to an immutable value, which
// is what a user who needs no waiting writes.
func BenchmarkWatchLoad(b *testing.B) {
	b.Run("goroutines=1/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		w := ctxsync.NewWatch(watchConfig{1, 2})
		// A plain loop, not b.Loop: b.Loop keeps every result of a call in
		// its body alive, which spills Load's three words to the stack and
		// the peer's one, measuring the harness rather than the read.
		for range b.N {
			v, _ := w.Load()
			sinkInt = v.leader
		}
	})
	b.Run("goroutines=1/impl=atomic.Pointer", func(b *testing.B) {
		b.ReportAllocs()
		var p atomic.Pointer[watchConfig]
		p.Store(&watchConfig{1, 2})
		for range b.N {
			sinkInt = p.Load().leader
		}
	})
	b.Run("goroutines=parallel/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		w := ctxsync.NewWatch(watchConfig{1, 2})
		b.RunParallel(func(pb *testing.PB) {
			n := 0
			for pb.Next() {
				v, _ := w.Load()
				n += v.leader
			}
			keepInt(n)
		})
	})
	b.Run("goroutines=parallel/impl=atomic.Pointer", func(b *testing.B) {
		b.ReportAllocs()
		var p atomic.Pointer[watchConfig]
		p.Store(&watchConfig{1, 2})
		b.RunParallel(func(pb *testing.PB) {
			n := 0
			for pb.Next() {
				n += p.Load().leader
			}
			keepInt(n)
		})
	})
}

var keepMu sync.Mutex

// keepInt keeps a goroutine's sum alive, once per goroutine, race-free.
func keepInt(n int) {
	keepMu.Lock()
	sinkInt += n
	keepMu.Unlock()
}

// handWatch is what users write today for a value with a wait for its next
// change: a mutex, the value, and a channel that Store closes and replaces.
// Load hands out the channel with the value it goes with, so that a change
// between the two is never missed.
type handWatch struct {
	mu sync.Mutex
	v  watchConfig
	ch chan struct{}
}

func newHandWatch(v watchConfig) *handWatch {
	return &handWatch{v: v, ch: make(chan struct{})}
}

func (h *handWatch) Load() (watchConfig, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.v, h.ch
}

func (h *handWatch) Store(v watchConfig) {
	h.mu.Lock()
	h.v = v
	close(h.ch)
	h.ch = make(chan struct{})
	h.mu.Unlock()
}

// A storeRound counts the waiters that have seen a round's store; the last
// of them tells the driver, which blocks meanwhile rather than spin, so that
// the processors go to the waiters.
type storeRound struct {
	waiters int64
	acks    atomic.Int64
	done    chan struct{}
}

func newStoreRound(waiters int) *storeRound {
	return &storeRound{waiters: int64(waiters), done: make(chan struct{}, 1)}
}

// ack is called by a waiter once it has seen a store.
func (r *storeRound) ack() {
	if r.acks.Add(1)%r.waiters == 0 {
		r.done <- struct{}{}
	}
}

// run is the driver of the Store benchmarks: b.N rounds of one store, each
// followed by a wait until every waiter has seen it. So each round is a Store
// and the wake-up of every waiter, with nothing left over for the next.
func (r *storeRound) run(b *testing.B, store func(i int)) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		store(i + 2)
		<-r.done
	}
	b.StopTimer()
}

// BenchmarkWatchStore: one Store waking 16 goroutines that wait for the next
// change, each with a ctx of its own, as requests carry: one that cannot end
// (ctx=background) and a cancelable one (ctx=cancel). The peers are the
// hand-written handWatch, its waiters blocking on the channel alone
// (impl=chan), as most hand-written ones do and as cannot be left, and in a
// select with ctx.Done() (impl=chan-select), as a caller that can give up
// must. A Wait under a cancelable ctx pays for the same select as
// impl=chan-select; under Background it receives alone, as impl=chan does.
func BenchmarkWatchStore(b *testing.B) {
	ctxKinds(b, benchWatchStore)
}

func benchWatchStore(b *testing.B, newCtx func() context.Context) {
	const waiters = 16
	b.Run("waiters=16/impl=ctxsync", func(b *testing.B) {
		w := ctxsync.NewWatch(watchConfig{term: 1})
		r := newStoreRound(waiters)
		var wg sync.WaitGroup
		for range waiters {
			ctx := newCtx()
			wg.Go(func() {
				var seen uint64 = 1
				for {
					v, ver, err := w.Wait(ctx, seen)
					if err != nil {
						return // closed: the benchmark is over
					}
					seen = ver
					useTerm(v.term)
					r.ack()
				}
			})
		}
		r.run(b, func(i int) { w.Store(watchConfig{term: i}) })
		w.Close()
		wg.Wait()
	})
	for _, sel := range []bool{false, true} {
		name := "waiters=16/impl=chan"
		if sel {
			name += "-select"
		}
		b.Run(name, func(b *testing.B) {
			h := newHandWatch(watchConfig{term: 1})
			r := newStoreRound(waiters)
			var stop atomic.Bool
			var wg, loaded sync.WaitGroup
			for range waiters {
				ctx := newCtx()
				loaded.Add(1)
				wg.Go(func() {
					// The first value is read before the first Store, as
					// Watch's waiters start from version 1.
					_, ch := h.Load()
					loaded.Done()
					for {
						if sel {
							select {
							case <-ch:
							case <-ctx.Done():
								return
							}
						} else {
							<-ch
						}
						if stop.Load() {
							return
						}
						var v watchConfig
						v, ch = h.Load()
						useTerm(v.term)
						r.ack()
					}
				})
			}
			loaded.Wait()
			r.run(b, func(i int) { h.Store(watchConfig{term: i}) })
			stop.Store(true)
			h.Store(watchConfig{})
			wg.Wait()
		})
	}
}

// useTerm reads a waiter's value, as a user would, without a shared write.
func useTerm(term int) {
	if term < 0 {
		panic("bench: negative term")
	}
}

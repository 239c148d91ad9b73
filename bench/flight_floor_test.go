package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/singleflight"
)

// BenchmarkFlightFloor measures what any Flight that runs fn in a goroutine
// other than the caller's must pay per call when fn returns at once, beside
// singleflight's whole Do for a new key: the floor under FlightNewKey's ratio.
func BenchmarkFlightFloor(b *testing.B) {
	b.Run("impl=x-sync-singleflight", func(b *testing.B) {
		b.ReportAllocs()
		var g singleflight.Group
		fn := func() (any, error) { return 1, nil }
		keys := make([]string, 1024)
		for i := range keys {
			keys[i] = strconv.Itoa(i)
		}
		i := 0
		for b.Loop() {
			i++
			v, err, _ := g.Do(keys[i&1023], fn)
			must(err)
			sink = v
		}
	})
	// A new goroutine per call, and a channel receive for its end.
	b.Run("impl=go-chan", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan int)
		f := func() { ch <- 1 }
		for b.Loop() {
			go f()
			sinkInt = <-ch
		}
	})
	// A new goroutine per call, and the caller yields until it has run.
	b.Run("impl=go-yield", func(b *testing.B) {
		b.ReportAllocs()
		var done atomic.Bool
		f := func() { done.Store(true) }
		for b.Loop() {
			done.Store(false)
			go f()
			for !done.Load() {
				runtime.Gosched()
			}
		}
	})
	// One goroutine kept parked on a channel, handed each call, and a
	// channel back for its end.
	b.Run("impl=worker-chan", func(b *testing.B) {
		b.ReportAllocs()
		jobs, results := make(chan int), make(chan int)
		go func() {
			for j := range jobs {
				results <- j
			}
		}()
		for b.Loop() {
			jobs <- 1
			sinkInt = <-results
		}
		close(jobs)
	})
	// One goroutine kept parked on a channel, handed each call; the caller
	// yields until it has run.
	b.Run("impl=worker-yield", func(b *testing.B) {
		b.ReportAllocs()
		jobs := make(chan int)
		var done atomic.Bool
		go func() {
			for range jobs {
				done.Store(true)
			}
		}()
		for b.Loop() {
			done.Store(false)
			jobs <- 1
			for !done.Load() {
				runtime.Gosched()
			}
		}
		close(jobs)
	})
}

// BenchmarkFlightFloorGoroutines is BenchmarkFlightFloor with 16 goroutines
// calling at once, as in FlightOneKey: each op starts a goroutine and waits
// for it, beside singleflight's Do for one key shared by all 16 (where fn
// returns at once, nearly every Do runs it itself: see FlightOneKey's
// fn-calls/op).
func BenchmarkFlightFloorGoroutines(b *testing.B) {
	const g = 16
	b.Run("goroutines=16/impl=x-sync-singleflight", func(b *testing.B) {
		var sf singleflight.Group
		fn := func() (any, error) { return 1, nil }
		inGoroutines(b, g, func(context.Context) {
			v, err, _ := sf.Do("key", fn)
			must(err)
			sink = v
		})
	})
	b.Run("goroutines=16/impl=go-chan", func(b *testing.B) {
		// A channel per goroutine, and a function that sends on it, made
		// before the timed loop: each op starts a goroutine of the function
		// and receives what it sends.
		pairs := make([]pair, g)
		for i := range pairs {
			ch := make(chan int)
			pairs[i] = pair{ch: ch, f: func() { ch <- 1 }}
		}
		var next atomic.Int32
		var mine sync.Map // ctx -> its goroutine's pair
		inGoroutines(b, g, func(ctx context.Context) {
			p, ok := mine.Load(ctx)
			if !ok {
				p, _ = mine.LoadOrStore(ctx, &pairs[next.Add(1)-1])
			}
			c := p.(*pair)
			go c.f()
			sinkInt = <-c.ch
		})
	})
	b.Run("goroutines=16/impl=go-yield", func(b *testing.B) {
		// As go-chan, but the goroutine sets a flag, and its caller yields
		// until it is set, as Flight's first caller does.
		pairs := make([]pair, g)
		for i := range pairs {
			p := &pairs[i]
			p.f = func() { p.done.Store(true) }
		}
		var next atomic.Int32
		var mine sync.Map // ctx -> its goroutine's pair
		inGoroutines(b, g, func(ctx context.Context) {
			p, ok := mine.Load(ctx)
			if !ok {
				p, _ = mine.LoadOrStore(ctx, &pairs[next.Add(1)-1])
			}
			c := p.(*pair)
			c.done.Store(false)
			go c.f()
			for !c.done.Load() {
				runtime.Gosched()
			}
		})
	})
}

// A pair is a floor goroutine's channel or flag, and the function that
// sends on it or sets it.
type pair struct {
	ch   chan int
	done atomic.Bool
	f    func()
}

package bench

import (
	"context"
	"testing"

	"github.com/jackc/puddle/v2"

	"github.com/ctxsync/ctxsync/pool"
)

type benchConn struct{ n int }

func newBenchConn(context.Context) (*benchConn, error) { return &benchConn{}, nil }

// poolImpl acquires and releases one resource.
type poolImpl struct {
	name string
	new  func(b *testing.B, size int) func(ctx context.Context)
}

var poolImpls = []poolImpl{
	{"ctxsync", func(b *testing.B, size int) func(context.Context) {
		p, err := pool.New(pool.Config[*benchConn]{New: newBenchConn, MaxSize: size})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Close(context.Background()) })
		return func(ctx context.Context) {
			r, err := p.Acquire(ctx)
			must(err)
			r.Value().n++
			r.Release()
		}
	}},
	{"puddle", func(b *testing.B, size int) func(context.Context) {
		p, err := puddle.NewPool(&puddle.Config[*benchConn]{
			Constructor: newBenchConn,
			Destructor:  func(*benchConn) {},
			MaxSize:     int32(size),
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		return func(ctx context.Context) {
			r, err := p.Acquire(ctx)
			must(err)
			r.Value().n++
			r.Release()
		}
	}},
	{"chan", func(b *testing.B, size int) func(context.Context) {
		ch := make(chan *benchConn, size)
		for range size {
			ch <- &benchConn{}
		}
		return func(ctx context.Context) {
			var c *benchConn
			select {
			case c = <-ch:
			case <-ctx.Done():
				panic(ctx.Err())
			}
			c.n++
			ch <- c
		}
	}},
}

// BenchmarkPoolAcquireRelease: Acquire then Release with an idle resource
// there; serially, and from every core on a pool as large as there are cores
// and more.
func BenchmarkPoolAcquireRelease(b *testing.B) {
	for _, impl := range poolImpls {
		b.Run("run=serial/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			op := impl.new(b, 4)
			ctx := benchCtx(b)
			op(ctx) // make the resource
			b.ResetTimer()
			for b.Loop() {
				op(ctx)
			}
		})
		b.Run("run=parallel/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			op := impl.new(b, 64)
			ctx := benchCtx(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op(ctx)
				}
			})
		})
	}
}

// BenchmarkPoolContended: 16 goroutines share a pool of 4.
func BenchmarkPoolContended(b *testing.B) {
	for _, impl := range poolImpls {
		b.Run("goroutines=16/size=4/impl="+impl.name, func(b *testing.B) {
			op := impl.new(b, 4)
			inGoroutines(b, 16, op)
		})
	}
}

package bench

import (
	"context"
	"testing"

	"github.com/ctxsync/ctxsync/group"
	conciter "github.com/sourcegraph/conc/iter"
	concpool "github.com/sourcegraph/conc/pool"
	"golang.org/x/sync/errgroup"
)

// task is the work of the group benchmarks' tasks: nothing, so that the cost
// measured is the group's own, starting and waiting for goroutines. Each
// task is a closure over its loop variable, as real tasks are, so every
// implementation pays for one closure a task.
func task(_ context.Context, i int) error {
	if i < 0 {
		return context.Canceled // never
	}
	return nil
}

// BenchmarkGroup: make a group that fails fast, start n tasks, wait for them;
// with limit=4, at most four at once. Each peer is set up to do the same:
// errgroup.WithContext (SetLimit), and conc's context pool that cancels on
// the first error and returns it (WithMaxGoroutines). tasks=1 shows what a
// group costs beyond its one goroutine; tasks=16, where a goroutine of the
// group takes the next task when its own returns, what many short tasks do.
func BenchmarkGroup(b *testing.B) {
	ctx := benchCtx(b)
	for _, c := range []struct {
		name         string
		tasks, limit int
	}{{"tasks=1", 1, 0}, {"tasks=16", 16, 0}, {"tasks=100/limit=4", 100, 4}} {
		b.Run(c.name+"/impl=ctxsync", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g, _ := group.New(ctx, group.Options{Limit: c.limit})
				for i := range c.tasks {
					must(g.Go(func(ctx context.Context) error { return task(ctx, i) }))
				}
				must(g.Wait())
			}
		})
		b.Run(c.name+"/impl=errgroup", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g, gctx := errgroup.WithContext(ctx)
				if c.limit > 0 {
					g.SetLimit(c.limit)
				}
				for i := range c.tasks {
					g.Go(func() error { return task(gctx, i) })
				}
				must(g.Wait())
			}
		})
		b.Run(c.name+"/impl=conc", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := concpool.New().WithContext(ctx).WithCancelOnError().WithFirstError()
				if c.limit > 0 {
					p = p.WithMaxGoroutines(c.limit)
				}
				for i := range c.tasks {
					p.Go(func(ctx context.Context) error { return task(ctx, i) })
				}
				must(p.Wait())
			}
		})
	}
}

// BenchmarkGroupMap: 64 small items mapped to results in order, at most 8 at
// once. errgroup is the idiom by hand (a results slice written by index);
// conc's iter.Mapper is its own Map.
func BenchmarkGroupMap(b *testing.B) {
	ctx := benchCtx(b)
	const limit = 8
	items := make([]int, 64)
	for i := range items {
		items[i] = i
	}
	square := func(_ context.Context, x int) (int, error) { return x * x, nil }
	name := "items=64/limit=8/impl="
	b.Run(name+"ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := group.Map(ctx, items, limit, square)
			must(err)
			sinkInt = res[len(res)-1]
		}
	})
	b.Run(name+"errgroup", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(limit)
			res := make([]int, len(items))
			for i, x := range items {
				g.Go(func() error {
					r, err := square(gctx, x)
					res[i] = r
					return err
				})
			}
			must(g.Wait())
			sinkInt = res[len(res)-1]
		}
	})
	b.Run(name+"conc", func(b *testing.B) {
		b.ReportAllocs()
		m := conciter.Mapper[int, int]{MaxGoroutines: limit}
		for b.Loop() {
			res, err := m.MapErr(items, func(x *int) (int, error) { return square(ctx, *x) })
			must(err)
			sinkInt = res[len(res)-1]
		}
	})
}

package ctxsync

import (
	"context"
	"fmt"
	"testing"
)

// The blocking calls that ctxcode_internal_test.go's cases leave out: the
// iterators (Queue.All, PriorityQueue.All, Watch.Changes) and
// Condition.WaitFor, run through the same probes.
func reviewS3CtxCases() []ctxCase {
	bg := context.Background()
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	return []ctxCase{
		{"Condition.WaitFor", func() (func(context.Context), []tryLocker, func()) {
			l := NewLock()
			c := NewCondition(l)
			ready := false
			return func(ctx context.Context) {
					must(c.Lock(bg))
					defer c.Unlock()
					_ = c.WaitFor(ctx, func() bool { return ready })
				}, []tryLocker{&c.q.Mutex, &l.q.Mutex}, func() {
					must(c.Lock(bg))
					ready = true
					c.NotifyAll()
					must(c.WaitFor(bg, func() bool { return ready }))
					c.Unlock()
				}
		}},
		{"Queue.All", func() (func(context.Context), []tryLocker, func()) {
			q := NewQueue[int](1)
			return func(ctx context.Context) {
					for range q.All(ctx) {
						q.TaskDone()
					}
				}, []tryLocker{&q.putMu, &q.takeMu, &q.joinMu}, func() {
					must(q.Put(bg, 1))
					for range q.All(bg) {
						q.TaskDone()
						break
					}
				}
		}},
		{"PriorityQueue.All", func() (func(context.Context), []tryLocker, func()) {
			q := NewPriorityQueue[int](1)
			return func(ctx context.Context) {
					for range q.All(ctx) {
						q.TaskDone()
					}
				}, []tryLocker{&q.core.mu}, func() {
					must(q.Put(bg, 0, 1))
					for range q.All(bg) {
						q.TaskDone()
						break
					}
				}
		}},
		{"Watch.Changes", func() (func(context.Context), []tryLocker, func()) {
			w := NewWatch(0)
			return func(ctx context.Context) {
					for range w.Changes(ctx) {
					}
				}, []tryLocker{&w.mu}, func() {
					w.Store(1)
					for v := range w.Changes(bg) {
						if v == 1 {
							break
						}
					}
				}
		}},
	}
}

func TestReviewS3_CallerCtxOfIteratorsAndWaitFor(t *testing.T) {
	for _, c := range reviewS3CtxCases() {
		t.Run(c.name, func(t *testing.T) {
			if n := runCtxCase(t, c, 0); n == 0 {
				t.Fatal("the call never looked at its ctx: the probe tested nothing")
			}
		})
		t.Run(c.name+"/panics", func(t *testing.T) {
			// Counted again: a failure above would stop the subtests here.
			n := runCtxCase(t, c, 0)
			for at := int32(1); at <= n; at++ {
				t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
					runCtxCase(t, c, at)
				})
			}
		})
	}
}

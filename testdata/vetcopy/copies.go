// Package vetcopy copies a value of every type in the module that must not be
// copied after first use. TestVetReportsCopies runs go vet on it and expects a
// report of each copy.
package vetcopy

import (
	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

func copies(
	barrier *ctxsync.Barrier,
	bounded *ctxsync.BoundedSemaphore,
	cond *ctxsync.Condition,
	event *ctxsync.Event,
	flight *ctxsync.Flight[string, int],
	lazy *ctxsync.Lazy[int],
	lock *ctxsync.Lock,
	pqueue *ctxsync.PriorityQueue[int],
	queue *ctxsync.Queue[int],
	rwlock *ctxsync.RWLock,
	sem *ctxsync.Semaphore,
	weighted *ctxsync.Weighted,
	keyed *ratelimit.Keyed[string, *ratelimit.TokenBucket],
	window *ratelimit.SlidingWindow,
	counter *ratelimit.SlidingWindowCounter,
	bucket *ratelimit.TokenBucket,
	tally *ratelimit.Tally,
	b *breaker.Breaker,
	bt *breaker.Transport,
	p *pool.Pool[int],
	r *pool.Resource[int],
	g *group.Group,
	budget *retry.Budget,
	watch *ctxsync.Watch[int],
) []any {
	return []any{
		*barrier, *bounded, *cond, *event, *flight, *lazy, *lock, *pqueue, *queue, *rwlock, *sem, *weighted,
		*keyed, *window, *counter, *bucket, *tally,
		*b, *bt,
		*p, *r,
		*g,
		*budget,
		*watch,
	}
}

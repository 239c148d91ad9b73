// Package vetcopy copies a value of every type in the module that must not be
// copied after first use. TestVetReportsCopies runs go vet on it and expects a
// report of each copy.
package vetcopy

import (
	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

func root(
	barrier *ctxsync.Barrier,
	bounded *ctxsync.BoundedSemaphore,
	cond *ctxsync.Condition,
	event *ctxsync.Event,
	lock *ctxsync.Lock,
	pqueue *ctxsync.PriorityQueue[int],
	queue *ctxsync.Queue[int],
	rwlock *ctxsync.RWLock,
	sem *ctxsync.Semaphore,
	weighted *ctxsync.Weighted,
) {
	_ = *barrier
	_ = *bounded
	_ = *cond
	_ = *event
	_ = *lock
	_ = *pqueue
	_ = *queue
	_ = *rwlock
	_ = *sem
	_ = *weighted
}

func others(
	keyed *ratelimit.Keyed[string, *ratelimit.TokenBucket],
	window *ratelimit.SlidingWindow,
	counter *ratelimit.SlidingWindowCounter,
	bucket *ratelimit.TokenBucket,
	b *breaker.Breaker,
	p *pool.Pool[int],
	r *pool.Resource[int],
) {
	_ = *keyed
	_ = *window
	_ = *counter
	_ = *bucket
	_ = *b
	_ = *p
	_ = *r
}

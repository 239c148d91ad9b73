package redislimit

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A call is one decision waiting for a round trip.
type call struct {
	key  string
	n    int
	res  int64
	err  error
	done chan struct{} // closed once res and err are set
}

// batcher bounds the round trips a Limiter has under way. A call made while
// fewer than max are under way goes to Redis at once, by itself. A call made
// while max are under way waits in the queue, and as soon as a round trip
// ends, every call waiting goes in one pipeline: a single round trip for all
// of them. So under load each round trip carries many decisions, and neither
// the server nor the client pays a system call for each one.
//
// The queue is not empty only while max round trips are under way, so a call
// never overtakes those waiting.
type batcher struct {
	mu       sync.Mutex
	underway int     // round trips under way, at most max
	max      int     // 0: no bound, and no queue
	queue    []*call // waiting for a round trip, oldest first
}

// run runs the script for key and n, in a round trip of its own if one is
// free, else in the next pipeline; ctx bounds the wait. It returns what the
// script returned.
func (l *Limiter) run(ctx context.Context, key string, n int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	b := &l.batch
	if b.max == 0 {
		return l.runOne(ctx, key, n)
	}
	b.mu.Lock()
	if b.underway < b.max {
		b.underway++
		b.mu.Unlock()
		v, err := l.runOne(ctx, key, n)
		l.roundTripEnded(nil)
		return v, err
	}
	c := &call{key: key, n: n, done: make(chan struct{})}
	b.queue = append(b.queue, c)
	b.mu.Unlock()

	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	for i, q := range b.queue {
		if q == c {
			last := len(b.queue) - 1
			copy(b.queue[i:], b.queue[i+1:])
			b.queue[last] = nil
			b.queue = b.queue[:last]
			break
		}
	}
	b.mu.Unlock()
	// If c was in a pipeline already, the script runs without us: Redis may
	// count the events, as it may for a call that gives up during its own
	// round trip.
	return 0, ctx.Err()
}

// roundTripEnded is called as a round trip ends, with the batch it carried
// (nil for a call's own round trip). If calls are waiting, they go next in
// the round trip's place: it returns them to the pipeline that ended, or
// starts a pipeline for them in a goroutine of its own when the round trip was
// a call's, so that the caller can return. If none is waiting, it frees the
// round trip and returns nil.
func (l *Limiter) roundTripEnded(running []*call) []*call {
	b := &l.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.underway--
		return nil
	}
	next := b.queue
	b.queue = running[:0] // reuse the slice of the pipeline that ended
	if running == nil {
		go l.pipeline(next)
		return nil
	}
	return next
}

// pipeline runs batch, then the calls that queued meanwhile, until none waits.
func (l *Limiter) pipeline(batch []*call) {
	for batch != nil {
		l.runBatch(batch)
		clear(batch)
		batch = l.roundTripEnded(batch)
	}
}

// runBatch runs the script for every call of batch in one pipeline, and tells
// each call its result. The pipeline carries no caller's context: it serves
// them all, and ends at the Timeout.
func (l *Limiter) runBatch(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	keys := make([]string, len(batch))
	send := func(eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd, which []int) {
		_, _ = l.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range which {
				cmds[i] = eval(ctx, p, keys[i:i+1], l.tolArg, l.increment(batch[i].n))
			}
			return nil
		})
	}
	all := make([]int, len(batch))
	for i, c := range batch {
		all[i] = i
		keys[i] = l.Key(c.key)
	}
	send(gcra.EvalSha, all)
	// Redis forgets scripts on a restart or a SCRIPT FLUSH: send it again
	// with the calls it refused.
	again := all[:0]
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		send(gcra.Eval, again)
	}
	for i, c := range batch {
		c.res, c.err = cmds[i].Int64()
		close(c.done)
	}
}

// runOne runs the script for key and n, until ctx ends.
func (l *Limiter) runOne(ctx context.Context, key string, n int) (int64, error) {
	if l.ctxTimeouts {
		return gcra.Run(ctx, l.client, []string{l.Key(key)}, l.tolArg, l.increment(n)).Int64()
	}
	// The client would wait for its own read timeout (3 seconds by default)
	// on a server that has stopped answering: wait for it in a goroutine, and
	// stop waiting at our timeout. The goroutine ends with the client's.
	type result struct {
		res int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := gcra.Run(ctx, l.client, []string{l.Key(key)}, l.tolArg, l.increment(n)).Int64()
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// honoursDeadlines reports whether c gives up when a context's deadline
// passes.
func honoursDeadlines(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

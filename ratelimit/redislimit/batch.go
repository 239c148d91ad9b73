package redislimit

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A call is one decision, or one Reset, waiting for a round trip.
type call struct {
	key   string
	n     int
	reset bool // DEL the key rather than run the script
	res   int64
	all   []int64 // the result of gcraAll, for a Limiter of several limits
	err   error
	done  chan struct{} // closed once res and err are set

	// panicked is what the client panicked with (a hook of the user's, say)
	// while it ran the call away from the caller's goroutine, for the caller
	// to panic with in turn.
	panicked any
}

// result returns c's result, or panics with the client's panic.
func (c *call) result() (int64, error) {
	if c.panicked != nil {
		panic(c.panicked)
	}
	return c.res, c.err
}

// batcher bounds the round trips a Limiter has under way. A call made while
// fewer than max are under way goes to Redis at once, by itself. A call made
// while max are under way waits in the queue, and as soon as a round trip
// ends, every call waiting goes in one pipeline: a single round trip for all
// of them. So under load each round trip carries many decisions, and neither
// the server nor the client pays a system call for each one.
//
// A round trip keeps its place until it ends, not until its caller stops
// waiting for it: a caller whose Timeout or ctx ends returns at once, but its
// round trip runs on until the client ends it, so that a stalled server never
// has more than max round trips of the Limiter to answer when it wakes.
//
// The queue is not empty only while max round trips are under way, so a call
// never overtakes those waiting.
type batcher struct {
	mu       sync.Mutex
	underway int     // round trips under way, at most max
	max      int     // 0: no bound, and no queue
	queue    []*call // waiting for a round trip, oldest first
}

// roundTrip sends c to Redis and returns its result, or gives up when ctx
// ends or the Timeout passes.
func (l *Limiter) roundTrip(parent context.Context, c *call) (int64, error) {
	ctx, cancel := context.WithTimeout(parent, l.timeout)
	defer cancel()
	// parent's methods are the caller's code, which may panic: they are
	// called before the call takes a place among the round trips under way,
	// which a panic would otherwise keep for good.
	endless := parent.Done() == nil
	b := &l.batch
	if b.max > 0 {
		b.mu.Lock()
		if b.underway == b.max {
			return l.queue(ctx, c) // unlocks b.mu
		}
		b.underway++
		b.mu.Unlock()
	}
	if l.ctxTimeouts && endless {
		// Only the deadline can end the wait, and the client keeps to it:
		// no goroutine needed.
		defer l.lone()
		return l.send(ctx, c)
	}
	// The client may wait for its own read timeout on a server that has
	// stopped answering, and watches no cancellation, only deadlines: send
	// from a goroutine, and stop waiting when ctx ends. The goroutine frees
	// the round trip's place when the client is done with it.
	//
	// A panic of the client reaches the caller if it is still waiting, and is
	// lost if not: panicking in the goroutine would end the process. A
	// runtime.Goexit of the client (a hook's t.FailNow), for which recover
	// finds nothing, is a round trip that Redis did not answer: without
	// errGoexit, the zero reply would read as a grant.
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer l.lone()
		returned := false
		defer func() {
			if !returned {
				if c.panicked = recover(); c.panicked == nil {
					c.err = errGoexit
				}
			}
		}()
		c.res, c.err = l.send(ctx, c)
		returned = true
	}()
	select {
	case <-done:
		return c.result()
	case <-ctx.Done():
	}
	// An answer that came as ctx ended is still an answer: Redis took the
	// events, if it allowed them.
	select {
	case <-done:
		return c.result()
	default:
		return 0, ctx.Err()
	}
}

// lone is called as a call's own round trip ends.
func (l *Limiter) lone() {
	if l.batch.max > 0 {
		l.roundTripEnded(nil)
	}
}

// queue waits, with b.mu held (it unlocks it), for c's turn in a pipeline.
func (l *Limiter) queue(ctx context.Context, c *call) (int64, error) {
	b := &l.batch
	c.done = make(chan struct{})
	b.queue = append(b.queue, c)
	b.mu.Unlock()

	select {
	case <-c.done:
		return c.result()
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
	// round trip. An answer that came as ctx ended is still an answer.
	select {
	case <-c.done:
		return c.result()
	default:
		return 0, ctx.Err()
	}
}

// send runs c by itself. The result of gcraAll goes to c.all.
func (l *Limiter) send(ctx context.Context, c *call) (int64, error) {
	keys := l.keys(c.key)
	// A *redis.Cmd for DEL too, as in runBatch: a hook that drops the
	// command without an error leaves it with no reply, which an IntCmd
	// would give as 0, "nothing deleted", and the Reset as done.
	var cmd *redis.Cmd
	switch {
	case c.reset:
		cmd = l.client.Do(ctx, delArgs(keys)...)
	case l.more == nil:
		cmd = gcra.Run(ctx, l.client, keys, l.tolArg, l.increment(c.n))
	default:
		cmd = gcraAll.Run(ctx, l.client, keys, l.args(c.n)...)
	}
	if cmd.Val() == nil && cmd.Err() == nil {
		return 0, errNoReply
	}
	if l.more == nil || c.reset {
		return cmd.Int64()
	}
	all, err := cmd.Int64Slice()
	c.all = all
	return 0, err
}

// keys returns the Redis keys of key: its Key, then one for each of
// Config.Limits.
func (l *Limiter) keys(key string) []string {
	k := l.Key(key)
	if l.more == nil {
		return []string{k}
	}
	keys := make([]string, 1+len(l.more))
	keys[0] = k
	for i := range l.more {
		keys[i+1] = k + ":" + strconv.Itoa(i+2)
	}
	return keys
}

// args returns the arguments of gcraAll for n events: each limit's
// tolerance and increment, in turn.
func (l *Limiter) args(n int) []any {
	args := make([]any, 0, 2+2*len(l.more))
	args = append(args, l.tolArg, l.increment(n))
	for i := range l.more {
		args = append(args, l.more[i].tolArg, l.more[i].increment(n))
	}
	return args
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
	over := false
	defer func() {
		if !over {
			// A client hook called runtime.Goexit in runBatch, which told
			// its calls: this goroutine ends, and its round trip with it,
			// its place passing to the calls queued (in a goroutine of
			// their own) or freed. Kept, it would be lost for good, and
			// with it every later call's turn.
			l.roundTripEnded(nil)
		}
	}()
	for batch != nil {
		l.runBatch(batch)
		clear(batch)
		batch = l.roundTripEnded(batch)
	}
	over = true
}

// errNoReply is the error of a command that a hook left without a reply
// and without an error, alone or in a pipeline.
var errNoReply = errors.New("redislimit: no reply in the pipeline")

// delArgs returns the arguments of DEL of keys.
func delArgs(keys []string) []any {
	args := make([]any, 1+len(keys))
	args[0] = "del"
	for i, k := range keys {
		args[i+1] = k
	}
	return args
}

// errGoexit is the error of a round trip in which a client hook called
// runtime.Goexit: Redis did not answer, and the call follows the Policy.
var errGoexit = errors.New("redislimit: a client hook called runtime.Goexit")

// runBatch runs every call of batch in one pipeline, and tells each call its
// result. The pipeline carries no caller's context: it serves them all, and
// ends at the Timeout.
func (l *Limiter) runBatch(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	told := 0 // calls told their result
	returned := false
	defer func() {
		// A panic of the client goes to every caller still waiting, and
		// the pipeline goes on with the calls queued meanwhile. A Goexit
		// (for which recover finds nothing) ends the goroutine: its
		// callers get errGoexit, and pipeline passes the place on.
		if returned {
			return
		}
		p := recover()
		for _, c := range batch[told:] {
			if p != nil {
				c.panicked = p
			} else {
				c.err = errGoexit
			}
			close(c.done)
		}
	}()
	// Every command is a *redis.Cmd, DEL included, so that one without a
	// reply shows: go-redis gives Redis's nil as redis.Nil, and leaves the
	// commands of a pipeline that a hook failed without sending it with no
	// value and no error. An IntCmd's 0 would read as "nothing deleted".
	cmds := make([]*redis.Cmd, len(batch))
	keys := make([][]string, len(batch))
	failed := make([]error, len(batch)) // the error of the pipeline that carried each
	script := gcra
	if l.more != nil {
		script = gcraAll
	}
	send := func(eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd, which []int) {
		_, err := l.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range which {
				switch {
				case batch[i].reset:
					cmds[i] = p.Do(ctx, delArgs(keys[i])...)
				case l.more == nil:
					cmds[i] = eval(ctx, p, keys[i], l.tolArg, l.increment(batch[i].n))
				default:
					cmds[i] = eval(ctx, p, keys[i], l.args(batch[i].n)...)
				}
			}
			return nil
		})
		for _, i := range which {
			failed[i] = err
		}
	}
	all := make([]int, len(batch))
	for i, c := range batch {
		all[i] = i
		keys[i] = l.keys(c.key)
	}
	send(script.EvalSha, all)
	// Redis forgets scripts on a restart or a SCRIPT FLUSH: send it again
	// with the calls it refused.
	again := all[:0]
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		send(script.Eval, again)
	}
	for i, c := range batch {
		cmd := cmds[i]
		switch {
		case cmd.Val() == nil && cmd.Err() == nil:
			// No reply: a hook failed the pipeline without a word to its
			// commands. A Reset must not say it deleted the key.
			c.err = failed[i]
			if c.err == nil {
				c.err = errNoReply
			}
		case l.more == nil || c.reset:
			c.res, c.err = cmd.Int64()
		default:
			c.all, c.err = cmd.Int64Slice()
		}
		told++
		close(c.done)
	}
	returned = true
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
